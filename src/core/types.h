// The words of mlsched's vocabulary (job types, locality scopes) and their spellings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

enum class JobType { training, inference, sweep, interactive };
constexpr int kJobTypeCount = 4;

// More GPUs than any node has (Slurm's own nodes top out at a few dozen): the
// bound on GPU indexes read from Slurm's strings, so a malformed or hostile
// "IDX:0-99999999" costs a bounded amount of memory, not gigabytes.
constexpr int kMaxGpusPerNode = 1024;

// Topology scopes from narrowest to widest; a gang must fit inside one unit.
enum class Locality { node, nvlink_domain, switch_scope, any };

// strict: never run wider than asked; prefer: widen when the narrower scope cannot fit.
enum class LocalityMode { strict, prefer };

// Admin policy for a job type: default yes/no, or "required" (users may not opt out).
enum class PreemptiblePolicy { yes, no, required };

std::string to_string(JobType t);
std::string to_string(Locality l);
std::string to_string(LocalityMode m);
// The scope in users' words, for messages: "one node", "one NVLink domain",
// "one switch", "the cluster".
std::string scope_phrase(Locality l);
std::string to_string(PreemptiblePolicy p);

std::optional<JobType> parse_job_type(std::string_view s);
std::optional<Locality> parse_locality(std::string_view s);
std::optional<LocalityMode> parse_locality_mode(std::string_view s);
std::optional<PreemptiblePolicy> parse_preemptible_policy(std::string_view s);

// Durations as users write them: 300, 300s, 5m, 2h. Seconds.
std::optional<uint64_t> parse_duration(std::string_view s);

const std::vector<std::string>& job_type_names();
const std::vector<std::string>& locality_names();

}  // namespace mlsched
