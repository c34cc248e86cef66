// See tres.h.
#include "core/tres.h"

#include <algorithm>
#include <stdexcept>

#include "core/text.h"
#include "core/types.h"  // kMaxGpusPerNode

namespace mlsched {

namespace {
uint32_t clamped(uint64_t n) { return static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)); }

// GRES strings separate items by commas outside parentheses: "(S:0,1)" and
// "(IDX:0,2)" have their own.
std::vector<std::string> items_outside_parentheses(std::string_view text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) items.emplace_back();
    else items.back() += c;
  }
  return items;
}
}  // namespace

std::vector<TresItem> parse_tres(std::string_view tres, std::string* unreadable) {
  std::vector<TresItem> items;
  for (std::string raw : split(tres, ',')) {
    raw = trim(raw);
    if (raw.empty()) continue;
    TresItem it;
    if (starts_with(raw, "gres:") || starts_with(raw, "gres/")) {
      it.prefix = raw.substr(0, 5);
      raw = raw.substr(5);
    }
    // Accounting form: the count follows '='; what precedes it is name[:type].
    std::optional<std::string> after_eq;
    if (const size_t eq = raw.find('='); eq != std::string::npos) {
      after_eq = trim(raw.substr(eq + 1));
      it.accounting = true;
      raw = trim(raw.substr(0, eq));
    }
    const auto parts = split(raw, ':');
    it.name = parts[0];
    bool ok = parts.size() <= 3 && !it.name.empty();
    if (ok && parts.size() == 2) {
      // "gpu:8" (a count) or "gpu:h100" (a type, one of it)
      if (auto n = parse_uint(parts[1]); n && !after_eq) it.count = *n;
      else it.type = parts[1];
    } else if (ok && parts.size() == 3) {
      it.type = parts[1];
      if (after_eq) ok = false;  // "gpu:h100:8=2" is neither form
      else if (auto n = parse_uint(parts[2])) it.count = *n;
      else ok = false;
    }
    if (ok && after_eq) it.count = parse_uint(*after_eq);  // "mem=8G": no count
    if (!ok) {
      if (unreadable && unreadable->empty()) *unreadable = std::string(tres);
      continue;
    }
    items.push_back(std::move(it));
  }
  return items;
}

std::string format_tres(const std::vector<TresItem>& items) {
  std::vector<std::string> out;
  for (const auto& it : items) {
    std::string s = it.prefix + it.name;
    if (!it.type.empty()) s += ":" + it.type;
    if (it.count) s += ":" + std::to_string(*it.count);
    out.push_back(s);
  }
  return join(out, ",");
}

uint32_t GpuCounts::total() const {
  uint32_t n = untyped;
  for (const auto& [type, count] : by_type) n += count;
  return n;
}

std::string GpuCounts::single_type() const {
  return by_type.size() == 1 && untyped == 0 ? lowercase(by_type.begin()->first) : std::string();
}

GpuCounts gpu_counts_from_tres(std::string_view tres) {
  GpuCounts out;
  uint64_t accounted_total = 0, requested_untyped = 0;
  bool saw_total = false;
  for (const auto& it : parse_tres(tres)) {
    if (it.prefix.empty() || lowercase(it.name) != "gpu") continue;
    // A request names one GPU when it gives no count ("gres:gpu:h100"); an
    // accounting item without a readable count says nothing.
    if (!it.count && it.accounting) continue;
    const uint64_t n = it.count.value_or(1);
    if (!it.type.empty()) {
      uint32_t& c = out.by_type[lowercase(it.type)];
      c = clamped(uint64_t{c} + n);
    } else if (it.accounting) {
      accounted_total = n;
      saw_total = true;
    } else {
      requested_untyped += n;
    }
  }
  // An accounting string lists the total (gres/gpu=8) beside the typed counts:
  // what the typed ones do not cover has no known type. A request's untyped items
  // ("gres:gpu:2") come on top of its typed ones.
  const uint32_t typed = out.total();
  if (saw_total && accounted_total > typed) out.untyped = clamped(accounted_total - typed);
  out.untyped = clamped(uint64_t{out.untyped} + requested_untyped);
  return out;
}

std::vector<GresEntry> parse_node_gres(std::string_view gres) {
  std::vector<GresEntry> out;
  const std::string text = trim(gres);
  if (text.empty() || lowercase(text) == "(null)") return out;
  for (std::string item : items_outside_parentheses(text)) {
    item = trim(item);
    if (const size_t paren = item.find('('); paren != std::string::npos) item.resize(paren);
    if (item.empty()) continue;
    if (starts_with(item, "gres:")) item = item.substr(5);
    std::string unreadable;
    const auto parsed = parse_tres(item, &unreadable);
    if (!unreadable.empty() || parsed.size() != 1 || parsed[0].accounting)
      throw std::invalid_argument("bad GRES '" + item + "'");
    out.push_back({parsed[0].name, parsed[0].type, parsed[0].count.value_or(1)});
  }
  return out;
}

std::vector<int> gpu_indices_from_gres(std::string_view gres) {
  std::vector<int> out;
  for (const auto& raw : items_outside_parentheses(gres)) {
    const std::string item = trim(raw);
    if (split(split(item, '(')[0], ':')[0] != "gpu") continue;
    const size_t idx = item.find("IDX:");
    if (idx == std::string::npos) continue;
    const size_t close = item.find(')', idx);
    const std::string ranges = item.substr(idx + 4, close == std::string::npos ? std::string::npos : close - idx - 4);
    if (ranges == "N/A") continue;
    for (const auto& r : split(ranges, ',')) {
      const auto ends = split(r, '-');
      auto first = parse_uint(trim(ends[0]));
      auto last = ends.size() > 1 ? parse_uint(trim(ends[1])) : first;
      if (!first || !last) continue;
      const uint64_t end = std::min<uint64_t>(*last, kMaxGpusPerNode - 1);
      for (uint64_t i = *first; i <= end; ++i) {
        if (out.size() >= static_cast<size_t>(kMaxGpusPerNode)) return out;
        out.push_back(static_cast<int>(i));
      }
    }
  }
  return out;
}

}  // namespace mlsched
