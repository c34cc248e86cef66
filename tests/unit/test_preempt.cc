// preempt/mlsched's policy: every rule of who may preempt whom (each refusal seen
// by name), which running jobs are borrowing, the lost-work estimate, and the victim
// set chosen (least lost work, then fewest jobs, only where the preemptor fits).
#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "core/config.h"
#include "core/directives.h"
#include "core/job_record.h"
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

PreemptCandidate victim_reporting(PreemptCandidate v, int64_t reported) {
  v.last_checkpoint = reported;
  return v;
}

// A configuration the parser must accept.
Config accepted(const std::string& text) {
  const auto r = parse_config(text, "mlsched.conf");
  ck_assert_msg(r.config.has_value(), "refused: %s: %s", text.c_str(), r.errors.empty() ? "" : r.errors[0].c_str());
  return *r.config;
}

// The first error of a configuration the parser must refuse.
std::string refused(const std::string& text) {
  const auto r = parse_config(text, "mlsched.conf");
  ck_assert_msg(!r.config.has_value(), "accepted: %s", text.c_str());
  return r.errors.at(0);
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

  // PreemptMaxPerJob counts preemptions (the `preempted=` mark), not requeues.
  v = victim(1, {{"n1", 4}});
  v.times_preempted = 5;
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimPreemptedTooOften");
  v.times_preempted = 4;
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");
  v.has_directives = true;
  v.max_restarts = 20;
  v.restarts = 12;  // 4 preemptions + 8 time-limit or node-failure requeues
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");
  v.times_preempted = 5;
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimPreemptedTooOften");
  // Its own max-restarts counts every requeue: a job that used them up on time
  // limits is not preempted into one more.
  v.times_preempted = 0;
  v.max_restarts = 2;
  v.restarts = 2;
  ck_assert_string_eq(verdict(preemptor(4), v), "VictimOutOfRestarts");
  v.restarts = 1;
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");
  v.has_directives = false;  // no directives: only the admin's cap
  v.restarts = 30;
  ck_assert_string_eq(verdict(preemptor(4), v), "Allowed");

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

START_TEST(a_reported_checkpoint_only_ever_lowers_lost_work) {
  // Started an hour ago, declared a 900 s interval: 4 x 900 without a report.
  auto v = victim(1, {{"n1", 4}});
  v.checkpoint_interval = 900;
  v.last_checkpoint.reset();
  const double silent = lost_work(v, kNow);
  ck_assert_double_eq(silent, 4.0 * 900);
  v.last_checkpoint = kNow - 60;  // a fresh report counts from there
  ck_assert_double_eq(lost_work(v, kNow), 4.0 * 60);
  v.last_checkpoint = kNow - 3000;  // an old one is still bounded by the interval
  ck_assert_double_eq(lost_work(v, kNow), silent);
  v.last_checkpoint = kNow + 5000;  // from the future: as if just now
  ck_assert_double_eq(lost_work(v, kNow), 0.0);
  v.last_checkpoint = kNow - 3601;  // before this run started: ignored
  ck_assert_double_eq(lost_work(v, kNow), silent);
  // Without a declared interval the start bounds it: 4 x 3600.
  v.checkpoint_interval = 0;
  v.last_checkpoint.reset();
  const double silent_no_interval = lost_work(v, kNow);
  for (int64_t reported : {kNow - 7200, kNow - 3600, kNow - 1800, kNow, kNow + 10})
    ck_assert(lost_work(victim_reporting(v, reported), kNow) <= silent_no_interval);
  // So the victim choice prefers the job that reported a fresh checkpoint.
  auto silent_job = victim(1, {{"n1", 4}});
  silent_job.checkpoint_interval = 900;
  silent_job.last_checkpoint.reset();
  auto reporter = victim(2, {{"n2", 4}});
  reporter.checkpoint_interval = 900;
  reporter.last_checkpoint = kNow - 30;
  assert_victims(choose_victims(preemptor(4), {silent_job, reporter}, {node("n1", "a100", 0), node("n2", "a100", 0)}, kNow),
                 {2});
  reporter.last_checkpoint = kNow - 4000;  // its report predates its run: no better than silence, lower id wins
  assert_victims(choose_victims(preemptor(4), {silent_job, reporter}, {node("n1", "a100", 0), node("n2", "a100", 0)}, kNow),
                 {1});
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
  ck_assert_contains(refused("PreemptMinRunTime=soon\n"), "mlsched.conf:1: PreemptMinRunTime=soon is not a duration");
  ck_assert_contains(refused("PreemptMaxPerJob=-1\n"), "PreemptMaxPerJob=-1 is not a whole number");
}
END_TEST

START_TEST(large_gang_that_waited_too_long_reclaims_borrowed_gpus) {
  Config config = base_config();
  config.preempt_for_large_gang_gpus = 16;
  config.preempt_for_large_gang_wait = 3600;
  auto verdict = [&](const Preemptor& p, const PreemptCandidate& v) {
    return std::string(verdict_name(may_preempt(p, v, config, kNow)));
  };
  // A 16-GPU gang of a team beyond its quota, eligible for exactly the threshold.
  auto gang = preemptor(16);
  gang.borrowing = true;
  gang.eligible_since = kNow - 3600;
  ck_assert(starving_large_gang(gang, config, kNow));
  ck_assert_string_eq(verdict(gang, victim(1, {{"n1", 8}})), "Allowed");
  // Still only other teams' borrowed, preemptible GPUs.
  auto v = victim(1, {{"n1", 8}});
  v.borrowing = false;
  ck_assert_string_eq(verdict(gang, v), "VictimWithinQuota");
  v = victim(1, {{"n1", 8}});
  v.team = "vision";
  ck_assert_string_eq(verdict(gang, v), "SameTeam");
  v = victim(1, {{"n1", 8}});
  v.preemptible = false;
  ck_assert_string_eq(verdict(gang, v), "VictimNotPreemptible");
  v = victim(1, {{"n1", 8}});
  v.start_time = kNow - 10;
  ck_assert_string_eq(verdict(gang, v), "VictimTooYoung");
  // One second short of the wait, one GPU short of the size, not yet eligible, or
  // the rule turned off: the normal rule holds.
  gang.eligible_since = kNow - 3599;
  ck_assert(!starving_large_gang(gang, config, kNow));
  ck_assert_string_eq(verdict(gang, victim(1, {{"n1", 8}})), "PreemptorBorrowing");
  gang.eligible_since = kNow - 3600;
  gang.gpus = 15;
  ck_assert_string_eq(verdict(gang, victim(1, {{"n1", 8}})), "PreemptorBorrowing");
  gang.gpus = 16;
  gang.eligible_since = 0;
  ck_assert_string_eq(verdict(gang, victim(1, {{"n1", 8}})), "PreemptorBorrowing");
  gang.eligible_since = kNow + 60;  // --begin in the future
  ck_assert(!starving_large_gang(gang, config, kNow));
  gang.eligible_since = kNow - 7200;
  config.preempt_for_large_gang_gpus = 0;
  ck_assert_string_eq(verdict(gang, victim(1, {{"n1", 8}})), "PreemptorBorrowing");
}
END_TEST

START_TEST(large_gang_config_keys_are_typed) {
  Config defaults;
  ck_assert_uint_eq(defaults.preempt_for_large_gang_gpus, 16);
  ck_assert_uint_eq(defaults.preempt_for_large_gang_wait, 7200);
  auto r = parse_config("PreemptForLargeGangGpus=32\nPreemptForLargeGangWait=90m\n", "mlsched.conf");
  ck_assert_msg(r.config.has_value(), "%s", r.errors.empty() ? "" : r.errors[0].c_str());
  ck_assert_uint_eq(r.config->preempt_for_large_gang_gpus, 32);
  ck_assert_uint_eq(r.config->preempt_for_large_gang_wait, 5400);
  ck_assert_contains(refused("PreemptForLargeGangWait=later\n"), "PreemptForLargeGangWait=later is not a duration");
  ck_assert_contains(refused("PreemptForLargeGangGpus=many\n"), "PreemptForLargeGangGpus=many is not a whole number");
}
END_TEST

// PreemptForAttainedService: inside a team, a job in a lower attained-service level
// takes GPUs from a running job in a higher one (its earlier runs and this run
// counted), with every other rule still applying; never across teams.
START_TEST(attained_service_preempts_within_a_team_by_level) {
  Config config = base_config();
  config.attained_service.all = true;
  config.attained_service_thresholds = {3600, 36000};  // GPU-seconds
  config.attained_service_promote_after = 7200;
  config.preempt_for_attained_service = true;
  auto verdict = [&](const Preemptor& p, const PreemptCandidate& v) {
    return std::string(verdict_name(may_preempt(p, v, config, kNow)));
  };
  auto fresh = preemptor(4);
  fresh.team = "nlp";
  fresh.queued_since = kNow - 60;
  fresh.borrowing = true;  // beyond nlp's guarantee: within the team that does not matter
  // 4 GPUs for an hour = 14,400 GPU-seconds: level 1. The fresh job is level 0.
  auto v = victim(1, {{"n1", 4}});
  v.borrowing = false;
  ck_assert_int_eq(running_attained_level(v, config, kNow), 1);
  ck_assert_int_eq(waiting_attained_level(fresh, config, kNow), 0);
  ck_assert_string_eq(verdict(fresh, v), "Allowed");
  // One GPU-second short of the first threshold: same level, no preemption.
  v.start_time = kNow - 899;
  v.gpus_on_node = {{"n1", 4}};
  ck_assert_int_eq(running_attained_level(v, config, kNow), 0);
  ck_assert_string_eq(verdict(fresh, v), "VictimNotHigherAttainedLevel");
  // Earlier runs count for the victim...
  v.attained_gpu_seconds = 4;
  ck_assert_int_eq(running_attained_level(v, config, kNow), 1);
  v.start_time = kNow - 3600;  // (old enough for PreemptMinRunTime below)
  // ... and for the preemptor: a requeued job of level 1 does not pass another level-1 job.
  auto requeued = fresh;
  requeued.attained_gpu_seconds = 5000;
  ck_assert_string_eq(verdict(requeued, v), "VictimNotHigherAttainedLevel");
  // until it has waited AttainedServicePromoteAfter: promoted to level 0.
  requeued.queued_since = kNow - 7200;
  ck_assert_int_eq(waiting_attained_level(requeued, config, kNow), 0);
  ck_assert_string_eq(verdict(requeued, v), "Allowed");
  // A running job is never promoted, however long ago it was queued.
  v.attained_gpu_seconds = 40000;
  ck_assert_int_eq(running_attained_level(v, config, kNow), 2);
  v.attained_gpu_seconds = 0;
  // The other rules still hold.
  auto w = v;
  w.preemptible = false;
  ck_assert_string_eq(verdict(fresh, w), "VictimNotPreemptible");
  w = v;
  w.start_time = kNow - 299;
  w.attained_gpu_seconds = 100000;
  ck_assert_string_eq(verdict(fresh, w), "VictimTooYoung");
  w = v;
  w.times_preempted = 5;
  ck_assert_string_eq(verdict(fresh, w), "VictimPreemptedTooOften");
  auto wants_h100 = fresh;
  wants_h100.gpu_type = "h100";
  ck_assert_string_eq(verdict(wants_h100, v), "NoUsefulGpus");
  // Across teams nothing changes: a level-2 job of a team within its guarantee stays.
  auto other = v;
  other.team = "research";
  other.attained_gpu_seconds = 100000;
  auto within = fresh;
  within.borrowing = false;
  ck_assert_string_eq(verdict(within, other), "VictimWithinQuota");
  ck_assert_string_eq(verdict(fresh, other), "PreemptorBorrowing");
  // Where attained service does not apply, or the lever is off: SameTeam.
  config.attained_service.all = false;
  config.attained_service.teams = {"vision"};
  ck_assert_int_eq(running_attained_level(v, config, kNow), -1);
  ck_assert_string_eq(verdict(fresh, v), "SameTeam");
  config.attained_service.all = true;
  config.preempt_for_attained_service = false;
  ck_assert_string_eq(verdict(fresh, v), "SameTeam");
}
END_TEST

// PreemptForNonPreemptible: a non-preemptible job takes a preemptible (best-effort)
// job's GPUs as stock Slurm's QOS preemption of a scavenger QOS would, but never
// from a team within its guarantee, and across teams only while the victim's team
// stays at least as far beyond its guarantee as the preemptor's after the swap.
START_TEST(non_preemptible_job_displaces_best_effort_only_where_fair_share_holds) {
  Config config = base_config();
  config.preempt_for_non_preemptible = true;
  // GPUs beyond the guarantee, by team, on a100: vision 2, nlp 6.
  std::map<std::string, int64_t> beyond_now = {{"vision", 2}, {"nlp", 6}};
  const BeyondGuaranteeOf beyond = [&](const std::string& team, const std::string& type) -> int64_t {
    ck_assert_str_eq(type.c_str(), "a100");  // counted on the victim's type
    auto it = beyond_now.find(team);
    return it == beyond_now.end() ? 0 : it->second;
  };
  auto verdict = [&](const Preemptor& p, const PreemptCandidate& v) {
    return std::string(verdict_name(may_preempt(p, v, config, kNow, beyond)));
  };
  auto normal = preemptor(1);
  normal.preemptible = false;
  normal.borrowing = true;  // vision is beyond its guarantee already
  // After the swap vision holds 3 beyond, nlp 5: allowed.
  ck_assert(swap_keeps_fair_share(normal, victim(1, {{"n1", 1}}), beyond));
  ck_assert_string_eq(verdict(normal, victim(1, {{"n1", 1}})), "Allowed");
  // Equal afterwards (vision 2+2 = 4, nlp 6-2 = 4) still holds...
  normal.gpus = 2;
  ck_assert_string_eq(verdict(normal, victim(1, {{"n1", 2}})), "Allowed");
  // ...one more GPU would leave vision further beyond than nlp: refused.
  normal.gpus = 3;
  ck_assert_string_eq(verdict(normal, victim(1, {{"n1", 3}})), "VictimTeamNotFurtherBeyondGuarantee");
  normal.gpus = 1;
  // A team within its guarantee is never preempted this way.
  auto inside = victim(1, {{"n1", 1}});
  inside.borrowing = false;
  ck_assert_string_eq(verdict(normal, inside), "VictimWithinQuota");
  // A preemptible preemptor gains nothing from the lever.
  auto best_effort = normal;
  best_effort.preemptible = true;
  ck_assert_string_eq(verdict(best_effort, victim(1, {{"n1", 1}})), "PreemptorBorrowing");
  // Nor does any preemptor when the lever is off, or without team standings.
  config.preempt_for_non_preemptible = false;
  ck_assert_string_eq(verdict(normal, victim(1, {{"n1", 1}})), "PreemptorBorrowing");
  config.preempt_for_non_preemptible = true;
  ck_assert_string_eq(std::string(verdict_name(may_preempt(normal, victim(1, {{"n1", 1}}), config, kNow))),
                      "VictimTeamNotFurtherBeyondGuarantee");
  // Within a team the GPUs stay the team's: allowed whatever the standings, and a
  // non-preemptible victim is still refused.
  auto teammate = victim(1, {{"n1", 1}});
  teammate.team = "vision";
  teammate.borrowing = false;
  ck_assert_string_eq(verdict(normal, teammate), "Allowed");
  teammate.preemptible = false;
  ck_assert_string_eq(verdict(normal, teammate), "VictimNotPreemptible");
  // The rules every preemption keeps still hold.
  auto young = victim(1, {{"n1", 1}});
  young.start_time = kNow - 299;
  ck_assert_string_eq(verdict(normal, young), "VictimTooYoung");
  auto often = victim(1, {{"n1", 1}});
  often.times_preempted = 5;
  ck_assert_string_eq(verdict(normal, often), "VictimPreemptedTooOften");
  auto wants_h100 = normal;
  wants_h100.gpu_type = "h100";
  ck_assert_string_eq(verdict(wants_h100, victim(1, {{"n1", 1}})), "NoUsefulGpus");
  // A preemptor within its guarantee reclaims as before, standings or not.
  normal.borrowing = false;
  beyond_now["nlp"] = -4;
  auto odd = victim(1, {{"n1", 1}});  // marked borrowing by start order
  ck_assert_string_eq(verdict(normal, odd), "Allowed");
}
END_TEST

START_TEST(non_preemptible_preemption_key_is_typed) {
  Config defaults;
  ck_assert(!defaults.preempt_for_non_preemptible);
  ck_assert(accepted("PreemptForNonPreemptible=yes\n").preempt_for_non_preemptible);
  ck_assert_contains(refused("PreemptForNonPreemptible=sometimes\n"),
                     "mlsched.conf:1: PreemptForNonPreemptible=sometimes must be yes or no");
}
END_TEST

START_TEST(attained_service_preemption_key_needs_its_levels) {
  Config defaults;
  ck_assert(!defaults.preempt_for_attained_service);
  ck_assert(accepted("PreemptForAttainedService=yes\nAttainedService=team:nlp\n").preempt_for_attained_service);
  ck_assert(!accepted("PreemptForAttainedService=no\n").preempt_for_attained_service);
  ck_assert_contains(refused("# levers\nPreemptForAttainedService=yes\n"),
                     "mlsched.conf:2: PreemptForAttainedService=yes needs AttainedService=");
  ck_assert_contains(refused("PreemptForAttainedService=maybe\nAttainedService=all\n"),
                     "mlsched.conf:1: PreemptForAttainedService=maybe must be yes or no");
}
END_TEST

START_TEST(borrowing_mark_is_the_source_of_truth_under_priority_mlsched) {
  // priority/mlsched loaded: its mark decides, whatever the estimate says.
  auto d = decide_borrowing(std::string("yes"), true, false);
  ck_assert(d.borrowing && d.source == BorrowingSource::mark);
  d = decide_borrowing(std::string("no"), true, true);
  ck_assert(!d.borrowing && d.source == BorrowingSource::mark);
  // Not marked yet (or a mark it would never write): left alone.
  d = decide_borrowing(std::nullopt, true, true);
  ck_assert(!d.borrowing && d.source == BorrowingSource::not_marked_yet);
  d = decide_borrowing(std::string("maybe"), true, true);
  ck_assert(!d.borrowing && d.source == BorrowingSource::not_marked_yet);
  // Another priority plugin: no marks are kept, a leftover one is stale; the
  // estimate (mark_borrowing) decides.
  d = decide_borrowing(std::nullopt, false, true);
  ck_assert(d.borrowing && d.source == BorrowingSource::estimate);
  d = decide_borrowing(std::string("yes"), false, false);
  ck_assert(!d.borrowing && d.source == BorrowingSource::estimate);
  ck_assert_str_eq(borrowing_source_name(BorrowingSource::estimate), "preempt/mlsched's estimate");
}
END_TEST

START_TEST(preemption_history_is_kept_beside_the_directives) {
  const std::string stored = "mlsched: type=training gpu-type=a100 checkpoint-interval=600 borrowing=yes; site note";
  ck_assert_uint_eq(preemption_history(stored).times, 0);
  std::string once = with_preemption_recorded(stored, 812, kNow, 1234.4);
  auto h = preemption_history(once);
  ck_assert_uint_eq(h.times, 1);
  ck_assert_int_eq(h.last_at, kNow);
  ck_assert_uint_eq(h.last_by, 812);
  ck_assert_double_eq(h.lost_gpu_seconds, 1234);
  // The directives, the borrowing mark and the admin's note are untouched.
  auto d = parse_stored_directives(once);
  ck_assert(d.has_value());
  ck_assert_uint_eq(d->checkpoint_interval, 600);
  ck_assert_string_eq(stored_token(once, "borrowing").value(), "yes");
  ck_assert_contains(once, "; site note");
  ck_assert_contains(once, "preempted=1 preempted-at=");
  ck_assert_contains(once, "preempted-by=812 lost-gpu-seconds=1234");
  // A second preemption counts up, replaces when/by whom, and sums the lost work.
  std::string twice = with_preemption_recorded(once, 900, kNow + 600, 100);
  h = preemption_history(twice);
  ck_assert_uint_eq(h.times, 2);
  ck_assert_int_eq(h.last_at, kNow + 600);
  ck_assert_uint_eq(h.last_by, 900);
  ck_assert_double_eq(h.lost_gpu_seconds, 1334);
  ck_assert_uint_eq(std::count(twice.begin(), twice.end(), '='), std::count(once.begin(), once.end(), '='));
  // A job without directives gets an mlsched part that still reads as "no directives".
  std::string plain = with_preemption_recorded("", 0, kNow, 0);
  ck_assert(!parse_stored_directives(plain).has_value());
  ck_assert_uint_eq(preemption_history(plain).times, 1);
  // The preemptor unknown (0): no preempted-by token.
  ck_assert(!stored_token(plain, "preempted-by").has_value());
}
END_TEST

// When a job was last preempted means the same to slurmctld and to a login node
// in another time zone: written under one TZ, read under another.
START_TEST(preemption_time_reads_the_same_in_any_time_zone) {
  const char* old_tz = getenv("TZ");
  const std::string saved = old_tz ? old_tz : "";
  setenv("TZ", "UTC", 1);
  tzset();
  const int64_t at = 1764770000;
  const std::string text = with_preemption_recorded("mlsched: type=training", 812, at, 10);
  setenv("TZ", "America/New_York", 1);
  tzset();
  const int64_t read = preemption_history(text).last_at;
  if (old_tz) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
  ck_assert_int_eq(read, at);
}
END_TEST

// ==== reservations for large gangs ===============================================

// A 16-GPU gang of team vision, borrowing, that reserved gpu[1-2] ten minutes ago.
Preemptor reserving_gang() {
  Preemptor p = preemptor(16);
  p.borrowing = true;
  p.preemptible = false;
  p.eligible_since = kNow - 3600;
  GangReservation r;
  r.job_id = p.job_id;
  r.nodes = {"gpu1", "gpu2"};
  r.since = kNow - 600;
  p.reservation = r;
  return p;
}

// A preemptible 1-GPU job of team nlp, inside its guarantee, started a minute ago on `node`.
PreemptCandidate lent_job(uint32_t id, const std::string& node) {
  PreemptCandidate v = victim(id, {{node, 1}});
  v.borrowing = false;
  v.start_time = kNow - 60;
  v.has_directives = true;
  v.max_restarts = 3;
  return v;
}

START_TEST(jobs_lent_reserved_gpus_give_them_back_to_the_gang) {
  const Config c = base_config();
  const Preemptor gang = reserving_gang();
  // Lent: whatever its team's standing (inside its guarantee) and its run time (a minute).
  ck_assert_str_eq(verdict_name(may_preempt(gang, lent_job(7, "gpu1"), c, kNow)), "Allowed");
  // The same job without the reservation: the gang would borrow, so it has no claim.
  Preemptor plain = gang;
  plain.reservation.reset();
  ck_assert_str_eq(verdict_name(may_preempt(plain, lent_job(7, "gpu1"), c, kNow)), "PreemptorBorrowing");
  // Not lent: it runs outside the unit...
  ck_assert_str_eq(verdict_name(may_preempt(gang, lent_job(8, "gpu3"), c, kNow)), "PreemptorBorrowing");
  // ...or started before the gang reserved the unit (the usual rules apply to it)...
  PreemptCandidate before = lent_job(9, "gpu2");
  before.start_time = kNow - 700;
  ck_assert_str_eq(verdict_name(may_preempt(gang, before, c, kNow)), "PreemptorBorrowing");
  // ...or it is not preemptible (select/mlsched keeps such jobs off the unit).
  PreemptCandidate firm = lent_job(10, "gpu1");
  firm.preemptible = false;
  ck_assert_str_eq(verdict_name(may_preempt(gang, firm, c, kNow)), "VictimNotPreemptible");
  // A job with no requeue left, or preempted PreemptMaxPerJob times, cannot give GPUs
  // back: it is never lent them, and the gang does not count on it.
  PreemptCandidate spent = lent_job(11, "gpu1");
  spent.restarts = 3;
  ck_assert(!may_borrow_reserved_gpus(spent, c));
  ck_assert(!lent_reserved_gpus(*gang.reservation, spent, c));
  PreemptCandidate often = lent_job(12, "gpu1");
  often.times_preempted = 5;
  ck_assert(!may_borrow_reserved_gpus(often, c));
  ck_assert(may_borrow_reserved_gpus(lent_job(13, "gpu1"), c));
  // The gang is never its own lent job.
  PreemptCandidate self = lent_job(100, "gpu1");
  ck_assert(!lent_reserved_gpus(*gang.reservation, self, c));
}
END_TEST

// A gang reserved two 8-GPU nodes at kNow - 600. Jobs that were there then and keep
// their GPUs end at +600 s (8 GPUs), +1200 s (4) and +1800 s (2); a lent job holds the
// other 2.
START_TEST(a_job_that_ends_before_the_unit_can_hold_the_gang_may_run_there) {
  const int64_t kSince = kNow - 600, kBefore = kNow - 900;
  const std::vector<UnitHolder> held = {
      {2, kBefore, kNow + 1800, false}, {8, kBefore, kNow + 600, false}, {4, kBefore, kNow + 1200, false},
      {2, kNow - 60, kNow + 7200, true}};
  // A 16-GPU gang needs all three gone: the last ends at +1800. The lent job's end
  // does not count (the gang takes its GPUs back).
  ck_assert_int_eq(reserved_unit_ready(16, 16, kSince, held, kNow), kNow + 1800);
  // A 12-GPU gang needs the first two gone (2 + 8 + 4 free at +1200)...
  ck_assert_int_eq(reserved_unit_ready(12, 16, kSince, held, kNow), kNow + 1200);
  // ...a 4-GPU one only the first (2 + 8 at +600)...
  ck_assert_int_eq(reserved_unit_ready(4, 16, kSince, held, kNow), kNow + 600);
  // ...and a 2-GPU one has room now: nothing may run there before it.
  ck_assert_int_eq(reserved_unit_ready(2, 16, kSince, held, kNow), kNow);
  ck_assert_int_eq(reserved_unit_ready(16, 16, kSince, {}, kNow), kNow);
  // A node down (only 8 usable GPUs for 16), or a job it waits for without an end: unknown.
  ck_assert_int_eq(reserved_unit_ready(16, 8, kSince, held, kNow), kNow);
  const std::vector<UnitHolder> endless = {{8, kBefore, kNow + 600, false}, {8, kBefore, 0, false}};
  ck_assert_int_eq(reserved_unit_ready(16, 16, kSince, endless, kNow), kNow);
  // ...but one without an end that the gang need not wait for changes nothing.
  const std::vector<UnitHolder> aside = {{8, kBefore, kNow + 600, false}, {4, kBefore, 0, false}};
  ck_assert_int_eq(reserved_unit_ready(8, 16, kSince, aside, kNow), kNow + 600);

  // A non-preemptible job with a 10-minute limit fits before +1800 (and ends by it exactly
  // from +1200); one with 30 minutes, or none, does not.
  const int64_t ready = reserved_unit_ready(16, 16, kSince, held, kNow);
  ck_assert(ends_before_unit_ready(kNow, 600, ready));
  ck_assert(ends_before_unit_ready(kNow + 1200, 600, ready));
  ck_assert(!ends_before_unit_ready(kNow + 1201, 600, ready));
  ck_assert(!ends_before_unit_ready(kNow, 1801, ready));
  ck_assert(!ends_before_unit_ready(kNow, 0, ready));
  ck_assert(!ends_before_unit_ready(kNow, 60, reserved_unit_ready(2, 16, kSince, held, kNow)));

  // A job let in after the reservation (its limit ended by then) is not waited for:
  // with the 2-GPU job that ends at +1800 gone, a later one holding GPUs until +1700
  // does not move the time on, so no shorter job is let in behind it.
  const std::vector<UnitHolder> chain = {
      {8, kBefore, kNow + 600, false}, {4, kBefore, kNow + 1200, false}, {2, kNow - 60, kNow + 1700, false}};
  ck_assert_int_eq(reserved_unit_ready(16, 16, kSince, chain, kNow), kNow + 1200);
}
END_TEST

START_TEST(a_large_gang_reserves_after_its_wait) {
  Config c = base_config();
  ck_assert_int_eq(c.reserve_for_gang_gpus, 0);  // off by default
  ck_assert(!may_reserve_for_gang(32, kNow - 86400, c, kNow));
  c = accepted("ReserveForGangGpus=16\nReserveForGangWait=5m\n");
  ck_assert_int_eq(c.reserve_for_gang_gpus, 16);
  ck_assert_int_eq(c.reserve_for_gang_wait, 300);
  ck_assert(may_reserve_for_gang(16, kNow - 300, c, kNow));
  ck_assert(!may_reserve_for_gang(16, kNow - 299, c, kNow));   // not waited long enough
  ck_assert(!may_reserve_for_gang(8, kNow - 3600, c, kNow));   // not a large gang
  ck_assert(!may_reserve_for_gang(16, 0, c, kNow));            // eligible since: unknown
  ck_assert_contains(refused("ReserveForGangWait=soon\n"), "mlsched.conf:1: ReserveForGangWait=soon is not a duration");
  ck_assert_contains(refused("ReserveForGangGpus=big\n"), "ReserveForGangGpus=big is not a whole number");
}
END_TEST

START_TEST(a_reservation_lives_on_the_gangs_record) {
  GangReservation r;
  r.job_id = 812;
  r.nodes = {"gpu01", "gpu02"};
  r.since = 1764770000;
  const std::string text = with_reservation_recorded("mlsched: type=training; site note", r);
  ck_assert_str_eq(text.c_str(),
                   "mlsched: type=training reserved-nodes=gpu[01-02] reserved-since=1764770000; site note");
  const auto back = reservation_of(812, decode_job_record(text).marks);
  ck_assert(back.has_value());
  ck_assert_int_eq(back->nodes.size(), 2);
  ck_assert_str_eq(back->nodes[1].c_str(), "gpu02");
  ck_assert_int_eq(back->since, r.since);
  // Removed again: the record is as it was.
  const std::string removed = with_reservation_recorded(text, std::nullopt);
  ck_assert_str_eq(removed.c_str(), "mlsched: type=training; site note");
  ck_assert(!reservation_of(812, decode_job_record("mlsched: type=training").marks));
  // Half a reservation is none.
  ck_assert(!reservation_of(812, decode_job_record("mlsched: reserved-nodes=gpu01").marks));
}
END_TEST

Suite* preempt_suite() {
  Suite* s = suite_create("preempt");
  TCase* rules = tcase_create("rules");
  tcase_add_test(rules, within_quota_job_may_reclaim_from_borrowing_job_of_other_team);
  tcase_add_test(rules, every_refusal_has_its_reason);
  tcase_add_test(rules, borrowing_is_what_does_not_fit_the_guarantee_in_start_order);
  tcase_add_test(rules, preempt_config_keys_are_typed);
  tcase_add_test(rules, large_gang_that_waited_too_long_reclaims_borrowed_gpus);
  tcase_add_test(rules, large_gang_config_keys_are_typed);
  tcase_add_test(rules, jobs_lent_reserved_gpus_give_them_back_to_the_gang);
  tcase_add_test(rules, a_large_gang_reserves_after_its_wait);
  tcase_add_test(rules, a_job_that_ends_before_the_unit_can_hold_the_gang_may_run_there);
  tcase_add_test(rules, a_reservation_lives_on_the_gangs_record);
  tcase_add_test(rules, attained_service_preempts_within_a_team_by_level);
  tcase_add_test(rules, attained_service_preemption_key_needs_its_levels);
  tcase_add_test(rules, non_preemptible_job_displaces_best_effort_only_where_fair_share_holds);
  tcase_add_test(rules, non_preemptible_preemption_key_is_typed);
  tcase_add_test(rules, borrowing_mark_is_the_source_of_truth_under_priority_mlsched);
  tcase_add_test(rules, preemption_history_is_kept_beside_the_directives);
  tcase_add_test(rules, preemption_time_reads_the_same_in_any_time_zone);
  suite_add_tcase(s, rules);
  TCase* choice = tcase_create("choice");
  tcase_add_test(choice, lost_work_counts_from_last_checkpoint_bounded_by_interval);
  tcase_add_test(choice, a_reported_checkpoint_only_ever_lowers_lost_work);
  tcase_add_test(choice, chosen_set_loses_least_work);
  tcase_add_test(choice, equal_lost_work_prefers_fewer_jobs);
  tcase_add_test(choice, free_gpus_count_before_any_victim);
  tcase_add_test(choice, victims_only_where_the_preemptor_can_be_placed);
  tcase_add_test(choice, nvlink_domain_preemptor_frees_one_domain);
  tcase_add_test(choice, no_set_when_nothing_can_free_enough);
  suite_add_tcase(s, choice);
  return s;
}
