// Checkpoints of a training job across its allocations (`mlsched run`, `mlsched
// ckpt done`): which checkpoint is the latest *complete* one, recorded atomically,
// and fencing so that a stale copy of the job from an earlier allocation (a node
// declared dead that comes back) cannot record checkpoints over a newer run's.
// Slurm-free; works on a checkpoint directory shared by every run of the job.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace mlsched {

// What `mlsched ckpt done` records, one line in <dir>/LATEST:
//   "mlsched-checkpoint restart=<n> time=<epoch> path=<path>"
struct CheckpointRecord {
  uint32_t restart = 0;  // SLURM_RESTART_COUNT of the run that wrote it
  int64_t time = 0;      // when it was marked complete
  std::string path;
  std::string to_string() const;
};
std::optional<CheckpointRecord> parse_checkpoint_record(std::string_view text);

// The files mlsched keeps in a checkpoint directory.
std::string latest_file(const std::string& dir);  // the record of the latest complete checkpoint
std::string fence_file(const std::string& dir);   // the newest run's restart count

struct RunStart {
  bool ok = false;
  std::string error;        // when !ok: why this run must not start
  std::string resume_from;  // latest complete checkpoint; "" on a first start
  std::string note;         // e.g. the recorded checkpoint has vanished
};
// A run with `restart` count starts: raises the fence to it (a run never lowers it;
// a lower count than the fence means this is a stale copy and is refused) and
// finds the checkpoint to resume from. Creates `dir` when missing.
// `dir` must be a directory of `owner` (the job's user) that no other user may
// write or replace (safe_file.h: open_owned_dir); it is refused with the reason
// otherwise, and so is a LATEST that is not a regular file of `owner` or that
// names a path outside `dir` or reached through a symlink: another user's
// checkpoint is never resumed from.
RunStart begin_run(const std::string& dir, uint32_t restart, uid_t owner);

// Marks `path` (relative to `dir` or absolute) complete for a run with `restart`
// count at time `now`: refused when the fence shows a newer run, when the path
// does not exist, or when the latest record comes from a newer run. The record is
// written to a temporary file, synced and renamed over LATEST, so a reader sees
// the old record or the new one, never half of one. Returns "" or the reason.
// `path` must lie inside `dir`; the record keeps it relative to `dir`.
std::string mark_checkpoint_complete(const std::string& dir, uint32_t restart, const std::string& path, int64_t now,
                                     uid_t owner);

// The latest complete checkpoint in `dir`, read the way begin_run reads it (a
// checked directory of `owner`, a bounded regular file, a path inside `dir`):
// for `mlsched why` and for `mlsched run` watching for the checkpoint it asked for.
struct LatestCheckpoint {
  std::optional<CheckpointRecord> record;  // with `path` the checkpoint's full path
  std::string path;
  bool missing = false;  // no directory or no record: nothing marked yet
  std::string problem;   // why it was not read (foreign owner, symlink, FIFO, too long, garbage)
};
LatestCheckpoint read_latest_checkpoint(const std::string& dir, uid_t owner);

// ==== checkpoint reports to slurmctld ===========================================
// Inside a job, `mlsched ckpt done` also writes when the checkpoint completed into
// the job's Comment (a field the job's owner may update), as one word
//   mlsched-checkpoint=<epoch seconds>
// that replaces an earlier one and keeps the rest of the user's text. preempt/mlsched
// reads it to estimate the work a victim would lose (lost_work in preempt.h). The
// file record above stays what resume uses; the report only informs the estimate.
extern const char* const kCheckpointReportKey;  // "mlsched-checkpoint"
// The comment with `time` reported: every earlier report word removed (with one
// space next to it), the new one appended after a space. With a `name` (the
// checkpoint's path inside its directory, e.g. "step-41"), the word is
// `mlsched-checkpoint=<time>,<name>`: accounting keeps the Comment of each run, so
// `mlsched history` can say which checkpoint a run ended with and the next resumed
// from. A name that is empty, longer than kMaxReportedName or holds anything but
// [A-Za-z0-9._/+-] is left out (the time alone is reported).
inline constexpr size_t kMaxReportedName = 64;
std::string with_checkpoint_report(std::string_view comment, int64_t time, std::string_view name = {});
// The comment with every report word removed (checkpoint and resume reports), the
// rest as the user wrote it: job_submit/mlsched lets an update through that changes
// nothing else.
std::string without_checkpoint_report(std::string_view comment);
// The reported time (the last report word); nullopt when none or not a number.
std::optional<int64_t> checkpoint_report(std::string_view comment);
// The last report word whole: its time and, when it carries one, the checkpoint's
// name (only names with_checkpoint_report would write are read back; another is "").
struct CheckpointReport {
  int64_t time = 0;
  std::string name;
};
std::optional<CheckpointReport> checkpoint_report_of(std::string_view comment);
// At the start of a later run, `mlsched run` reports the checkpoint it resumes from
// (the record's time and name) as one word `mlsched-resumed=<time>,<name>` in the
// Comment, replaced by the next run's: accounting's record of each run then says
// what that run resumed from, however many checkpoints it reported after. It is not
// a checkpoint of the run (preemption ignores it).
extern const char* const kResumeReportKey;  // "mlsched-resumed"
std::string with_resume_report(std::string_view comment, int64_t time, std::string_view name);
std::optional<CheckpointReport> resume_report_of(std::string_view comment);
// How far a report is believed. Anyone who owns the job can write any number
// there, so a report counts only inside [start_time, now]: a time before the
// current run's start comes from an earlier allocation (or is false) and is
// ignored; a time in the future is taken as now. Clamped this way (and with
// lost_work's bound by the declared interval) a report can only make lost work
// smaller than without it: a false one makes the reporter's own job the cheaper
// victim, it never protects the job from preemption.
std::optional<int64_t> trusted_checkpoint_time(std::optional<int64_t> reported, int64_t start_time, int64_t now);
// Since when the work of a run is at risk at `now` (lost if it stopped then): its
// last trusted checkpoint of this run, else its start; never earlier than `now`
// minus a declared checkpoint interval (0 = none declared). Both what a preemption
// victim would lose (preempt.h: lost_work) and what a run that ended in a node
// failure is not charged for (priority) come from it.
int64_t work_at_risk_since(int64_t start_time, std::optional<int64_t> reported, uint32_t checkpoint_interval,
                           int64_t now);
// ==== end checkpoint reports ====================================================

}  // namespace mlsched
