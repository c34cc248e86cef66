#include <algorithm>

#include "core/placement.h"
#include "fixtures.h"
#include "suites.h"

using namespace mlsched;

namespace {

ClusterState idle_state(const Cluster& c) {
  ClusterState s(c.nodes().size());
  for (size_t i = 0; i < s.size(); ++i) s[i].gpu_busy.assign(c.nodes()[i].gpus, false);
  return s;
}

void occupy(ClusterState& s, const Cluster& c, const std::string& node, uint32_t gpus) {
  const size_t i = static_cast<size_t>(c.find_node(node) - c.nodes().data());
  for (uint32_t g = 0; g < gpus && g < s[i].gpu_busy.size(); ++g) s[i].gpu_busy[g] = true;
}

std::vector<std::string> names(const Cluster& c, const std::vector<size_t>& idx) {
  std::vector<std::string> out;
  for (size_t i : idx) out.push_back(c.nodes()[i].name);
  return out;
}

std::vector<bool> all_eligible(const Cluster& c) { return std::vector<bool>(c.nodes().size(), true); }

PlacementRequest gang(uint32_t nodes, uint32_t per_node, std::vector<std::string> types, Locality l,
                      LocalityMode m = LocalityMode::prefer) {
  PlacementRequest r;
  r.gang = GangShape{nodes, per_node, 0};
  r.gpu_types = std::move(types);
  r.locality = l;
  r.mode = m;
  return r;
}

}  // namespace

START_TEST(domain_gang_skips_free_gpus_that_come_first) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  // gpu01 (nvl0) is idle and first in node order; the rest of nvl0 is busy.
  for (auto n : {"gpu02", "gpu03", "gpu04", "gpu05", "gpu08"}) occupy(s, c, n, 8);
  PlacementPlan p = plan_placement(c, s, all_eligible(c), gang(2, 8, {"h100"}, Locality::nvlink_domain));
  ck_assert(!p.candidates.empty());
  ck_assert_string_eq(p.candidates[0].unit, "nvl1");
  auto chosen = names(c, p.candidates[0].nodes);
  ck_assert_int_eq(chosen.size(), 2);
  ck_assert_string_eq(chosen[0], "gpu06");
  ck_assert_string_eq(chosen[1], "gpu07");
}
END_TEST

START_TEST(strict_waits_with_numbers_prefer_spreads) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  // One idle h100 node per domain: 16 GPUs free, never 16 in one domain.
  for (auto n : {"gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"}) occupy(s, c, n, 8);
  PlacementPlan strict =
      plan_placement(c, s, all_eligible(c), gang(2, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict));
  ck_assert(strict.candidates.empty());
  ck_assert_contains(strict.reason,
                     "needs 16 h100 GPUs (2 nodes x 8) in one NVLink domain; free now: h100: 16 free on 2 nodes with "
                     "room, at most 8 in one NVLink domain (nvl0)");
  ck_assert_int_eq(strict.shortfalls.size(), 1);
  ck_assert_int_eq(strict.shortfalls[0].free_gpus, 16);
  PlacementPlan prefer = plan_placement(c, s, all_eligible(c), gang(2, 8, {"h100"}, Locality::nvlink_domain));
  ck_assert(!prefer.candidates.empty());
  ck_assert(prefer.candidates[0].scope == Locality::switch_scope);
  ck_assert_string_eq(prefer.candidates[0].unit, "sw0");
}
END_TEST

START_TEST(type_list_takes_second_type_when_first_is_full) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  for (int i = 1; i <= 8; ++i) occupy(s, c, (i < 10 ? "gpu0" : "gpu") + std::to_string(i), 8);
  PlacementPlan p = plan_placement(c, s, all_eligible(c), gang(2, 8, {"h100", "a100"}, Locality::nvlink_domain));
  ck_assert(!p.candidates.empty());
  ck_assert_string_eq(p.candidates[0].gpu_type, "a100");
  // h100 has room again: it is first.
  s = idle_state(c);
  p = plan_placement(c, s, all_eligible(c), gang(2, 8, {"h100", "a100"}, Locality::nvlink_domain));
  ck_assert_string_eq(p.candidates[0].gpu_type, "h100");
  // Every candidate is one type, never a mix.
  for (const auto& cand : p.candidates)
    for (size_t i : cand.nodes) ck_assert_string_eq(c.nodes()[i].gpu_type, cand.gpu_type);
}
END_TEST

START_TEST(small_jobs_pack_onto_partly_used_nodes) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  occupy(s, c, "gpu12", 6);  // 2 free in nvl2
  PlacementPlan p = plan_placement(c, s, all_eligible(c), gang(1, 2, {}, Locality::any));
  ck_assert_string_eq(names(c, p.candidates[0].nodes)[0], "gpu12");
  // With two equally full nodes, the one in the fuller domain wins.
  s = idle_state(c);
  occupy(s, c, "gpu01", 4);
  occupy(s, c, "gpu10", 4);
  occupy(s, c, "gpu11", 8);
  p = plan_placement(c, s, all_eligible(c), gang(1, 4, {}, Locality::any));
  ck_assert_string_eq(names(c, p.candidates[0].nodes)[0], "gpu10");
}
END_TEST

START_TEST(small_jobs_take_a_whole_free_clique_over_a_tighter_scattered_node) {
  // Two a100 nodes with two 4-GPU NVLink cliques each. gpu21 has exactly 4 free
  // GPUs, but scattered over both cliques; gpu22 has 5 free, 4 of them one whole
  // clique. Packing alone would pick gpu21 and split the job's NVLink traffic.
  Cluster c;
  for (const char* name : {"gpu21", "gpu22"}) {
    GpuNode n;
    n.name = name;
    n.gpu_type = "a100";
    n.gpus = 8;
    n.nvlink_cliques = {{0, 1, 2, 3}, {4, 5, 6, 7}};
    c.add_node(n);
  }
  ClusterState s = idle_state(c);
  for (int g : {0, 4, 6, 7}) s[0].gpu_busy[g] = true;  // gpu21 free: 1 2 3 | 5
  for (int g : {4, 5, 6}) s[1].gpu_busy[g] = true;     // gpu22 free: 0 1 2 3 | 7
  PlacementPlan p = plan_placement(c, s, all_eligible(c), gang(1, 4, {"a100"}, Locality::any));
  ck_assert(!p.candidates.empty());
  ck_assert_string_eq(names(c, p.candidates[0].nodes)[0], "gpu22");
  ck_assert_int_eq(p.candidates[0].split_cliques, 0);
  // A 2-GPU job fits in one clique on both: packing decides again (gpu21 is fuller).
  p = plan_placement(c, s, all_eligible(c), gang(1, 2, {"a100"}, Locality::any));
  ck_assert_string_eq(names(c, p.candidates[0].nodes)[0], "gpu21");
  // When no node can keep it whole, the scattered node is still used.
  for (int g : {0}) s[1].gpu_busy[g] = true;  // gpu22 free: 1 2 3 | 7
  p = plan_placement(c, s, all_eligible(c), gang(1, 4, {"a100"}, Locality::any));
  ck_assert(!p.candidates.empty());
  ck_assert_int_eq(p.candidates[0].split_cliques, 1);
}
END_TEST

START_TEST(eligibility_and_node_state_are_respected) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  std::vector<bool> eligible = all_eligible(c);
  for (int i = 5; i <= 8; ++i) eligible[i - 1] = false;  // gpu05-08 not in the job's partition
  s[0].usable = false;                                   // gpu01 down
  PlacementPlan p = plan_placement(c, s, eligible, gang(3, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict));
  ck_assert(!p.candidates.empty());
  ck_assert_string_eq(p.candidates[0].unit, "nvl0");
  auto chosen = names(c, p.candidates[0].nodes);
  ck_assert(std::find(chosen.begin(), chosen.end(), "gpu01") == chosen.end());
  p = plan_placement(c, s, eligible, gang(4, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict));
  ck_assert(p.candidates.empty());
}
END_TEST

START_TEST(large_gangs_avoid_recently_failed_nodes) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  s[0].recent_failures = 2;  // gpu01, nvl0
  PlacementPlan p = plan_placement(c, s, all_eligible(c), gang(4, 8, {"h100"}, Locality::nvlink_domain));
  ck_assert_string_eq(p.candidates[0].unit, "nvl1");
  ck_assert(!p.candidates[0].uses_flaky_nodes);
  // No healthy domain left: the flaky one is still used rather than waiting.
  for (int i = 5; i <= 8; ++i) occupy(s, c, "gpu0" + std::to_string(i), 8);
  p = plan_placement(c, s, all_eligible(c), gang(4, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict));
  ck_assert_string_eq(p.candidates[0].unit, "nvl0");
  ck_assert(p.candidates[0].uses_flaky_nodes);
}
END_TEST

START_TEST(scopes_never_widen_past_strict) {
  auto s = scopes_to_try(gang(2, 8, {}, Locality::nvlink_domain, LocalityMode::strict));
  ck_assert_int_eq(s.size(), 1);
  ck_assert(s[0] == Locality::nvlink_domain);
  s = scopes_to_try(gang(1, 8, {}, Locality::switch_scope, LocalityMode::strict));
  ck_assert_int_eq(s.size(), 3);
  s = scopes_to_try(gang(2, 8, {}, Locality::nvlink_domain, LocalityMode::prefer));
  ck_assert_int_eq(s.size(), 3);
  ck_assert(s.back() == Locality::any);
}
END_TEST

START_TEST(gpus_inside_one_nvlink_clique) {
  const std::vector<std::vector<int>> two_by_four = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  std::vector<bool> free(8, true);
  auto g = choose_gpus(two_by_four, free, 4);
  ck_assert_int_eq(g.size(), 4);
  ck_assert_int_eq(g[0], 0);
  ck_assert_int_eq(g[3], 3);
  free[0] = free[1] = false;  // a 2-GPU job holds 0-1
  g = choose_gpus(two_by_four, free, 4);
  ck_assert_int_eq(g[0], 4);
  ck_assert_int_eq(g[3], 7);
  g = choose_gpus(two_by_four, free, 2);  // the partly used clique takes the small job
  ck_assert_int_eq(g[0], 2);
  ck_assert_int_eq(g[1], 3);
  g = choose_gpus(two_by_four, std::vector<bool>(8, true), 6);  // spans the fewest cliques
  ck_assert_int_eq(g.size(), 6);
  ck_assert(choose_gpus(two_by_four, free, 7).empty());
  ck_assert_int_eq(choose_gpus({}, std::vector<bool>(4, true), 2).size(), 2);
}
END_TEST

START_TEST(packing_leaves_more_whole_nodes_than_first_fit) {
  // A stream of 1-, 2-, 4- and 8-GPU jobs where every third job ends after a while:
  // best fit (ours) against first fit in node order (a plain scheduler with equal
  // node weights), on the same arrivals and departures.
  Cluster c = fixture_cluster();
  struct Sim {
    ClusterState state;
    std::vector<std::pair<size_t, std::vector<size_t>>> running;  // node, GPU indices
  };
  Sim ours{idle_state(c), {}}, first_fit{idle_state(c), {}};
  auto take = [](Sim& sim, size_t node, uint32_t n) {
    std::vector<size_t> gpus;
    for (size_t g = 0; g < sim.state[node].gpu_busy.size() && gpus.size() < n; ++g)
      if (!sim.state[node].gpu_busy[g]) sim.state[node].gpu_busy[g] = true, gpus.push_back(g);
    sim.running.push_back({node, gpus});
  };
  auto finish = [](Sim& sim, size_t k) {
    for (size_t g : sim.running[k].second) sim.state[sim.running[k].first].gpu_busy[g] = false;
    sim.running[k].second.clear();
  };
  const uint32_t sizes[] = {1, 2, 4, 1, 8, 2, 1, 4, 2, 1, 1, 2, 4, 1, 2, 8, 1, 1, 2, 4,
                            2, 1, 4, 1, 2, 2, 1, 8, 4, 1, 2, 1, 1, 4, 2, 1};
  size_t arrivals = 0;
  for (uint32_t n : sizes) {
    PlacementPlan p = plan_placement(c, ours.state, all_eligible(c), gang(1, n, {}, Locality::any));
    ck_assert(!p.candidates.empty());
    take(ours, p.candidates[0].nodes[0], n);
    for (size_t i = 0; i < c.nodes().size(); ++i)
      if (first_fit.state[i].free_gpus() >= n) {
        take(first_fit, i, n);
        break;
      }
    ck_assert_int_eq(first_fit.running.size(), ours.running.size());
    if (++arrivals % 3 == 0) {  // the job submitted three arrivals earlier ends
      finish(ours, arrivals - 3);
      finish(first_fit, arrivals - 3);
    }
  }
  Fragmentation fo = measure_fragmentation(c, ours.state), ff = measure_fragmentation(c, first_fit.state);
  ck_assert_int_eq(fo.free_gpus, ff.free_gpus);
  ck_assert_msg(fo.idle_nodes > ff.idle_nodes, "best fit %u idle nodes, first fit %u", fo.idle_nodes, ff.idle_nodes);
  ck_assert_msg(fo.node_index < ff.node_index, "best fit index %.3f, first fit %.3f", fo.node_index, ff.node_index);
}
END_TEST

START_TEST(fragmentation_index) {
  Cluster c = fixture_cluster();
  ClusterState s = idle_state(c);
  Fragmentation f = measure_fragmentation(c, s);
  ck_assert_int_eq(f.free_gpus, 128);
  ck_assert_int_eq(f.idle_nodes, 16);
  ck_assert_int_eq(f.idle_domains, 4);
  ck_assert(f.node_index == 0.0);
  occupy(s, c, "gpu01", 4);  // 4 free GPUs now sit on a partly used node
  f = measure_fragmentation(c, s);
  ck_assert_int_eq(f.free_gpus, 124);
  ck_assert_int_eq(f.idle_domains, 3);
  ck_assert(f.node_index > 0.03 && f.node_index < 0.033);  // 4 / 124
  ck_assert(f.domain_index > 0.22 && f.domain_index < 0.23);  // 28 / 124
}
END_TEST

// The node sets select/mlsched offers cons_tres, in order, with their limits.
START_TEST(attempts_in_order_with_named_limits) {
  const Cluster c = fixture_cluster();
  const GpuNodeIndex index = GpuNodeIndex::of(c);
  ck_assert_int_eq(index.gpu_types.size(), 2);
  ck_assert_int_eq(index.of_types({"h100"}).size(), 8);
  ck_assert_int_eq(index.of_types({"a100", "h100"}).size(), 16);
  ck_assert_int_eq(index.of_types({}).size(), 16);  // cpu01 has no GPUs
  ck_assert(index.of_types({"a100", "h100"}) == index.gpu_nodes);  // model order
  ClusterState now = idle_state(c);
  const auto all = all_eligible(c);

  // Will-run, strict: one offer per unit it fits in, the unit with most free GPUs
  // now first; at most will_run_units.
  occupy(now, c, "gpu01", 8);
  const auto strict = gang(2, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict);
  AttemptPlan w = will_run_attempts(c, index, now, all, strict, {});
  ck_assert_int_eq(w.attempts.size(), 2);
  ck_assert(w.attempts[0].step == AttemptStep::will_run_unit);
  ck_assert_string_eq(names(c, w.attempts[0].nodes)[0], "gpu05");  // nvl1: all 32 GPUs free
  ck_assert_string_eq(names(c, w.attempts[1].nodes)[0], "gpu01");
  AttemptLimits one;
  one.will_run_units = 1;
  ck_assert_int_eq(will_run_attempts(c, index, now, all, strict, {}, one).attempts.size(), 1);
  // Will-run, not strict: one offer per acceptable type.
  w = will_run_attempts(c, index, now, all, gang(2, 8, {}, Locality::nvlink_domain), {});
  ck_assert_int_eq(w.attempts.size(), 2);
  ck_assert(w.attempts[0].step == AttemptStep::will_run_type);
  ck_assert_str_eq(attempt_step_name(w.attempts[1].step), "will-run-type");

  // Run now with room: the best fit first (GPU indices aligned to cliques and the
  // reason cleared on success), then its whole unit; at most run_now_candidates.
  AttemptPlan r = run_now_attempts(c, index, now, all, gang(1, 4, {"h100"}, Locality::node), {}, false);
  ck_assert(!r.attempts.empty());
  ck_assert(r.attempts[0].step == AttemptStep::best_fit_nodes);
  ck_assert(r.attempts[0].align_gpus && r.attempts[0].clears_reason);
  AttemptLimits few;
  few.run_now_candidates = 1;
  r = run_now_attempts(c, index, now, all, gang(2, 8, {"h100"}, Locality::nvlink_domain), {}, false, few);
  // One candidate (its best fit, its whole unit), then, the job not being strict,
  // anywhere on its type.
  ck_assert_int_eq(r.attempts.size(), 3);
  ck_assert(r.attempts[1].step == AttemptStep::whole_unit);
  ck_assert_int_eq(r.attempts[1].nodes.size(), 4);
  ck_assert(r.attempts[2].step == AttemptStep::any_of_type);
  ck_assert_int_eq(r.attempts[2].nodes.size(), 8);

  // No room now: without preemption nothing is offered (the GPU view is exact) and
  // the plan's reason is recorded; with preemption, a preferred job is offered
  // each type, then the units preemption could free; a strict one only the units.
  for (const auto& n : {"gpu02", "gpu03", "gpu04", "gpu05", "gpu06", "gpu07", "gpu08"}) occupy(now, c, n, 8);
  r = run_now_attempts(c, index, now, all, strict, {}, false);
  ck_assert(r.attempts.empty());
  ck_assert_contains(r.reason, "needs");
  r = run_now_attempts(c, index, now, all, strict, {}, true);
  ck_assert_int_eq(r.attempts.size(), 2);
  ck_assert(r.attempts[0].step == AttemptStep::unit_to_preempt && !r.attempts[0].clears_reason);
  r = run_now_attempts(c, index, now, all, gang(2, 8, {"h100"}, Locality::nvlink_domain), {}, true);
  ck_assert(r.attempts[0].step == AttemptStep::any_of_type && r.attempts[0].clears_reason);
  ck_assert(!r.attempts[0].align_gpus);
  ck_assert(r.attempts.back().step == AttemptStep::unit_to_preempt);
  AttemptLimits no_units;
  no_units.preempt_units = 0;
  ck_assert_int_eq(run_now_attempts(c, index, now, all, strict, {}, true, no_units).attempts.size(), 0);
}
END_TEST

// GpuTypeSpeed: the fastest type with room first; a job that could start now only on
// a slower type waits for the faster one when, by its time limit, it ends sooner there.
START_TEST(speed_aware_type_choice) {
  const Cluster c = fixture_cluster();
  const GpuNodeIndex index = GpuNodeIndex::of(c);
  const auto all = all_eligible(c);
  const std::map<std::string, double> speeds = {{"h100", 2.0}, {"a100", 1.0}};
  PlacementPolicy fast;
  fast.type_speed = speeds;
  ClusterState now = idle_state(c);

  // The user listed a100 first; with speeds the h100 candidates come first, ties and
  // no speeds keep the user's order; an untyped job too.
  auto p = plan_placement(c, now, all, gang(1, 8, {"a100", "h100"}, Locality::node), fast);
  ck_assert_string_eq(p.candidates[0].gpu_type, "h100");
  p = plan_placement(c, now, all, gang(1, 8, {"a100", "h100"}, Locality::node));
  ck_assert_string_eq(p.candidates[0].gpu_type, "a100");
  p = plan_placement(c, now, all, gang(1, 8, {}, Locality::node), fast);
  ck_assert_string_eq(p.candidates[0].gpu_type, "h100");
  PlacementPolicy same;
  same.type_speed = {{"h100", 1.0}, {"a100", 1.0}};
  p = plan_placement(c, now, all, gang(1, 8, {"a100", "h100"}, Locality::node), same);
  ck_assert_string_eq(p.candidates[0].gpu_type, "a100");
  AttemptPlan w = will_run_attempts(c, index, now, all, gang(1, 8, {"a100", "h100"}, Locality::node), fast);
  ck_assert_string_eq(w.attempts[0].gpu_type, "h100");
  ck_assert_string_eq(w.attempts[1].gpu_type, "a100");

  // Runtime: the time limit on the slowest acceptable type, half on h100.
  const std::vector<std::string> both = {"h100", "a100"};
  ck_assert_int_eq(expected_runtime(speeds, both, "a100", 3600), 3600);
  ck_assert_int_eq(expected_runtime(speeds, both, "h100", 3600), 1800);
  ck_assert_int_eq(expected_runtime(speeds, {"h100"}, "h100", 3600), 3600);  // h100-only: its limit
  ck_assert_int_eq(expected_runtime(speeds, both, "h100", 0), 0);
  ck_assert(gpu_type_speed(speeds, "H100") == 2.0 && gpu_type_speed(speeds, "t4") == 1.0);
  // Will-run keeps the earliest end: h100 from +20 min ends before a100 from now.
  ck_assert_int_eq(expected_finish(speeds, both, "h100", 1200, 3600), 3000);
  ck_assert_int_eq(expected_finish(speeds, both, "a100", 0, 3600), 3600);
  ck_assert_int_eq(expected_finish({}, both, "a100", 700, 3600), 700);  // no speeds: the start

  // Every h100 busy: the run-now plan has room on a100 only, so h100 is worth asking about.
  for (int i = 1; i <= 8; ++i) occupy(now, c, "gpu0" + std::to_string(i), 8);
  AttemptPlan r = run_now_attempts(c, index, now, all, gang(1, 8, {"h100", "a100"}, Locality::node), fast, false);
  ck_assert(!r.attempts.empty());
  ck_assert_string_eq(r.attempts[0].gpu_type, "a100");
  ck_assert_str_eq(faster_type_to_ask(speeds, both, r).c_str(), "h100");
  ck_assert_str_eq(faster_type_to_ask({}, both, r).c_str(), "");
  ck_assert_str_eq(faster_type_to_ask(speeds, {"a100"}, r).c_str(), "");
  AttemptPlan fits_fast = run_now_attempts(c, index, idle_state(c), all, gang(1, 8, both, Locality::node), fast, false);
  ck_assert_str_eq(faster_type_to_ask(speeds, both, fits_fast).c_str(), "");

  // Will-run: a call that could ask only about a100 (slurmctld's matching-OR pass: the
  // job's nodes are a100's) asks about h100; one that asked h100 itself, or whose
  // answer is already h100, does not.
  ck_assert_str_eq(faster_type_not_asked(speeds, both, {"a100"}, "a100").c_str(), "h100");
  ck_assert_str_eq(faster_type_not_asked(speeds, both, {"h100", "a100"}, "a100").c_str(), "");
  ck_assert_str_eq(faster_type_not_asked(speeds, both, {"h100"}, "h100").c_str(), "");
  ck_assert_str_eq(faster_type_not_asked({}, both, {"a100"}, "a100").c_str(), "");

  // A 1-hour job, h100 free in 20 min: ends at +50 min there, at +60 min on a100 now: waits.
  const time_t t0 = 1000000;
  FasterTypeWait wait = weigh_faster_type(speeds, both, "h100", t0 + 1200, "a100", 3600, t0);
  ck_assert(wait.wait);
  ck_assert_int_eq(wait.finish_faster, t0 + 3000);
  ck_assert_int_eq(wait.finish_now, t0 + 3600);
  ck_assert_str_eq(wait.reason.c_str(),
                   "waits for h100 (GpuTypeSpeed 2 vs 1): expected to start there in 20 min and, by its time limit, "
                   "to finish 10 min sooner than if started on a100 now");
  AttemptPlan held = r;
  hold_for_faster_type(held, wait);
  // Nothing is offered: h100 has no room, so an offer there could only preempt.
  ck_assert_int_eq(held.attempts.size(), 0);
  ck_assert_str_eq(held.reason.c_str(), wait.reason.c_str());
  // h100 free in 40 min: it would end at +70 min, later than on a100 now: starts now.
  FasterTypeWait go = weigh_faster_type(speeds, both, "h100", t0 + 2400, "a100", 3600, t0);
  ck_assert(!go.wait);
  AttemptPlan kept = r;
  hold_for_faster_type(kept, go);
  ck_assert_int_eq(kept.attempts.size(), r.attempts.size());
  // Exactly even: starts now (waiting must win). No limit, or no known start: never waits.
  ck_assert(!weigh_faster_type(speeds, both, "h100", t0 + 1800, "a100", 3600, t0).wait);
  ck_assert(!weigh_faster_type(speeds, both, "h100", t0 + 60, "a100", 0, t0).wait);
  ck_assert(!weigh_faster_type(speeds, both, "h100", 0, "a100", 3600, t0).wait);
  // A short job gains little: 2 min limit, h100 in 5 min: starts on a100.
  ck_assert(!weigh_faster_type(speeds, both, "h100", t0 + 300, "a100", 120, t0).wait);
}
END_TEST

START_TEST(a_federated_jobs_tracking_copy_passes_the_submission_test) {
  Cluster c;
  for (const char* n : {"e1", "e2"}) c.add_node(GpuNode{n, "h100", 8, {}, "", "", {"h100"}});
  const GpuNodeIndex index = GpuNodeIndex::of(c);
  PlacementRequest a100;
  a100.gpu_types = {"a100"};
  // Not federated: a type the cluster lacks never fits (sbatch is refused).
  ck_assert(ever_fits_attempts(index, a100).attempts.front().nodes.empty());
  // Federated, with its types in another region: tested on every GPU node here...
  ck_assert_int_eq(ever_fits_attempts(index, a100, true).attempts.front().nodes.size(), 2);
  // ...and a type this cluster has keeps its own nodes.
  PlacementRequest h100;
  h100.gpu_types = {"h100", "a100"};
  ck_assert_int_eq(ever_fits_attempts(index, h100, true).attempts.front().nodes.size(), 2);
}
END_TEST

Suite* placement_suite() {
  Suite* s = suite_create("placement");
  TCase* tc = tcase_create("placement");
  tcase_add_test(tc, domain_gang_skips_free_gpus_that_come_first);
  tcase_add_test(tc, a_federated_jobs_tracking_copy_passes_the_submission_test);
  tcase_add_test(tc, strict_waits_with_numbers_prefer_spreads);
  tcase_add_test(tc, type_list_takes_second_type_when_first_is_full);
  tcase_add_test(tc, small_jobs_pack_onto_partly_used_nodes);
  tcase_add_test(tc, small_jobs_take_a_whole_free_clique_over_a_tighter_scattered_node);
  tcase_add_test(tc, eligibility_and_node_state_are_respected);
  tcase_add_test(tc, large_gangs_avoid_recently_failed_nodes);
  tcase_add_test(tc, scopes_never_widen_past_strict);
  tcase_add_test(tc, gpus_inside_one_nvlink_clique);
  tcase_add_test(tc, packing_leaves_more_whole_nodes_than_first_fit);
  tcase_add_test(tc, fragmentation_index);
  tcase_add_test(tc, attempts_in_order_with_named_limits);
  tcase_add_test(tc, speed_aware_type_choice);
  suite_add_tcase(s, tc);
  return s;
}
