// An ML job's life in mlsched's words: the state it is in now (queued, placed,
// running, checkpointing, preempted, requeued, resumed, completed, failed,
// cancelled), computed from Slurm's state plus mlsched's record on the job, and
// the history of its runs, built from accounting's record of each run (slurmdbd
// keeps one per run of a requeued job) plus the same record. Slurm-free: the tool
// copies Slurm's structs into the plain values below.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.h"
#include "core/job_record.h"

namespace mlsched {

enum class MlState { queued, placed, running, checkpointing, preempted, requeued, resumed, completed, failed, cancelled };

// Every state, in the order of a job's life (for gauges, docs and --help).
const std::vector<MlState>& ml_states();
const char* ml_state_name(MlState s);

// What Slurm says of a job now (the controller's job table, or accounting's last
// record of it once it left the controller), in Slurm's words.
struct SlurmJobView {
  // Slurm's base state as squeue spells it: PENDING, RUNNING, SUSPENDED,
  // COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL,
  // DEADLINE, OUT_OF_MEMORY, REQUEUED (accounting's name of a run that ended requeued).
  std::string state;
  bool configuring = false;  // allocated, nodes booting or the job launching
  bool requeuing = false;    // a JOB_REQUEUE* flag: this run ends into a requeue
  bool allocated = false;    // Slurm names nodes for its current or last run (a requeue clears them)
  std::string reason;        // Slurm's reason while pending ("Resources", "BeginTime" ...)
  uint32_t restarts = 0;     // Slurm's restart count: requeues of any cause
  int64_t start_time = 0;    // start of the current or last run; 0 while queued (a requeue clears it)
  int64_t end_time = 0;      // end of the last run, once the job ended; 0: none
  int64_t queued_since = 0;  // Slurm's submit time: the first submission, or the last requeue
  uint32_t checkpoint_grace = 0;  // the job's checkpoint-grace (directives), 0: unknown
  int64_t preempt_time = 0;  // Slurm picked the running job as a preemption victim (0: not)
  uint32_t exit_code = 0;    // as Slurm reports it (status << 8 | signal)
  std::string comment;       // the job's Comment (`mlsched ckpt done` reports)
  std::string admin_comment; // mlsched's record (job_record.h)
};

// The state with what a person needs beside it.
struct MlStatus {
  MlState state = MlState::queued;
  uint32_t run = 0;                 // the run it is in or last had, counting from 1; 0: never ran
  std::string detail;               // one line: the reason, the cause, the checkpoint resumed from
  std::optional<CheckpointReport> last_checkpoint;  // the last one reported to slurmctld, any run
  std::string resumed_from;         // resumed: the checkpoint name it resumed from ("" unknown)
  uint32_t preempted_by = 0;        // preempted / checkpointing: the preemptor, when recorded
};

// The state of a job now. Pure: `now` is only used to word ages.
//   PENDING, never ran                         -> queued (Slurm's reason)
//   PENDING after a run, preempted in that run -> preempted (by job X): the last
//     preemption recorded on it fell within its grace before the requeue
//     (`queued_since`), since Slurm clears a requeued job's run times
//   PENDING after a run, otherwise             -> requeued (cause when Slurm tells it)
//   RUNNING + configuring                      -> placed
//   RUNNING, picked as a preemption victim     -> checkpointing
//   RUNNING, a requeued job's later run        -> resumed (run k, from checkpoint S)
//   RUNNING                                    -> running
//   COMPLETED -> completed; CANCELLED -> cancelled; any other end -> failed (cause)
//   an end with a requeue flag                 -> preempted or requeued, as PENDING
MlStatus ml_status(const SlurmJobView& job);

// "checkpointing (since 12 s; preempted by job 815)" style one-liner.
std::string format_status(const MlStatus& s);

// ==== history ======================================================================

// One record of accounting's per-run table (sacct -D; libslurmdb's jobs with
// JOBCOND_FLAG_DUP), copied by the tool.
struct AccountedRun {
  std::string state;         // Slurm's base state name at the end of the run (REQUEUED, PREEMPTED, NODE_FAIL, ...)
  bool requeue_flag = false; // the state had JOB_REQUEUE
  int64_t start = 0;         // 0: never started (a pending record)
  int64_t end = 0;           // 0: still running
  std::string nodes;         // hostlist
  uint32_t gpus = 0;         // from its allocated TRES
  uint32_t requid = 0;       // who cancelled (Slurm's uid; -1/NO_VAL when not cancelled)
  std::string requester;     // that uid's name, when the tool could resolve it
  uint32_t exit_code = 0;
  std::string comment;       // the Comment at the run's end
  std::string admin_comment; // mlsched's record at the run's end
};

// A node that went down, from accounting's node events.
struct NodeDownEvent {
  std::string node;
  int64_t at = 0;
  std::string reason;
};

enum class RunEnd { running, completed, failed, time_limit, cancelled, preempted, node_failure, requeued, unknown };
const char* run_end_name(RunEnd e);

struct RunRecord {
  uint32_t run = 0;                  // 1, 2, ...
  int64_t start = 0, end = 0;        // end 0: running now
  std::string nodes;
  uint32_t gpus = 0;
  std::map<std::string, std::vector<int>> gpu_indices;  // known for the current run only
  RunEnd end_cause = RunEnd::unknown;
  std::string end_detail;            // "preempted by job 815", "node failure on gpu16", "cancelled by ml-bob"
  uint32_t preempted_by = 0;
  std::vector<std::string> failed_nodes;
  std::optional<CheckpointReport> ended_with;    // the last checkpoint reported within this run
  std::optional<CheckpointReport> resumed_from;  // the last one reported before it started
  double gpu_seconds = 0;            // used: GPUs x elapsed (up to `now` when running)
  double lost_gpu_seconds = 0;       // of an interrupted run: after its last checkpoint (all, with none)
};

struct JobHistory {
  uint32_t job_id = 0;
  std::string name, user, account;
  bool in_controller = false;        // slurmctld still holds the job
  bool accounting_read = false;      // false: runs before the current one are unknown
  std::string accounting_problem;    // why accounting could not be read
  MlStatus status;
  bool status_known = false;
  std::vector<RunRecord> runs;
  uint32_t runs_expected = 0;        // from the controller's restart count (0: unknown)
  double gpu_seconds = 0, lost_gpu_seconds = 0;
  PreemptionHistory preemptions;     // mlsched's record (counts and the last)
  std::vector<std::string> notes;
};

// What the tool gathered about one job.
struct HistoryInput {
  uint32_t job_id = 0;
  std::string name, user, account;
  std::optional<SlurmJobView> controller;              // nullopt: slurmctld no longer holds it
  std::string controller_nodes;                        // current run's nodes (hostlist)
  uint32_t controller_gpus = 0;                        // current run's GPUs
  std::map<std::string, std::vector<int>> gpu_indices; // current run's GPU indices per node
  bool accounting_read = false;
  std::string accounting_problem;
  // AccountingStoreFlags=job_comment: accounting keeps each run's Comment (the
  // checkpoint reports). Without it only the current run's checkpoints are known.
  bool comments_in_accounting = true;
  std::vector<AccountedRun> accounted;                 // any order
  std::vector<NodeDownEvent> node_events;
  int64_t now = 0;
};

// Bounds: at most this many runs are listed (the newest), and at most this many
// accounting records are read for one job.
inline constexpr size_t kMaxHistoryRuns = 1000;

JobHistory build_history(const HistoryInput& in);

// The human view (one header, one block per run) and its totals.
std::string format_history(const JobHistory& h, int64_t now);

// ==== jobs listing =================================================================

struct JobListRow {
  uint32_t job_id = 0;
  std::string name, user, account;
  MlStatus status;
  int64_t now = 0;
};
// `mlsched jobs`: one line per job, columns aligned, user text escaped and cut.
std::string format_job_list(const std::vector<JobListRow>& rows);

}  // namespace mlsched
