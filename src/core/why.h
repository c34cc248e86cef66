// "Why is my job waiting?": every reason a pending job waits, each a named,
// documented constant with the numbers behind it, computed on a snapshot of the
// cluster (GPU model, live GPU use, running and pending jobs) taken by the caller.
// Counterfactuals ("with locality-mode=prefer it would fit now") are computed on
// the same snapshot, not guessed.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/text.h"
#include "core/tres.h"
#include "core/directives.h"
#include "core/preempt.h"
#include "core/lifecycle.h"

namespace mlsched {

// The reasons, in the order `why` lists them (most fundamental first).
namespace wait_reason {
inline constexpr const char* kHeldByUser = "HeldByUser";
inline constexpr const char* kHeldByAdmin = "HeldByAdmin";
inline constexpr const char* kWaitingForDependency = "WaitingForDependency";
inline constexpr const char* kDependencyNeverSatisfied = "DependencyNeverSatisfied";
inline constexpr const char* kBeginTimeNotReached = "BeginTimeNotReached";
inline constexpr const char* kBadDirectives = "BadDirectives";
inline constexpr const char* kGpuTypeNotInCluster = "GpuTypeNotInCluster";
inline constexpr const char* kNotEnoughFreeGpus = "NotEnoughFreeGpus";
inline constexpr const char* kFreeGpusFragmented = "FreeGpusFragmented";
inline constexpr const char* kStrictLocality = "StrictLocalityCannotFit";
inline constexpr const char* kFasterGpuType = "WaitingForFasterGpuType";
inline constexpr const char* kGpuNodesUnavailable = "GpuNodesUnavailable";
inline constexpr const char* kWaitingForReservedUnit = "WaitingForReservedUnit";
inline constexpr const char* kKeptOffReservedUnit = "KeptOffReservedUnit";
inline constexpr const char* kBehindHigherPriority = "BehindHigherPriorityJobs";
inline constexpr const char* kTeamFairShareBehind = "TeamFairShareBehind";
inline constexpr const char* kBestEffortBehind = "BestEffortQueuesBehind";
inline constexpr const char* kTeamBeyondQuota = "TeamBeyondQuota";
inline constexpr const char* kTeamQuotaKeptForEarlierJob = "TeamQuotaKeptForEarlierJob";
inline constexpr const char* kAttainedServiceLevel = "AttainedServiceLevel";
inline constexpr const char* kAccountOrQosLimit = "AccountOrQosLimit";
inline constexpr const char* kPartitionLimit = "PartitionLimit";
inline constexpr const char* kReservation = "WaitingForReservation";
inline constexpr const char* kOtherSlurmReason = "OtherSlurmReason";
inline constexpr const char* kWaitingForScheduler = "WaitingForSchedulerCycle";
}  // namespace wait_reason

struct WaitReasonDoc {
  const char* code;
  const char* meaning;
};
// Every reason with what it means, in listing order (for --help and docs).
const std::vector<WaitReasonDoc>& wait_reason_docs();

// What a job asks for, in GPUs.
struct GpuNeed {
  GangShape gang;                      // nodes, GPUs per node or in total
  std::vector<std::string> gpu_types;  // acceptable types, first choice first; empty: any
  Locality locality = Locality::any;
  LocalityMode locality_mode = LocalityMode::prefer;
  uint32_t total_gpus() const { return gang.gpus_per_node ? gang.gpus_per_node * gang.nodes : gang.total_gpus; }
};

// One entry of Slurm's dependency string ("afterok:812(unfulfilled)").
struct DependencyRef {
  std::string condition;  // afterok, afterany, afternotok, after, aftercorr, singleton
  uint32_t job_id = 0;    // 0 for singleton
  std::string status;     // unfulfilled, failed, ... ("" when Slurm gave none)
};
std::vector<DependencyRef> parse_dependencies(std::string_view slurm_dependency);

// gpu_indices_from_gres (GPU indexes of a gres_used / gres_detail string) is in tres.h.

// An upstream job as the caller looked it up.
struct UpstreamJob {
  DependencyRef ref;
  bool found = false;      // false: Slurm no longer knows the job
  std::string name;
  std::string state;       // RUNNING, PENDING, COMPLETED ...
  time_t expected_end = 0; // 0: unknown
};

struct RunningJob {
  uint32_t job_id = 0;
  std::string name, user, account;
  std::map<std::string, std::vector<int>> gpus_by_node;  // node -> GPU indices
  time_t expected_end = 0;                                 // 0: no time limit
  // What preemption reads of it (preemption_view), with its start and GPUs per node:
  // whether a large gang's reservation lent it GPUs (lent_reserved_gpus).
  PreemptCandidate preemption;
};

struct PendingJob {
  uint32_t job_id = 0;
  std::string name, user, partition;
  uint32_t priority = 0;               // 0: held
  std::vector<std::string> gpu_types;  // empty: any
  uint32_t gpus = 0;
  std::string account;                 // its team
  // Its place in its team's guarantee (priority/mlsched's queue order): its first
  // submission, and whether it can start once GPUs allow (no begin time to come).
  time_t submit_time = 0;
  bool eligible = true;
  // Whether preempt/mlsched may take its GPUs back (its directive; a job without
  // directives: no), for PriorityWeightNonPreemptible.
  bool preemptible = false;
};

// The job asked about, as read from Slurm.
struct JobFacts {
  uint32_t job_id = 0;
  std::string name, user, account, partition;
  std::string state;                 // "PENDING", "RUNNING", ...
  std::string slurm_reason;          // Slurm's reason string ("Resources", "JobHeldUser")
  std::string slurm_reason_detail;   // Slurm's state_desc, if any
  uint32_t priority = 0;
  time_t submit_time = 0, begin_time = 0, start_time = 0, end_time = 0;
  int64_t time_limit = 0;            // seconds; 0: none
  GpuNeed request;
  std::string admin_comment;
  std::optional<JobDirectives> directives;
  std::vector<UpstreamJob> upstream;
  std::map<std::string, std::vector<int>> gpus_by_node;  // when running
  // What the plugins recorded on it (its admin comment) and what `mlsched run` did.
  std::optional<std::string> borrowing_mark;  // priority/mlsched's "yes"/"no" on a running job
  PreemptionHistory preemptions;              // preempt/mlsched's record
  std::string checkpoint_dir;                 // where `mlsched run` keeps its checkpoints by default
  int64_t last_checkpoint = 0;                // when the latest complete one was marked; 0: none known
  std::string last_checkpoint_path;           // "" when known only from the job's report
  bool checkpoint_reported = false;           // last_checkpoint is what `mlsched ckpt done` reported to
                                              // slurmctld (the job's Comment), not only the directory's record
  std::string checkpoint_note;                // why the checkpoint is unknown, when it is
  // select/mlsched's reason it could not place the job (select_reason_of its
  // SystemComment) and when slurmctld last evaluated it (LastSchedEval).
  std::string select_reason;
  time_t select_evaluated = 0;
  uint32_t restarts = 0;                      // Slurm's restart count (every requeue)
  // The unit it reserved, from its record: a pending large gang (ReserveForGangGpus).
  std::optional<GangReservation> reservation;
  // Its state in mlsched's words (lifecycle.h), shown first; nullopt: not computed.
  std::optional<MlStatus> ml;
};

// A team as the priority plugin publishes it (sshare's numbers) and the GPUs it
// holds and is guaranteed (the plugins' Quotas), by lowercase GPU type.
struct TeamView {
  bool has_shares = false;     // sshare had a row for it
  double shares_norm = 0;      // entitlement: its share of the cluster
  double usage_norm = 0;       // its share of recent (decayed) GPU-time
  double fairshare = 0;        // 2^(-usage/entitlement): 1 unused, 0.5 at entitlement
  std::map<std::string, uint32_t> in_use;
  std::map<std::string, uint32_t> guaranteed;
};

// The cluster at one moment. `state` is parallel to cluster->nodes().
struct Snapshot {
  const Cluster* cluster = nullptr;
  ClusterState state;
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;
  time_t now = 0;
  std::map<std::string, TeamView> teams;  // by team (account); empty when unknown
  Config config;                          // mlsched.conf as the plugins read it (defaults if unreadable)
  // Large gangs' reservations, from the records of pending (not held) jobs.
  std::vector<GangReservation> reservations;
};

// Bound on the (node, GPU) rows read from one gres.conf (200,000: 25,000 nodes of
// 8 GPUs); the lines past it are ignored.
constexpr size_t kMaxGresConfRows = 200000;
// Bound on the bytes of gres.conf the tool reads (64 MiB).
constexpr size_t kMaxGresConfBytes = size_t{64} << 20;
// NVLink cliques per node from gres.conf lines with Links= (one line per GPU, in
// index order, as slurmd reads them). Nodes without Links get none.
std::map<std::string, std::vector<std::vector<int>>> nvlink_cliques_from_gres_conf(std::string_view text);

// Whether a gang of one GPU type fits the free GPUs of a snapshot within one unit
// of `scope`, and where.
struct FitNow {
  bool fits = false;
  std::string unit;               // the unit it fits in (or the best try)
  uint32_t free_in_unit = 0;      // free GPUs of the type in that unit
  std::vector<std::string> nodes; // nodes it would use when it fits
};
FitNow fit_now(const Cluster& cluster, const ClusterState& state, Locality scope, const std::string& gpu_type,
               const GangShape& gang);

// Free and total GPUs of one type in one topology unit.
struct UnitUse {
  std::string scope;     // "nvlink-domain", "switch", "cluster"
  std::string unit;
  std::string gpu_type;
  uint32_t free = 0, total = 0, unusable = 0;  // unusable: on nodes down or drained
};

struct Finding {
  std::string reason;   // a wait_reason constant
  std::string message;  // with the numbers
};

struct Counterfactual {
  std::string change;   // "locality-mode=prefer"
  std::string message;  // "would fit now: 16 h100 free across 2 nvlink-domains"
};

struct Blocker {
  RunningJob job;
  uint32_t gpus = 0;    // GPUs it holds in the place the job waits for
};

// Where a running job's GPUs are, per node, with their NVLink neighbourhood.
struct PlacedGpus {
  std::string node;
  std::vector<int> gpus;
  std::string nvlink_domain;                 // "" when the node is in none
  std::string leaf_switch;
  std::vector<std::vector<int>> cliques;     // the job's GPUs grouped by NVLink clique
};

// The job's team against its quota and fair share, for the GPU type it uses or wants.
struct TeamReport {
  std::string team;
  std::string gpu_type;         // "" = all types (a job that names none)
  bool known = false;           // false: no team data (no accounting, or tool could not ask)
  uint32_t holds = 0;           // GPUs of the type its running jobs hold now
  uint32_t guaranteed = 0;
  uint32_t job_gpus = 0;        // this job's GPUs
  bool job_borrows = false;     // pending: starting it would exceed the guarantee; running: its mark
  uint32_t kept_by = 0;         // pending: the team's earlier pending job its guarantee is kept for
  std::string borrowing_from;   // running: "priority/mlsched's mark" or "estimate"
  // PreemptForNonPreemptible: running, preemptible: non-preemptible jobs may preempt
  // it; pending, not preemptible: it may preempt best effort (may_preempt says where).
  bool best_effort_rule = false;
  TeamView view;
};

// Where AttainedService applies to the job: its level, as priority/mlsched ranks a
// pending job and preempt/mlsched compares a running one.
struct AttainedReport {
  bool applies = false;
  double gpu_seconds = 0;     // earlier runs; running: this run included
  int level = 0, levels = 1;  // level 0 .. levels-1
  time_t promote_at = 0;      // pending in level > 0: when it is back in level 0 (0: never)
  bool preemptible_by_team = false;  // running: PreemptForAttainedService, a preemptible job, level > 0
};

struct WhyReport {
  std::string need;                       // "16 h100 GPUs: 2 nodes x 8, nvlink-domain (strict)"
  std::vector<Finding> findings;
  std::vector<UnitUse> free;              // per acceptable type and unit
  std::vector<Counterfactual> counterfactuals;
  std::string blocked_place;              // unit where the job would go first
  std::vector<Blocker> blockers;          // running jobs to end before it fits there
  time_t model_eta = 0;                   // when those jobs' time limits run out
  // model_eta is only when the upstream jobs it waits for reach their time limits:
  // it fits the free GPUs now (a pipeline stage behind a running stage).
  bool eta_is_upstream_end = false;
  int rank = 0, competing = 0;            // rank among pending jobs for the same GPUs
  std::vector<PendingJob> ahead;          // up to 5 of them, highest priority first
  TeamReport team;
  std::vector<std::pair<std::string, TeamView>> teams_ahead;  // teams of `ahead`, other than its own
  std::vector<PlacedGpus> placement;      // running: where its GPUs are
  // Pending: the reason select/mlsched would record now, from the same
  // plan_placement on this snapshot ("" when the job fits now), and whether it
  // differs from the one select recorded (JobFacts::select_reason).
  std::string placement_now;
  bool select_differs = false;
  AttainedReport attained;
  // Running: the reservation whose GPUs it was lent (lent_reserved_gpus), if any.
  std::optional<GangReservation> lent_from;
};

WhyReport explain(const JobFacts& job, const Snapshot& snap);

// ==== GPU pools: a job is explained against the partitions it accepts ============
// The pools named in a job's partition field ("h100,a100"), in that order; names
// not in `pools` are left out.
std::vector<Pool> pools_of(const std::string& partitions, const std::vector<Pool>& pools);

// The part of `whole` on the nodes of `pools`: a model of only those nodes (built
// into `cluster`, which the result points to), their state, the running jobs' GPUs
// there, and the pending jobs that accept one of the pools. Teams and config as in
// `whole`. A job is placed, blocked and ranked within the pools it may run in.
Snapshot restrict_to_pools(const Snapshot& whole, const std::vector<Pool>& pools, Cluster& cluster);

// One pool's view of a pending job that accepts several.
struct PoolReport {
  Pool pool;
  WhyReport report;  // explain() on the pool's part of the snapshot
};
// Each pool the job accepts, explained on its part of the snapshot.
std::vector<PoolReport> explain_pools(const JobFacts& job, const Snapshot& whole, const std::vector<Pool>& pools);
// The lines `mlsched why` adds for them: whether the job fits each pool now and, if
// not, what is in its way there and until when.
std::string format_pools(const std::vector<PoolReport>& pools, time_t now);

// ==== regions: a federated job is explained in each region that holds a sibling ===
// A region is a Slurm cluster of a federation (docs/regions.md). The full analysis
// above is the region the tool runs in (its mlsched.conf and nodes); for every region
// that holds a copy (sibling) of the job, its own controller's view: what Slurm and
// select/mlsched there say. The copy that starts first runs; the others are revoked.
struct RegionView {
  std::string region;       // the cluster holding this sibling
  bool here = false;        // the region this tool runs in
  std::string state;        // Slurm's job state there (PENDING, RUNNING, REVOKED, ...)
  std::string reason;       // Slurm's reason of a pending sibling
  time_t start = 0;         // running: its start; pending: backfill's estimate; 0 unknown
  std::string nodes;        // where it runs, or where backfill plans it
  std::string select_note;  // select/mlsched's placement reason there (select_reason_of)
  bool answered = true;     // false: Slurm lists a copy there, and its controller did not answer
  // The region holds the job's GPUs: RUNNING, SUSPENDED or COMPLETING there.
  bool holds_job() const { return answered && (state == "RUNNING" || state == "SUSPENDED" || state == "COMPLETING"); }
};
// Adds a view that did not answer for each region in `active_siblings` (Slurm's list
// of the regions holding a copy, "east,west") whose controller sent no copy: a
// region whose controller is down is named, not left out.
void add_silent_regions(std::vector<RegionView>& views, const std::string& active_siblings);
// A Slurm federation has at most 63 clusters; more copies than this are not shown.
inline constexpr size_t kMaxRegionsShown = 64;
// The lines `mlsched why` adds for a federated job: one per region, in the given
// order, then the region it runs in or, while every sibling waits, the one whose
// estimate is earliest. "" without siblings.
std::string format_regions(const std::string& origin, const std::vector<RegionView>& regions, time_t now);
// The other region where a federated job runs, if one does: this region's copy is then
// only Slurm's record of it (the origin keeps one), and there is no wait here to explain.
const RegionView* running_elsewhere(const std::vector<RegionView>& regions);
// `mlsched why`'s first line for such a job.
std::string format_runs_elsewhere(const JobFacts& job, const RegionView& where, time_t now);

// Recomputes select's placement reason on the snapshot and compares it with the
// one select recorded; explain() calls it for pending jobs.
void compare_with_select(const JobFacts& job, const Snapshot& snap, WhyReport& rep);

// One screen for a terminal.
std::string format_why(const JobFacts& job, const WhyReport& report, time_t now);

}  // namespace mlsched
