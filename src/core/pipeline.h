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

// What a recurring pipeline does at a scheduled time while its previous run is
// still going (Kubernetes CronJob's Forbid and Allow).
enum class Concurrency { forbid, allow };
std::string to_string(Concurrency c);

struct PipelineSpec {
  std::string name;
  std::vector<StageSpec> stages;   // in file order
  std::string schedule;            // cron, as scrontab reads it; "" = submit once
  Concurrency concurrency = Concurrency::forbid;
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

// ==== recurring pipelines (scrontab) ============================================
// A recurring pipeline is one scrontab entry of its user (Slurm's own cron, a job
// that slurmctld requeues with the next time as its BeginTime) that runs
// `mlsched pipeline fire FILE` at each time. The entry is a block of the user's
// scrontab, between marker comments that name the pipeline, so installing it again
// replaces it and the user's other entries are kept as they are.

// What is wrong with a cron schedule, as Slurm's scrontab would read it (five
// fields: minute hour day-of-month month day-of-week, each *, a number, a range
// or a list, with an optional /step; 3-letter month and day names; @hourly,
// @daily/@midnight, @weekly, @monthly, @yearly/@annually); "" when it reads.
std::string cron_schedule_problem(std::string_view schedule);

// The paths the entry's command line holds (it is run by the cron job's shell, so
// only these characters are let through: letters, digits, / . _ - + , @ :).
bool crontab_safe_path(std::string_view path);

struct ScheduleEntry {
  std::string tool;        // absolute path of mlsched
  std::string file;        // absolute path of the pipeline file
  std::string log;         // absolute path the runs' decisions are appended to
  std::string path_env;    // PATH for the cron job (where sbatch is); "" = its own
  std::string slurm_conf;  // SLURM_CONF for the cron job; "" = the default
};
// The scrontab block of `spec` (which has a schedule). Every path in `entry` must
// be crontab_safe_path.
std::string schedule_block(const PipelineSpec& spec, const ScheduleEntry& entry);
// `crontab` without the block of pipeline `name` (and `found` says whether it had one).
std::string crontab_without(std::string_view crontab, std::string_view name, bool* found = nullptr);
// The job name of the cron job of pipeline `name`.
std::string schedule_job_name(std::string_view name);

// What the scheduled times did: the concurrency rule, how many times it fired, and
// what it did the last time. Kept in schedule_state_file() beside the pipeline file,
// written by the user's own cron job (Slurm refuses updates of scrontab jobs, so not
// in the job), read back by `pipeline status NAME`: the user's text, shown, never trusted.
struct ScheduleNote {
  Concurrency concurrency = Concurrency::forbid;
  uint32_t submitted = 0, skipped = 0, failed = 0;
  time_t last = 0;              // 0: has not fired yet
  std::string last_outcome;     // "submitted", "skipped" or "failed"
  std::string last_run;         // submitted: the new run's id; skipped: the run still going
};
std::string encode_schedule_note(const ScheduleNote& note);
std::optional<ScheduleNote> decode_schedule_note(std::string_view comment);
std::string format_schedule_note(const ScheduleNote& note, time_t now);
// The files beside the pipeline file: each time's lines (the cron job's output) and the note.
std::string schedule_log_file(std::string_view name);
std::string schedule_state_file(std::string_view name);

// The runs of a pipeline `name` (ids "<name>-<6 hex>") among pipeline ids.
bool is_run_of(std::string_view pipeline_id, std::string_view name);

}  // namespace mlsched
