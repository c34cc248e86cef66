// mlsched.conf: the admin's typed configuration. All defaults live in Config's
// member initializers below, and nowhere else.
#pragma once

#include <array>
#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace mlsched {

// What a job of one type gets when its directives do not say otherwise.
struct JobTypeDefaults {
  PreemptiblePolicy preemptible = PreemptiblePolicy::yes;
  int checkpoint_signal = SIGUSR1;
  uint32_t checkpoint_grace = 120;     // seconds the job needs to write a checkpoint
  uint32_t checkpoint_interval = 0;    // seconds between checkpoints; 0 = not declared
  uint32_t max_restarts = 3;
  Locality locality = Locality::any;
  LocalityMode locality_mode = LocalityMode::prefer;
};

// NVLink domains span nodes (e.g. an NVL72 rack); Slurm has no notion of them.
struct NvlinkDomainSpec {
  std::string name;
  std::vector<std::string> nodes;
  int line = 0;
};

struct Config {
  // Upper bound on checkpoint-grace: a preemptor waits at most this long.
  uint32_t max_checkpoint_grace = 600;
  // Type of a job whose directives name none.
  JobType default_job_type = JobType::training;
  // Upper bound on max-restarts a user may ask for.
  uint32_t max_restarts_limit = 100;
  std::array<JobTypeDefaults, kJobTypeCount> job_types = builtin_job_types();
  std::vector<NvlinkDomainSpec> nvlink_domains;

  const JobTypeDefaults& defaults_for(JobType t) const {
    return job_types[static_cast<int>(t)];
  }

 private:
  static std::array<JobTypeDefaults, kJobTypeCount> builtin_job_types();
};

struct ConfigResult {
  std::optional<Config> config;       // set only when there were no errors
  std::vector<std::string> errors;    // "mlsched.conf:12: unknown key 'Foo' ..."
};

// `source` names the file in messages.
ConfigResult parse_config(std::string_view text, std::string_view source);
// Reads and parses a file; a missing file is an error (the admin named it).
ConfigResult load_config_file(const std::string& path);

}  // namespace mlsched
