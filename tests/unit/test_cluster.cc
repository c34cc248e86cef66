#include <stdexcept>

#include "core/cluster.h"
#include "fixtures.h"
#include "suites.h"

using namespace mlsched;

START_TEST(node_gres_strings) {
  auto g = parse_node_gres("gpu:a100:8(S:0-1),gpu:h100:2,shard:4");
  ck_assert_int_eq(g.size(), 3);
  ck_assert_string_eq(g[0].type.c_str(), "a100");
  ck_assert_int_eq(g[0].count, 8);
  ck_assert_string_eq(g[2].name.c_str(), "shard");
  ck_assert(g[2].type.empty());
  ck_assert_int_eq(g[2].count, 4);
  auto untyped = parse_node_gres("gpu:4(S:0,1)");
  ck_assert_int_eq(untyped.size(), 1);
  ck_assert_int_eq(untyped[0].count, 4);
  ck_assert(parse_node_gres("(null)").empty());
  bool threw = false;
  try {
    parse_node_gres("gpu:a100:x");
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  ck_assert(threw);
}
END_TEST

START_TEST(cliques_from_link_matrix) {
  // Two 4-GPU NVLink cliques, as on a 2x4 node (gres.conf Links=).
  std::vector<std::vector<int>> links(8, std::vector<int>(8, 0));
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) links[i][j] = i == j ? -1 : ((i < 4) == (j < 4) ? 18 : 0);
  auto cliques = cliques_from_links(links);
  ck_assert_int_eq(cliques.size(), 2);
  ck_assert_int_eq(cliques[0].size(), 4);
  ck_assert_int_eq(cliques[1][0], 4);
  // PCIe only: every GPU is its own clique.
  std::vector<std::vector<int>> pcie(4, std::vector<int>(4, 0));
  ck_assert_int_eq(cliques_from_links(pcie).size(), 4);
}
END_TEST

// The one model builder the plugins and the tool share: what it makes of each
// node's facts, and the problems it reports instead of failing.
START_TEST(model_builder_reports_problems) {
  Cluster c;
  const ModelProblems p = build_cluster_model(
      c,
      {{"gpu01", "h100,ib", "gpu:h100:8(S:0-1)", {{0, 1, 2, 3}, {4, 5, 6, 7}}},
       {"gpu02", "", "gpu:h100:4,gpu:a100:4", {}},
       {"gpu03", "", "gpu:h100:x", {}},
       {"cpu01", "", "(null)", {}}},
      {{"nvl0", {"gpu01", "gpu02", "gpu99"}, 7}}, {{"leaf0", 0, {"gpu01", "gpu02"}}, {"spine", 1, {"gpu01", "gpu02", "gpu03"}}});
  ck_assert_int_eq(c.nodes().size(), 4);
  const GpuNode* n = c.find_node("gpu01");
  ck_assert_string_eq(n->gpu_type, "h100");
  ck_assert_int_eq(n->gpus, 8);
  ck_assert_int_eq(n->features.size(), 2);
  ck_assert_int_eq(n->nvlink_cliques.size(), 2);
  ck_assert_string_eq(n->nvlink_domain, "nvl0");
  ck_assert_string_eq(n->leaf_switch, "leaf0");
  ck_assert_int_eq(c.switches().size(), 2);
  // Several types: the first one, and a note.
  ck_assert_string_eq(c.find_node("gpu02")->gpu_type, "h100");
  ck_assert_int_eq(p.mixed_gpu_types.size(), 1);
  ck_assert_contains(p.mixed_gpu_types[0], "gpu02 has several GPU types; using h100");
  // Unreadable Gres=: the node is kept without GPUs, and named.
  ck_assert_int_eq(c.find_node("gpu03")->gpus, 0);
  ck_assert_int_eq(p.nodes.size(), 1);
  ck_assert_contains(p.nodes[0], "node gpu03: bad GRES 'gpu:h100:x'");
  ck_assert_int_eq(p.nvlink_domains.size(), 1);
  ck_assert_contains(p.nvlink_domains[0], "NvlinkDomain=nvl0 names node gpu99, which Slurm does not know");
}
END_TEST

START_TEST(model_queries) {
  Cluster c = fixture_cluster();
  auto types = c.gpu_types();
  ck_assert_int_eq(types.size(), 2);
  ck_assert_string_eq(types[0].c_str(), "a100");
  ck_assert_string_eq(c.canonical_gpu_type("H100").value().c_str(), "h100");
  ck_assert(!c.canonical_gpu_type("t4"));
  ck_assert_int_eq(c.total_gpus("h100"), 64);
  ck_assert_string_eq(c.find_node("gpu10")->nvlink_domain.c_str(), "nvl2");
  ck_assert_string_eq(c.find_node("gpu10")->leaf_switch.c_str(), "sw1");
  ck_assert(c.has_nvlink_domains());
  auto problems = c.apply_nvlink_domains({{"nvlX", {"ghost"}, 9}});
  ck_assert_int_eq(problems.size(), 1);
  ck_assert_contains(problems[0], "ghost");
}
END_TEST

START_TEST(best_fit_by_scope) {
  Cluster c = fixture_cluster();
  GangShape two_by_eight{2, 8, 0};
  ScopeFit f = c.best_fit(Locality::nvlink_domain, "h100", two_by_eight);
  ck_assert(f.fits);
  ck_assert_int_eq(f.unit_gpus, 32);
  GangShape five_by_eight{5, 8, 0};
  f = c.best_fit(Locality::nvlink_domain, "h100", five_by_eight);
  ck_assert(!f.fits);
  ck_assert_int_eq(f.unit_gpus, 32);
  ck_assert_int_eq(f.unit_nodes, 4);
  ck_assert(c.best_fit(Locality::switch_scope, "h100", five_by_eight).fits);
  ck_assert(!c.best_fit(Locality::node, "a100", GangShape{1, 16, 0}).fits);
  ck_assert(c.best_fit(Locality::node, "a100", GangShape{1, 8, 0}).fits);
  ck_assert(!c.best_fit(Locality::any, "a100", GangShape{9, 8, 0}).fits);
  // --gpus=24 without per-node count: domain total decides.
  ck_assert(c.best_fit(Locality::nvlink_domain, "a100", GangShape{1, 0, 24}).fits);
  ck_assert(!c.best_fit(Locality::nvlink_domain, "a100", GangShape{1, 0, 40}).fits);
}
END_TEST

// One definition of a usable node for select, preempt and the tool.
START_TEST(usable_node_is_up_and_schedulable) {
  ck_assert(usable_node(NodeCondition{}));
  // Any one of Slurm's conditions makes a node unusable.
  bool NodeCondition::*const flags[] = {&NodeCondition::down, &NodeCondition::drained, &NodeCondition::failing,
                                        &NodeCondition::not_responding, &NodeCondition::not_yet_up};
  for (auto flag : flags) {
    NodeCondition c;
    c.*flag = true;
    ck_assert(!usable_node(c));
  }
}
END_TEST

Suite* cluster_suite() {
  Suite* s = suite_create("cluster");
  TCase* tc = tcase_create("model");
  tcase_add_test(tc, node_gres_strings);
  tcase_add_test(tc, cliques_from_link_matrix);
  tcase_add_test(tc, model_builder_reports_problems);
  tcase_add_test(tc, model_queries);
  tcase_add_test(tc, best_fit_by_scope);
  tcase_add_test(tc, usable_node_is_up_and_schedulable);
  suite_add_tcase(s, tc);
  return s;
}
