// Which nodes failed under a job lately: select/mlsched keeps large gangs off them
// for NodeFailureWindow. The memory outlives slurmctld (a restart, and 24.11's
// `scontrol reconfigure`, which starts a new slurmctld process), so it is written to
// a small state file in StateSaveLocation and read back at start; this is that
// memory and its one file format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mlsched {

class NodeFailureMemory {
 public:
  // Bounds, whatever happens on the cluster or is found in the file: the oldest
  // failure of a node goes first, and a node beyond kMaxNodes is not remembered.
  static constexpr size_t kMaxNodes = 100000;
  static constexpr size_t kMaxPerNode = 32;
  // A saved time this far past "now" is a clock problem, not a failure to keep.
  static constexpr int64_t kMaxClockSkew = 86400;

  // A job ended with NODE_FAIL and `node` was down or not responding then.
  void record(const std::string& node, int64_t when);

  // How many failures of `node` fall within the last `window` seconds before `now`.
  uint32_t recent(const std::string& node, int64_t now, uint32_t window) const;

  // Drops failures older than `window` seconds; true when something was dropped
  // (the saved file is then out of date).
  bool forget_older_than(int64_t now, uint32_t window);

  size_t nodes() const { return failures_.size(); }
  bool empty() const { return failures_.empty(); }

  // "mlsched-node-failures 1", then "node <name> <time>..." lines, then "end".
  std::string serialize() const;
  // nullopt and `error` (with the line number) for anything but a complete, valid
  // file; times after `not_after` are refused.
  static std::optional<NodeFailureMemory> parse(std::string_view text, int64_t not_after, std::string* error);

 private:
  std::map<std::string, std::deque<int64_t>> failures_;  // per node, oldest first
};

}  // namespace mlsched
