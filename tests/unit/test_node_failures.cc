// The memory of failed nodes (core/node_failures) that select/mlsched keeps across
// slurmctld processes: counting within the window, forgetting, its bounds, and the
// state file it is saved as and read back from.
#include <string>

#include "core/node_failures.h"
#include "suites.h"

using namespace mlsched;

START_TEST(counts_failures_within_the_window) {
  NodeFailureMemory m;
  m.record("gpu10", 1000);
  m.record("gpu10", 2000);
  m.record("gpu11", 2000);
  ck_assert_uint_eq(m.recent("gpu10", 2500, 3600), 2);
  ck_assert_uint_eq(m.recent("gpu10", 4700, 3600), 1);  // 1000 is older than an hour at 4700
  ck_assert_uint_eq(m.recent("gpu12", 2500, 3600), 0);
  ck_assert(!m.forget_older_than(2500, 3600));
  ck_assert(m.forget_older_than(4700, 3600));
  ck_assert_uint_eq(m.recent("gpu10", 4700, 3600), 1);
  ck_assert(m.forget_older_than(6000, 1));
  ck_assert(m.empty());
}
END_TEST

START_TEST(survives_a_round_trip_through_its_file) {
  NodeFailureMemory m;
  m.record("gpu10", 2000);
  m.record("gpu10", 1000);  // out of order: kept sorted
  m.record("gpu03", 1500);
  const std::string text = m.serialize();
  ck_assert_string_eq(text, "mlsched-node-failures 1\nnode gpu03 1500\nnode gpu10 1000 2000\nend\n");
  std::string error;
  auto back = NodeFailureMemory::parse(text, 5000, &error);
  ck_assert_msg(back.has_value(), "%s", error.c_str());
  ck_assert_string_eq(back->serialize(), text);
  ck_assert_uint_eq(back->recent("gpu10", 2100, 3600), 2);
  // An empty memory is a valid file too.
  auto none = NodeFailureMemory::parse(NodeFailureMemory().serialize(), 5000, &error);
  ck_assert(none.has_value() && none->empty());
}
END_TEST

START_TEST(refuses_a_damaged_file_and_says_where) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "empty file"},
      {"mlsched priority state 1\nend\n", "line 1: not an mlsched node-failure file"},
      {"mlsched-node-failures 1\nnode gpu01 100\n", "truncated (no 'end' line)"},
      {"mlsched-node-failures 1\nnode gpu01 100\nend\nnode gpu02 5\n", "line 4: text after 'end'"},
      {"mlsched-node-failures 1\nnode gpu01 1x\nend\n", "line 2: bad time '1x' of node gpu01"},
      {"mlsched-node-failures 1\nnode gpu01 -5\nend\n", "line 2: bad time '-5'"},
      {"mlsched-node-failures 1\nnode gpu01 9000\nend\n", "line 2: time 9000 of node gpu01 is in the future"},
      {"mlsched-node-failures 1\nnode gpu01 200 100\nend\n", "out of order"},
      {"mlsched-node-failures 1\nnode gpu01\nend\n", "node gpu01 without a time"},
      {"mlsched-node-failures 1\nnode gpu01 1\nnode gpu01 2\nend\n", "line 3: node gpu01 twice"},
      {"mlsched-node-failures 1\nrack r1 1\nend\n", "line 2: unknown record 'rack'"},
  };
  for (const auto& c : cases) {
    std::string error;
    ck_assert_msg(!NodeFailureMemory::parse(c.text, 5000, &error).has_value(), "accepted: %s", c.text);
    ck_assert_msg(contains(error, c.error), "'%s' gave '%s'", c.text, error.c_str());
  }
}
END_TEST

START_TEST(stays_bounded_whatever_fails) {
  NodeFailureMemory m;
  for (int t = 1; t <= 1000; ++t) m.record("gpu01", t);
  ck_assert_uint_eq(m.recent("gpu01", 1000, 100000), NodeFailureMemory::kMaxPerNode);
  // The newest are the ones kept.
  ck_assert_uint_eq(m.recent("gpu01", 1000, 1000 - (1001 - NodeFailureMemory::kMaxPerNode)), NodeFailureMemory::kMaxPerNode);
  m.record(std::string(300, 'n'), 5);  // no node has a name that long: not kept
  m.record("", 5);
  ck_assert_uint_eq(m.nodes(), 1);
  std::string text = "mlsched-node-failures 1\nnode gpu01";
  for (size_t i = 1; i <= NodeFailureMemory::kMaxPerNode + 1; ++i) text += " " + std::to_string(i);
  text += "\nend\n";
  std::string error;
  ck_assert(!NodeFailureMemory::parse(text, 5000, &error).has_value());
  ck_assert_msg(contains(error, "more than 32 times for node gpu01"), "%s", error.c_str());
}
END_TEST

Suite* node_failures_suite() {
  Suite* s = suite_create("node_failures");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, counts_failures_within_the_window);
  tcase_add_test(tc, survives_a_round_trip_through_its_file);
  tcase_add_test(tc, refuses_a_damaged_file_and_says_where);
  tcase_add_test(tc, stays_bounded_whatever_fails);
  suite_add_tcase(s, tc);
  return s;
}
