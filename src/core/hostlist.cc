// Host list expansion and compression, written for mlsched's config files and
// node names; it accepts the common subset of Slurm's syntax (one bracket group).
#include "core/hostlist.h"

#include <cctype>
#include <algorithm>
#include <map>
#include <utility>
#include <stdexcept>

#include "core/text.h"

namespace mlsched {

namespace {

// Splits on commas that are not inside brackets.
std::vector<std::string> top_level_items(std::string_view list) {
  std::vector<std::string> items;
  int depth = 0;
  std::string cur;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) throw std::invalid_argument("unbalanced ']' in host list '" + std::string(list) + "'");
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) throw std::invalid_argument("unbalanced '[' in host list '" + std::string(list) + "'");
  items.push_back(cur);
  return items;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> hosts;
  const std::string text = trim(list);
  if (text.empty()) return hosts;
  for (const std::string& raw : top_level_items(text)) {
    const std::string item = trim(raw);
    if (item.empty()) throw std::invalid_argument("empty name in host list '" + text + "'");
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      hosts.push_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    if (close == std::string::npos || item.find('[', open + 1) != std::string::npos)
      throw std::invalid_argument("host list item '" + item + "' must have one [a-b,...] group");
    const std::string prefix = item.substr(0, open);
    const std::string suffix = item.substr(close + 1);
    for (const std::string& range : split(item.substr(open + 1, close - open - 1), ',')) {
      const auto bounds = split(trim(range), '-');
      if (bounds.size() > 2 || bounds[0].empty())
        throw std::invalid_argument("bad range '" + range + "' in host list item '" + item + "'");
      const auto lo = parse_uint(bounds[0]);
      const auto hi = bounds.size() == 2 ? parse_uint(bounds[1]) : lo;
      if (!lo || !hi || *hi < *lo)
        throw std::invalid_argument("bad range '" + range + "' in host list item '" + item + "'");
      if (*hi - *lo > 100000) throw std::invalid_argument("range '" + range + "' is too large");
      const size_t width = bounds[0].size();
      // Bounded in total too: many ranges of a config line or a hostile string
      // must not become millions of names in slurmctld.
      if (hosts.size() + (*hi - *lo) > 100000)
        throw std::invalid_argument("host list '" + shown(text) + "' names more than 100000 hosts");
      for (uint64_t n = *lo; n <= *hi; ++n) {
        std::string num = std::to_string(n);
        if (num.size() < width) num.insert(0, width - num.size(), '0');
        hosts.push_back(prefix + num + suffix);
      }
    }
  }
  return hosts;
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  // Group by (prefix, digit width); names without a numeric tail stay as they are.
  struct Group {
    std::string prefix;
    size_t width;
    std::vector<uint64_t> numbers;
  };
  std::vector<Group> groups;  // in order of first appearance
  std::map<std::pair<std::string, size_t>, size_t> group_of;
  std::vector<std::string> out;
  for (const auto& h : hosts) {
    size_t i = h.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(h[i - 1]))) --i;
    if (i == h.size()) {
      out.push_back(h);
      continue;
    }
    const std::string prefix = h.substr(0, i);
    const size_t width = h.size() - i;
    const uint64_t n = *parse_uint(h.substr(i));
    // Indexed, not searched: names whose numbers sit inside the prefix (a suffix after
    // the bracket) make one group per host, and a linear search was quadratic in them.
    auto [slot, added] = group_of.try_emplace({prefix, width}, groups.size());
    if (added) groups.push_back({prefix, width, {}});
    groups[slot->second].numbers.push_back(n);
  }
  for (auto& g : groups) {
    auto pad = [&](uint64_t n) {
      std::string s = std::to_string(n);
      if (s.size() < g.width) s.insert(0, g.width - s.size(), '0');
      return s;
    };
    std::vector<uint64_t> nums = g.numbers;
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    if (nums.size() == 1) {
      out.push_back(g.prefix + pad(nums[0]));
      continue;
    }
    std::vector<std::string> ranges;
    for (size_t i = 0; i < nums.size();) {
      size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1] == nums[j] + 1) ++j;
      ranges.push_back(i == j ? pad(nums[i]) : pad(nums[i]) + "-" + pad(nums[j]));
      i = j + 1;
    }
    out.push_back(g.prefix + "[" + join(ranges, ",") + "]");
  }
  return join(out, ",");
}

}  // namespace mlsched
