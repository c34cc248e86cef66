// The one reader of TRES/GRES strings (core/tres.h): both of Slurm's forms, and
// what it does with text it cannot take apart.
#include "core/tres.h"
#include "suites.h"

using namespace mlsched;

// Requests ("gres:gpu:h100:8", tres_per_node) and accounting strings
// ("gres/gpu:h100=8", tres_fmt_alloc_str) count the same GPUs.
START_TEST(both_forms_count_the_same_gpus) {
  const GpuCounts req = gpu_counts_from_tres("gres:gpu:h100:8");
  const GpuCounts acct = gpu_counts_from_tres("cpu=64,mem=512G,node=1,billing=64,gres/gpu=8,gres/gpu:h100=8");
  ck_assert_uint_eq(req.by_type.at("h100"), 8);
  ck_assert_uint_eq(acct.by_type.at("h100"), 8);
  ck_assert_uint_eq(req.untyped, 0);
  ck_assert_uint_eq(acct.untyped, 0);  // the gres/gpu total is not counted twice
  // A request's untyped GPUs come on top of its typed ones; an accounting total
  // beyond the typed counts is untyped.
  ck_assert_uint_eq(gpu_counts_from_tres("gres:gpu:a100:2,gres:gpu:2").total(), 4);
  ck_assert_uint_eq(gpu_counts_from_tres("gres/gpu=10,gres/gpu:h100=8").untyped, 2);
  // A request without a count asks for one; an accounting item without one says nothing.
  ck_assert_uint_eq(gpu_counts_from_tres("gres:gpu:h100").by_type.at("h100"), 1);
  ck_assert_uint_eq(gpu_counts_from_tres("gres/gpu=x").total(), 0);
  // Types are compared in lowercase wherever they come from.
  ck_assert_uint_eq(gpu_counts_from_tres("gres/gpu:H100=4").by_type.at("h100"), 4);
  // Not GPUs: no count.
  ck_assert_uint_eq(gpu_counts_from_tres("cpu=2,mem=100,gres/shard=4,license/x=1").total(), 0);
}
END_TEST

// The submit path refuses what it cannot read and names it; the others skip it.
START_TEST(unreadable_items_are_named) {
  std::string bad;
  auto items = parse_tres("gres:gpu:h100:8,gres:gpu:a:b:c", &bad);
  ck_assert_uint_eq(items.size(), 1);
  ck_assert_string_eq(bad, "gres:gpu:h100:8,gres:gpu:a:b:c");
  bad.clear();
  parse_tres("gres:gpu:h100:eight", &bad);
  ck_assert(!bad.empty());
  bad.clear();
  items = parse_tres("gres:gpu:h100:2,gres:nic:1", &bad);
  ck_assert(bad.empty());
  ck_assert_uint_eq(items.size(), 2);
  ck_assert_string_eq(format_tres(items), "gres:gpu:h100:2,gres:nic:1");
  ck_assert_uint_eq(gpu_counts_from_tres("gres:gpu:a:b:c,gres:gpu:1").total(), 1);
}
END_TEST

Suite* tres_suite() {
  Suite* s = suite_create("tres");
  TCase* tc = tcase_create("tres");
  tcase_add_test(tc, both_forms_count_the_same_gpus);
  tcase_add_test(tc, unreadable_items_are_named);
  suite_add_tcase(s, tc);
  return s;
}
