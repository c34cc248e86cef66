// preempt/mlsched's policy: every rule of who may preempt whom (each refusal seen
// by name), which running jobs are borrowing, the lost-work estimate, and the victim
// set chosen (least lost work, then fewest jobs, only where the preemptor fits).
#include "core/config.h"
#include "core/preempt.h"
#include "suites.h"

using namespace mlsched;

namespace {

constexpr int64_t kNow = 1700000000;  // the clock is injected

Config base_config() {
  Config c;
  c.preempt_min_run_time = 300;
  c.preempt_max_per_job = 5;
  return c;
}

// A borrowing, preemptible job of team nlp that started an hour ago.
PreemptCandidate victim(uint32_t id, std::map<std::string, uint32_t> gpus_on_node, int64_t since_checkpoint = 600) {
  PreemptCandidate v;
  v.job_id = id;
  v.team = "nlp";
  v.gpu_type = "a100";
  v.gpus_on_node = std::move(gpus_on_node);
  v.start_time = kNow - 3600;
  v.borrowing = true;
  v.last_checkpoint = kNow - since_checkpoint;
  return v;
}

Preemptor preemptor(uint32_t gpus, const std::string& type = "a100") {
  Preemptor p;
  p.job_id = 100;
  p.team = "vision";
  p.gpu_type = type;
  p.gpus = gpus;
  return p;
}

PreemptNode node(const std::string& name, const std::string& type, uint32_t free_gpus, const std::string& domain = "") {
  return PreemptNode{name, type, domain, free_gpus};
}

void assert_victims(const VictimChoice& c, const std::vector<uint32_t>& want) {
  ck_assert_msg(c.found, "no victim set: %s", c.reason.c_str());
  std::string got, expected;
  for (auto id : c.victims) got += std::to_string(id) + " ";
  for (auto id : want) expected += std::to_string(id) + " ";
  ck_assert_msg(got == expected, "victims [%s], expected [%s]", got.c_str(), expected.c_str());
}

}  // namespace

START_TEST(within_quota_job_may_reclaim_from_borrowing_job_of_other_team) {
  ck_assert_int_eq(static_cast<int>(may_preempt(preemptor(4), victim(1, {{"n1", 4}}), base_config(), kNow)),
                   static_cast<int>(PreemptVerdict::allowed));
}
END_TEST

START_TEST(every_refusal_has_its_reason) {
  const Config config = base_config();
  auto verdict = [&](const Preemptor& p, const PreemptCandidate& v) { return std::string(verdict_name(may_preempt(p, v, config, kNow))); };

  auto v = victim(1, {{"n1", 4}});
  v.preemptible = false;
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimNotPreemptible");

  auto over = preemptor(4);
  over.borrowing = true;  // an over-quota team never preempts, not even borrowers
  ck_assert_string_eq(verdict(over, victim(1, {{"n1", 4}})), "PreemptorBorrowing");

  v = victim(1, {{"n1", 4}});
  v.borrowing = false;  // within its own team's quota
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimWithinQuota");

  v = victim(1, {{"n1", 4}});
  v.team = "vision";
  ck_assert_string_eq(verdict(preemptor(4), v), "SameTeam");

  v = victim(1, {{"n1", 4}});
  v.start_time = kNow - 299;  // one second short of PreemptMinRunTime
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimTooYoung");
  v.start_time = kNow - 300;
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");

  v = victim(1, {{"n1", 4}});
  v.times_preempted = 5;  // PreemptMaxPerJob
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimPreemptedTooOften");
  v.times_preempted = 4;
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");
  v.has_directives = true;  // its own max-restarts is lower than the admin's cap
  v.max_restarts = 2;
  v.times_preempted = 2;
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimPreemptedTooOften");

  v = victim(1, {{"n1", 4}});
  ck_assert_string_eq(verdict(preemptor(4, "h100"), v), "NoUsefulGpus");
  ck_assert_string_eq(verdict(preemptor(4, ""), v), "Allowed");  // an untyped job can use any type

  auto self = preemptor(4);
  self.job_id = 1;
  ck_assert_string_eq(verdict(self, victim(1, {{"n1", 4}})), "SameJob");
}
END_TEST

START_TEST(borrowing_is_what_does_not_fit_the_guarantee_in_start_order) {
  std::vector<PreemptCandidate> running = {victim(3, {{"n1", 4}}), victim(1, {{"n1", 4}}), victim(2, {{"n2", 2}})};
  running[0].start_time = kNow - 100;  // newest
  running[1].start_time = kNow - 300;  // oldest
  running[2].start_time = kNow - 200;
  for (auto& r : running) r.borrowing = false;
  mark_borrowing(running, [](const std::string& team, const std::string& type) { return team == "nlp" ? 6u : 0u; });
  // 1 (4 GPUs) and 2 (2 GPUs) fill nlp's 6; 3 came last and is beyond it.
  ck_assert(!running[1].borrowing);
  ck_assert(!running[2].borrowing);
  ck_assert(running[0].borrowing);
}
END_TEST

START_TEST(lost_work_counts_from_last_checkpoint_bounded_by_interval) {
  auto v = victim(1, {{"n1", 4}}, 600);
  ck_assert_double_eq(lost_work(v, kNow), 4.0 * 600);
  v.last_checkpoint.reset();  // nothing reported: since start (an hour ago)
  ck_assert_double_eq(lost_work(v, kNow), 4.0 * 3600);
  v.checkpoint_interval = 900;  // declared: at most one interval lost
  ck_assert_double_eq(lost_work(v, kNow), 4.0 * 900);
  v.last_checkpoint = kNow - 7200;  // a checkpoint of an earlier run does not count
  ck_assert_double_eq(lost_work(v, kNow), 4.0 * 900);
}
END_TEST

START_TEST(chosen_set_loses_least_work) {
  // 8 a100 on one node, all busy: jobs 1 (4 GPUs, 1000 s since checkpoint),
  // 2 and 3 (2 GPUs each, 100 s and 200 s). A 4-GPU job: {2,3} loses 600
  // GPU-seconds, {1} 4000.
  std::vector<PreemptCandidate> allowed = {victim(1, {{"n1", 4}}, 1000), victim(2, {{"n1", 2}}, 100),
                                           victim(3, {{"n1", 2}}, 200)};
  auto c = choose_victims(preemptor(4), allowed, {node("n1", "a100", 0)}, kNow);
  assert_victims(c, {2, 3});
  ck_assert_double_eq(c.lost_gpu_seconds, 600);
  // The other victims follow in lost-work order for Slurm's select plugin.
  auto order = preemption_order(c, allowed, kNow);
  ck_assert_uint_eq(order[2], 0);
  ck_assert_uint_eq(order[3], 1);
  ck_assert_uint_eq(order[1], 2);
}
END_TEST

START_TEST(equal_lost_work_prefers_fewer_jobs) {
  // {1} and {2,3} both lose 800 GPU-seconds; one job is less disruption.
  std::vector<PreemptCandidate> allowed = {victim(1, {{"n1", 4}}, 200), victim(2, {{"n1", 2}}, 200),
                                           victim(3, {{"n1", 2}}, 200)};
  assert_victims(choose_victims(preemptor(4), allowed, {node("n1", "a100", 0)}, kNow), {1});
}
END_TEST

START_TEST(free_gpus_count_before_any_victim) {
  std::vector<PreemptCandidate> allowed = {victim(1, {{"n1", 4}}, 10), victim(2, {{"n1", 2}}, 5000)};
  // 2 GPUs are free, so only 2 more are needed: job 1 frees them losing 40
  // GPU-seconds, job 2 would lose 10000.
  auto c = choose_victims(preemptor(4), allowed, {node("n1", "a100", 2)}, kNow);
  assert_victims(c, {1});
  auto none = choose_victims(preemptor(2), allowed, {node("n1", "a100", 2)}, kNow);
  ck_assert(none.found);
  ck_assert_uint_eq(none.victims.size(), 0);
}
END_TEST

START_TEST(victims_only_where_the_preemptor_can_be_placed) {
  // Cheap job 1 is on an h100 node; the a100 preemptor cannot use its GPUs.
  std::vector<PreemptCandidate> allowed = {victim(1, {{"h1", 4}}, 10), victim(2, {{"a1", 4}}, 1000)};
  allowed[0].gpu_type = "h100";
  auto c = choose_victims(preemptor(4), allowed, {node("h1", "h100", 0), node("a1", "a100", 0)}, kNow);
  assert_victims(c, {2});
}
END_TEST

START_TEST(nvlink_domain_preemptor_frees_one_domain) {
  // Domain d0 (a1,a2) and d1 (a3,a4), 4 GPUs each node. The cheapest jobs (1, 3)
  // are in different domains; an 8-GPU nvlink-domain job needs both GPUs of one.
  std::vector<PreemptCandidate> allowed = {victim(1, {{"a1", 4}}, 10), victim(2, {{"a2", 4}}, 500),
                                           victim(3, {{"a3", 4}}, 20), victim(4, {{"a4", 4}}, 600)};
  std::vector<PreemptNode> nodes = {node("a1", "a100", 0, "d0"), node("a2", "a100", 0, "d0"),
                                    node("a3", "a100", 0, "d1"), node("a4", "a100", 0, "d1")};
  auto p = preemptor(8);
  p.locality = Locality::nvlink_domain;
  auto c = choose_victims(p, allowed, nodes, kNow);
  assert_victims(c, {1, 2});  // d0: 40+2000 GPU-s beats d1: 80+2400
  ck_assert_string_eq(c.unit, "d0");
  // Without the locality, the two cheapest anywhere do.
  assert_victims(choose_victims(preemptor(8), allowed, nodes, kNow), {1, 3});
}
END_TEST

START_TEST(no_set_when_nothing_can_free_enough) {
  std::vector<PreemptCandidate> allowed = {victim(1, {{"n1", 2}}, 10)};
  auto c = choose_victims(preemptor(8), allowed, {node("n1", "a100", 4), node("n2", "h100", 8)}, kNow);
  ck_assert(!c.found);
  ck_assert_contains(c.reason, "at most 6 free or held by preemptible jobs");
}
END_TEST

START_TEST(preempt_config_keys_are_typed) {
  auto r = parse_config("PreemptMinRunTime=2m\nPreemptMaxPerJob=7\n", "mlsched.conf");
  ck_assert(r.config.has_value());
  ck_assert_uint_eq(r.config->preempt_min_run_time, 120);
  ck_assert_uint_eq(r.config->preempt_max_per_job, 7);
  Config defaults;
  ck_assert_uint_eq(defaults.preempt_min_run_time, 300);
  ck_assert_uint_eq(defaults.preempt_max_per_job, 5);
  auto bad = parse_config("PreemptMinRunTime=soon\n", "mlsched.conf");
  ck_assert(!bad.config.has_value());
  ck_assert_contains(bad.errors.at(0), "mlsched.conf:1: PreemptMinRunTime=soon is not a duration");
  bad = parse_config("PreemptMaxPerJob=-1\n", "mlsched.conf");
  ck_assert(!bad.config.has_value());
  ck_assert_contains(bad.errors.at(0), "PreemptMaxPerJob=-1 is not a whole number");
}
END_TEST

Suite* preempt_suite() {
  Suite* s = suite_create("preempt");
  TCase* rules = tcase_create("rules");
  tcase_add_test(rules, within_quota_job_may_reclaim_from_borrowing_job_of_other_team);
  tcase_add_test(rules, every_refusal_has_its_reason);
  tcase_add_test(rules, borrowing_is_what_does_not_fit_the_guarantee_in_start_order);
  tcase_add_test(rules, preempt_config_keys_are_typed);
  suite_add_tcase(s, rules);
  TCase* choice = tcase_create("choice");
  tcase_add_test(choice, lost_work_counts_from_last_checkpoint_bounded_by_interval);
  tcase_add_test(choice, chosen_set_loses_least_work);
  tcase_add_test(choice, equal_lost_work_prefers_fewer_jobs);
  tcase_add_test(choice, free_gpus_count_before_any_victim);
  tcase_add_test(choice, victims_only_where_the_preemptor_can_be_placed);
  tcase_add_test(choice, nvlink_domain_preemptor_frees_one_domain);
  tcase_add_test(choice, no_set_when_nothing_can_free_enough);
  suite_add_tcase(s, choice);
  return s;
}
