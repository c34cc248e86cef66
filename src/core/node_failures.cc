#include "core/node_failures.h"

#include <sstream>

namespace mlsched {

namespace {
constexpr const char* kHeader = "mlsched-node-failures 1";
constexpr size_t kMaxNameLength = 256;
}  // namespace

void NodeFailureMemory::record(const std::string& node, int64_t when) {
  if (node.empty() || node.size() > kMaxNameLength) return;
  auto it = failures_.find(node);
  if (it == failures_.end()) {
    if (failures_.size() >= kMaxNodes) return;
    it = failures_.emplace(node, std::deque<int64_t>{}).first;
  }
  auto& times = it->second;
  // Kept in time order so that forgetting pops from the front.
  auto pos = times.end();
  while (pos != times.begin() && *(pos - 1) > when) --pos;
  times.insert(pos, when);
  while (times.size() > kMaxPerNode) times.pop_front();
}

uint32_t NodeFailureMemory::recent(const std::string& node, int64_t now, uint32_t window) const {
  auto it = failures_.find(node);
  if (it == failures_.end()) return 0;
  uint32_t n = 0;
  for (int64_t t : it->second)
    if (now - t <= static_cast<int64_t>(window)) ++n;
  return n;
}

bool NodeFailureMemory::forget_older_than(int64_t now, uint32_t window) {
  bool dropped = false;
  for (auto it = failures_.begin(); it != failures_.end();) {
    auto& times = it->second;
    while (!times.empty() && now - times.front() > static_cast<int64_t>(window)) {
      times.pop_front();
      dropped = true;
    }
    it = times.empty() ? failures_.erase(it) : std::next(it);
  }
  return dropped;
}

std::string NodeFailureMemory::serialize() const {
  std::ostringstream out;
  out << kHeader << "\n";
  for (const auto& [node, times] : failures_) {
    out << "node " << node;
    for (int64_t t : times) out << ' ' << t;
    out << "\n";
  }
  out << "end\n";
  return out.str();
}

std::optional<NodeFailureMemory> NodeFailureMemory::parse(std::string_view text, int64_t not_after,
                                                          std::string* error) {
  NodeFailureMemory memory;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  bool ended = false;
  auto fail = [&](const std::string& why) -> std::optional<NodeFailureMemory> {
    if (error) *error = "line " + std::to_string(number) + ": " + why;
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      if (line != kHeader) return fail("not an mlsched node-failure file (header '" + line.substr(0, 80) + "')");
      continue;
    }
    if (ended) return fail("text after 'end'");
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "end") {
      ended = true;
      std::string extra;
      if (words >> extra) return fail("unexpected '" + extra.substr(0, 80) + "'");
      continue;
    }
    if (kind != "node") return fail("unknown record '" + kind.substr(0, 80) + "'");
    std::string name;
    if (!(words >> name) || name.size() > kMaxNameLength) return fail("bad node name");
    if (memory.failures_.count(name)) return fail("node " + name + " twice");
    if (memory.failures_.size() >= kMaxNodes) return fail("more than " + std::to_string(kMaxNodes) + " nodes");
    std::deque<int64_t> times;
    std::string word;
    while (words >> word) {
      size_t used = 0;
      long long t = 0;
      try {
        t = std::stoll(word, &used);
      } catch (...) {
        used = 0;
      }
      if (used != word.size() || t <= 0) return fail("bad time '" + word.substr(0, 80) + "' of node " + name);
      if (t > not_after) return fail("time " + word + " of node " + name + " is in the future");
      if (!times.empty() && t < times.back()) return fail("times of node " + name + " out of order");
      if (times.size() >= kMaxPerNode) return fail("more than " + std::to_string(kMaxPerNode) + " times for node " + name);
      times.push_back(t);
    }
    if (times.empty()) return fail("node " + name + " without a time");
    memory.failures_.emplace(name, std::move(times));
  }
  if (number == 0) return fail("empty file");
  if (!ended) return fail("truncated (no 'end' line)");
  return memory;
}

}  // namespace mlsched
