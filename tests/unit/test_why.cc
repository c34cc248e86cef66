// Why a job waits: each reason with its numbers, and counterfactuals computed on
// a snapshot of the hand-written 16-node cluster (nvl0-3, sw0/sw1, h100/a100).
#include "core/hostlist.h"
#include "core/text.h"
#include "core/placement.h"
#include "core/why.h"
#include "fixtures.h"
#include "suites.h"

using namespace mlsched;

namespace {

// Every GPU of every node free, all nodes up.
ClusterState idle(const Cluster& c) {
  ClusterState s;
  for (const auto& n : c.nodes()) {
    NodeState ns;
    ns.gpu_busy.assign(n.gpus, false);
    s.push_back(ns);
  }
  return s;
}

void occupy(const Cluster& c, ClusterState& s, const std::string& node, uint32_t gpus) {
  const size_t i = static_cast<size_t>(c.find_node(node) - c.nodes().data());
  for (uint32_t g = 0; g < gpus; ++g) s[i].gpu_busy[g] = true;
}

// The fixture's a100 nodes, gpu[09-16], all busy.
void occupy_every_a100(const Cluster& c, ClusterState& s) {
  for (int i = 9; i <= 16; ++i) occupy(c, s, (i < 10 ? "gpu0" : "gpu") + std::to_string(i), 8);
}

JobFacts pending_job(uint32_t nodes, uint32_t per_node, std::vector<std::string> types, Locality loc, LocalityMode mode) {
  JobFacts j;
  j.job_id = 900;
  j.name = "train";
  j.user = "ml-alice";
  j.state = "PENDING";
  j.slurm_reason = "Resources";
  j.priority = 100;
  j.request.gang.nodes = nodes;
  j.request.gang.gpus_per_node = per_node;
  j.request.gpu_types = std::move(types);
  j.request.locality = loc;
  j.request.locality_mode = mode;
  return j;
}

// The cluster idle at `now`, nothing else known.
Snapshot idle_snapshot(const Cluster& c, time_t now) {
  Snapshot snap;
  snap.cluster = &c;
  snap.state = idle(c);
  snap.now = now;
  return snap;
}

const Finding* find(const WhyReport& r, const std::string& reason) {
  for (const auto& f : r.findings)
    if (f.reason == reason) return &f;
  return nullptr;
}

const Counterfactual* find_cf(const WhyReport& r, const std::string& change) {
  for (const auto& c : r.counterfactuals)
    if (c.change == change) return &c;
  return nullptr;
}

}  // namespace

START_TEST(slurm_strings) {
  auto deps = parse_dependencies("afterok:812(unfulfilled),afterany:813_*(failed)?singleton(unfulfilled)");
  ck_assert_int_eq(deps.size(), 3);
  ck_assert_string_eq(deps[0].condition, "afterok");
  ck_assert_int_eq(deps[0].job_id, 812);
  ck_assert_string_eq(deps[0].status, "unfulfilled");
  ck_assert_int_eq(deps[1].job_id, 813);
  ck_assert_string_eq(deps[1].status, "failed");
  ck_assert_string_eq(deps[2].condition, "singleton");
  ck_assert(parse_dependencies("(null)").empty());
  ck_assert_int_eq(parse_dependencies("afterok:1:2").size(), 2);

  auto idx = gpu_indices_from_gres("gpu:h100:3(IDX:0-1,4),shard:0(IDX:N/A)");
  ck_assert_int_eq(idx.size(), 3);
  ck_assert_int_eq(idx[2], 4);
  ck_assert(gpu_indices_from_gres("gpu:a100:0(IDX:N/A)").empty());
  // Found by fuzz_tres: a huge range was expanded index by index (out of memory).
  ck_assert_int_eq(gpu_indices_from_gres("gpu:a100:2(IDX:5-99999999)").size(), kMaxGpusPerNode - 5);
  ck_assert_int_eq(gpu_indices_from_gres("gpu:a100:2(IDX:0-1023,0-1023,7)").size(), kMaxGpusPerNode);
  ck_assert(gpu_indices_from_gres("gpu:a100:1(IDX:1666666666666666)").empty());

  // A request string and an accounting string, read by the one TRES reader (tres.h).
  auto t = gpu_counts_from_tres("gres:gpu:h100:8");
  ck_assert_uint_eq(t.by_type.size(), 1);
  ck_assert_uint_eq(t.by_type.at("h100"), 8);
  ck_assert_uint_eq(gpu_counts_from_tres("cpu=2,gres/gpu=4").total(), 4);
  ck_assert_uint_eq(gpu_counts_from_tres("cpu=2,mem=100").total(), 0);

  ck_assert_string_eq(format_duration(45), "45 s");
  ck_assert_string_eq(format_duration(1200), "20 min");
  ck_assert_string_eq(format_duration(3 * 3600 + 300), "3 h 05 min");
}
END_TEST

START_TEST(strict_locality_gets_prefer_counterfactual) {
  // One idle h100 node per domain (gpu01 in nvl0, gpu05 in nvl1); the rest full.
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  for (const char* n : {"gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"}) occupy(c, s, n, 8);
  occupy_every_a100(c, s);
  Snapshot snap{&c, s, {}, {}, 1000};
  JobFacts job = pending_job(2, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict);
  WhyReport r = explain(job, snap);
  const Finding* f = find(r, wait_reason::kStrictLocality);
  ck_assert_msg(f, "no strict-locality finding");
  ck_assert_contains(f->message, "no single nvlink-domain can take 16 h100");
  ck_assert_contains(f->message, "with 8 free");
  const Counterfactual* cf = find_cf(r, "locality-mode=prefer");
  ck_assert_msg(cf, "no prefer counterfactual");
  ck_assert_contains(cf->message, "16 h100 free across 2 nvlink-domains");
  ck_assert_contains(cf->message, "gpu01");
  ck_assert_contains(cf->message, "gpu05");
  const Counterfactual* sw = find_cf(r, "locality=switch");
  ck_assert_msg(sw, "no locality=switch counterfactual");
  ck_assert_contains(sw->message, "sw0");
  // The same job with prefer would be placed now: nothing in mlsched's model blocks it.
  JobFacts prefer = pending_job(2, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::prefer);
  prefer.slurm_reason = "None";
  WhyReport rp = explain(prefer, snap);
  ck_assert_int_eq(rp.findings.size(), 1);
  ck_assert_string_eq(rp.findings[0].reason, wait_reason::kWaitingForScheduler);
}
END_TEST

START_TEST(fragmented_free_gpus) {
  // Every h100 node has 4 free: 32 free, but no node with 8.
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  for (int i = 1; i <= 8; ++i) occupy(c, s, "gpu0" + std::to_string(i), 4);
  occupy_every_a100(c, s);
  Snapshot snap{&c, s, {}, {}, 1000};
  WhyReport r = explain(pending_job(2, 8, {"h100"}, Locality::any, LocalityMode::prefer), snap);
  const Finding* f = find(r, wait_reason::kFreeGpusFragmented);
  ck_assert_msg(f, "no fragmentation finding");
  ck_assert_contains(f->message, "32 h100 free in total (needs 16) but no 2 nodes with 8 free each");
  ck_assert(!find(r, wait_reason::kNotEnoughFreeGpus));
}
END_TEST

START_TEST(busy_type_gets_other_type_counterfactual_and_blockers) {
  // All h100 held by two running jobs; a100 idle.
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  RunningJob early{501, "prep", "ml-bob", "nlp", {}, 1600};
  RunningJob late{502, "big", "ml-carol", "research", {}, 5000};
  for (int i = 1; i <= 8; ++i) {
    const std::string n = "gpu0" + std::to_string(i);
    occupy(c, s, n, 8);
    (i <= 4 ? early : late).gpus_by_node[n] = {0, 1, 2, 3, 4, 5, 6, 7};
  }
  PendingJob ahead{700, "sweep", "ml-dave", "gpu", 500, {"h100"}, 8};
  PendingJob behind{701, "small", "ml-dave", "gpu", 50, {"h100"}, 8};
  PendingJob other{702, "a", "ml-dave", "gpu", 900, {"a100"}, 8};
  Snapshot snap{&c, s, {early, late}, {ahead, behind, other}, 1000};
  JobFacts job = pending_job(1, 8, {"h100"}, Locality::node, LocalityMode::prefer);
  WhyReport r = explain(job, snap);
  const Finding* f = find(r, wait_reason::kNotEnoughFreeGpus);
  ck_assert_msg(f, "no not-enough finding");
  ck_assert_contains(f->message, "0 of 64 h100 free");
  const Counterfactual* cf = find_cf(r, "gpu-type=a100");
  ck_assert_msg(cf, "no a100 counterfactual");
  ck_assert_contains(cf->message, "would fit now");
  // The earliest-ending holder frees a whole node at t=1600.
  ck_assert_int_eq(r.blockers.size(), 1);
  ck_assert_int_eq(r.blockers[0].job.job_id, 501);
  ck_assert_int_eq(r.model_eta, 1600);
  // Rank among h100 jobs: behind 700, ahead of 701; the a100 job does not compete.
  ck_assert_int_eq(r.rank, 2);
  ck_assert_int_eq(r.competing, 3);
  const Finding* p = find(r, wait_reason::kBehindHigherPriority);
  ck_assert_msg(p, "no priority finding");
  ck_assert_contains(p->message, "sweep 700 (ml-dave, priority 500)");
  const std::string screen = format_why(job, r, 1000);
  ck_assert_contains(screen, "NotEnoughFreeGpus");
  ck_assert_contains(screen, "job prep 501 (ml-bob, nlp) holds 32 GPUs");
  ck_assert_contains(screen, "rank 2 of 3");
  ck_assert_contains(screen, "gpu-type=a100: would fit now");
}
END_TEST

START_TEST(held_dependency_and_missing_type) {
  Cluster c = fixture_cluster();
  Snapshot snap{&c, idle(c), {}, {}, 1000};
  JobFacts job = pending_job(1, 2, {"t4"}, Locality::any, LocalityMode::prefer);
  job.slurm_reason = "JobHeldUser";
  job.priority = 0;
  UpstreamJob up;
  up.ref = {"afterok", 812, "unfulfilled"};
  up.found = true;
  up.name = "data-prep";
  up.state = "RUNNING";
  up.expected_end = 1000 + 1200;
  job.upstream.push_back(up);
  UpstreamJob gone;
  gone.ref = {"afterok", 811, "failed"};
  job.upstream.push_back(gone);
  WhyReport r = explain(job, snap);
  ck_assert_string_eq(r.findings[0].reason, wait_reason::kHeldByUser);
  ck_assert_contains(r.findings[0].message, "scontrol release 900");
  const Finding* d = find(r, wait_reason::kWaitingForDependency);
  ck_assert_msg(d, "no dependency finding");
  ck_assert_contains(d->message, "afterok on data-prep 812, RUNNING, ~20 min left");
  const Finding* never = find(r, wait_reason::kDependencyNeverSatisfied);
  ck_assert_msg(never, "no never-satisfied finding");
  ck_assert_contains(never->message, "811 (no longer known to Slurm)");
  const Finding* t = find(r, wait_reason::kGpuTypeNotInCluster);
  ck_assert_msg(t, "no missing-type finding");
  ck_assert_contains(t->message, "no node has t4 GPUs; the cluster has a100, h100");
  // Order is the documented order: held before dependency before resources.
  ck_assert_string_eq(r.findings[1].reason, wait_reason::kWaitingForDependency);
}
END_TEST

// A job that fits the free GPUs now but waits for a running upstream job (a pipeline
// stage): its ETA is when that job reaches its time limit, and why says so.
START_TEST(dependency_on_running_job_gives_the_eta) {
  Cluster c = fixture_cluster();
  Snapshot snap{&c, idle(c), {}, {}, 1000, {}};
  JobFacts job = pending_job(1, 2, {"h100"}, Locality::any, LocalityMode::prefer);
  job.slurm_reason = "Dependency";
  UpstreamJob up;
  up.ref = {"afterok", 812, "unfulfilled"};
  up.found = true;
  up.name = "nightly/data-prep";
  up.state = "RUNNING";
  up.expected_end = 1000 + 1200;
  job.upstream.push_back(up);
  const WhyReport r = explain(job, snap);
  ck_assert_int_eq(r.model_eta, 2200);
  ck_assert(r.eta_is_upstream_end);
  ck_assert_contains(format_why(job, r, 1000), "(in 20 min), when the jobs it waits for reach their time limits");
  // Without a time limit upstream there is no such ETA.
  job.upstream[0].expected_end = 0;
  ck_assert_int_eq(explain(job, snap).model_eta, 0);
}
END_TEST

START_TEST(down_nodes_and_slurm_limits) {
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  for (int i = 1; i <= 8; ++i) s[i - 1].usable = false;  // every h100 node down
  Snapshot snap{&c, s, {}, {}, 1000};
  JobFacts job = pending_job(1, 8, {"h100"}, Locality::any, LocalityMode::prefer);
  job.slurm_reason = "AssocGrpGRES";
  WhyReport r = explain(job, snap);
  const Finding* down = find(r, wait_reason::kGpuNodesUnavailable);
  ck_assert_msg(down, "no down-nodes finding");
  ck_assert_contains(down->message, "8 node(s) with 64 GPUs are down or drained");
  ck_assert_msg(find(r, wait_reason::kAccountOrQosLimit), "Slurm's association limit not reported");
  job.slurm_reason = "PartitionTimeLimit";
  ck_assert_msg(find(explain(job, snap), wait_reason::kPartitionLimit), "partition limit not reported");
  job.slurm_reason = "SomethingNew";
  ck_assert_msg(find(explain(job, snap), wait_reason::kOtherSlurmReason), "unknown Slurm reason dropped");
  // Every reason the code can give is documented.
  ck_assert_int_eq(wait_reason_docs().size(), 25);
}
END_TEST

// TeamQuota per pool: a job is counted against its type in its pool (the pool it
// runs in; pending: the first it names), as the plugins count it.
START_TEST(team_standing_is_counted_per_pool_where_a_quota_names_one) {
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  Snapshot snap{&c, s, {}, {}, 1000};
  snap.config = parse_config("TeamQuota=nlp:a100@train=8,a100=0\n", "mlsched.conf").config.value();
  TeamView nlp;
  nlp.in_use = {{"a100@train", 8}};
  nlp.guaranteed = {{"a100@train", 8}, {"a100", 0}, {"h100", 0}};
  snap.teams = {{"nlp", nlp}};
  JobFacts job = pending_job(1, 8, {"a100"}, Locality::any, LocalityMode::prefer);
  job.account = "nlp";
  job.partition = "train,infer";
  WhyReport r = explain(job, snap);
  ck_assert_str_eq(r.team.gpu_type.c_str(), "a100@train");
  ck_assert_int_eq(r.team.holds, 8);
  ck_assert_int_eq(r.team.guaranteed, 8);
  const Finding* q = find(r, wait_reason::kTeamBeyondQuota);
  ck_assert_msg(q, "no quota finding");
  ck_assert_contains(q->message, "team nlp holds 8 a100@train of the 8 it is guaranteed; this job's 8 would be borrowed");
  // Named first elsewhere, it counts against the type's other GPUs.
  job.partition = "infer,train";
  r = explain(job, snap);
  ck_assert_str_eq(r.team.gpu_type.c_str(), "a100");
  ck_assert_int_eq(r.team.holds, 0);
  // Running in train: that pool's kind.
  job.state = "RUNNING";
  job.partition = "train";
  job.gpus_by_node = {{"gpu09", {0, 1, 2, 3, 4, 5, 6, 7}}};
  r = explain(job, snap);
  ck_assert_str_eq(r.team.gpu_type.c_str(), "a100@train");
  ck_assert_contains(format_why(job, r, 1000), "team:       nlp holds 8 a100@train, guaranteed 8");
}
END_TEST

START_TEST(quota_and_fair_share_behind_another_team) {
  // Every a100 busy; team nlp already holds 8 a100 with none guaranteed, team
  // vision none of its 8. vision's job comes first; nlp's would borrow.
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  occupy_every_a100(c, s);
  Snapshot snap{&c, s, {}, {}, 1000};
  PendingJob vision_job{700, "v", "ml-alice", "gpu", 20000, {"a100"}, 8, "vision"};
  snap.pending = {vision_job};
  TeamView nlp;
  nlp.has_shares = true;
  nlp.shares_norm = 0.25;
  nlp.usage_norm = 0.6;
  nlp.fairshare = 0.189;
  nlp.in_use = {{"a100", 8}};
  nlp.guaranteed = {{"a100", 0}, {"h100", 16}};
  TeamView vision;
  vision.has_shares = true;
  vision.shares_norm = 0.5;
  vision.usage_norm = 0.1;
  vision.fairshare = 0.871;
  vision.guaranteed = {{"a100", 8}};
  snap.teams = {{"nlp", nlp}, {"vision", vision}};
  JobFacts job = pending_job(1, 8, {"a100"}, Locality::any, LocalityMode::prefer);
  job.account = "nlp";
  job.priority = 9000;
  WhyReport r = explain(job, snap);
  const Finding* q = find(r, wait_reason::kTeamBeyondQuota);
  ck_assert_msg(q, "no quota finding");
  ck_assert_contains(q->message, "team nlp holds 8 a100 of the 0 it is guaranteed; this job's 8 would be borrowed");
  ck_assert_contains(q->message, "would be borrowed: no quota priority, and preemptible");
  {
    // TeamQuotaPartialCredit, with 10 a100 guaranteed: 2 of the 8 fit.
    Snapshot partial = snap;
    partial.config.team_quota_partial_credit = true;
    partial.teams["nlp"].guaranteed["a100"] = 10;
    const Finding* p = find(explain(job, partial), wait_reason::kTeamBeyondQuota);
    ck_assert_msg(p, "no quota finding with partial credit");
    ck_assert_contains(p->message, "this job's 8 would be borrowed: 2 of them fit the guarantee, so the quota term is "
                                   "2/8 of PriorityWeightQuota (TeamQuotaPartialCredit)");
  }
  const Finding* f = find(r, wait_reason::kTeamFairShareBehind);
  ck_assert_msg(f, "no fair-share finding");
  ck_assert_contains(f->message, "team nlp has had 60.0% of recent GPU-time for a 25.0% entitlement (fair-share factor 0.189)");
  ck_assert_contains(f->message, "ahead: vision has had 10.0% of recent GPU-time for a 50.0% entitlement (fair-share factor 0.871)");
  ck_assert_int_eq(r.team.holds, 8);
  ck_assert_int_eq(r.team.guaranteed, 0);
  ck_assert(r.team.job_borrows);
  const std::string screen = format_why(job, r, 1000);
  ck_assert_contains(screen, "team:       nlp holds 8 a100, guaranteed 0; has had 60.0%");
  // Order: priority, then fair share, then quota.
  size_t prio = 0, fs = 0, quota = 0;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    if (r.findings[i].reason == wait_reason::kBehindHigherPriority) prio = i + 1;
    if (r.findings[i].reason == wait_reason::kTeamFairShareBehind) fs = i + 1;
    if (r.findings[i].reason == wait_reason::kTeamBeyondQuota) quota = i + 1;
  }
  ck_assert(prio && prio < fs && fs < quota);
  // PreemptForNonPreemptible: a borrowing job that is not preemptible may still
  // preempt best effort, and why says so; a preemptible one may not.
  ck_assert(q->message.find("PreemptForNonPreemptible") == std::string::npos);
  snap.config.preempt_for_non_preemptible = true;
  job.admin_comment = "mlsched: type=training preemptible=no";
  job.directives = parse_stored_directives(job.admin_comment);
  r = explain(job, snap);
  ck_assert(r.team.best_effort_rule);
  ck_assert_contains(find(r, wait_reason::kTeamBeyondQuota)->message,
                     "; as it is not preemptible it may still preempt a preemptible job whose team stays at least as "
                     "far beyond its guarantee (PreemptForNonPreemptible)");
  job.admin_comment = "mlsched: type=training preemptible=yes";
  job.directives = parse_stored_directives(job.admin_comment);
  r = explain(job, snap);
  ck_assert(!r.team.best_effort_rule);
  ck_assert(find(r, wait_reason::kTeamBeyondQuota)->message.find("PreemptForNonPreemptible") == std::string::npos);
  snap.config.preempt_for_non_preemptible = false;
  job.directives.reset();
  job.admin_comment.clear();
  // Within its guarantee, or ahead of a team that stands worse: neither finding.
  job.account = "vision";
  snap.pending[0].account = "nlp";
  r = explain(job, snap);
  ck_assert(!find(r, wait_reason::kTeamBeyondQuota));
  ck_assert(!find(r, wait_reason::kTeamFairShareBehind));
}
END_TEST

START_TEST(best_effort_behind_jobs_that_cannot_be_preempted) {
  // Every a100 busy; two jobs rank above a preemptible one: one that may not be
  // preempted and one that may. With PriorityWeightNonPreemptible why names the first.
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  occupy_every_a100(c, s);
  Snapshot snap{&c, s, {}, {}, 1000};
  PendingJob pinned{700, "p", "ml-alice", "gpu", 21000, {"a100"}, 1, "vision"};
  PendingJob other{701, "o", "ml-bob", "gpu", 20000, {"a100"}, 1, "nlp"};
  other.preemptible = true;
  snap.pending = {pinned, other};
  JobFacts job = pending_job(1, 1, {"a100"}, Locality::any, LocalityMode::prefer);
  job.account = "nlp";
  job.priority = 9000;
  job.admin_comment = "mlsched: type=training preemptible=yes";
  job.directives = parse_stored_directives(job.admin_comment);
  ck_assert(!find(explain(job, snap), wait_reason::kBestEffortBehind));  // off by default
  snap.config.priority_weight_non_preemptible = 10000;
  WhyReport r = explain(job, snap);
  const Finding* f = find(r, wait_reason::kBestEffortBehind);
  ck_assert_msg(f, "no best-effort finding");
  ck_assert_str_eq(f->message.c_str(),
                   "the job is preemptible; 1 of the 2 pending job(s) ahead for the same GPUs are not, and rank 10000 "
                   "higher for it (PriorityWeightNonPreemptible)");
  // A job that may not be preempted itself gets the weight: nothing to say.
  job.admin_comment = "mlsched: type=training preemptible=no";
  job.directives = parse_stored_directives(job.admin_comment);
  ck_assert(!find(explain(job, snap), wait_reason::kBestEffortBehind));
}
END_TEST

START_TEST(guarantee_kept_for_an_earlier_gang_is_named) {
  // nlp is guaranteed 16 h100 and runs 8; its 16-GPU gang (job 812) was queued
  // first. A 1-GPU job queued after it would fit the 8 left, but they are kept for
  // the gang, as priority/mlsched prices it.
  Cluster c = fixture_cluster();
  Snapshot snap = idle_snapshot(c, 1000);
  occupy(c, snap.state, "gpu01", 8);
  TeamView nlp;
  nlp.has_shares = true;
  nlp.shares_norm = 0.25;
  nlp.in_use = {{"h100", 8}};
  nlp.guaranteed = {{"a100", 16}, {"h100", 16}};
  snap.teams = {{"nlp", nlp}};
  PendingJob gang{812, "pretrain", "ml-bob", "gpu", 9000, {"h100"}, 16, "nlp"};
  gang.submit_time = 500;
  PendingJob later{813, "eval", "ml-bob", "gpu", 9500, {"h100"}, 1, "nlp"};
  later.submit_time = 600;
  snap.pending = {later, gang};
  JobFacts job = pending_job(1, 1, {"h100"}, Locality::any, LocalityMode::prefer);
  job.job_id = 813;
  job.account = "nlp";
  job.submit_time = 600;
  WhyReport r = explain(job, snap);
  const Finding* k = find(r, wait_reason::kTeamQuotaKeptForEarlierJob);
  ck_assert_msg(k, "no kept-guarantee finding");
  ck_assert_contains(k->message, "team nlp holds 8 h100 of the 16 it is guaranteed; the rest is kept for its job 812 "
                                 "(16 GPUs), queued before this one: no quota priority until that job starts");
  ck_assert(!find(r, wait_reason::kTeamBeyondQuota));
  ck_assert_int_eq(r.team.kept_by, 812);
  // Queued before the gang, it takes its GPU from the guarantee: no finding.
  snap.pending[0].submit_time = 400;
  job.submit_time = 400;
  r = explain(job, snap);
  ck_assert(!find(r, wait_reason::kTeamQuotaKeptForEarlierJob));
  // A held gang (priority 0) keeps nothing, as priority/mlsched does not price it.
  snap.pending[0].submit_time = 600;
  job.submit_time = 600;
  snap.pending[1].priority = 0;
  r = explain(job, snap);
  ck_assert(!find(r, wait_reason::kTeamQuotaKeptForEarlierJob));
  // Nor does one whose --begin is still to come.
  snap.pending[1].priority = 9000;
  snap.pending[1].eligible = false;
  r = explain(job, snap);
  ck_assert(!find(r, wait_reason::kTeamQuotaKeptForEarlierJob));
}
END_TEST

START_TEST(running_job_shows_locality_history_checkpoint_and_borrowing) {
  auto node_cliques = nvlink_cliques_from_gres_conf(
      "# two 2-GPU cliques\n"
      "NodeName=gpu[09-10] Name=gpu Type=a100 File=/dev/nvidia0 Links=-1,18,0,0\n"
      "NodeName=gpu[09-10] Name=gpu Type=a100 File=/dev/nvidia1 Links=18,-1,0,0\n"
      "NodeName=gpu[09-10] Name=gpu Type=a100 File=/dev/nvidia2 Links=0,0,-1,18\n"
      "NodeName=gpu[09-10] Name=gpu Type=a100 File=/dev/nvidia3 Links=0,0,18,-1\n"
      "NodeName=gpu01 Name=gpu Type=h100 File=/dev/nvidia0\n");
  ck_assert_int_eq(node_cliques.size(), 2);
  ck_assert_int_eq(node_cliques["gpu10"].size(), 2);
  // The tool's model, built as `mlsched why` builds it: the fixture's nodes, with
  // the cliques its gres.conf gives, through the one model builder.
  const Cluster fixture = fixture_cluster();
  std::vector<NodeFacts> facts;
  for (const auto& n : fixture.nodes())
    facts.push_back({n.name, join(n.features, ","), n.gpus ? "gpu:" + n.gpu_type + ":" + std::to_string(n.gpus) : std::string(),
                     node_cliques[n.name]});
  std::vector<NvlinkDomainSpec> domains;
  for (const auto& n : fixture.nodes())
    if (!n.nvlink_domain.empty()) domains.push_back({n.nvlink_domain, {n.name}, 0});
  Cluster c;
  const ModelProblems problems = build_cluster_model(c, facts, domains, fixture.switches());
  ck_assert(problems.nodes.empty() && problems.nvlink_domains.empty());
  ck_assert_int_eq(c.find_node("gpu09")->nvlink_cliques.size(), 2);
  ck_assert_string_eq(c.find_node("gpu09")->nvlink_domain, "nvl2");
  ClusterState s = idle(c);
  Snapshot snap{&c, s, {}, {}, 10000};
  {
    // The rows read from one gres.conf are bounded (the lines
    // past kMaxGresConfRows are ignored, so gpu99999 is not seen).
    std::string big;
    for (size_t i = 0; i < kMaxGresConfRows / 50000; ++i)
      big += "NodeName=n[00001-50000] Name=gpu Links=-1\n";
    big += "NodeName=gpu99999 Name=gpu Links=-1\n";
    const auto cliques = nvlink_cliques_from_gres_conf(big);
    ck_assert_int_eq(cliques.size(), 50000);
    ck_assert(cliques.count("gpu99999") == 0);
  }
  TeamView nlp;
  nlp.in_use = {{"a100", 6}};
  nlp.guaranteed = {{"a100", 4}};
  snap.teams = {{"nlp", nlp}};
  JobFacts job = pending_job(1, 3, {"a100"}, Locality::any, LocalityMode::prefer);
  job.state = "RUNNING";
  job.account = "nlp";
  job.gpus_by_node = {{"gpu09", {1, 2, 3}}};
  job.admin_comment = with_preemption_recorded("mlsched: type=training borrowing=yes", 812, 9400, 800);
  job.borrowing_mark = stored_token(job.admin_comment, "borrowing");
  job.preemptions = preemption_history(job.admin_comment);
  job.last_checkpoint = 9940;
  job.last_checkpoint_path = "/w/mlsched-checkpoints/900/step-40";
  WhyReport r = explain(job, snap);
  ck_assert_int_eq(r.placement.size(), 1);
  ck_assert_int_eq(r.placement[0].cliques.size(), 2);  // GPU 1 in {0,1}, GPUs 2-3 in {2,3}
  const std::string screen = format_why(job, r, 10000);
  ck_assert_contains(screen, "locality:   gpu09: nvlink-domain nvl2, switch sw1, GPUs split over NVLink cliques {1} {2-3}");
  ck_assert_contains(screen, "borrowing:  yes (priority/mlsched's mark)");
  ck_assert_contains(screen, "checkpoint: /w/mlsched-checkpoints/900/step-40 marked complete at");
  ck_assert_contains(screen, "(1 min ago)");
  ck_assert_contains(screen, "preempted:  1 time, last at");
  ck_assert_contains(screen, "(10 min ago) by job 812; work lost, estimated: 800 GPU-seconds in all");
  ck_assert_contains(screen, "team:       nlp holds 6 a100, guaranteed 4");
  ck_assert(screen.find("reported to slurmctld") == std::string::npos);
  // Reported to slurmctld: with the path when the directory agrees, without when
  // only the job record is readable.
  job.checkpoint_reported = true;
  ck_assert_contains(format_why(job, r, 10000),
                     "checkpoint: /w/mlsched-checkpoints/900/step-40 marked complete at");
  ck_assert_contains(format_why(job, r, 10000), "(1 min ago), reported to slurmctld");
  job.last_checkpoint_path.clear();
  ck_assert_contains(format_why(job, r, 10000), "checkpoint: marked complete at");
  // Without priority/mlsched's mark the team's standing is the estimate.
  job.borrowing_mark.reset();
  r = explain(job, snap);
  ck_assert(r.team.job_borrows);
  ck_assert_contains(r.team.borrowing_from, "estimate");
  // PreemptForNonPreemptible: a preemptible running job is best effort, and why
  // says who may take its GPUs; a non-preemptible one, or the lever off: no line.
  ck_assert(format_why(job, r, 10000).find("best effort:") == std::string::npos);
  snap.config.preempt_for_non_preemptible = true;
  job.admin_comment = "mlsched: type=training preemptible=yes borrowing=yes";
  job.directives = parse_stored_directives(job.admin_comment);
  job.borrowing_mark = stored_token(job.admin_comment, "borrowing");
  ck_assert_contains(format_why(job, explain(job, snap), 10000),
                     "  best effort: non-preemptible jobs of team nlp may preempt it, and those of a team that stays "
                     "no further beyond its guarantee (PreemptForNonPreemptible)\n");
  job.admin_comment = "mlsched: type=training preemptible=yes borrowing=no";
  job.borrowing_mark = stored_token(job.admin_comment, "borrowing");
  ck_assert_contains(format_why(job, explain(job, snap), 10000),
                     "  best effort: non-preemptible jobs of team nlp may preempt it (PreemptForNonPreemptible)\n");
  job.admin_comment = "mlsched: type=training preemptible=no borrowing=yes";
  job.directives = parse_stored_directives(job.admin_comment);
  ck_assert(format_why(job, explain(job, snap), 10000).find("best effort:") == std::string::npos);
}
END_TEST

// AttainedService: a requeued job waiting in a higher level is told so, with its
// GPU-time and when it is promoted; a running job shows its level, this run
// counted, and whether its team's jobs may preempt it (PreemptForAttainedService).
START_TEST(attained_service_level_is_named_for_waiting_and_running_jobs) {
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  Snapshot snap{&c, s, {}, {}, 10000};
  snap.config.attained_service.teams = {"nlp"};
  snap.config.attained_service_thresholds = {3600, 36000};
  snap.config.attained_service_promote_after = 3600;
  JobFacts job = pending_job(1, 4, {"a100"}, Locality::any, LocalityMode::prefer);
  job.account = "nlp";
  job.submit_time = 9400;  // requeued 10 min ago
  job.admin_comment = "mlsched: type=training preemptible=yes attained-gpu-seconds=5000 first-submit=9000";
  job.directives = parse_stored_directives(job.admin_comment);
  ck_assert(job.directives && job.directives->preemptible);
  WhyReport r = explain(job, snap);
  const Finding* f = find(r, wait_reason::kAttainedServiceLevel);
  ck_assert_msg(f, "no attained-service finding");
  ck_assert_contains(f->message, "it used 5000 GPU-seconds in earlier runs: attained-service level 1 of 2");
  ck_assert_contains(f->message, "back in level 0 at " + local_clock(9400 + 3600));
  ck_assert_int_eq(r.attained.level, 1);
  ck_assert_contains(format_why(job, r, 10000), "AttainedServiceLevel");
  // Promoted after an hour of waiting: no finding.
  job.submit_time = 10000 - 3600;
  ck_assert(!find(explain(job, snap), wait_reason::kAttainedServiceLevel));
  // Another team, or attained service off: nothing.
  job.submit_time = 9400;
  job.account = "vision";
  ck_assert(!explain(job, snap).attained.applies);
  job.account = "nlp";
  // Running on 4 GPUs for 8000 s: 5000 + 32000 = 37000 GPU-seconds, level 2.
  job.state = "RUNNING";
  job.start_time = 2000;
  job.gpus_by_node = {{"gpu09", {0, 1, 2, 3}}};
  r = explain(job, snap);
  ck_assert_int_eq(r.attained.level, 2);
  ck_assert_contains(format_why(job, r, 10000), "attained:   level 2 of 2 (37000 GPU-seconds, this run included)\n");
  snap.config.preempt_for_attained_service = true;
  ck_assert_contains(format_why(job, explain(job, snap), 10000),
                     "(37000 GPU-seconds, this run included): its team's jobs in a lower level may preempt it");
}
END_TEST

// `mlsched why` shows select's recorded reason beside its own recomputation, from
// the same plan_placement, and says whether they agree.
START_TEST(why_shows_select_view_beside_its_recomputation) {
  Cluster c = fixture_cluster();
  Snapshot snap = idle_snapshot(c, 1000);
  // One idle h100 node per h100 domain: 16 free, never 16 in one domain.
  for (const char* n : {"gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"}) occupy(c, snap.state, n, 8);
  JobFacts j = pending_job(2, 8, {"h100"}, Locality::nvlink_domain, LocalityMode::strict);
  j.select_reason =
      "needs 16 h100 GPUs (2 nodes x 8) in one NVLink domain; free now: h100: 16 free on 2 nodes with room, at "
      "most 8 in one NVLink domain (nvl0)";
  j.select_evaluated = 990;
  WhyReport r = explain(j, snap);
  ck_assert_str_eq(r.placement_now.c_str(), j.select_reason.c_str());
  ck_assert(!r.select_differs);
  std::string text = format_why(j, r, snap.now);
  ck_assert_contains(text, "  select:     " + j.select_reason + " (select/mlsched's view, ");
  ck_assert_contains(text, "; agrees with select/mlsched");
  // Select saw the cluster before gpu05 freed up: now the two differ, and why says so.
  j.select_reason = "needs 16 h100 GPUs (2 nodes x 8) in one NVLink domain; free now: h100: 8 free on 1 node with room";
  r = explain(j, snap);
  ck_assert(r.select_differs);
  ck_assert_contains(format_why(j, r, snap.now), "differs from select/mlsched's view");
}
END_TEST

// GpuTypeSpeed: select/mlsched keeps a job that fits now on a100 for h100; why names
// the reason with select's words and does not call its recomputation a disagreement.
START_TEST(why_names_a_wait_for_a_faster_gpu_type) {
  Cluster c = fixture_cluster();
  Snapshot snap = idle_snapshot(c, 1000);
  for (int i = 1; i <= 8; ++i) occupy(c, snap.state, "gpu0" + std::to_string(i), 8);
  JobFacts j = pending_job(1, 8, {"h100", "a100"}, Locality::node, LocalityMode::prefer);
  const auto wait = weigh_faster_type({{"h100", 2.0}, {"a100", 1.0}}, {"h100", "a100"}, "h100", 1180, "a100", 3600,
                                      1000);
  ck_assert(wait.wait && is_faster_type_wait(wait.reason));
  ck_assert(!is_faster_type_wait("needs 8 h100 GPUs (1 node x 8) in one node; free now: h100: 0 free"));
  // The type it waits for: what keeps the reason when the job is tested in that type's pool.
  ck_assert_str_eq(faster_type_waited_for(wait.reason).c_str(), "h100");
  ck_assert_str_eq(faster_type_waited_for("waits for  (GpuTypeSpeed 2 vs 1)").c_str(), "");
  ck_assert_str_eq(faster_type_waited_for("needs 8 h100 GPUs; waits for h100").c_str(), "");
  j.select_reason = wait.reason;
  j.select_evaluated = 990;
  WhyReport r = explain(j, snap);
  ck_assert_msg(find(r, wait_reason::kFasterGpuType) != nullptr, "no WaitingForFasterGpuType");
  ck_assert(find(r, wait_reason::kWaitingForScheduler) == nullptr);
  const std::string text = format_why(j, r, snap.now);
  ck_assert_contains(text, "select/mlsched: it waits for h100 (GpuTypeSpeed 2 vs 1): expected to start there in 3 min");
  ck_assert_contains(text, "; select/mlsched holds it for the faster type above");
}
END_TEST

START_TEST(each_pool_a_job_accepts_gets_its_own_view) {
  // Two pools (partitions): h100 = gpu[01-08], every GPU held by job 501 until
  // t=1600; a100 = gpu[09-16], half its nodes held by job 502 (no time limit).
  Cluster c = fixture_cluster();
  ClusterState s = idle(c);
  RunningJob h{501, "prep", "ml-bob", "nlp", {}, 1600};
  RunningJob a{502, "serve", "ml-carol", "research", {}, 0};
  for (int i = 1; i <= 12; ++i) {
    const std::string n = (i < 10 ? "gpu0" : "gpu") + std::to_string(i);
    occupy(c, s, n, 8);
    (i <= 8 ? h : a).gpus_by_node[n] = {0, 1, 2, 3, 4, 5, 6, 7};
  }
  PendingJob in_h100{700, "x", "ml-dave", "h100", 500, {}, 8};
  PendingJob in_a100{701, "y", "ml-dave", "a100", 900, {}, 8};
  PendingJob in_both{702, "z", "ml-dave", "a100,h100", 100, {}, 8};
  Snapshot snap{&c, s, {h, a}, {in_h100, in_a100, in_both}, 1000};
  const std::vector<Pool> all = {{"h100", expand_hostlist("gpu[01-08]")},
                                 {"a100", expand_hostlist("gpu[09-16]")},
                                 {"debug", expand_hostlist("cpu01")}};

  // The job's partitions, in its order; a name slurmctld does not list is left out.
  const auto mine = pools_of("h100,gone,a100", all);
  ck_assert_int_eq(mine.size(), 2);
  ck_assert_str_eq(mine[0].name.c_str(), "h100");
  ck_assert_str_eq(mine[1].name.c_str(), "a100");

  // One pool's part: its nodes, its share of the running jobs, the jobs that accept it.
  Cluster h100_only;
  const Snapshot part = restrict_to_pools(snap, {all[0]}, h100_only);
  ck_assert_int_eq(h100_only.nodes().size(), 8);
  ck_assert_int_eq(part.state.size(), 8);
  ck_assert_int_eq(part.running.size(), 1);
  ck_assert_int_eq(part.running[0].job_id, 501);
  ck_assert_int_eq(part.pending.size(), 2);  // 700 and 702, not the a100-only 701
  ck_assert_int_eq(h100_only.switches().size(), 2);  // sw0 and the top switch, cut to gpu[01-08]
  ck_assert_int_eq(h100_only.total_gpus("a100"), 0);

  JobFacts job = pending_job(1, 8, {}, Locality::node, LocalityMode::prefer);
  job.partition = "h100,a100";
  const auto pools = explain_pools(job, snap, mine);
  ck_assert_int_eq(pools.size(), 2);
  // h100: nothing free until 501 reaches its time limit.
  ck_assert_msg(!pools[0].report.placement_now.empty(), "h100 should not fit now");
  ck_assert_int_eq(pools[0].report.blockers.size(), 1);
  ck_assert_int_eq(pools[0].report.blockers[0].job.job_id, 501);
  ck_assert_int_eq(pools[0].report.model_eta, 1600);
  // a100: four idle nodes.
  ck_assert_str_eq(pools[1].report.placement_now.c_str(), "");
  const std::string text = format_pools(pools, 1000);
  ck_assert_contains(text, "pools it accepts");
  ck_assert_contains(text, "  h100 (gpu[01-08]): ");
  ck_assert_contains(text, "in its way (");
  ck_assert_contains(text, "job prep 501 (ml-bob, 64 GPUs, ends by ");
  ck_assert_contains(text, "mlsched's model: by ");
  ck_assert_contains(text, "(in 10 min)");
  ck_assert_contains(text, "  a100 (gpu[09-16]): the GPUs it needs can be placed now\n");

  // The whole report is the union of its pools: here every GPU node, so it fits now.
  Cluster both;
  const Snapshot union_part = restrict_to_pools(snap, mine, both);
  ck_assert_int_eq(both.nodes().size(), 16);
  ck_assert_int_eq(union_part.pending.size(), 3);
  ck_assert_str_eq(explain(job, union_part).placement_now.c_str(), "");
  // A job of the h100 pool alone does not fit, though a100 GPUs are free.
  JobFacts h100_job = job;
  h100_job.partition = "h100";
  Cluster h100_again;
  const WhyReport only = explain(h100_job, restrict_to_pools(snap, pools_of(h100_job.partition, all), h100_again));
  ck_assert_msg(!only.placement_now.empty(), "an h100-pool job cannot use the a100 pool's GPUs");
  ck_assert_int_eq(only.model_eta, 1600);
}
END_TEST

START_TEST(federated_job_shows_each_region) {
  // Both regions wait: each line has its controller's reason and estimate, and the
  // earlier estimate is named; the local one is marked.
  std::vector<RegionView> regions = {
      {"east", true, "PENDING", "Resources", 1600, "east[01-02]", ""},
      {"west", false, "PENDING", "Priority", 1300, "west01", "waits for a100 \x1b[31m"},
  };
  std::string text = format_regions("east", regions, 1000);
  ck_assert_contains(text, "regions holding a copy of the job (each region's controller; submitted to east):\n");
  ck_assert_contains(text, "  east (here): PENDING (Resources); Slurm's estimate ");
  ck_assert_contains(text, "(in 10 min) on east[01-02]\n");
  ck_assert_contains(text, "  west: PENDING (Priority); Slurm's estimate ");
  ck_assert_contains(text, "(in 5 min) on west01; select/mlsched there: waits for a100 \\x1b[31m\n");
  ck_assert_contains(text, "  first to start as the estimates stand: west (");
  ck_assert_msg(text.find("the job runs in") == std::string::npos, "%s", text.c_str());
  // Equal estimates: both named.
  regions[1].start = 1600;
  ck_assert_contains(format_regions("east", regions, 1000), "  first to start as the estimates stand: east and west (");

  // One region started it: it is named, the origin's copy is revoked.
  regions[0] = {"east", true, "REVOKED", "", 0, "", ""};
  regions[1] = {"west", false, "RUNNING", "", 900, "west01", ""};
  text = format_regions("east", regions, 1000);
  ck_assert_contains(text, "  east (here): REVOKED: another region started the job\n");
  ck_assert_contains(text, "  west: RUNNING on west01 since ");
  ck_assert_contains(text, "  the job runs in west; Slurm revokes its copies elsewhere\n");
  ck_assert_msg(text.find("first to start") == std::string::npos, "%s", text.c_str());
  const RegionView* where = running_elsewhere(regions);
  ck_assert_ptr_nonnull(where);
  ck_assert_str_eq(where->region.c_str(), "west");
  JobFacts job = pending_job(1, 8, {}, Locality::node, LocalityMode::prefer);
  job.job_id = 67108867;
  job.name = "train";
  job.user = "ml-bob";
  job.account = "nlp";
  job.state = "PENDING";
  ck_assert_contains(format_runs_elsewhere(job, *where, 1000),
                     "job train 67108867 (ml-bob, account nlp) runs in region west on west01 since ");
  ck_assert_contains(format_runs_elsewhere(job, *where, 1000),
                     "(2 min); this region's copy (PENDING) is Slurm's record of it: run mlsched why in west");
  // Running here: not elsewhere.
  regions[1].here = true;
  ck_assert_ptr_null(running_elsewhere(regions));

  // A region whose controller does not answer is named, from Slurm's list of the
  // regions holding a copy; it is never taken for the one running the job.
  std::vector<RegionView> one = {{"east", true, "PENDING", "Resources", 1600, "east[01-02]", ""}};
  add_silent_regions(one, "east, west");
  ck_assert_int_eq(one.size(), 2);
  ck_assert(!one[1].answered);
  text = format_regions("east", one, 1000);
  ck_assert_contains(text, "  west: no answer from its controller (down or unreachable); its copy is not shown\n");
  ck_assert_contains(text, "  first to start as the estimates stand: east (");
  one[1].state = "RUNNING";
  ck_assert_ptr_null(running_elsewhere(one));
  add_silent_regions(one, "east,west");  // each region once
  ck_assert_int_eq(one.size(), 2);

  // Not federated: nothing.
  ck_assert_str_eq(format_regions("", {}, 1000).c_str(), "");
}
END_TEST

START_TEST(reserved_unit_is_named_for_the_gang_the_kept_off_and_the_lent) {
  // Job 812, a 16-GPU gang, reserved gpu[01-02] at t=400. gpu01 is full; gpu02 has
  // 3 GPUs free.
  Cluster c = fixture_cluster();
  Snapshot snap = idle_snapshot(c, 1000);
  occupy(c, snap.state, "gpu01", 8);
  occupy(c, snap.state, "gpu02", 5);
  snap.config.reserve_for_gang_gpus = 16;
  GangReservation r;
  r.job_id = 812;
  r.nodes = {"gpu01", "gpu02"};
  r.since = 400;
  snap.reservations = {r};
  // The gang itself waits for its unit.
  JobFacts gang = pending_job(2, 8, {"h100"}, Locality::any, LocalityMode::prefer);
  gang.job_id = 812;
  gang.reservation = r;
  WhyReport rep = explain(gang, snap);
  const Finding* w = find(rep, wait_reason::kWaitingForReservedUnit);
  ck_assert_msg(w, "no reserved-unit finding for the gang");
  ck_assert_contains(w->message, "it reserved gpu[01-02] at ");
  ck_assert_contains(w->message, "3 of its 16 GPUs there are free");
  ck_assert(!find(rep, wait_reason::kKeptOffReservedUnit));
  // A non-preemptible h100 job is kept off the 3 free GPUs.
  JobFacts firm = pending_job(1, 1, {"h100"}, Locality::any, LocalityMode::prefer);
  rep = explain(firm, snap);
  const Finding* k = find(rep, wait_reason::kKeptOffReservedUnit);
  ck_assert_msg(k, "no kept-off finding");
  ck_assert_contains(k->message, "3 free GPUs on gpu[01-02] are reserved for job 812, a large gang, since ");
  ck_assert_contains(k->message, "only preemptible jobs may use them until the gang starts");
  // With the unit's jobs known (non-preemptible, ending at 1600 and 2800) the gang can
  // start there at 2800 at the earliest: a job whose time limit ends by then may use
  // the free GPUs, and the message says by when, against the job's own limit.
  PendingJob queued_gang;
  queued_gang.job_id = 812;
  queued_gang.gpus = 16;
  snap.pending = {queued_gang};
  RunningJob full, half;
  full.job_id = 700;
  full.gpus_by_node = {{"gpu01", {0, 1, 2, 3, 4, 5, 6, 7}}};
  full.expected_end = 2800;
  half.job_id = 701;
  half.gpus_by_node = {{"gpu02", {0, 1, 2, 3, 4}}};
  half.expected_end = 1600;
  for (RunningJob* j : {&full, &half}) {
    j->preemption.job_id = j->job_id;
    j->preemption.preemptible = false;
    j->preemption.start_time = 300;
    for (const auto& [node, idx] : j->gpus_by_node) j->preemption.gpus_on_node[node] = idx.size();
  }
  snap.running = {full, half};
  firm.time_limit = 3600;
  rep = explain(firm, snap);
  k = find(rep, wait_reason::kKeptOffReservedUnit);
  ck_assert_msg(k, "no kept-off finding with the unit's jobs known");
  ck_assert_contains(k->message, ("only preemptible jobs may use them, or a job whose time limit ends by " +
                                  local_clock(2800) + " (the earliest the gang can start there); its time limit of "
                                  "60 min would end at " + local_clock(4600))
                                     .c_str());
  // A job that gives its GPUs back does not hold the gang up: with gpu01's job
  // preemptible and started after the reservation (lent), the gang waits only for 1600.
  snap.running[0].preemption.preemptible = true;
  snap.running[0].preemption.has_directives = true;
  snap.running[0].preemption.max_restarts = 3;
  snap.running[0].preemption.start_time = 500;
  k = find(rep = explain(firm, snap), wait_reason::kKeptOffReservedUnit);
  ck_assert_msg(k, "no kept-off finding with a lent job on the unit");
  ck_assert_contains(k->message, ("time limit ends by " + local_clock(1600) + " (the earliest").c_str());
  snap.running.clear();
  // `mlsched why` explains a job on its partition's part of the cluster: the
  // reservation comes along.
  Cluster pool_cluster;
  const Snapshot part = restrict_to_pools(snap, {Pool{"gpu", expand_hostlist("gpu[01-16]")}}, pool_cluster);
  ck_assert_msg(find(explain(firm, part), wait_reason::kKeptOffReservedUnit), "reservation lost in the pool's view");
  // An a100 job is not concerned; neither is a preemptible one.
  rep = explain(pending_job(1, 1, {"a100"}, Locality::any, LocalityMode::prefer), snap);
  ck_assert(!find(rep, wait_reason::kKeptOffReservedUnit));
  JobFacts flexible = firm;
  JobDirectives d;
  d.preemptible = true;
  d.max_restarts = 3;
  flexible.directives = d;
  rep = explain(flexible, snap);
  ck_assert(!find(rep, wait_reason::kKeptOffReservedUnit));
  // ...unless it cannot be requeued again: then it is kept off too, and told why.
  flexible.restarts = 3;
  rep = explain(flexible, snap);
  k = find(rep, wait_reason::kKeptOffReservedUnit);
  ck_assert_msg(k, "no kept-off finding for a job out of restarts");
  ck_assert_contains(k->message, "cannot be preempted again");
  // A preemptible job that started on gpu02 after the reservation runs on lent GPUs.
  JobFacts lent = flexible;
  lent.restarts = 0;
  lent.state = "RUNNING";
  lent.start_time = 500;
  lent.gpus_by_node = {{"gpu02", {4}}};
  rep = explain(lent, snap);
  ck_assert(rep.lent_from.has_value());
  ck_assert_int_eq(rep.lent_from->job_id, 812);
  ck_assert_contains(format_why(lent, rep, 1000), "  lent:       it runs on GPUs reserved since ");
  ck_assert_contains(format_why(lent, rep, 1000),
                     "for job 812, a large gang, on gpu[01-02]; it is checkpoint-preempted and requeued once those "
                     "nodes hold nothing else");
  // One that started before it is not lent anything.
  lent.start_time = 300;
  rep = explain(lent, snap);
  ck_assert(!rep.lent_from.has_value());
}
END_TEST

Suite* why_suite() {
  Suite* s = suite_create("why");
  TCase* tc = tcase_create("why");
  tcase_add_test(tc, slurm_strings);
  tcase_add_test(tc, each_pool_a_job_accepts_gets_its_own_view);
  tcase_add_test(tc, team_standing_is_counted_per_pool_where_a_quota_names_one);
  tcase_add_test(tc, why_names_a_wait_for_a_faster_gpu_type);
  tcase_add_test(tc, strict_locality_gets_prefer_counterfactual);
  tcase_add_test(tc, fragmented_free_gpus);
  tcase_add_test(tc, busy_type_gets_other_type_counterfactual_and_blockers);
  tcase_add_test(tc, held_dependency_and_missing_type);
  tcase_add_test(tc, dependency_on_running_job_gives_the_eta);
  tcase_add_test(tc, down_nodes_and_slurm_limits);
  tcase_add_test(tc, quota_and_fair_share_behind_another_team);
  tcase_add_test(tc, best_effort_behind_jobs_that_cannot_be_preempted);
  tcase_add_test(tc, guarantee_kept_for_an_earlier_gang_is_named);
  tcase_add_test(tc, reserved_unit_is_named_for_the_gang_the_kept_off_and_the_lent);
  tcase_add_test(tc, running_job_shows_locality_history_checkpoint_and_borrowing);
  tcase_add_test(tc, why_shows_select_view_beside_its_recomputation);
  tcase_add_test(tc, attained_service_level_is_named_for_waiting_and_running_jobs);
  tcase_add_test(tc, federated_job_shows_each_region);
  suite_add_tcase(s, tc);
  return s;
}
