// The operator's view of the cluster (`mlsched top`, `mlsched metrics`): GPUs by
// type, NVLink domain and team, the queue, fragmentation and unhealthy nodes,
// summarised from one snapshot the tool reads from Slurm. Slurm-free.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/lifecycle.h"
#include "core/placement.h"

namespace mlsched {

// What Slurm says of a node beside its GPUs; parallel to Cluster::nodes().
struct NodeHealth {
  std::string state;   // Slurm's state as sinfo prints it in lower case: "idle", "mixed", "drained", "down" ...
  std::string reason;  // the admin's or Slurm's reason, "" when none
};

struct OpsRunningJob {
  uint32_t job_id = 0;
  std::string team;                                 // the job's account
  std::map<std::string, uint32_t> gpus_by_type;     // "untyped" when Slurm names no type
  uint32_t restarts = 0;                            // requeues (preemption, node failure)
  int64_t start_time = 0;                           // of its current run: borrowing counts in start order
};

struct OpsPendingJob {
  uint32_t job_id = 0;
  std::string team;
  std::string slurm_reason;   // "Resources", "Priority", "JobHeldUser" ...
  int64_t waiting_seconds = 0;
  uint32_t gpus = 0;
  uint32_t restarts = 0;
  std::string partitions;     // the pools it accepts, as Slurm lists them ("h100,a100")
};
// GPUs a pending job asks for, from Slurm's tres_req_str ("cpu=2,gres/gpu=4" or
// "gres/gpu=8,gres/gpu:h100=8"): one count whether or not a type is named.
uint32_t pending_gpus(std::string_view tres_req);

// A team's row of sshare (as priority/mlsched publishes it).
struct TeamShareInfo {
  std::string team;
  uint32_t shares_raw = 0;
  double shares_norm = 0;   // entitlement as a fraction of the cluster
  double usage_norm = 0;    // share of all teams' decayed usage
  double usage_raw = 0;     // decayed, GPU-type-weighted GPU-seconds
  double fairshare = 0;     // 2^(-usage/entitlement)
};

// A run cut short, from accounting: preempted, requeued, or ended by a node failure.
// Its GPU-seconds bound the work lost from above (checkpoints are not counted).
struct InterruptedRun {
  std::string cause;  // "preempted", "requeued", "node_fail"
  uint32_t gpus = 0;
  int64_t seconds = 0;
};
// A run that accounting records as requeued was ended by preempt/mlsched when the
// preemption its admin comment (as stored when the run ended) records last fell
// within the run: the victim requeues itself after its checkpoint, so Slurm and
// sacct call that run REQUEUED like a time-limit or node-failure requeue.
// `last_preempted_at`: preemption_history().last_at (0: never preempted).
bool run_ended_by_preemption(int64_t last_preempted_at, int64_t run_start, int64_t run_end);

// A job's preemptions as preempt/mlsched recorded them on it (preemption_history()
// of its admin comment), with its requeues of every cause.
struct JobPreemptions {
  uint32_t job_id = 0;
  std::string team;             // the job's account
  uint32_t restarts = 0;        // requeues of any cause (Slurm's restart count)
  uint32_t preempted = 0;       // its `preempted=` mark
  double lost_gpu_seconds = 0;  // its `lost-gpu-seconds=` mark: estimated at each preemption, summed
};
// One entry per job id: the job table's (newer) where both know the job, else
// accounting's. Accounting gives one record per run, so callers pass the record
// with the most preemptions and requeues per job (see merge_job_preemptions).
std::vector<JobPreemptions> merge_job_preemptions(const std::vector<JobPreemptions>& job_table,
                                                  const std::vector<JobPreemptions>& accounting);

struct PreemptionTally {
  uint32_t preemptions = 0;      // by preempt/mlsched, summed over jobs
  uint32_t jobs_preempted = 0;   // jobs preempted at least once
  double lost_gpu_seconds = 0;   // estimated work lost at those preemptions
  uint32_t other_requeues = 0;   // requeues for other causes: restarts beyond the preemptions
};
// The causes, in the order they are reported.
const std::vector<std::string>& interruption_causes();
// How far back interrupted runs are read from accounting.
inline constexpr int64_t kInterruptedWindowSeconds = 86400;

// A job slurmctld holds, in its ML state (lifecycle.h: ml_status).
struct OpsJobState {
  MlState state = MlState::queued;
  int64_t checkpointing_since = 0;  // checkpointing: when it was picked (signal sent); else 0
};

struct OpsSnapshot {
  const Cluster* cluster = nullptr;
  ClusterState state;               // parallel to cluster->nodes()
  std::vector<NodeHealth> health;   // parallel to cluster->nodes()
  std::vector<OpsRunningJob> running;
  std::vector<OpsPendingJob> pending;
  std::vector<TeamShareInfo> teams;
  // GPUs each team is guaranteed, by GPU type (the priority plugin's quotas).
  std::map<std::string, std::map<std::string, uint32_t>> entitlement;
  // Runs interrupted within kInterruptedWindowSeconds; `accounting_read` false when
  // slurmdbd could not be asked, so the numbers are unknown rather than zero.
  bool accounting_read = false;
  std::vector<InterruptedRun> interrupted;
  // Every job slurmctld still holds (pending, running, and finished within
  // MinJobAge), merged with accounting's jobs of the last kInterruptedWindowSeconds
  // when `accounting_read`.
  std::vector<JobPreemptions> preemptions;
  // Every job slurmctld holds (ended ones for MinJobAge), in its ML state.
  std::vector<OpsJobState> ml_jobs;
  // The partitions (GPU pools) and their nodes; empty when unknown.
  std::vector<Pool> pools;
  time_t now = 0;
};

struct InterruptedTally {
  uint32_t runs = 0;
  double gpu_seconds = 0;
};

struct GpuTally {
  uint32_t total = 0;
  uint32_t allocated = 0;    // held by jobs, wherever they are
  uint32_t idle = 0;         // free on usable nodes
  uint32_t unavailable = 0;  // free but on nodes down, drained or failing
};

struct TeamSummary {
  std::map<std::string, uint32_t> gpus_in_use;  // by GPU type
  std::map<std::string, uint32_t> entitlement;  // by GPU type
  uint32_t running_jobs = 0, pending_jobs = 0, pending_gpus = 0;
  // GPUs of its running jobs that borrow (borrowing_in_start_order against the
  // entitlement, as priority/mlsched marks them).
  uint32_t borrowed_gpus = 0;
  bool has_shares = false;   // false: Slurm reported no sshare row for the team
  TeamShareInfo shares;
  uint32_t in_use_total() const;
  uint32_t entitlement_total() const;
};

// One GPU pool (partition): its GPUs, and the pending jobs that accept it (a job
// that names several pools counts in each).
struct PoolSummary {
  GpuTally gpus;
  uint32_t pending_jobs = 0, pending_gpus = 0;
};

struct UnavailableNode {
  std::string name, state, reason;
  uint32_t gpus = 0;
};

// One node's GPUs as one character each, for the GPU map.
struct NodeGpuMap {
  std::string node, gpu_type, nvlink_domain;
  std::string gpus;  // kGpuAllocated / kGpuIdle / kGpuUnavailable per GPU index
};
inline constexpr char kGpuAllocated = '#';
inline constexpr char kGpuIdle = '.';
inline constexpr char kGpuUnavailable = 'x';

// Upper bounds (seconds) of the queue-wait histogram buckets, besides +Inf.
const std::vector<double>& queue_wait_buckets();

struct OpsSummary {
  time_t now = 0;
  uint32_t nodes = 0;
  std::map<std::string, GpuTally> by_type;                              // gpu_type
  std::map<std::string, std::map<std::string, GpuTally>> by_domain;     // nvlink_domain -> gpu_type
  std::map<std::string, TeamSummary> teams;
  std::map<std::string, PoolSummary> by_pool;                           // partition
  std::map<std::string, uint32_t> nodes_by_state;
  std::vector<UnavailableNode> unavailable_nodes;   // by name
  uint32_t running_jobs = 0;
  std::map<std::string, uint32_t> pending_by_reason;
  // Waits of pending jobs so far: cumulative counts per queue_wait_buckets() bound,
  // then the +Inf count (= number of pending jobs).
  std::vector<uint64_t> wait_bucket_counts;
  double wait_sum_seconds = 0;
  uint64_t wait_count = 0;
  // Nearest-rank percentiles of the same waits; 0 when nothing is pending.
  int64_t wait_p50 = 0, wait_p90 = 0, wait_max = 0;
  Fragmentation fragmentation;
  uint32_t jobs_restarted = 0;   // jobs pending or running that were requeued at least once
  uint32_t restarts = 0;         // their restarts, summed
  bool accounting_read = false;
  std::map<std::string, InterruptedTally> interrupted;  // by cause; every cause present when read
  // Preemptions recorded on the jobs of OpsSnapshot::preemptions: by team (every
  // team of `teams` present) and in all.
  std::map<std::string, PreemptionTally> preemptions;
  PreemptionTally preemptions_total;
  std::vector<NodeGpuMap> gpu_map;  // in the cluster's node order
  // Jobs by ML state name, every state of ml_states() present; and the seconds the
  // jobs checkpointing now have spent since their signal, summed.
  std::map<std::string, uint32_t> jobs_by_ml_state;
  double checkpointing_seconds = 0;
};

OpsSummary summarize(const OpsSnapshot& snap);

// Nearest-rank percentile (p in 0..100) of unsorted values; 0 for none.
int64_t percentile(std::vector<int64_t> values, double p);

// The Prometheus text exposition (format 0.0.4) of a summary.
std::string format_metrics(const OpsSummary& s);

// The `mlsched top` screen. `colour`: ANSI colours in the GPU map (only for a tty).
std::string format_top(const OpsSummary& s, bool colour);

// Writes Prometheus text exposition: families in the order they are begun, each with
// HELP and TYPE lines; names checked, HELP and label values escaped. Samples keep the
// order they are added, so output is as deterministic as the caller's iteration.
class MetricsWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  // type: "gauge", "counter", "histogram", "untyped". Throws std::invalid_argument
  // on a bad name or type, or a family begun twice.
  void family(const std::string& name, const std::string& type, const std::string& help);
  // A sample of the current family; `suffix` is "" or, for histograms, "_bucket",
  // "_sum", "_count". Throws std::invalid_argument on a bad label name or without a family.
  void sample(const Labels& labels, double value, const std::string& suffix = "");
  const std::string& text() const { return out_; }

  static bool valid_metric_name(const std::string& name);
  static bool valid_label_name(const std::string& name);
  static std::string escape_help(const std::string& help);
  static std::string escape_label_value(const std::string& value);
  // Shortest text that reads back as the same double; NaN, +Inf, -Inf as Prometheus spells them.
  static std::string format_value(double v);

 private:
  std::string out_;
  std::string current_;
  std::vector<std::string> begun_;
};

}  // namespace mlsched
