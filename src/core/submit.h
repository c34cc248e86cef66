// What job_submit/mlsched decides for one submission: validate the directives
// against the admin config and the live cluster, and compute the rewrite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config.h"
#include "core/directives.h"
#include "core/placement.h"

namespace mlsched {

// The parts of a submission the decision reads; the plugin copies them out of
// Slurm's job_desc_msg_t. Unset Slurm fields are empty / nullopt here.
struct JobRequest {
  std::string script;
  std::string comment;
  std::string tres_per_node;   // "gres:gpu:8" (what --gres/--gpus-per-node become)
  std::string tres_per_job;    // --gpus
  std::string tres_per_task;   // --gpus-per-task
  std::string tres_per_socket; // --gpus-per-socket
  std::string features;        // --constraint
  std::string prefer;          // --prefer
  std::optional<uint32_t> min_nodes;
  std::optional<uint32_t> num_tasks;
  std::optional<int> warn_signal;     // --signal
  std::optional<uint32_t> warn_time;
  std::optional<bool> requeue;        // --requeue / --no-requeue
  std::optional<uint32_t> time_limit; // --time in minutes; nullopt: not given, or unlimited
  std::optional<uint32_t> het_component;  // its het_job_offset in a heterogeneous job
  // select/mlsched is the select plugin: it tries a gpu-type list in the user's
  // order by itself, so no --prefer is added (Slurm 22.05 queues a job with a
  // preference twice, once with and once without it, which lengthens every
  // scheduling pass for nothing).
  bool placement_orders_types = false;
  // Regions (docs/regions.md). The GPU types that the other regions this federated
  // job may go to declare as their cluster features (sacctmgr ... set features=a100);
  // nullopt when the job is not federated or some region declares no features, and
  // then only this cluster's types are accepted.
  std::optional<std::vector<std::string>> other_region_gpu_types;
  std::string cluster_features;  // --cluster-constraint as given
  // A sibling region's copy of a federated job: the origin region's job_submit/mlsched
  // already rewrote it for the origin's GPU types, and that rewrite is redone here
  // for this region's.
  bool sibling_copy = false;
};

// GPUs a submission asks for, summed over its TRES strings.
struct GpuRequest {
  uint32_t per_node = 0;
  uint32_t per_job = 0;
  uint32_t per_task = 0;
  uint32_t per_socket = 0;
  std::vector<std::string> types;  // types named in the request itself
  bool any() const { return per_node || per_job || per_task || per_socket; }
};
// Throws std::invalid_argument on TRES text it cannot read.
GpuRequest read_gpu_request(const JobRequest& req);

// A job's normalized gang request, the one select/mlsched places and `mlsched why`
// explains: nodes x GPUs per node, or GPUs in all (per job, or per task x tasks);
// the acceptable types (the directives' gpu-type, else the types its TRES names);
// the locality from its directives.
struct GangRequest {
  PlacementRequest request;
  // Per-node or per-job GPUs: select/mlsched places it. Per-task and per-socket GPU
  // jobs are left to cons_tres as they are (why still counts per-task GPUs).
  bool placed_by_mlsched = false;
};
GangRequest gang_request(const GpuRequest& gpus, uint32_t nodes, uint32_t tasks,
                         const std::optional<JobDirectives>& directives);

// Rewrites every gpu item of a TRES list to the given type ("gres:gpu:8" ->
// "gres:gpu:h100:8"); other items are left as they are.
std::string type_gpu_tres(const std::string& tres, const std::string& gpu_type);

struct SubmitPlan {
  bool has_directives = false;
  std::vector<std::string> errors;  // non-empty: refuse the job
  std::vector<std::string> notes;   // told to the user on success
  size_t errors_dropped = 0, notes_dropped = 0;  // problems beyond those kept (directives.h)
  JobDirectives directives;
  // Values to write back into the job; nullopt leaves the field as it is.
  std::optional<std::string> tres_per_node, tres_per_job, tres_per_task, tres_per_socket;
  std::optional<std::string> features, prefer;
  // A federated job's gpu-type list as --cluster-constraint, so that only regions
  // that have one of the types get a sibling copy.
  std::optional<std::string> cluster_features;
  std::optional<int> warn_signal;
  std::optional<uint32_t> warn_time;
  bool warn_batch_only = false;  // deliver the signal to the batch shell (--signal=B:...)
  std::optional<bool> requeue;
  std::string stored;            // canonical directives (and pipeline membership) for the admin comment; "": none

  bool accepted() const { return errors.empty(); }
  // What sbatch shows (and slurmctld's log): the problems (or notes), one per line,
  // prefixed "mlsched: ", control bytes escaped and each line bounded; past
  // kMaxProblemsShown lines, how many more there are.
  static constexpr size_t kMaxProblemsShown = 20;
  static constexpr size_t kMaxLineBytes = 400;
  std::string user_message() const;
};

SubmitPlan plan_submit(const JobRequest& req, const Config& config, const Cluster& cluster);

// A sibling copy as the user submitted it, before the origin's rewrite for `gpu_types`
// (the job's directives): GPU items typed with one of them untyped again, the
// "[a|b]" appended to --constraint and a --prefer naming one of them removed.
JobRequest without_origin_rewrite(JobRequest req, const std::vector<std::string>& gpu_types);

// ==== updates of a submitted job (job_modify) ===================================
// Directives are fixed at submission: they are stored in the admin comment, which
// users cannot change. An update may not bring other directives in through the
// comment, nor ask for a GPU type the directives exclude. It may put back the
// directives the job already has (a user who cleared the comment restores it), and
// a change of only the `mlsched-checkpoint=` report (`mlsched ckpt done`) passes.
struct JobUpdate {
  std::optional<std::string> comment;  // the new Comment, when the update sets one
  std::string current_comment;         // the job's Comment before the update
  std::string admin_comment;           // the job's admin comment (stored directives)
  JobRequest request;                  // the fields as the update sets them (GPU requests)
};
struct UpdateVerdict {
  enum class Kind { allowed, directives_fixed, gpu_type_excluded } kind = Kind::allowed;
  std::string reason;  // for the user: "mlsched: ..."; "" when allowed
  bool allowed() const { return kind == Kind::allowed; }
};
UpdateVerdict check_update(const JobUpdate& update, const Config& config);
// ==== end updates ================================================================

}  // namespace mlsched
