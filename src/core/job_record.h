// What mlsched stores on a job, after "mlsched:" in its AdminComment: the
// directives (directives.h owns their keys and canonical form) and the marks the
// plugins set while it runs. This header is the one table of mark keys: every
// plugin and the tool read and write marks through these names, never literals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

namespace mark_key {
// priority/mlsched: "yes" on a running job whose GPUs are borrowed beyond its
// team's guarantee (preempt/mlsched may reclaim them), "no" on one inside it.
inline constexpr std::string_view borrowing = "borrowing";
// priority/mlsched: GPU-seconds of earlier runs of a requeued job.
inline constexpr std::string_view attained_gpu_seconds = "attained-gpu-seconds";
// priority/mlsched: first submit time (UTC epoch seconds) of a requeued job.
inline constexpr std::string_view first_submit = "first-submit";
// preempt/mlsched (preempt.h: preemption_history): how often, when, by whom, work lost.
inline constexpr std::string_view preempted = "preempted";
// preempted-at is local time text for people reading `scontrol show job`;
// readers take preempted-at-utc (epoch seconds), which means the same on slurmctld
// and on a login node in another time zone, and fall back to the text only for
// marks written before it existed.
inline constexpr std::string_view preempted_at = "preempted-at";
inline constexpr std::string_view preempted_at_utc = "preempted-at-utc";
inline constexpr std::string_view preempted_by = "preempted-by";
inline constexpr std::string_view lost_gpu_seconds = "lost-gpu-seconds";
}  // namespace mark_key

// Every mark key, in the order above.
const std::vector<std::string_view>& mark_keys();

// The priority plugin's marks, typed (absent: 0 / nullopt).
struct JobMarks {
  std::optional<std::string> borrowing;
  double attained_gpu_seconds = 0;
  int64_t first_submit = 0;
};
JobMarks read_marks(std::string_view admin_comment);

}  // namespace mlsched
