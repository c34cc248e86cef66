// Spellings of mlsched's enums; the strings here are what users type and read.
#include "core/types.h"

#include "core/text.h"

namespace mlsched {

const std::vector<std::string>& job_type_names() {
  static const std::vector<std::string> names = {"training", "inference", "sweep", "interactive"};
  return names;
}

const std::vector<std::string>& locality_names() {
  static const std::vector<std::string> names = {"node", "nvlink-domain", "switch", "any"};
  return names;
}

std::string to_string(JobType t) { return job_type_names()[static_cast<int>(t)]; }
std::string to_string(Locality l) { return locality_names()[static_cast<int>(l)]; }
std::string to_string(LocalityMode m) { return m == LocalityMode::strict ? "strict" : "prefer"; }

std::string scope_phrase(Locality l) {
  switch (l) {
    case Locality::node: return "one node";
    case Locality::nvlink_domain: return "one NVLink domain";
    case Locality::switch_scope: return "one switch";
    case Locality::any: return "the cluster";
  }
  return "";
}
std::string to_string(PreemptiblePolicy p) {
  switch (p) {
    case PreemptiblePolicy::yes: return "yes";
    case PreemptiblePolicy::no: return "no";
    case PreemptiblePolicy::required: return "required";
  }
  return "yes";
}

std::optional<JobType> parse_job_type(std::string_view s) {
  const std::string v = lowercase(trim(s));
  const auto& names = job_type_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (v == names[i]) return static_cast<JobType>(i);
  return std::nullopt;
}

std::optional<Locality> parse_locality(std::string_view s) {
  const std::string v = lowercase(trim(s));
  const auto& names = locality_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (v == names[i]) return static_cast<Locality>(i);
  return std::nullopt;
}

std::optional<LocalityMode> parse_locality_mode(std::string_view s) {
  const std::string v = lowercase(trim(s));
  if (v == "strict") return LocalityMode::strict;
  if (v == "prefer") return LocalityMode::prefer;
  return std::nullopt;
}

std::optional<PreemptiblePolicy> parse_preemptible_policy(std::string_view s) {
  const std::string v = lowercase(trim(s));
  if (v == "required") return PreemptiblePolicy::required;
  if (auto b = parse_bool(v)) return *b ? PreemptiblePolicy::yes : PreemptiblePolicy::no;
  return std::nullopt;
}

std::optional<uint64_t> parse_duration(std::string_view s) {
  std::string v = lowercase(trim(s));
  uint64_t unit = 1;
  if (!v.empty()) {
    switch (v.back()) {
      case 's': unit = 1; v.pop_back(); break;
      case 'm': unit = 60; v.pop_back(); break;
      case 'h': unit = 3600; v.pop_back(); break;
      default: break;
    }
  }
  auto n = parse_uint(v);
  if (!n || *n > 100000000) return std::nullopt;
  return *n * unit;
}

}  // namespace mlsched
