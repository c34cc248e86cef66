// The one reader of Slurm's TRES and GRES request strings. Slurm writes them in two
// forms: requests as the user gave them ("gres:gpu:h100:8", "gres:gpu:2",
// tres_per_node) and accounting strings ("cpu=4,mem=8G,gres/gpu=8,gres/gpu:h100=8",
// tres_fmt_req_str / tres_fmt_alloc_str). Both are lists of items
// [prefix]name[:type][:count|=count]; this file reads either, so that submit,
// placement, priority, preempt and the tool count GPUs the same way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

struct TresItem {
  std::string prefix;  // "gres:" / "gres/" / "" as written (kept for rewriting)
  std::string name;    // "gpu", "cpu", "mem", ...
  std::string type;    // "h100"; "" when none is named
  std::optional<uint64_t> count;  // nullopt: none written (a request of one), or not a number ("8G")
  bool accounting = false;        // written name=count (an accounting string), not name:count
};

// The items of a TRES list, in order. An item this reader cannot take apart
// ("gpu:a:b:c", or a non-numeric count after a type) is left out and named in
// `*unreadable` (the first one) when the caller asks: the submit path refuses the
// job with that text, the accounting readers ignore it.
std::vector<TresItem> parse_tres(std::string_view tres, std::string* unreadable = nullptr);
// Writes items back in the request form ("gres:gpu:h100:8"), keeping each prefix.
std::string format_tres(const std::vector<TresItem>& items);

// GPUs of a job by GPU type (lowercase), from either form.
// `untyped` holds GPUs with no type named (an untyped gres/gpu total minus the typed ones).
struct GpuCounts {
  std::map<std::string, uint32_t> by_type;
  uint32_t untyped = 0;
  uint32_t total() const;
  // The type of all its GPUs, lowercase; "" when they are of several types or untyped.
  std::string single_type() const;
};
GpuCounts gpu_counts_from_tres(std::string_view tres);

// A node's configured GRES ("gpu:a100:8(S:0-1),gpu:h100:2,shard:4"), as slurm.conf
// and node_info_t give it: the same items, each possibly followed by "(...)".
struct GresEntry {
  std::string name;
  std::string type;   // empty when untyped
  uint64_t count = 0;
};
// Throws std::invalid_argument naming the item it cannot read.
std::vector<GresEntry> parse_node_gres(std::string_view gres);

// GPU indexes in Slurm's allocation strings, as in a node's gres_used and a
// running job's gres_detail: "gpu:h100:2(IDX:0-1,4)" -> 0,1,4; "(IDX:N/A)" -> none.
// Indexes at or past kMaxGpusPerNode are ignored and at most kMaxGpusPerNode are
// returned: one node's string never names more.
std::vector<int> gpu_indices_from_gres(std::string_view gres);

}  // namespace mlsched
