// Checkpoints of a training job across its allocations (`mlsched run`, `mlsched
// ckpt done`): which checkpoint is the latest *complete* one, recorded atomically,
// and fencing so that a stale copy of the job from an earlier allocation (a node
// declared dead that comes back) cannot record checkpoints over a newer run's.
// Slurm-free; works on a checkpoint directory shared by every run of the job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
RunStart begin_run(const std::string& dir, uint32_t restart);

// Marks `path` (relative to `dir` or absolute) complete for a run with `restart`
// count at time `now`: refused when the fence shows a newer run, when the path
// does not exist, or when the latest record comes from a newer run. The record is
// written to a temporary file, synced and renamed over LATEST, so a reader sees
// the old record or the new one, never half of one. Returns "" or the reason.
std::string mark_checkpoint_complete(const std::string& dir, uint32_t restart, const std::string& path, int64_t now);

}  // namespace mlsched
