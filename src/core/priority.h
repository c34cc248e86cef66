// The priority of a pending job under priority/mlsched: its team's fair-share
// standing, whether it fits in its team's guaranteed quota, its age with a
// size-aware term, its job type, QOS, partition and nice. Each term is kept apart
// so sprio can show them. Slurm-free; `now` is passed in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config.h"
#include "core/fairshare.h"
#include "core/job_record.h"
#include "core/tres.h"
#include "core/types.h"

namespace mlsched {

// GPUs a team holds right now, by GPU type ("" = type unknown).
using TeamGpusInUse = std::map<std::string, std::map<std::string, uint32_t>>;

// ==== borrowing: the one definition ==============================================
// A team borrows the GPUs it holds beyond its guarantee. priority/mlsched (its
// marks and the quota term), preempt/mlsched (who may be reclaimed), `mlsched why`
// and `mlsched top`/`metrics` all decide it with these two functions.
//
// A job that is not running yet would borrow when the team's GPUs now (`held`, of
// its type, or of all types for a job that names none) plus its own exceed the
// guarantee of that type (or the sum over types).
bool would_borrow(uint64_t held, uint64_t gpus, uint64_t guaranteed);

// The GPUs one running job holds, as borrowing counts them.
struct GpuHolding {
  uint32_t job_id = 0;
  std::string team;
  int64_t start_time = 0;
  GpuCounts gpus;  // by type, and untyped
};
// Guaranteed GPUs of a team for a type; "" asks for the sum over types.
using GuaranteeOf = std::function<uint32_t(const std::string& team, const std::string& gpu_type)>;
// Which running jobs run on borrowed GPUs (parallel to `running`). A team's jobs
// fill its guarantee in the order they started (then by job id); a job whose GPUs
// of a type take the team beyond that type's guarantee, or whose untyped GPUs
// take the team's GPUs of all types beyond the summed guarantee, borrows. The
// youngest jobs are the borrowers because they lose the least work when
// reclaimed, and when an older job ends the next one moves inside the guarantee.
std::vector<bool> borrowing_in_start_order(const std::vector<GpuHolding>& running, const GuaranteeOf& guaranteed);
// GPUs a team holds of a type from a by-type count; "" sums every type.
uint64_t gpus_of_type(const std::map<std::string, uint32_t>& by_type, const std::string& gpu_type);
// ==== end borrowing ===============================================================

// ==== quotas per pool ============================================================
// TeamQuota=nlp:a100@train=8 makes the a100 GPUs of partition `train` a quota kind of
// their own, "a100@train", for every team (a team without an entry there is
// guaranteed its fair share of them, as for a type); the type's GPUs elsewhere stay
// "a100". Guarantees, GPUs in use and borrowing are all counted by kind: where no
// TeamQuota names a pool, a kind is just the GPU type. A job's pool is the
// partition it runs in (a pending job: the partition Slurm tries it in).
std::string quota_kind(const Config& config, const std::string& gpu_type, const std::string& pool);
// The pool a pending job counts in, seen from outside slurmctld (the tool): the first
// partition of its list ("a100,h100" -> "a100"), where Slurm tries it first.
std::string pending_pool(const std::string& partitions);
// A job's GPUs by kind: its typed GPUs in `pool` renamed where that pool has a quota.
GpuCounts gpus_by_quota_kind(const Config& config, const GpuCounts& gpus, const std::string& pool);
// One node's GPUs and the partitions it belongs to.
struct NodeGpus {
  std::map<std::string, uint32_t> by_type;  // lowercase type -> GPUs
  std::vector<std::string> pools;           // its partitions, in slurm.conf order
};
// The cluster's GPUs by kind. A node in several partitions that have a quota for
// its type counts in the first of them.
std::map<std::string, uint32_t> cluster_gpus_by_quota_kind(const Config& config, const std::vector<NodeGpus>& nodes);
// The same from the cluster model and its partitions (the tool's view).
std::map<std::string, uint32_t> cluster_gpus_by_quota_kind(const Config& config, const Cluster& cluster,
                                                           const std::vector<Pool>& pools);
// The GPU type a kind is of ("a100@train" -> "a100").
std::string type_of_quota_kind(const std::string& kind);
// ==== end quotas per pool =========================================================

// What guarantees a team has: TeamQuota from mlsched.conf where given, else its fair
// share (shares_norm) of each GPU type's GPUs, rounded down. Types here are quota
// kinds (quota_kind()).
class Quotas {
 public:
  Quotas(const Config& config, const std::map<std::string, TeamStanding>& standing,
         const std::map<std::string, uint32_t>& cluster_gpus_by_type);
  // Guaranteed GPUs of one type; for "" (a job that names no type) the sum over types.
  uint32_t guaranteed(const std::string& team, const std::string& gpu_type) const;
  // True when `gpus` more GPUs of `gpu_type` would take the team beyond its
  // guarantee: such a job runs on borrowed GPUs, which may be reclaimed.
  bool borrowing(const std::string& team, const std::string& gpu_type, uint32_t gpus,
                 const TeamGpusInUse& in_use) const;

 private:
  const Config& config_;
  const std::map<std::string, TeamStanding>& standing_;
  const std::map<std::string, uint32_t>& cluster_gpus_;
};

// A pending job, as the formula sees it.
struct PricedJob {
  uint32_t job_id = 0;
  std::string team;
  std::string gpu_type;       // "" when the job names no single type
  uint32_t gpus = 0;          // the whole gang's GPUs
  int64_t submit_time = 0;    // its first submission: a requeued (preempted) job keeps its age
  // When it last became pending (Slurm's submit time, which a requeue sets anew),
  // for attained-service promotion; 0 = submit_time.
  int64_t queued_time = 0;
  JobType type = JobType::training;
  double qos_norm = 0;        // QOS priority / highest QOS priority, 0..1
  double partition_norm = 0;  // partition PriorityJobFactor / highest, 0..1
  int64_t nice = 0;           // as the user gave it (positive lowers priority)
  int64_t site = 0;           // admin's site factor
  std::string partition;      // for AttainedService=partition:<name>
  // GPU-seconds the job consumed in its earlier runs (a requeued job), for the
  // attained-service level; 0 for a job that never ran.
  double attained_gpu_seconds = 0;
  // Whether preempt/mlsched may take its GPUs back (its preemptible directive; a job
  // without directives: no), for PriorityWeightNonPreemptible.
  bool preemptible = true;
  // False while something other than GPUs keeps it from starting (a dependency, a
  // begin time to come): such a job takes no place in its team's guarantee.
  bool eligible = true;
};

// The terms of one job's priority, already weighted (what sprio -l shows).
struct PriorityFactors {
  double fairshare = 0;  // weight x team's 2^(-usage/entitlement)      (sprio FAIRSHARE)
  double quota = 0;      // weight when the job fits its team's guarantee (sprio ASSOC)
  double age = 0;        // weight x min(wait / max_age, 1)              (sprio AGE)
  double job_size = 0;   // weight x gpus/cluster_gpus x wait / max_age, unbounded (sprio JOBSIZE)
  double job_type = 0;   // per-type weight                              (sprio SITE, with site)
  double qos = 0;        //                                              (sprio QOS)
  double partition = 0;  //                                              (sprio PARTITION)
  // -weight x level / (levels - 1), 0 where attained service does not apply or the
  // job is in level 0                                                    (sprio SITE, with job_type)
  double attained_service = 0;
  int attained_level = -1;  // -1: attained service does not apply to the job
  double non_preemptible = 0;  // weight when preempt/mlsched may not take its GPUs back (sprio SITE)
  bool borrowing = false;
  uint32_t total = 1;    // sum, minus nice, plus site; at least 1 (0 means held in Slurm)
};

// ==== the quota term: a team's guarantee in queue order ===========================
// A pending job gets the quota term when it is within its team's guarantee, and the
// guarantee goes to the team's eligible pending jobs in the order they were queued
// (first submission, then job id): a job is within it when its GPUs fit what is left
// after the team's running jobs and its earlier pending jobs within it. A job that
// does not fit yet but could (its GPUs no more than the guarantee) closes the
// guarantee of its GPU type to the team's later jobs. Without that, the small jobs
// queued after a gang take the headroom as it frees, so the gang keeps borrowing and
// stays below them (by PriorityWeightQuota) for as long as they keep coming: in the
// replays of 2026-12-05 every 16-GPU gang was borrowing for 86-100 % of its wait, while
// most jobs that started on its GPU type meanwhile were within their teams' guarantees.
// A job larger than its guarantee can never be within it and closes nothing.
// Only jobs of TeamQuotaKeptForGpus GPUs or more (default 16) hold such a place:
// smaller ones are priced against the GPUs in use and the larger jobs' claims and
// closings, but claim and close nothing themselves. When every job held its place
// (=1), a 2-GPU job that did not fit kept the guarantee from the team's later 1-GPU
// jobs, and in the replays of 2026-12-06 mlsched's 1-GPU jobs on h100 waited 45-55 s
// against 10-20 s before the walk (bench/results/2026-12-06/replay-kept-for-gangs.md). Only
// pricing follows queue order; whether a job borrows once it runs (its mark, who
// may reclaim it) is borrowing_in_start_order()'s.
struct QueuedClaims {
  std::map<std::string, uint64_t> claimed;  // lowercase gpu_type -> GPUs of pending jobs within the guarantee
  uint64_t claimed_all = 0;                 // the same over every type, untyped jobs included
  // lowercase gpu_type ("" = jobs naming no single type) -> the job that closed it
  std::map<std::string, uint32_t> closed;
};
using GuaranteeQueue = std::map<std::string, QueuedClaims>;  // team ->

struct PriorityInputs {
  const Config& config;
  const std::map<std::string, TeamStanding>& standing;
  const Quotas& quotas;
  const TeamGpusInUse& in_use;
  uint32_t cluster_gpus = 0;
  // The last pass's queue: a job priced alone (a new submission) is taken to come
  // after every job in it. nullptr: only the team's GPUs in use count.
  const GuaranteeQueue* queue = nullptr;
};

// Each pending job's place in its team's guarantee, in queue order (parallel to
// `pending`, which may be in any order): the pass prices by it, `mlsched why`
// explains it. `queue`, when given, receives the claims and closings.
struct GuaranteePlace {
  bool borrowing = false;
  uint32_t within = 0;   // its GPUs the guarantee has left for it (all of them unless borrowing)
  uint32_t kept_by = 0;  // borrowing because this earlier job closed the guarantee
};
// Only jobs of at least `keep_for_gpus` GPUs (TeamQuotaKeptForGpus) hold a place.
std::vector<GuaranteePlace> places_in_guarantee(const std::vector<PricedJob>& pending, const GuaranteeOf& guaranteed,
                                                const TeamGpusInUse& in_use, uint32_t keep_for_gpus,
                                                GuaranteeQueue* queue = nullptr);

PriorityFactors job_priority(const PricedJob& job, const PriorityInputs& in, int64_t now);

// ==== attained service (Tiresias' discretized least-attained-service) =========
// Whether AttainedService= covers a job of `team` in `partition`.
bool attained_service_applies(const Config& config, const std::string& team, const std::string& partition);
// The job's level: the number of AttainedServiceThresholds its attained GPU-seconds
// have reached (0 = least attained), or 0 once it has waited
// AttainedServicePromoteAfter since it was last (re)queued (`waited`, seconds).
int attained_service_level(const Config& config, double attained_gpu_seconds, int64_t waited);
// The level of a job of `team` in `partition`, or -1 where AttainedService does not
// cover it: the one rule priority/mlsched prices by, preempt/mlsched compares and
// `mlsched why` shows. A running job passes its GPU-seconds with this run's and
// waited = 0 (promotion is for waiting).
int attained_service_level_of(const Config& config, const std::string& team, const std::string& partition,
                              double attained_gpu_seconds, int64_t waited);
// The (non-positive) priority term of a level.
double attained_service_term(const Config& config, int level);
// ==== end attained service ======================================================

// One pass over the cluster, as the plugin runs it every PriorityCalcPeriod on a
// snapshot taken under slurmctld's locks: charge running jobs, rank teams, then
// price every pending job.
struct PassInput {
  std::vector<TeamShares> teams;
  std::vector<ChargedJob> running;
  std::vector<PricedJob> pending;
  std::map<std::string, uint32_t> cluster_gpus_by_type;  // lowercase gpu_type -> GPUs
};
struct PassResult {
  std::map<std::string, TeamStanding> standing;
  TeamGpusInUse in_use;
  std::vector<PriorityFactors> pending;  // parallel to PassInput::pending
  GuaranteeQueue queue;                  // the guarantees as the pending jobs took them
  std::vector<bool> running_borrowing;   // parallel to PassInput::running
};
PassResult priority_pass(const Config& config, UsageLedger& ledger, const PassInput& in, int64_t now);
// The GPUs each team holds, from its running jobs.
TeamGpusInUse gpus_in_use(const std::vector<ChargedJob>& running);
// Which running jobs run on borrowed GPUs (parallel to `running`):
// borrowing_in_start_order() against these quotas.
std::vector<bool> running_borrowing(const Quotas& quotas, const std::vector<ChargedJob>& running);

// The highest priority a job can reach without the unbounded size term: once a
// gang's size term exceeds this over its own bounded terms, it is at the top.
double bounded_priority_ceiling(const Config& config);
// Seconds a pending job of `gpus` GPUs must wait to outrank any newly submitted
// job, in the worst case (its own bounded terms 0, the newcomer's at the ceiling).
// A competitor that has itself waited w with g' GPUs adds w x g'/gpus (README).
double seconds_to_reach_top(const Config& config, uint32_t gpus, uint32_t cluster_gpus);

// ==== pipeline-aware age ============================================================
// A pipeline stage is submitted with its pipeline, long before it can run. Its age
// counts from when its dependencies cleared (Slurm's eligible time), plus the queue
// waits (start - eligible) of the stages it waits for, along their longest chain,
// at most PriorityMaxAge: a downstream stage does not start at the back of the queue,
// and time stages spent running earns nothing. One job of a pipeline, as the
// plugin reads it from the job table.
struct StageQueueFacts {
  uint32_t job_id = 0;
  uint32_t user_id = 0;  // only a user's own stages count: anyone can name a pipeline id
  PipelineMembership membership;
  bool pending = false;
  int64_t eligible = 0;  // Slurm's begin time: when it could first start (0: not yet)
  int64_t start = 0;     // when it was given nodes (0: never)
};
// The time each pending stage's age counts from (PricedJob::submit_time); `now` for
// one whose dependencies have not cleared. Jobs of no pipeline are not in the map.
std::map<uint32_t, int64_t> pipeline_age_starts(const std::vector<StageQueueFacts>& jobs, uint32_t max_age,
                                                int64_t now);

}  // namespace mlsched
