// Pipelines: the pipeline file (JSON, read with json-c), its checks, the order and
// Slurm dependencies its stages are submitted with, and the status of a submitted
// pipeline built from its jobs. Slurm-free; `mlsched pipeline` is the shell around
// it. A stage's membership on its job is job_record.h's (PipelineMembership).
//
// Retries: attempt k+1 of a stage is its own job, submitted up front with
// afternotok on *every* earlier attempt (all must have failed: afternotok alone
// would also be satisfied by an attempt Slurm cancelled because it was not needed).
// A downstream stage waits for "any attempt ended ok" with Slurm's OR ('?'), so it
// can have only that one upstream edge (Slurm does not mix ',' and '?'). Every job
// is submitted with --kill-on-invalid-dep=yes: attempts that are not needed, and
// stages whose upstream ended the wrong way, are cancelled by Slurm
// (DependencyNeverSatisfied) instead of pending forever.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job_record.h"

namespace mlsched {

// Bounds on the file itself (stages, names and retries: job_record.h).
inline constexpr size_t kMaxPipelineFileBytes = 64 * 1024;
inline constexpr size_t kMaxStageScriptBytes = 1024 * 1024;
inline constexpr size_t kMaxScriptPathBytes = 256;

struct StageSpec {
  std::string name;
  std::string script;              // relative to the pipeline file's directory
  std::vector<AfterEdge> after;
  uint32_t retries = 0;
};

struct PipelineSpec {
  std::string name;
  std::vector<StageSpec> stages;   // in file order
  const StageSpec* find(std::string_view stage) const;
};

struct PipelineParse {
  std::optional<PipelineSpec> spec;  // set only when `errors` is empty
  std::vector<std::string> errors;   // at most kMaxProblemsKept, each naming where
  size_t errors_dropped = 0;
};
// Reads and checks the whole file: JSON syntax, unknown keys, types, names,
// duplicate stages, unknown `after` stages, cycles, retries, the OR limitation,
// script paths that leave the directory.
PipelineParse parse_pipeline(std::string_view json_text);

// Stages in an order where every stage comes after the stages it waits for (file
// order among independent ones). Requires a checked spec.
std::vector<const StageSpec*> submission_order(const PipelineSpec& spec);

// Slurm's --dependency for attempt `attempt` (1-based) of `stage`, given the job ids
// of the attempts already submitted (by stage name, attempt order). "" when none.
std::string stage_dependency(const PipelineSpec& spec, const StageSpec& stage, uint32_t attempt,
                             const std::map<std::string, std::vector<uint32_t>>& attempt_ids);

// The membership words stored with attempt `attempt` of `stage`.
PipelineMembership membership_of(const std::string& pipeline_id, const StageSpec& stage, uint32_t attempt);

// ==== status of a submitted pipeline =============================================
// One job of the pipeline, as the tool read it from Slurm.
struct StageJob {
  uint32_t job_id = 0;
  PipelineMembership membership;
  std::string name;            // "<pipeline>/<stage>"
  std::string state;           // Slurm's base state: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED ...
  std::string reason;          // Slurm's reason of a pending job ("Dependency", "DependencyNeverSatisfied")
  time_t submit = 0, start = 0, end = 0;
  // It was given nodes (it ran, if only for a moment). Its times cannot tell: Slurm
  // sets start = end when it cancels a pending job.
  bool allocated = false;
  uint32_t time_limit_s = 0;   // 0: none
  time_t model_eta = 0;        // pending: why's ETA for its start (0: unknown)
  int exit_code = 0;
};

struct StageStatus {
  std::string stage;
  std::vector<AfterEdge> after;
  std::vector<StageJob> attempts;      // attempt order
  const StageJob* current = nullptr;   // the attempt that tells the stage's state
  std::string state;                   // pending, waiting, running, completed, failed, cancelled, skipped
  std::string detail;                  // in words: why, or what happens next
  time_t start = 0, end = 0;           // of `current` (0: not yet)
  time_t eta = 0;                      // pending/waiting: expected start (0: unknown)
  time_t expected_end = 0;             // running: start + time limit; pending: eta + time limit
};

struct PipelineStatus {
  std::string id, name;
  std::vector<StageStatus> stages;     // upstream first
  std::string state;                   // running, completed, failed, cancelled, pending
};
// Groups the jobs by stage, picks each stage's telling attempt, explains it, and
// chains ETAs: a waiting stage starts no earlier than its upstream stages' expected
// ends. `now` for what is in the past.
PipelineStatus pipeline_status(const std::string& id, std::vector<StageJob> jobs, time_t now);
std::string format_pipeline_status(const PipelineStatus& status, time_t now);
// What `why` adds for a pipeline stage: its downstream stages and what happens to
// them ("then evaluate (after ok) ..."; "if it fails: evaluate is cancelled").
std::string pipeline_chain_text(const PipelineStatus& status, const std::string& stage);

}  // namespace mlsched
