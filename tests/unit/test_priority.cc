// The math of priority/mlsched: GPU-weighted decayed usage, its state file, team
// standing, quotas and borrowing, the priority formula and its starvation bound,
// and the mlsched.conf keys that drive them.
#include <algorithm>
#include <cmath>

#include "core/config.h"
#include "core/directives.h"
#include "core/fairshare.h"
#include "core/priority.h"
#include "core/checkpoint.h"
#include "suites.h"

using namespace mlsched;

namespace {

constexpr int64_t kT0 = 1700000000;  // any fixed "now"; the clock is injected

Config config_from(const std::string& text) {
  auto r = parse_config(text, "mlsched.conf");
  std::string errors;
  for (const auto& e : r.errors) errors += e + "\n";
  ck_assert_msg(r.config.has_value(), "%s", errors.c_str());
  return *r.config;
}

ChargedJob running(uint32_t id, const std::string& team, double weighted, uint32_t gpus, int64_t start) {
  ChargedJob j;
  j.job_id = id;
  j.team = team;
  j.weighted_gpus = weighted;
  j.gpus = gpus;
  j.start_time = start;
  return j;
}

bool near(double a, double b, double tolerance = 1e-6) { return std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(b)); }

}  // namespace

START_TEST(tres_strings_give_gpus_by_type) {
  auto g = gpu_counts_from_tres("cpu=4,mem=8000M,node=1,billing=4,gres/gpu=10,gres/gpu:h100=8");
  ck_assert_int_eq(g.by_type.at("h100"), 8);
  ck_assert_int_eq(g.untyped, 2);
  ck_assert_int_eq(g.total(), 10);
  g = gpu_counts_from_tres("cpu=1,gres/gpu=2");
  ck_assert_int_eq(g.by_type.size(), 0);
  ck_assert_int_eq(g.untyped, 2);
  ck_assert_int_eq(gpu_counts_from_tres("cpu=1,mem=100M").total(), 0);
  ck_assert_int_eq(gpu_counts_from_tres("").total(), 0);
}
END_TEST

START_TEST(usage_is_weighted_by_gpu_type) {
  GpuWeights w;
  w.by_type = {{"h100", 1.0}, {"a100", 0.6}};
  GpuCounts g;
  g.by_type = {{"H100", 2}, {"a100", 10}, {"t4", 1}};
  // h100 2 x 1.0 + a100 10 x 0.6 + t4 unlisted 1 x 1.0
  ck_assert(near(w.weighted(g), 9.0));
}
END_TEST

START_TEST(usage_halves_after_one_half_life) {
  UsageLedger ledger(3600);
  ledger.account(kT0, {running(1, "vision", 8, 8, kT0 - 100)});
  ck_assert(near(ledger.decayed("vision"), 800));
  // The job ended at kT0; an hour later its usage counts half.
  ledger.job_end(running(1, "vision", 8, 8, kT0 - 100), kT0, false);
  ledger.account(kT0 + 3600, {});
  ck_assert(near(ledger.decayed("vision"), 400));
  ck_assert(near(ledger.teams().at("vision").charged_gpu_seconds, 800));
  ck_assert_int_eq(ledger.tracked_jobs(), 0);
}
END_TEST

START_TEST(zero_half_life_never_decays) {
  UsageLedger ledger(0);
  ledger.account(kT0, {running(1, "nlp", 1, 1, kT0 - 10)});
  ledger.account(kT0 + 1000000, {});
  ck_assert(near(ledger.decayed("nlp"), 10));
}
END_TEST

START_TEST(each_second_is_charged_once) {
  UsageLedger ledger(0);
  const auto job = running(7, "nlp", 0.6, 1, kT0);
  for (int64_t t = kT0; t <= kT0 + 100; t += 10) ledger.account(t, {job});
  // Accounting the same moment twice adds nothing.
  ledger.account(kT0 + 100, {job});
  ck_assert(near(ledger.teams().at("nlp").charged_gpu_seconds, 100));
  ck_assert(near(ledger.decayed("nlp"), 60));
  ledger.job_end(job, kT0 + 105, false);
  ck_assert(near(ledger.teams().at("nlp").charged_gpu_seconds, 105));
}
END_TEST

START_TEST(reload_resumes_without_double_counting) {
  UsageLedger before(0);
  const auto job = running(42, "vision", 16, 16, kT0);
  before.account(kT0 + 60, {job});
  std::string error;
  auto after = UsageLedger::parse(before.serialize(), 0, &error);
  ck_assert_msg(after.has_value(), "%s", error.c_str());
  ck_assert_int_eq(*after->charged_through(42), kT0 + 60);
  // The controller was down from +60 to +90: the job still ran, and is charged
  // from where the saved state stopped, not from its start.
  after->account(kT0 + 90, {job});
  ck_assert(near(after->teams().at("vision").charged_gpu_seconds, 90 * 16));
}
END_TEST

START_TEST(work_lost_to_node_failure_is_not_charged) {
  UsageLedger ledger(3600);
  ledger.account(kT0, {running(1, "nlp", 1, 1, kT0 - 100)});
  const auto failed = running(2, "vision", 8, 8, kT0 - 50);
  ledger.account(kT0 + 50, {running(1, "nlp", 1, 1, kT0 - 100), failed});
  ck_assert(ledger.decayed("vision") > 0);
  ledger.job_end(failed, kT0 + 60, true);
  ck_assert(near(ledger.decayed("vision"), 0));
  ck_assert(near(ledger.teams().at("vision").charged_gpu_seconds, 0));
  ck_assert(ledger.decayed("nlp") > 0);
}
END_TEST

START_TEST(a_failed_run_is_charged_up_to_its_last_checkpoint) {
  // 8 GPUs from +0; charged through +100 by passes; its node fails at +110 and its
  // last checkpoint was at +96: the next run resumes from there, so 96 s are kept.
  UsageLedger ledger(0);
  const auto job = running(3, "vision", 8, 8, kT0);
  ledger.account(kT0 + 50, {job});
  ledger.account(kT0 + 100, {job});
  const int64_t kept = work_at_risk_since(kT0, kT0 + 96, 0, kT0 + 110);
  ck_assert_int_eq(kept, kT0 + 96);
  ck_assert(near(ledger.settle_run(job, kT0 + 110, kept), 800));
  ck_assert(near(ledger.teams().at("vision").charged_gpu_seconds, 96 * 8));
  ck_assert(near(ledger.decayed("vision"), 96 * 8));
  // No report but a declared 30 s interval: at most 30 s lost, so charged to +80;
  // past the last pass (+100 -> +130 not yet charged) the kept part is charged too.
  const auto other = running(4, "nlp", 2, 2, kT0);
  ledger.account(kT0 + 100, {other});
  ck_assert_int_eq(work_at_risk_since(kT0, std::nullopt, 30, kT0 + 130), kT0 + 100);
  ledger.settle_run(other, kT0 + 130, work_at_risk_since(kT0, std::nullopt, 30, kT0 + 130));
  ck_assert(near(ledger.teams().at("nlp").charged_gpu_seconds, 100 * 2));
  // Neither: everything since the start was lost, as before.
  const auto third = running(5, "research", 1, 1, kT0);
  ledger.account(kT0 + 100, {third});
  ledger.settle_run(third, kT0 + 120, work_at_risk_since(kT0, std::nullopt, 0, kT0 + 120));
  ck_assert(near(ledger.teams().at("research").charged_gpu_seconds, 0));
  // A report from before this run's start (an earlier allocation's) counts for nothing.
  ck_assert_int_eq(work_at_risk_since(kT0, kT0 - 5, 0, kT0 + 120), kT0);
}
END_TEST

START_TEST(corrupt_state_is_rejected_with_reason) {
  UsageLedger ledger(0);
  ledger.account(kT0, {running(1, "nlp", 1, 1, kT0 - 10)});
  const std::string good = ledger.serialize();
  struct Case {
    std::string text;
    const char* reason;
  } cases[] = {
      {"", "empty file"},
      {"garbage\n", "not an mlsched priority state file"},
      {good.substr(0, good.size() - 4), "truncated"},
      {"mlsched-priority-state 1\nteam nlp -5 3\nend\n", "bad team line"},
      {"mlsched-priority-state 1\nteam nlp nan 3\nend\n", "bad team line"},
      {"mlsched-priority-state 1\nteam nlp 1 1\nteam nlp 1 1\nend\n", "team nlp twice"},
      {"mlsched-priority-state 1\njob 1 nlp x 1 1\nend\n", "bad job line"},
      {"mlsched-priority-state 1\nwhat 1\nend\n", "unknown record 'what'"},
      {"mlsched-priority-state 1\nend\nteam a 1 1\n", "text after 'end'"},
      {"mlsched-priority-state 1\ndecayed_through 5 6\nend\n", "unexpected '6'"},
  };
  for (const auto& c : cases) {
    std::string error;
    ck_assert_msg(!UsageLedger::parse(c.text, 0, &error).has_value(), "accepted: %s", c.text.c_str());
    ck_assert_contains(error, c.reason);
  }
}
END_TEST

START_TEST(damaged_state_never_parses_into_nonsense) {
  // A file cut short anywhere (a crash on a filesystem without atomic rename, a
  // full disk) or with any byte changed: parse() either rejects it with a reason or
  // gives a ledger with finite, non-negative usage; it never throws or crashes.
  UsageLedger ledger(3600);
  ledger.account(kT0, {running(1, "nlp", 1, 1, kT0 - 10), running(22, "vision", 8, 8, kT0 - 300)});
  ledger.job_end(running(1, "nlp", 1, 1, kT0 - 10), kT0, false);
  const std::string good = ledger.serialize();
  for (size_t cut = 0; cut + 1 < good.size(); ++cut) {
    std::string error;
    auto parsed = UsageLedger::parse(good.substr(0, cut), 3600, &error);
    ck_assert_msg(!parsed.has_value(), "accepted a file cut at byte %zu", cut);
    ck_assert_msg(!error.empty(), "no reason for a file cut at byte %zu", cut);
  }
  const char replacements[] = {'\0', 'x', '-', '9', ' ', '\n', '.', 'e', '\xff'};
  int rejected = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    for (char r : replacements) {
      std::string damaged = good;
      damaged[at] = r;
      std::string error;
      auto parsed = UsageLedger::parse(damaged, 3600, &error);
      if (!parsed) {
        ck_assert_msg(!error.empty(), "no reason for byte %zu", at);
        ++rejected;
        continue;
      }
      for (const auto& [team, usage] : parsed->teams()) {
        ck_assert(std::isfinite(usage.decayed) && usage.decayed >= 0);
        ck_assert(std::isfinite(usage.charged_gpu_seconds) && usage.charged_gpu_seconds >= 0);
      }
      ck_assert_int_ge(parsed->decayed_through(), 0);
    }
  }
  ck_assert_int_gt(rejected, 0);
  // Binary junk, a huge number, a different format version.
  const std::string junk[] = {std::string("\x7f" "ELF\x02\x01\x01\0\0", 9), "mlsched-priority-state 2\nend\n",
                              "mlsched-priority-state 1\nteam nlp 1e999 1\nend\n",
                              "mlsched-priority-state 1\njob 99999999999 nlp 1 1 1\nend\n",
                              "mlsched-priority-state 1\ndecayed_through -5\nend\n"};
  for (const auto& text : junk) {
    std::string error;
    ck_assert_msg(!UsageLedger::parse(text, 0, &error).has_value(), "accepted: %s", text.c_str());
    ck_assert(!error.empty());
  }
  // Times in the future: decay would freeze (or, far enough, erase every team's usage).
  const int64_t now = 1700000000, limit = now + UsageLedger::kMaxStateClockSkew;
  std::string error;
  ck_assert(UsageLedger::parse("mlsched-priority-state 1\ndecayed_through 1700000100\nend\n", 0, &error, limit));
  ck_assert(!UsageLedger::parse("mlsched-priority-state 1\ndecayed_through 1800000000\nend\n", 0, &error, limit));
  ck_assert_contains(error, "decayed_through 1800000000 is in the future");
  ck_assert(!UsageLedger::parse("mlsched-priority-state 1\ndecayed_through 9223372036854775807\nend\n", 0, &error,
                                limit));
  ck_assert(!UsageLedger::parse("mlsched-priority-state 1\njob 7 nlp 1800000000 1 1\nend\n", 0, &error, limit));
  ck_assert_contains(error, "job 7 charged through 1800000000, in the future");
}
END_TEST

START_TEST(a_run_s_gpu_seconds_come_back_at_its_end) {
  UsageLedger ledger(0);
  const auto job = running(5, "vision", 4, 4, kT0);
  ledger.account(kT0 + 10, {job});
  ck_assert(near(ledger.job_end(job, kT0 + 25, false), 100));
  // Lost to a node failure: refunded to the team, yet the run did consume it.
  ledger.account(kT0 + 40, {running(6, "vision", 2, 2, kT0 + 30)});
  ck_assert(near(ledger.job_end(running(6, "vision", 2, 2, kT0 + 30), kT0 + 45, true), 20));
  ck_assert(near(ledger.teams().at("vision").charged_gpu_seconds, 100));
  // Never seen running: charged from its start at its end.
  ck_assert(near(ledger.job_end(running(7, "nlp", 1, 1, kT0), kT0 + 9, false), 9));
}
END_TEST

START_TEST(standing_compares_usage_with_entitlement) {
  UsageLedger ledger(0);
  ledger.account(kT0, {running(1, "vision", 1, 1, kT0 - 200), running(2, "nlp", 1, 1, kT0 - 100)});
  auto s = team_standing({{"vision", 2}, {"nlp", 1}, {"research", 1}}, ledger);
  ck_assert(near(s["vision"].shares_norm, 0.5));
  ck_assert(near(s["vision"].usage_norm, 2.0 / 3));
  ck_assert(near(s["vision"].fairshare, std::exp2(-(2.0 / 3) / 0.5)));
  ck_assert(near(s["nlp"].fairshare, std::exp2(-(1.0 / 3) / 0.25)));
  // Unused entitlement: full factor, infinitely under-served.
  ck_assert(near(s["research"].fairshare, 1.0));
  ck_assert(std::isinf(s["research"].level));
  ck_assert(near(s["vision"].level, 0.75));
}
END_TEST

START_TEST(exactly_entitled_usage_gives_one_half) {
  UsageLedger ledger(0);
  ledger.account(kT0, {running(1, "vision", 2, 2, kT0 - 100), running(2, "nlp", 1, 1, kT0 - 100)});
  auto s = team_standing({{"vision", 2}, {"nlp", 1}}, ledger);
  ck_assert(near(s["vision"].fairshare, 0.5));
  ck_assert(near(s["nlp"].fairshare, 0.5));
}
END_TEST

START_TEST(quota_from_config_or_fair_share) {
  Config c = config_from("TeamQuota=vision:h100=40\n");
  std::map<std::string, TeamStanding> standing;
  standing["vision"].shares_norm = 0.5;
  standing["nlp"].shares_norm = 0.25;
  const std::map<std::string, uint32_t> gpus = {{"h100", 64}, {"a100", 64}};
  Quotas q(c, standing, gpus);
  ck_assert_int_eq(q.guaranteed("vision", "h100"), 40);
  ck_assert_int_eq(q.guaranteed("vision", "a100"), 32);  // no line for a100: half of 64
  ck_assert_int_eq(q.guaranteed("nlp", "H100"), 16);
  ck_assert_int_eq(q.guaranteed("vision", ""), 72);       // untyped job: any type
  ck_assert_int_eq(q.guaranteed("nobody", "h100"), 0);
}
END_TEST

START_TEST(job_beyond_guarantee_is_borrowing) {
  Config c = config_from("TeamQuota=nlp:h100=8\n");
  std::map<std::string, TeamStanding> standing;
  standing["nlp"].shares_norm = 0.25;
  const std::map<std::string, uint32_t> gpus = {{"h100", 64}};
  Quotas q(c, standing, gpus);
  TeamGpusInUse in_use;
  in_use["nlp"]["h100"] = 6;
  ck_assert(!q.borrowing("nlp", "h100", 2, in_use));  // 6 + 2 = 8: exactly its quota
  ck_assert(q.borrowing("nlp", "h100", 3, in_use));
  ck_assert(q.borrowing("nlp", "", 3, in_use));
  ck_assert(!q.borrowing("nlp", "h100", 8, {}));
}
END_TEST

namespace {
ChargedJob holding(uint32_t id, const std::string& team, const std::string& type, uint32_t gpus, int64_t start) {
  ChargedJob j = running(id, team, gpus, gpus, start);
  if (type.empty()) j.allocation.untyped = gpus;
  else j.allocation.by_type[type] = gpus;
  return j;
}
}  // namespace

// TeamQuota per pool: TeamQuota=nlp:a100@train=8 makes partition train's a100 GPUs a
// kind of their own for every team; the type's GPUs elsewhere keep the type's quota.
START_TEST(quota_per_pool_counts_a_types_gpus_by_partition) {
  Config c = config_from("TeamQuota=nlp:a100@train=8,a100=0\nTeamQuota=vision:a100=4\n");
  ck_assert_int_eq(c.pool_quota_kinds.size(), 1);
  ck_assert_str_eq(quota_kind(c, "A100", "Train").c_str(), "a100@train");
  ck_assert_str_eq(quota_kind(c, "a100", "infer").c_str(), "a100");   // no quota names infer
  ck_assert_str_eq(quota_kind(c, "h100", "train").c_str(), "h100");   // nor h100 in train
  ck_assert_str_eq(quota_kind(c, "", "train").c_str(), "");           // untyped: all kinds
  ck_assert_str_eq(quota_kind(config_from(""), "a100", "train").c_str(), "a100");
  ck_assert_str_eq(type_of_quota_kind("a100@train").c_str(), "a100");
  // A pending job that names several pools counts in the first (Slurm tries it there first).
  ck_assert_str_eq(pending_pool("train,infer").c_str(), "train");
  ck_assert_str_eq(pending_pool("infer").c_str(), "infer");
  ck_assert_str_eq(pending_pool("").c_str(), "");
  // Two a100 nodes in train, one in infer, one h100 node in both: partition train's
  // a100 GPUs are their own kind; a node counts in the first pool with a quota.
  std::vector<NodeGpus> nodes = {{{{"a100", 8}}, {"train"}}, {{{"a100", 8}}, {"infer", "train"}},
                                 {{{"a100", 8}}, {"infer"}}, {{{"h100", 4}}, {"train", "infer"}}};
  const auto kinds = cluster_gpus_by_quota_kind(c, nodes);
  ck_assert_int_eq(kinds.size(), 3);
  ck_assert_int_eq(kinds.at("a100@train"), 16);
  ck_assert_int_eq(kinds.at("a100"), 8);
  ck_assert_int_eq(kinds.at("h100"), 4);
  // The same from the cluster model and its partitions (the tool's view).
  Cluster cluster;
  for (const char* n : {"g1", "g2", "g3"}) cluster.add_node(GpuNode{n, "a100", 8, {}, "", "", {}});
  const auto from_model = cluster_gpus_by_quota_kind(c, cluster, {Pool{"train", {"g1", "g2"}}, Pool{"infer", {"g2", "g3"}}});
  ck_assert_int_eq(from_model.at("a100@train"), 16);
  ck_assert_int_eq(from_model.at("a100"), 8);
  // Guarantees by kind: nlp 8 in train and none elsewhere; vision (no line for the
  // pool) its fair share of train's 16, and its 4 elsewhere.
  std::map<std::string, TeamStanding> standing;
  standing["nlp"].shares_norm = 0.5;
  standing["vision"].shares_norm = 0.5;
  Quotas q(c, standing, kinds);
  ck_assert_int_eq(q.guaranteed("nlp", "a100@train"), 8);
  ck_assert_int_eq(q.guaranteed("nlp", "a100"), 0);
  ck_assert_int_eq(q.guaranteed("vision", "a100@train"), 8);
  ck_assert_int_eq(q.guaranteed("vision", "a100"), 4);
  // A job's GPUs by kind, and borrowing counted per kind: nlp's 8 GPUs running in
  // infer borrow, while 8 more in train are within its quota there.
  GpuCounts job;
  job.by_type["A100"] = 8;
  ck_assert_int_eq(gpus_by_quota_kind(c, job, "train").by_type.at("a100@train"), 8);
  ck_assert_int_eq(gpus_by_quota_kind(c, job, "infer").by_type.at("a100"), 8);
  TeamGpusInUse in_use;
  in_use["nlp"]["a100"] = 8;
  ck_assert(q.borrowing("nlp", "a100", 1, in_use));
  ck_assert(!q.borrowing("nlp", "a100@train", 8, in_use));
  ck_assert(q.borrowing("nlp", "a100@train", 9, in_use));
  // Running jobs in start order, per kind.
  std::vector<ChargedJob> running = {holding(1, "nlp", "a100@train", 8, kT0 - 300), holding(2, "nlp", "a100", 8, kT0 - 200),
                                     holding(3, "nlp", "a100@train", 4, kT0 - 100)};
  const auto b = running_borrowing(q, running);
  ck_assert(!b[0] && b[1] && b[2]);
}
END_TEST

START_TEST(youngest_running_jobs_beyond_the_guarantee_borrow) {
  Config c = config_from("TeamQuota=nlp:h100=8\n");
  std::map<std::string, TeamStanding> standing;
  standing["nlp"].shares_norm = 0.25;
  standing["vision"].shares_norm = 0.5;
  const std::map<std::string, uint32_t> gpus = {{"h100", 64}, {"a100", 16}};
  Quotas q(c, standing, gpus);
  // Listed out of start order on purpose: the start time decides, then the job id.
  std::vector<ChargedJob> jobs = {
      holding(4, "nlp", "h100", 4, kT0 + 30),    // 4 + 4 + 4 = 12 > 8: borrows
      holding(2, "nlp", "h100", 4, kT0),         // 4
      holding(3, "nlp", "h100", 4, kT0 + 10),    // 8: exactly the quota
      holding(5, "nlp", "a100", 2, kT0 + 40),    // a100 guarantee: 0.25 x 16 = 4
      holding(6, "vision", "H100", 32, kT0),     // its fair share of h100: exactly 32
      holding(7, "vision", "h100", 1, kT0 + 1),  // one beyond
      holding(8, "vision", "", 2, kT0 + 2),      // untyped: against 32 + 8 over all types
  };
  auto b = running_borrowing(q, jobs);
  ck_assert_int_eq(b.size(), jobs.size());
  ck_assert(b[0]);
  ck_assert(!b[1]);
  ck_assert(!b[2]);
  ck_assert(!b[3]);
  ck_assert(!b[4]);
  ck_assert(b[5]);
  ck_assert(!b[6]);  // 32 + 1 + 2 = 35 <= 40
  // A tie in start time goes by job id: the later id borrows.
  b = running_borrowing(q, {holding(11, "nlp", "h100", 6, kT0), holding(10, "nlp", "h100", 6, kT0)});
  ck_assert(b[0]);
  ck_assert(!b[1]);
}
END_TEST

START_TEST(a_job_stops_borrowing_when_older_ones_end) {
  Config c = config_from("TeamQuota=nlp:h100=8\n");
  std::map<std::string, TeamStanding> standing;
  standing["nlp"].shares_norm = 0.25;
  const std::map<std::string, uint32_t> gpus = {{"h100", 64}};
  Quotas q(c, standing, gpus);
  std::vector<ChargedJob> jobs = {holding(1, "nlp", "h100", 8, kT0), holding(2, "nlp", "h100", 8, kT0 + 5)};
  ck_assert(running_borrowing(q, jobs)[1]);
  jobs.erase(jobs.begin());
  ck_assert(!running_borrowing(q, jobs)[0]);
  // The pass reports it too, parallel to the running jobs it was given.
  PassInput in;
  in.teams = {{"nlp", 1}, {"vision", 3}};
  in.cluster_gpus_by_type = gpus;
  in.running = {holding(1, "nlp", "h100", 8, kT0), holding(2, "nlp", "h100", 8, kT0 + 5)};
  UsageLedger ledger(0);
  auto r = priority_pass(c, ledger, in, kT0 + 10);
  ck_assert_int_eq(r.running_borrowing.size(), 2);
  ck_assert(!r.running_borrowing[0]);
  ck_assert(r.running_borrowing[1]);
}
END_TEST

START_TEST(borrowing_token_is_set_replaced_and_removed) {
  const std::optional<std::string> yes = std::string("yes"), no = std::string("no");
  // Beside directives, before an admin's note; directives still read the same.
  const std::string stored = "mlsched: type=sweep gpu-type=a100 max-restarts=5; admin note";
  std::string s = with_stored_token(stored, "borrowing", yes);
  ck_assert_str_eq(s.c_str(), "mlsched: type=sweep gpu-type=a100 max-restarts=5 borrowing=yes; admin note");
  auto d = parse_stored_directives(s);
  ck_assert(d.has_value());
  ck_assert(d->type == JobType::sweep);
  ck_assert_int_eq(d->max_restarts, 5);
  ck_assert(stored_token(s, "borrowing") == yes);
  // Replaced in place, never duplicated.
  s = with_stored_token(s, "borrowing", no);
  ck_assert_str_eq(s.c_str(), "mlsched: type=sweep gpu-type=a100 max-restarts=5 borrowing=no; admin note");
  ck_assert(stored_token(s, "borrowing") == no);
  ck_assert(with_stored_token(s, "borrowing", std::nullopt) ==
            "mlsched: type=sweep gpu-type=a100 max-restarts=5; admin note");
  // A token outside mlsched's part (in the admin's note) is not ours.
  ck_assert(!stored_token("mlsched: type=sweep; borrowing=yes", "borrowing"));

  // No directives: a part of its own, which carries no directives, so the job
  // keeps the admin's default type; removing it gives the comment back as it was.
  s = with_stored_token("", "borrowing", yes);
  ck_assert_str_eq(s.c_str(), "mlsched: borrowing=yes");
  ck_assert(!parse_stored_directives(s));
  ck_assert(with_stored_token(s, "borrowing", std::nullopt) == "");
  s = with_stored_token("  site note ", "borrowing", no);
  ck_assert_str_eq(s.c_str(), "mlsched: borrowing=no; site note");
  ck_assert(!parse_stored_directives(s));
  ck_assert(stored_token(s, "borrowing") == no);
  ck_assert(with_stored_token(s, "borrowing", std::nullopt) == "site note");
  ck_assert(with_stored_token("site note", "borrowing", std::nullopt) == "site note");
  ck_assert(!stored_token("site note", "borrowing"));
}
END_TEST

namespace {
struct Fixture {
  Config config;
  std::map<std::string, TeamStanding> standing;
  std::map<std::string, uint32_t> gpus = {{"h100", 64}, {"a100", 64}};
  TeamGpusInUse in_use;
  Quotas quotas{config, standing, gpus};
  explicit Fixture(const std::string& text) : config(config_from(text)) {
    standing["vision"].shares_norm = 0.5;
    standing["vision"].fairshare = 0.25;
    standing["nlp"].shares_norm = 0.25;
    standing["nlp"].fairshare = 1.0;
  }
  PriorityFactors of(const PricedJob& j, int64_t now) {
    return job_priority(j, {config, standing, quotas, in_use, 128}, now);
  }
};

PricedJob pending(const std::string& team, uint32_t gpus, int64_t submitted) {
  PricedJob j;
  j.team = team;
  j.gpus = gpus;
  j.submit_time = submitted;
  return j;
}
}  // namespace

START_TEST(priority_terms_follow_the_formula) {
  Fixture f("PriorityMaxAge=1000 PriorityWeightFairshare=10000 PriorityWeightQuota=5000 PriorityWeightAge=1000\n"
            "PriorityWeightJobSize=128000 PriorityWeightQOS=100 PriorityWeightPartition=10\n"
            "PriorityWeightJobType=sweep:7\n");
  PricedJob j = pending("vision", 8, kT0 - 500);
  j.type = JobType::sweep;
  j.qos_norm = 0.5;
  j.partition_norm = 1;
  j.nice = 20;
  auto p = f.of(j, kT0);
  ck_assert(near(p.fairshare, 2500));
  ck_assert(near(p.quota, 5000));
  ck_assert(!p.borrowing);
  ck_assert(near(p.age, 500));
  ck_assert(near(p.job_size, 128000.0 * 8 / 128 * 0.5));  // 4000
  ck_assert(near(p.job_type, 7));
  ck_assert(near(p.qos, 50));
  ck_assert(near(p.partition, 10));
  ck_assert_int_eq(p.total, 2500 + 5000 + 500 + 4000 + 7 + 50 + 10 - 20);
}
END_TEST

START_TEST(age_is_capped_but_size_term_keeps_growing) {
  Fixture f("PriorityMaxAge=100\n");
  auto early = f.of(pending("nlp", 32, kT0), kT0 + 100);
  auto late = f.of(pending("nlp", 32, kT0), kT0 + 1000);
  ck_assert(near(early.age, late.age));
  ck_assert(near(late.job_size, 10 * early.job_size));
  // A gang grows faster than a 1-GPU job submitted at the same time.
  ck_assert(f.of(pending("nlp", 1, kT0), kT0 + 1000).job_size * 32 <= late.job_size + 1e-6);
}
END_TEST

START_TEST(within_quota_team_outranks_borrowing_team) {
  Fixture f("TeamQuota=nlp:h100=8 TeamQuota=vision:h100=8 PriorityWeightFairshare=0\n");
  f.in_use["vision"]["h100"] = 64;
  PricedJob borrower = pending("vision", 1, kT0 - 3600);  // older, yet behind
  borrower.gpu_type = "h100";
  PricedJob entitled = pending("nlp", 1, kT0);
  entitled.gpu_type = "h100";
  auto b = f.of(borrower, kT0), e = f.of(entitled, kT0);
  ck_assert(b.borrowing);
  ck_assert(!e.borrowing);
  ck_assert_uint_gt(e.total, b.total);
}
END_TEST

START_TEST(gang_reaches_the_top_within_the_bound) {
  Fixture f("PriorityMaxAge=60\n");
  const double bound = seconds_to_reach_top(f.config, 32, 128);
  // Defaults: ceiling 26000, growth 100000 x 32/128 per 60 s -> 62.4 s.
  ck_assert(near(bound, 26000.0 / (100000.0 * 0.25 / 60)));
  // The worst newcomer: best fair share, within quota, interactive, age at cap.
  PricedJob gang = pending("vision", 32, kT0);
  f.standing["vision"].fairshare = 0;
  f.in_use["vision"]["h100"] = 1000;  // the gang's team borrows: no quota term
  gang.gpu_type = "h100";
  PricedJob newcomer = pending("nlp", 1, kT0 + static_cast<int64_t>(bound));
  newcomer.type = JobType::interactive;
  newcomer.qos_norm = 1;
  newcomer.partition_norm = 1;
  const int64_t at = kT0 + static_cast<int64_t>(std::ceil(bound)) + 1;
  auto g = f.of(gang, at);
  auto n = f.of(newcomer, at);
  ck_assert(n.total <= bounded_priority_ceiling(f.config) + 1);
  ck_assert_uint_gt(g.total, n.total);
}
END_TEST

START_TEST(a_job_priced_alone_is_priced_as_queued_last) {
  // The pass looks teams up once (TeamCache); priority_p_set() prices a new job
  // alone with the last pass's queue. A job queued after all others must come out
  // the same both ways, borrowing included, whatever its team and GPU type.
  Config c = config_from("TeamQuota=nlp:h100=8,a100=2\nTeamQuota=vision:H100=20\n");
  PassInput in;
  in.teams = {{"nlp", 1}, {"vision", 2}, {"research", 1}};
  in.cluster_gpus_by_type = {{"h100", 32}, {"a100", 16}};
  in.running = {holding(1, "nlp", "h100", 6, kT0 - 100), holding(2, "vision", "a100", 8, kT0 - 50),
                holding(3, "vision", "", 4, kT0 - 40), holding(4, "research", "H100", 8, kT0 - 30)};
  const char* teams[] = {"nlp", "vision", "research", "nobody"};
  const char* types[] = {"h100", "H100", "a100", "", "t4"};
  std::vector<PricedJob> jobs;
  for (uint32_t i = 0; i < 200; ++i) {
    PricedJob j = pending(teams[i % 4], i % 7 == 0 ? 0 : 1 + (i * 7) % 11, kT0 - 10 - 10 * i);
    j.job_id = 100 + i;
    j.gpu_type = types[(i / 4) % 5];
    j.eligible = i % 13 != 0;
    jobs.push_back(j);
  }
  const uint32_t cluster_gpus = 48;
  int borrowing = 0;
  for (uint32_t last = 0; last < 40; ++last) {
    PricedJob newest = jobs[last];
    newest.submit_time = kT0;  // queued after every other job
    newest.eligible = true;
    in.pending = jobs;
    in.pending.erase(in.pending.begin() + last);
    UsageLedger before_ledger(0);
    const PassResult before = priority_pass(c, before_ledger, in, kT0);
    const Quotas quotas(c, before.standing, in.cluster_gpus_by_type);
    const PriorityInputs inputs{c, before.standing, quotas, before.in_use, cluster_gpus, &before.queue};
    const PriorityFactors alone = job_priority(newest, inputs, kT0);
    in.pending.push_back(newest);
    UsageLedger ledger(0);
    const PassResult r = priority_pass(c, ledger, in, kT0);
    ck_assert_msg(alone.borrowing == r.pending.back().borrowing, "job %u", last);
    ck_assert_uint_eq(alone.total, r.pending.back().total);
    borrowing += alone.borrowing;
  }
  // Both outcomes occur, so the comparison above means something.
  ck_assert_int_gt(borrowing, 0);
  ck_assert_int_lt(borrowing, 40);
}
END_TEST

namespace {
PricedJob queued(uint32_t id, const std::string& team, const std::string& type, uint32_t gpus, int64_t submitted) {
  PricedJob j = pending(team, gpus, submitted);
  j.job_id = id;
  j.gpu_type = type;
  return j;
}
// A 128-GPU cluster of two types, with nlp guaranteed 16 h100; nlp runs 8 h100.
PassInput gang_cluster() {
  PassInput in;
  in.teams = {{"nlp", 1}, {"vision", 2}, {"research", 1}};
  in.cluster_gpus_by_type = {{"h100", 64}, {"a100", 64}};
  in.running = {holding(1, "nlp", "h100", 8, kT0 - 500)};
  return in;
}
}  // namespace

START_TEST(a_gang_is_not_overtaken_into_its_team_guarantee) {
  // Every job holds its place here (TeamQuotaKeptForGpus=1); the default is below.
  Config c = config_from("TeamQuota=nlp:h100=16\nTeamQuotaKeptForGpus=1\n");
  PassInput in = gang_cluster();
  in.pending = {queued(10, "nlp", "h100", 1, kT0 - 300),   // before the gang: within (8 left)
                queued(11, "nlp", "h100", 16, kT0 - 200),  // 16 > 7 left, 16 <= 16: borrows, closes
                queued(12, "nlp", "h100", 1, kT0 - 100),   // after it: borrows
                queued(13, "nlp", "H100", 2, kT0 - 50),    // the same type spelled otherwise: borrows
                queued(14, "nlp", "a100", 1, kT0 - 40),    // another type: its own guarantee
                queued(15, "vision", "h100", 1, kT0 - 30)};  // another team: untouched
  UsageLedger ledger(0);
  PassResult r = priority_pass(c, ledger, in, kT0);
  ck_assert(!r.pending[0].borrowing);
  ck_assert(r.pending[1].borrowing);
  ck_assert(r.pending[2].borrowing);
  ck_assert(r.pending[3].borrowing);
  ck_assert(!r.pending[4].borrowing);
  ck_assert(!r.pending[5].borrowing);
  // Within its team the gang now ranks above the jobs queued after it.
  ck_assert_uint_gt(r.pending[1].total, r.pending[2].total);
  ck_assert_uint_gt(r.pending[1].total, r.pending[3].total);
  ck_assert_int_eq(r.queue.at("nlp").closed.at("h100"), 11);
  ck_assert_int_eq(r.queue.at("nlp").claimed.at("h100"), 1);
  // `mlsched why` asks the same walk which job the guarantee is kept for.
  const Quotas q(c, r.standing, in.cluster_gpus_by_type);
  const auto places = places_in_guarantee(
      in.pending, [&](const std::string& team, const std::string& type) { return q.guaranteed(team, type); }, r.in_use,
      c.team_quota_kept_for_gpus);
  ck_assert_int_eq(places[0].kept_by, 0);
  ck_assert_int_eq(places[1].kept_by, 0);
  ck_assert_int_eq(places[2].kept_by, 11);
  ck_assert_int_eq(places[3].kept_by, 11);
  // A new job priced alone after this pass is behind the gang too.
  const Quotas quotas(c, r.standing, in.cluster_gpus_by_type);
  const PriorityInputs inputs{c, r.standing, quotas, r.in_use, 128, &r.queue};
  ck_assert(job_priority(queued(16, "nlp", "h100", 1, kT0), inputs, kT0).borrowing);
  // Without the queue (only the GPUs in use), it would have been within.
  const PriorityInputs now_only{c, r.standing, quotas, r.in_use, 128};
  ck_assert(!job_priority(queued(16, "nlp", "h100", 1, kT0), now_only, kT0).borrowing);

  // Listed in any order, the jobs take the guarantee in queue order.
  std::reverse(in.pending.begin(), in.pending.end());
  UsageLedger ledger2(0);
  r = priority_pass(c, ledger2, in, kT0);
  ck_assert(!r.pending[5].borrowing);
  ck_assert(r.pending[4].borrowing);
  ck_assert(r.pending[3].borrowing);

  // Once the team's running job ends, the older 1-GPU job takes 1 of the 16 and the
  // gang still waits for it; with that one gone too the gang is within, and the
  // jobs after it borrow because it took the whole guarantee.
  in.running.clear();
  UsageLedger ledger3(0);
  r = priority_pass(c, ledger3, in, kT0);
  ck_assert(!r.pending[5].borrowing);
  ck_assert(r.pending[4].borrowing);
  in.pending.pop_back();  // job 10
  UsageLedger ledger4(0);
  r = priority_pass(c, ledger4, in, kT0);
  ck_assert(!r.pending[4].borrowing);  // the gang
  ck_assert(r.pending[3].borrowing);   // job 12: 1 > 0 left, and it closes
  ck_assert_int_eq(r.queue.at("nlp").claimed.at("h100"), 16);
}
END_TEST

START_TEST(only_a_large_gang_holds_its_place_by_default) {
  // TeamQuotaKeptForGpus=16 (the default): nlp is guaranteed 16 h100 and runs 8.
  Config c = config_from("TeamQuota=nlp:h100=16\n");
  ck_assert_int_eq(c.team_quota_kept_for_gpus, 16);
  PassInput in = gang_cluster();
  in.pending = {queued(10, "nlp", "h100", 2, kT0 - 300),   // 2 <= 8 left: within, claims nothing
                queued(11, "nlp", "h100", 4, kT0 - 290),   // 4 <= 8: within too
                queued(12, "nlp", "h100", 16, kT0 - 200),  // 16 > 8 left: borrows, keeps the rest
                queued(13, "nlp", "h100", 1, kT0 - 100),   // after the gang: borrows
                queued(14, "nlp", "h100", 8, kT0 - 90)};   // too: a single node is no gang
  UsageLedger ledger(0);
  PassResult r = priority_pass(c, ledger, in, kT0);
  ck_assert(!r.pending[0].borrowing);
  ck_assert(!r.pending[1].borrowing);
  ck_assert(r.pending[2].borrowing);
  ck_assert(r.pending[3].borrowing);
  ck_assert(r.pending[4].borrowing);
  ck_assert_int_eq(r.queue.at("nlp").closed.at("h100"), 12);
  ck_assert_int_eq(r.queue.at("nlp").claimed_all, 0);
  // With every job holding its place, the 2- and 4-GPU jobs claim 6 of the 8 left
  // and the gang closes the rest as before.
  Config every = config_from("TeamQuota=nlp:h100=16\nTeamQuotaKeptForGpus=1\n");
  UsageLedger ledger2(0);
  r = priority_pass(every, ledger2, in, kT0);
  ck_assert(!r.pending[1].borrowing);
  ck_assert_int_eq(r.queue.at("nlp").claimed.at("h100"), 6);

  // With the team's running job gone, the gang fits the whole guarantee: smaller jobs
  // queued before it do not count against it, as they hold no place.
  in.running.clear();
  UsageLedger ledger3(0);
  r = priority_pass(c, ledger3, in, kT0);
  ck_assert(!r.pending[0].borrowing);
  ck_assert(!r.pending[2].borrowing);  // the gang: 16 of 16
  ck_assert(r.pending[3].borrowing);   // 1 > 0 left after the gang's claim
  ck_assert_int_eq(r.queue.at("nlp").claimed.at("h100"), 16);
  // A new 1-GPU job priced alone after this pass: behind the gang's claim.
  const Quotas quotas(c, r.standing, in.cluster_gpus_by_type);
  const PriorityInputs inputs{c, r.standing, quotas, r.in_use, 128, &r.queue};
  ck_assert(job_priority(queued(15, "nlp", "h100", 1, kT0), inputs, kT0).borrowing);

  // 0: no job holds a place; each is priced against the GPUs in use alone.
  Config none = config_from("TeamQuota=nlp:h100=16\nTeamQuotaKeptForGpus=0\n");
  UsageLedger ledger4(0);
  r = priority_pass(none, ledger4, in, kT0);
  for (size_t i = 0; i < in.pending.size(); ++i) ck_assert_msg(!r.pending[i].borrowing, "job %zu", i);
  ck_assert(r.queue.empty());
}
END_TEST

START_TEST(a_job_partly_within_its_guarantee_gets_the_share_within) {
  // TeamQuotaPartialCredit: nlp is guaranteed 16 h100 and runs 8, so 8 are left.
  Config c = config_from("TeamQuota=nlp:h100=16\nTeamQuotaPartialCredit=yes\nPriorityWeightQuota=10000\n");
  ck_assert(c.team_quota_partial_credit);
  PassInput in = gang_cluster();
  in.pending = {queued(10, "nlp", "h100", 4, kT0 - 300),    // 4 of 8 left: within
                queued(11, "nlp", "h100", 12, kT0 - 250),   // 12 > 8: 8 of its 12 within
                queued(12, "nlp", "h100", 16, kT0 - 200),   // a gang: 8 within, closes the rest
                queued(13, "nlp", "h100", 2, kT0 - 100)};   // after the closing: none within
  UsageLedger ledger(0);
  PassResult r = priority_pass(c, ledger, in, kT0);
  ck_assert(!r.pending[0].borrowing);
  ck_assert(near(r.pending[0].quota, 10000));
  ck_assert(r.pending[1].borrowing);
  ck_assert(near(r.pending[1].quota, 10000.0 * 8 / 12));
  ck_assert(r.pending[2].borrowing);
  ck_assert(near(r.pending[2].quota, 10000.0 * 8 / 16));
  ck_assert(r.pending[3].borrowing);
  ck_assert(near(r.pending[3].quota, 0));
  // Nothing left: nothing within.
  in.running = {holding(1, "nlp", "h100", 20, kT0 - 500)};
  in.pending = {queued(10, "nlp", "h100", 4, kT0 - 300)};
  UsageLedger ledger2(0);
  r = priority_pass(c, ledger2, in, kT0);
  ck_assert(r.pending[0].borrowing);
  ck_assert(near(r.pending[0].quota, 0));
  // A job priced alone gets the same share as in the pass.
  in.running = {holding(1, "nlp", "h100", 13, kT0 - 500)};
  UsageLedger ledger3(0);
  r = priority_pass(c, ledger3, in, kT0);
  ck_assert(near(r.pending[0].quota, 10000.0 * 3 / 4));
  const Quotas quotas(c, r.standing, in.cluster_gpus_by_type);
  const PriorityInputs inputs{c, r.standing, quotas, r.in_use, 128, &r.queue};
  ck_assert(near(job_priority(queued(15, "nlp", "h100", 4, kT0), inputs, kT0).quota, 10000.0 * 3 / 4));
  // Off by default: all or nothing.
  Config off = config_from("TeamQuota=nlp:h100=16\n");
  ck_assert(!off.team_quota_partial_credit);
  UsageLedger ledger4(0);
  r = priority_pass(off, ledger4, in, kT0);
  ck_assert(r.pending[0].borrowing);
  ck_assert(near(r.pending[0].quota, 0));
  // Only yes or no.
  auto bad = parse_config("TeamQuotaPartialCredit=half\n", "mlsched.conf");
  ck_assert(!bad.config.has_value());
  ck_assert_contains(bad.errors.at(0), "TeamQuotaPartialCredit=half must be yes or no");
}
END_TEST

START_TEST(a_job_larger_than_its_guarantee_closes_nothing) {
  // nlp is guaranteed 8 h100: a 16-GPU gang can never be within, so it must not
  // keep the team's small jobs out of the guarantee either.
  Config c = config_from("TeamQuota=nlp:h100=8\nTeamQuotaKeptForGpus=1\n");
  PassInput in = gang_cluster();
  in.running.clear();
  in.pending = {queued(11, "nlp", "h100", 16, kT0 - 200), queued(12, "nlp", "h100", 4, kT0 - 100),
                queued(13, "nlp", "h100", 4, kT0 - 90), queued(14, "nlp", "h100", 1, kT0 - 80)};
  UsageLedger ledger(0);
  const PassResult r = priority_pass(c, ledger, in, kT0);
  ck_assert(r.pending[0].borrowing);
  ck_assert(!r.pending[1].borrowing);
  ck_assert(!r.pending[2].borrowing);  // 4 + 4 = 8: exactly the guarantee
  ck_assert(r.pending[3].borrowing);   // 9 > 8, and it closes
  ck_assert(r.queue.at("nlp").closed.count("h100"));
  ck_assert_int_eq(r.queue.at("nlp").claimed_all, 8);
}
END_TEST

START_TEST(a_job_that_cannot_start_yet_takes_no_place) {
  // A gang held back by a dependency or a begin time does not close the guarantee.
  Config c = config_from("TeamQuota=nlp:h100=16\nTeamQuotaKeptForGpus=1\n");
  PassInput in = gang_cluster();
  in.pending = {queued(11, "nlp", "h100", 16, kT0 - 200), queued(12, "nlp", "h100", 1, kT0 - 100)};
  in.pending[0].eligible = false;
  UsageLedger ledger(0);
  PassResult r = priority_pass(c, ledger, in, kT0);
  ck_assert(r.pending[0].borrowing);
  ck_assert(!r.pending[1].borrowing);
  ck_assert(r.queue.at("nlp").closed.empty());
  // Jobs naming no single type take from the guarantee over all types: 16 h100 +
  // 16 a100 (nlp's quarter of 64) = 32, of which nlp runs 8.
  in.pending = {queued(20, "nlp", "", 20, kT0 - 50), queued(21, "nlp", "", 4, kT0 - 40),
                queued(22, "nlp", "h100", 8, kT0 - 30), queued(23, "nlp", "", 1, kT0 - 20)};
  UsageLedger ledger2(0);
  r = priority_pass(c, ledger2, in, kT0);
  ck_assert(!r.pending[0].borrowing);  // 8 + 20 = 28 of 32
  ck_assert(!r.pending[1].borrowing);  // 32 of 32
  ck_assert(!r.pending[2].borrowing);  // h100: 8 + 8 = 16; untyped claims name no type
  ck_assert(r.pending[3].borrowing);   // over all types: 40 > 32
  ck_assert_int_eq(r.queue.at("nlp").claimed_all, 32);
}
END_TEST
START_TEST(priority_is_at_least_one) {
  Fixture f("PriorityWeightFairshare=0 PriorityWeightQuota=0 PriorityWeightAge=0 PriorityWeightQOS=0 "
            "PriorityWeightPartition=0 PriorityWeightJobType=training:0\n");
  PricedJob j = pending("nobody", 0, kT0);
  j.nice = 10000;
  ck_assert_int_eq(f.of(j, kT0).total, 1);
}
END_TEST

START_TEST(priority_config_keys_are_typed) {
  Config d = config_from("");
  ck_assert(!d.priority_decay_half_life.has_value());
  ck_assert(!d.priority_calc_period.has_value());
  ck_assert_int_eq(d.priority_weight_fairshare, 10000);
  ck_assert_int_eq(d.priority_weight_job_type[static_cast<int>(JobType::interactive)], 3000);
  Config c = config_from(
      "GpuWeight=H100:1.0,a100:0.6,t4:.1\n"
      "TeamQuota=vision:h100=64,A100=32\n"
      "teamquota=nlp:h100=8\n"
      "PriorityDecayHalfLife=7d PriorityCalcPeriod=2 PriorityMaxAge=2h\n"
      "PriorityWeightFairshare=1 PriorityWeightQuota=2 PriorityWeightAge=3 PriorityWeightJobSize=4\n"
      "PriorityWeightQOS=5 PriorityWeightPartition=6 PriorityWeightJobType=interactive:9,sweep:1\n"
      "TeamQuotaKeptForGpus=32\n");
  ck_assert_int_eq(c.team_quota_kept_for_gpus, 32);
  ck_assert(near(c.gpu_weights.at("h100"), 1.0));
  ck_assert(near(c.gpu_weights.at("a100"), 0.6));
  ck_assert(near(c.gpu_weights.at("t4"), 0.1));
  ck_assert_int_eq(c.team_quotas.at("vision").at("a100"), 32);
  ck_assert_int_eq(c.team_quotas.at("nlp").at("h100"), 8);
  ck_assert_int_eq(*c.priority_decay_half_life, 7 * 86400);
  ck_assert_int_eq(*c.priority_calc_period, 2);
  ck_assert_int_eq(c.priority_max_age, 7200);
  ck_assert_int_eq(c.priority_weight_fairshare, 1);
  ck_assert_int_eq(c.priority_weight_quota, 2);
  ck_assert_int_eq(c.priority_weight_age, 3);
  ck_assert_int_eq(c.priority_weight_job_size, 4);
  ck_assert_int_eq(c.priority_weight_qos, 5);
  ck_assert_int_eq(c.priority_weight_partition, 6);
  ck_assert_int_eq(c.priority_weight_job_type[static_cast<int>(JobType::interactive)], 9);
  ck_assert_int_eq(c.priority_weight_job_type[static_cast<int>(JobType::sweep)], 1);
  ck_assert_int_eq(c.priority_weight_job_type[static_cast<int>(JobType::training)], 1000);
  ck_assert_int_eq(*config_from("PriorityDecayHalfLife=0\n").priority_decay_half_life, 0);
}
END_TEST

START_TEST(priority_config_rejects_bad_values) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"GpuWeight=h100\n", "GpuWeight: 'h100' is not <gpu_type>:<weight>"},
      {"GpuWeight=h100:fast\n", "GpuWeight: 'h100:fast' is not"},
      {"GpuWeight=h100:-1\n", "GpuWeight: 'h100:-1' is not"},
      {"GpuWeight=h100:2000\n", "weight from 0 to 1000"},
      {"GpuWeight=:1\n", "GpuWeight: ':1' is not"},
      {"GpuWeight=h100:1,H100:2\n", "GPU type h100 is weighted twice"},
      {"TeamQuota=vision\n", "TeamQuota=vision is not <team>:<gpu_type>=<gpus>"},
      {"TeamQuota=vision:h100\n", "'h100' is not <gpu_type>=<gpus>"},
      {"TeamQuota=vision:h100=lots\n", "'h100=lots' is not <gpu_type>=<gpus>"},
      {"TeamQuota=vision:h100=1,h100=2\n", "GPU type h100 given twice"},
      {"TeamQuota=vision:h100=1\nTeamQuota=vision:a100=1\n", "team vision has two TeamQuota lines"},
      {"TeamQuota=vision:a100@=8\n", "'a100@=8' is not <gpu_type>@<partition>=<gpus> (e.g. a100@train=8)"},
      {"TeamQuota=vision:@train=8\n", "'@train=8' is not <gpu_type>@<partition>=<gpus>"},
      {"TeamQuota=vision:a100@tr/ain=8\n", "'a100@tr/ain=8' is not <gpu_type>@<partition>=<gpus>"},
      {"TeamQuota=vision:a100@train=1,A100@Train=2\n", "GPU type a100@train given twice"},
      {"PriorityDecayHalfLife=soon\n", "PriorityDecayHalfLife=soon is not a duration"},
      {"TeamQuotaKeptForGpus=gangs\n", "TeamQuotaKeptForGpus=gangs is not a whole number from 0 to 1000000"},
      {"PriorityDecayHalfLife=4000d\n", "to 3650 days"},
      {"PriorityCalcPeriod=0\n", "PriorityCalcPeriod=0 is not a duration from 1 seconds"},
      {"PriorityMaxAge=0\n", "PriorityMaxAge=0 is not a duration from 1 seconds"},
      {"PriorityWeightFairshare=-1\n", "PriorityWeightFairshare=-1 is not a whole number"},
      {"PriorityWeightAge=200000000\n", "from 0 to 100000000"},
      {"PriorityWeightJobType=batch:5\n", "PriorityWeightJobType: 'batch:5' is not <job type>:<weight>"},
      {"PriorityWeightJobType=sweep\n", "PriorityWeightJobType: 'sweep' is not"},
      {"PriorityWeightFairshar=1\n", "did you mean 'PriorityWeightFairshare'"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.text, "mlsched.conf");
    std::string errors;
    for (const auto& e : r.errors) errors += e + "\n";
    ck_assert_msg(!r.config.has_value(), "accepted: %s", c.text);
    ck_assert_contains(errors, c.message);
  }
}
END_TEST

START_TEST(attained_service_levels_follow_the_thresholds) {
  Config c = config_from("AttainedService=all AttainedServiceThresholds=100,1000,10000 "
                         "PriorityWeightAttainedService=3000 AttainedServicePromoteAfter=600\n");
  ck_assert_int_eq(attained_service_level(c, 0, 0), 0);
  ck_assert_int_eq(attained_service_level(c, 99.9, 0), 0);
  ck_assert_int_eq(attained_service_level(c, 100, 0), 1);   // a threshold reached is the next level
  ck_assert_int_eq(attained_service_level(c, 999, 0), 1);
  ck_assert_int_eq(attained_service_level(c, 1000, 0), 2);
  ck_assert_int_eq(attained_service_level(c, 1e9, 0), 3);
  // 4 levels: 0, -1000, -2000, -3000.
  ck_assert(near(attained_service_term(c, 0), 0));
  ck_assert(near(attained_service_term(c, 1), -1000));
  ck_assert(near(attained_service_term(c, 2), -2000));
  ck_assert(near(attained_service_term(c, 3), -3000));
  // Waiting since the requeue: promoted to level 0 at AttainedServicePromoteAfter.
  ck_assert_int_eq(attained_service_level(c, 1e9, 599), 3);
  ck_assert_int_eq(attained_service_level(c, 1e9, 600), 0);
  // 0 = never promoted.
  Config never = config_from("AttainedService=all AttainedServiceThresholds=100 AttainedServicePromoteAfter=0\n");
  ck_assert_int_eq(attained_service_level(never, 500, 100000000), 1);
  ck_assert(near(attained_service_term(never, 1), -5000));  // default weight, two levels
}
END_TEST

START_TEST(attained_service_ranks_a_team_s_fresh_jobs_first) {
  Fixture f("AttainedService=team:vision AttainedServiceThresholds=100 PriorityMaxAge=60 "
            "AttainedServicePromoteAfter=1h\n");
  // A requeued job that ran 400 GPU-seconds, queued again 50 s ago, and a fresh
  // job of the same team submitted 10 s ago: the fresh one ranks first, though
  // the other has the larger age term.
  PricedJob ran = pending("vision", 4, kT0 - 50);
  ran.attained_gpu_seconds = 400;
  PricedJob fresh = pending("vision", 4, kT0 - 10);
  auto r = f.of(ran, kT0), n = f.of(fresh, kT0);
  ck_assert_int_eq(r.attained_level, 1);
  ck_assert_int_eq(n.attained_level, 0);
  ck_assert(near(r.attained_service, -5000));
  ck_assert(near(n.attained_service, 0));
  ck_assert(r.age > n.age);
  ck_assert_uint_gt(n.total, r.total);
  // Off for the team (and off by default): the older job ranks first again.
  PricedJob other = ran;
  other.team = "nlp";
  ck_assert_int_eq(f.of(other, kT0).attained_level, -1);
  Fixture off("PriorityMaxAge=60\n");
  ck_assert(!off.config.attained_service.enabled());
  ck_assert_uint_gt(off.of(ran, kT0).total, off.of(fresh, kT0).total);
  // Promoted after an hour since its requeue: no penalty.
  auto promoted = f.of(ran, kT0 + 3600);
  ck_assert_int_eq(promoted.attained_level, 0);
  ck_assert(near(promoted.attained_service, 0));
  // Promotion counts from when the job was queued again, its age from its first
  // submission (a requeued job keeps its age).
  PricedJob old = ran;
  old.submit_time = kT0 - 100000;
  old.queued_time = kT0 - 50;
  auto o = f.of(old, kT0);
  ck_assert_int_eq(o.attained_level, 1);
  ck_assert(near(o.age, 1000));
  ck_assert_int_eq(f.of(old, kT0 + 3550).attained_level, 0);
  // A partition scope covers every team's jobs in that partition.
  Fixture part("AttainedService=partition:batch AttainedServiceThresholds=100\n");
  ran.partition = "batch";
  ck_assert_int_eq(part.of(ran, kT0).attained_level, 1);
  ran.partition = "debug";
  ck_assert_int_eq(part.of(ran, kT0).attained_level, -1);
  // The pass prices it as job_priority() does.
  PassInput in;
  in.teams = {{"vision", 2}, {"nlp", 1}};
  in.cluster_gpus_by_type = {{"h100", 64}};
  in.pending = {ran, fresh};
  in.pending[0].partition = "";
  UsageLedger ledger(0);
  const PassResult pr = priority_pass(f.config, ledger, in, kT0);
  ck_assert(near(pr.pending[0].attained_service, -5000));
  ck_assert_uint_gt(pr.pending[1].total, pr.pending[0].total);
}
END_TEST

START_TEST(attained_service_config_keys) {
  Config d = config_from("");
  ck_assert(!d.attained_service.enabled());
  ck_assert_int_eq(d.attained_service_thresholds.size(), 2);
  ck_assert_int_eq(d.attained_service_thresholds[0], 3600);
  ck_assert_int_eq(d.attained_service_thresholds[1], 36000);
  ck_assert_int_eq(d.priority_weight_attained_service, 5000);
  ck_assert_int_eq(d.attained_service_promote_after, 3600);
  Config c = config_from("attainedservice=team:vision,partition:batch,team:nlp\n"
                         "AttainedServiceThresholds=30m,2h,1d AttainedServicePromoteAfter=6h\n"
                         "PriorityWeightAttainedService=7\n");
  ck_assert(!c.attained_service.all);
  ck_assert_int_eq(c.attained_service.teams.size(), 2);
  ck_assert_str_eq(c.attained_service.teams[1].c_str(), "nlp");
  ck_assert_str_eq(c.attained_service.partitions[0].c_str(), "batch");
  ck_assert_int_eq(c.attained_service_thresholds[2], 86400);
  ck_assert_int_eq(c.attained_service_promote_after, 6 * 3600);
  ck_assert_int_eq(c.priority_weight_attained_service, 7);
  ck_assert(config_from("AttainedService=ALL\n").attained_service.all);
  ck_assert(!config_from("AttainedService=all\nAttainedService=off\n").attained_service.enabled());
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"AttainedService=yes\n", "AttainedService: 'yes' is not team:<account> or partition:<name>"},
      {"AttainedService=team:\n", "AttainedService: 'team:' is not"},
      {"AttainedService=user:bob\n", "AttainedService: 'user:bob' is not"},
      {"AttainedServiceThresholds=10h,1h\n", "thresholds must be ascending"},
      {"AttainedServiceThresholds=1h,1h\n", "thresholds must be ascending"},
      {"AttainedServiceThresholds=lots\n", "AttainedServiceThresholds=lots is not a duration"},
      {"AttainedServiceThresholds=0\n", "is not a duration from 1 seconds"},
      {"AttainedServiceThresholds=1,2,3,4,5,6,7,8,9\n", "needs 1 to 8 GPU-time thresholds"},
      {"AttainedServicePromoteAfter=soon\n", "AttainedServicePromoteAfter=soon is not a duration"},
      {"PriorityWeightAttainedService=-3\n", "PriorityWeightAttainedService=-3 is not a whole number"},
      {"AttainedServiceThreshold=1h\n", "did you mean 'AttainedServiceThresholds'"},
  };
  for (const auto& k : cases) {
    auto r = parse_config(k.text, "mlsched.conf");
    std::string errors;
    for (const auto& e : r.errors) errors += e + "\n";
    ck_assert_msg(!r.config.has_value(), "accepted: %s", k.text);
    ck_assert_contains(errors, k.message);
  }
}
END_TEST

// A downstream stage's age: its own wait since its dependencies cleared plus the
// queue waits of the stages it waits for (longest chain), not the time they ran,
// at most PriorityMaxAge; a stage still waiting for others has none.
START_TEST(best_effort_queues_behind_non_preemptible_jobs) {
  // PriorityWeightNonPreemptible at PriorityWeightQuota's value: of two jobs of the
  // same team and standing, the one that may not be preempted ranks first although
  // the preemptible one has waited longer; a preemptible job within its team's
  // guarantee ties with a non-preemptible one that borrows, so fair share decides.
  Fixture f("PriorityMaxAge=60 PriorityWeightNonPreemptible=10000 TeamQuota=vision:h100=8 TeamQuota=nlp:h100=8\n");
  ck_assert_int_eq(f.config.priority_weight_non_preemptible, 10000);
  PricedJob best_effort = pending("vision", 1, kT0 - 50);
  best_effort.gpu_type = "h100";
  PricedJob pinned = pending("vision", 1, kT0 - 10);
  pinned.gpu_type = "h100";
  pinned.preemptible = false;
  auto b = f.of(best_effort, kT0), p = f.of(pinned, kT0);
  ck_assert(near(b.non_preemptible, 0));
  ck_assert(near(p.non_preemptible, 10000));
  ck_assert(b.age > p.age);
  ck_assert_uint_gt(p.total, b.total);
  // The difference is the term less the older job's lead in age and size.
  ck_assert(std::fabs(static_cast<double>(p.total) - b.total -
                      (10000 - (b.age - p.age) - (b.job_size - p.job_size))) <= 1);
  // nlp (fair share 1.0) borrows with a non-preemptible job; vision (0.25) is within
  // its guarantee with a preemptible one: the quota and the non-preemptible terms
  // cancel out and the better fair share ranks first.
  f.in_use["nlp"]["h100"] = 64;
  PricedJob borrower = pending("nlp", 1, kT0);
  borrower.gpu_type = "h100";
  borrower.preemptible = false;
  PricedJob entitled = pending("vision", 1, kT0);
  entitled.gpu_type = "h100";
  auto nb = f.of(borrower, kT0), ve = f.of(entitled, kT0);
  ck_assert(nb.borrowing && !ve.borrowing);
  ck_assert(near(nb.quota + nb.non_preemptible, ve.quota + ve.non_preemptible));
  ck_assert_uint_gt(nb.total, ve.total);
  // The starvation bound counts the term: a large gang still passes every newcomer.
  Fixture none("PriorityMaxAge=60\n");
  ck_assert(near(bounded_priority_ceiling(f.config), bounded_priority_ceiling(none.config) + 10000));
  // Off by default: both jobs priced alike, the older first.
  ck_assert_int_eq(none.config.priority_weight_non_preemptible, 0);
  ck_assert(near(none.of(pinned, kT0).non_preemptible, 0));
  ck_assert_uint_gt(none.of(best_effort, kT0).total, none.of(pinned, kT0).total);
  // The pass prices it as job_priority() does.
  PassInput in;
  in.teams = {{"vision", 2}, {"nlp", 1}};
  in.cluster_gpus_by_type = {{"h100", 64}};
  in.pending = {best_effort, pinned};
  UsageLedger ledger(0);
  const PassResult pr = priority_pass(f.config, ledger, in, kT0);
  ck_assert(near(pr.pending[1].non_preemptible, 10000));
  ck_assert_uint_gt(pr.pending[1].total, pr.pending[0].total);
  // A bad weight is refused with the key's name.
  auto r = parse_config("PriorityWeightNonPreemptible=lots\n", "mlsched.conf");
  ck_assert(!r.config.has_value());
  ck_assert_contains(r.errors.at(0), "PriorityWeightNonPreemptible=lots is not a whole number");
}
END_TEST

START_TEST(pipeline_stage_inherits_queue_wait_not_run_time) {
  auto stage = [](uint32_t id, const std::string& name, std::vector<AfterEdge> after, bool pending, int64_t eligible,
                  int64_t start) {
    StageQueueFacts f;
    f.job_id = id;
    f.membership.id = "nightly-1";
    f.membership.stage = name;
    f.membership.after = std::move(after);
    f.pending = pending;
    f.eligible = eligible;
    f.start = start;
    return f;
  };
  std::vector<StageQueueFacts> jobs = {
      stage(1, "data", {}, false, 1000, 1100),                              // waited 100 s, then ran
      stage(2, "check", {}, false, 1000, 1010),                             // waited 10 s
      stage(3, "train", {{"data", AfterKind::ok}, {"check", AfterKind::ok}}, false, 1600, 1640),  // waited 40 s
      stage(4, "eval", {{"train", AfterKind::ok}}, true, 5000, 0),          // eligible at 5000
      stage(5, "report", {{"eval", AfterKind::ok}}, true, 0, 0),            // still dependent
  };
  auto starts = pipeline_age_starts(jobs, 86400, 6000);
  ck_assert_uint_eq(starts.size(), 2);
  ck_assert_int_eq(starts[4], 5000 - 140);  // 100 (data, the longer branch) + 40 (train); run time not counted
  ck_assert_int_eq(starts[5], 6000);        // no age while it waits for eval
  // Bounded by PriorityMaxAge.
  ck_assert_int_eq(pipeline_age_starts(jobs, 120, 6000)[4], 5000 - 120);
  // Another user's job that names this pipeline's id does not count.
  jobs[0].user_id = 1002;
  ck_assert_int_eq(pipeline_age_starts(jobs, 86400, 6000)[4], 5000 - 50);
  jobs[0].user_id = 0;
  // Nor do another pipeline's stages of the same name.
  jobs[0].membership.id = "other-2";
  ck_assert_int_eq(pipeline_age_starts(jobs, 86400, 6000)[4], 5000 - 50);
}
END_TEST

Suite* priority_suite() {
  Suite* s = suite_create("priority");
  TCase* usage = tcase_create("usage");
  tcase_add_test(usage, tres_strings_give_gpus_by_type);
  tcase_add_test(usage, pipeline_stage_inherits_queue_wait_not_run_time);
  tcase_add_test(usage, usage_is_weighted_by_gpu_type);
  tcase_add_test(usage, usage_halves_after_one_half_life);
  tcase_add_test(usage, zero_half_life_never_decays);
  tcase_add_test(usage, each_second_is_charged_once);
  tcase_add_test(usage, reload_resumes_without_double_counting);
  tcase_add_test(usage, work_lost_to_node_failure_is_not_charged);
  tcase_add_test(usage, a_failed_run_is_charged_up_to_its_last_checkpoint);
  tcase_add_test(usage, corrupt_state_is_rejected_with_reason);
  tcase_add_test(usage, damaged_state_never_parses_into_nonsense);
  tcase_add_test(usage, a_run_s_gpu_seconds_come_back_at_its_end);
  suite_add_tcase(s, usage);
  TCase* standing = tcase_create("standing");
  tcase_add_test(standing, standing_compares_usage_with_entitlement);
  tcase_add_test(standing, exactly_entitled_usage_gives_one_half);
  tcase_add_test(standing, quota_from_config_or_fair_share);
  tcase_add_test(standing, job_beyond_guarantee_is_borrowing);
  tcase_add_test(standing, quota_per_pool_counts_a_types_gpus_by_partition);
  tcase_add_test(standing, youngest_running_jobs_beyond_the_guarantee_borrow);
  tcase_add_test(standing, a_job_stops_borrowing_when_older_ones_end);
  tcase_add_test(standing, borrowing_token_is_set_replaced_and_removed);
  suite_add_tcase(s, standing);
  TCase* formula = tcase_create("formula");
  tcase_add_test(formula, priority_terms_follow_the_formula);
  tcase_add_test(formula, age_is_capped_but_size_term_keeps_growing);
  tcase_add_test(formula, within_quota_team_outranks_borrowing_team);
  tcase_add_test(formula, gang_reaches_the_top_within_the_bound);
  tcase_add_test(formula, priority_is_at_least_one);
  tcase_add_test(formula, a_job_priced_alone_is_priced_as_queued_last);
  tcase_add_test(formula, a_gang_is_not_overtaken_into_its_team_guarantee);
  tcase_add_test(formula, a_job_larger_than_its_guarantee_closes_nothing);
  tcase_add_test(formula, only_a_large_gang_holds_its_place_by_default);
  tcase_add_test(formula, a_job_that_cannot_start_yet_takes_no_place);
  tcase_add_test(formula, attained_service_levels_follow_the_thresholds);
  tcase_add_test(formula, attained_service_ranks_a_team_s_fresh_jobs_first);
  tcase_add_test(formula, best_effort_queues_behind_non_preemptible_jobs);
  tcase_add_test(formula, a_job_partly_within_its_guarantee_gets_the_share_within);
  suite_add_tcase(s, formula);
  TCase* config = tcase_create("config");
  tcase_add_test(config, priority_config_keys_are_typed);
  tcase_add_test(config, priority_config_rejects_bad_values);
  tcase_add_test(config, attained_service_config_keys);
  suite_add_tcase(s, config);
  return s;
}
