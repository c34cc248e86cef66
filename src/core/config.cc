// Parser for mlsched.conf. The format follows slurm.conf (Key=Value words, '#'
// comments) so admins read it without a manual; every unknown key is an error that
// names the line, so a typo never silently changes policy.
#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/hostlist.h"
#include "core/text.h"

namespace mlsched {

std::array<JobTypeDefaults, kJobTypeCount> Config::builtin_job_types() {
  std::array<JobTypeDefaults, kJobTypeCount> t{};
  // training: long, checkpointing runs; preemptible by default, may opt out.
  t[static_cast<int>(JobType::training)] = JobTypeDefaults{};
  // inference: serving or batch inference; not preempted unless it opts in.
  t[static_cast<int>(JobType::inference)].preemptible = PreemptiblePolicy::no;
  t[static_cast<int>(JobType::inference)].max_restarts = 0;
  // sweep: many short trials; cheap to restart, so always preemptible.
  t[static_cast<int>(JobType::sweep)].preemptible = PreemptiblePolicy::required;
  t[static_cast<int>(JobType::sweep)].checkpoint_grace = 60;
  // interactive: a person is waiting at a terminal; keep it on one node, never preempt.
  t[static_cast<int>(JobType::interactive)].preemptible = PreemptiblePolicy::no;
  t[static_cast<int>(JobType::interactive)].max_restarts = 0;
  t[static_cast<int>(JobType::interactive)].locality = Locality::node;
  return t;
}

namespace {

// ==== priority/mlsched keys (top level) =========================================
const std::vector<std::string> kPriorityKeys = {
    "GpuWeight",         "TeamQuota",                 "PriorityDecayHalfLife",   "PriorityCalcPeriod",
    "PriorityMaxAge",    "PriorityWeightFairshare",   "PriorityWeightQuota",     "PriorityWeightAge",
    "PriorityWeightJobSize", "PriorityWeightQOS",     "PriorityWeightPartition", "PriorityWeightJobType",
    "AttainedService",   "AttainedServiceThresholds", "AttainedServicePromoteAfter",
    "PriorityWeightAttainedService", "TeamQuotaKeptForGpus", "PriorityWeightNonPreemptible",
    "TeamQuotaPartialCredit"};

bool is_priority_key(const std::string& canonical) {
  for (const auto& k : kPriorityKeys)
    if (k == canonical) return true;
  return false;
}

std::vector<std::string> with_priority_keys(std::vector<std::string> keys) {
  keys.insert(keys.end(), kPriorityKeys.begin(), kPriorityKeys.end());
  return keys;
}
// ==== end priority/mlsched keys =================================================

// ==== preempt/mlsched keys (top level) ==========================================
const std::vector<std::string> kPreemptKeys = {"PreemptMinRunTime", "PreemptMaxPerJob", "PreemptForLargeGangGpus",
                                               "PreemptForLargeGangWait", "PreemptForAttainedService",
                                               "PreemptForNonPreemptible", "ReserveForGangGpus",
                                               "ReserveForGangWait"};

bool is_preempt_key(const std::string& canonical) {
  for (const auto& k : kPreemptKeys)
    if (k == canonical) return true;
  return false;
}

std::vector<std::string> with_preempt_keys(std::vector<std::string> keys) {
  keys.insert(keys.end(), kPreemptKeys.begin(), kPreemptKeys.end());
  return keys;
}
// ==== end preempt/mlsched keys ==================================================

const std::vector<std::string> kTopKeys = with_preempt_keys(with_priority_keys({"MaxCheckpointGrace", "DefaultJobType",
                                                              "MaxRestartsLimit", "JobType", "NvlinkDomain",
                                                              "NodeFailureWindow", "LargeGangNodes",
                                                              "GpuTypeSpeed"}));
const std::vector<std::string> kJobTypeKeys = {"Preemptible",       "CheckpointSignal",
                                               "CheckpointGrace",   "CheckpointInterval",
                                               "MaxRestarts",       "Locality",
                                               "LocalityMode"};
const std::vector<std::string> kDomainKeys = {"Nodes"};

struct Word {
  std::string key;
  std::string value;
};

class Parser {
 public:
  Parser(std::string_view source) : source_(source) {}

  ConfigResult run(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      line_ = number;
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      const auto words = split_words(line);
      if (words.empty()) continue;
      std::vector<Word> pairs;
      bool ok = true;
      for (const auto& w : words) {
        const size_t eq = w.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == w.size()) {
          error("'" + w + "' is not Key=Value");
          ok = false;
          break;
        }
        pairs.push_back({w.substr(0, eq), w.substr(eq + 1)});
      }
      if (ok) handle_line(pairs);
    }
    check_domains();
    // Checked once the whole file is read: AttainedService may come after it.
    if (config_.preempt_for_attained_service && !config_.attained_service.enabled()) {
      line_ = attained_preempt_line_;
      error("PreemptForAttainedService=yes needs AttainedService= (all, or the teams and partitions it applies to): "
            "its levels are what the preemption compares");
    }
    ConfigResult result;
    result.errors = errors_;
    if (errors_.empty()) result.config = config_;
    return result;
  }

 private:
  void error(const std::string& msg) {
    errors_.push_back(std::string(source_) + ":" + std::to_string(line_) + ": " + msg);
  }

  // Keys are matched case-insensitively, as slurm.conf does.
  std::optional<std::string> canonical_key(const std::string& key,
                                           const std::vector<std::string>& allowed,
                                           const std::string& context) {
    for (const auto& k : allowed)
      if (lowercase(k) == lowercase(key)) return k;
    std::string msg = "unknown key '" + key + "'" + context;
    if (auto near = closest_match(key, allowed)) msg += "; did you mean '" + *near + "'?";
    else msg += " (known: " + join(allowed, ", ") + ")";
    error(msg);
    return std::nullopt;
  }

  std::optional<uint32_t> seconds(const Word& w, uint64_t max) {
    auto v = parse_duration(w.value);
    if (!v || *v > max) {
      error(w.key + "=" + w.value + " is not a duration up to " + std::to_string(max) +
            " seconds (write 300, 300s, 5m or 2h)");
      return std::nullopt;
    }
    return static_cast<uint32_t>(*v);
  }

  std::optional<uint32_t> count(const Word& w, uint64_t max) {
    auto v = parse_uint(w.value);
    if (!v || *v > max) {
      error(w.key + "=" + w.value + " is not a whole number from 0 to " + std::to_string(max));
      return std::nullopt;
    }
    return static_cast<uint32_t>(*v);
  }

  void handle_line(const std::vector<Word>& pairs) {
    auto first = canonical_key(pairs[0].key, kTopKeys, "");
    if (!first) return;
    if (*first == "JobType") return job_type_line(pairs);
    if (*first == "NvlinkDomain") return domain_line(pairs);
    for (const auto& raw : pairs) {
      auto key = canonical_key(raw.key, kTopKeys, "");
      if (!key) continue;
      Word w{*key, raw.value};
      if (*key == "JobType" || *key == "NvlinkDomain") {
        error(*key + "= must start its own line");
      } else if (*key == "MaxCheckpointGrace") {
        // Slurm's warn time is 16 bits of seconds.
        if (auto v = seconds(w, 65535)) config_.max_checkpoint_grace = *v;
      } else if (*key == "MaxRestartsLimit") {
        if (auto v = count(w, 100000)) config_.max_restarts_limit = *v;
      } else if (*key == "NodeFailureWindow") {
        if (auto v = seconds(w, 100000000)) config_.node_failure_window = *v;
      } else if (*key == "LargeGangNodes") {
        if (auto v = count(w, 100000)) config_.large_gang_nodes = std::max<uint32_t>(1, *v);
      } else if (*key == "GpuTypeSpeed") {
        gpu_type_speed(w);
      } else if (*key == "DefaultJobType") {
        if (auto t = parse_job_type(w.value)) config_.default_job_type = *t;
        else error("DefaultJobType=" + w.value + " is not a job type (" + join(job_type_names(), ", ") + ")");
      } else if (is_priority_key(*key)) {
        priority_setting(w);
      } else if (is_preempt_key(*key)) {  // ==== preempt/mlsched
        if (*key == "PreemptMinRunTime") {
          if (auto v = seconds(w, 100000000)) config_.preempt_min_run_time = *v;
        } else if (*key == "PreemptMaxPerJob") {
          if (auto v = count(w, 100000)) config_.preempt_max_per_job = *v;
        } else if (*key == "PreemptForLargeGangGpus") {
          if (auto v = count(w, 1000000)) config_.preempt_for_large_gang_gpus = *v;
        } else if (*key == "PreemptForLargeGangWait") {
          if (auto v = seconds(w, 100000000)) config_.preempt_for_large_gang_wait = *v;
        } else if (*key == "PreemptForAttainedService") {
          if (auto v = parse_bool(w.value)) {
            config_.preempt_for_attained_service = *v;
            attained_preempt_line_ = line_;
          } else {
            error("PreemptForAttainedService=" + w.value + " must be yes or no");
          }
        } else if (*key == "PreemptForNonPreemptible") {
          if (auto v = parse_bool(w.value)) config_.preempt_for_non_preemptible = *v;
          else error("PreemptForNonPreemptible=" + w.value + " must be yes or no");
        } else if (*key == "ReserveForGangGpus") {
          if (auto v = count(w, 1000000)) config_.reserve_for_gang_gpus = *v;
        } else if (*key == "ReserveForGangWait") {
          if (auto v = seconds(w, 100000000)) config_.reserve_for_gang_wait = *v;
        }
      }  // ==== end preempt/mlsched
    }
  }

  // ==== priority/mlsched settings ===============================================
  // Weights are capped so that the sum of every bounded term stays far below
  // Slurm's 32-bit priority, leaving the size-aware term room to grow.
  static constexpr uint64_t kMaxPriorityWeight = 100000000;

  void priority_setting(const Word& w) {
    if (w.key == "GpuWeight") return gpu_weight(w);
    if (w.key == "TeamQuota") return team_quota(w);
    if (w.key == "PriorityWeightJobType") return job_type_weights(w);
    if (w.key == "AttainedService") return attained_service_scope(w);
    if (w.key == "AttainedServiceThresholds") return attained_service_thresholds(w);
    if (w.key == "AttainedServicePromoteAfter") {
      // 0 = never promoted.
      if (auto v = long_duration(w, 0)) config_.attained_service_promote_after = *v;
      return;
    }
    if (w.key == "TeamQuotaKeptForGpus") {
      if (auto v = count(w, 1000000)) config_.team_quota_kept_for_gpus = *v;
      return;
    }
    if (w.key == "TeamQuotaPartialCredit") {
      if (auto v = parse_bool(w.value)) config_.team_quota_partial_credit = *v;
      else error("TeamQuotaPartialCredit=" + w.value + " must be yes or no");
      return;
    }
    if (w.key == "PriorityDecayHalfLife") {
      // 0 = usage never decays, as in slurm.conf.
      if (auto v = long_duration(w, 0)) config_.priority_decay_half_life = *v;
    } else if (w.key == "PriorityCalcPeriod") {
      if (auto v = long_duration(w, 1)) config_.priority_calc_period = *v;
    } else if (w.key == "PriorityMaxAge") {
      if (auto v = long_duration(w, 1)) config_.priority_max_age = *v;
    } else if (auto v = count(w, kMaxPriorityWeight)) {
      if (w.key == "PriorityWeightFairshare") config_.priority_weight_fairshare = *v;
      else if (w.key == "PriorityWeightQuota") config_.priority_weight_quota = *v;
      else if (w.key == "PriorityWeightAge") config_.priority_weight_age = *v;
      else if (w.key == "PriorityWeightJobSize") config_.priority_weight_job_size = *v;
      else if (w.key == "PriorityWeightQOS") config_.priority_weight_qos = *v;
      else if (w.key == "PriorityWeightPartition") config_.priority_weight_partition = *v;
      else if (w.key == "PriorityWeightAttainedService") config_.priority_weight_attained_service = *v;
      else if (w.key == "PriorityWeightNonPreemptible") config_.priority_weight_non_preemptible = *v;
    }
  }

  // Half-lives are days long, so 7d is accepted beside 300, 5m and 2h.
  std::optional<uint32_t> long_duration(const Word& w, uint64_t min) {
    std::string v = lowercase(trim(w.value));
    std::optional<uint64_t> seconds;
    if (!v.empty() && v.back() == 'd') {
      if (auto days = parse_uint(v.substr(0, v.size() - 1)); days && *days <= 3650) seconds = *days * 86400;
    } else {
      seconds = parse_duration(v);
    }
    if (!seconds || *seconds < min || *seconds > 3650ull * 86400) {
      error(w.key + "=" + w.value + " is not a duration from " + std::to_string(min) +
            " seconds to 3650 days (write 300, 5m, 2h or 7d)");
      return std::nullopt;
    }
    return static_cast<uint32_t>(*seconds);
  }

  // GpuWeight=h100:1.0,a100:0.6
  void gpu_weight(const Word& w) {
    for (const auto& item : split(w.value, ',')) {
      const size_t colon = item.find(':');
      const std::string type = lowercase(trim(item.substr(0, colon)));
      std::optional<double> weight;
      if (colon != std::string::npos && !type.empty()) weight = parse_weight(item.substr(colon + 1));
      if (!weight) {
        error("GpuWeight: '" + item + "' is not <gpu_type>:<weight> with a weight from 0 to 1000 (e.g. h100:1.0)");
        continue;
      }
      if (!config_.gpu_weights.emplace(type, *weight).second) error("GpuWeight: GPU type " + type + " is weighted twice");
    }
  }

  // GpuTypeSpeed=h100:1.8,a100:1.0 (speeds above 0, at most 1000)
  void gpu_type_speed(const Word& w) {
    std::map<std::string, double> speeds;
    for (const auto& item : split(w.value, ',')) {
      const size_t colon = item.find(':');
      const std::string type = lowercase(trim(item.substr(0, colon)));
      std::optional<double> speed;
      if (colon != std::string::npos && !type.empty()) speed = parse_weight(item.substr(colon + 1));
      if (!speed || *speed <= 0) {
        error("GpuTypeSpeed: '" + item + "' is not <gpu_type>:<speed> with a speed above 0, up to 1000 "
              "(e.g. h100:1.8,a100:1.0)");
        return;
      }
      if (!speeds.emplace(type, *speed).second) {
        error("GpuTypeSpeed: GPU type " + type + " is given twice");
        return;
      }
    }
    config_.gpu_type_speed = speeds;
  }

  static std::optional<double> parse_weight(const std::string& text) {
    const std::string t = trim(text);
    if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.')) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !(v >= 0 && v <= 1000)) return std::nullopt;
    return v;
  }

  // TeamQuota=vision:h100=64,a100=32 (a type may name a pool: a100@train=8)
  void team_quota(const Word& w) {
    const size_t colon = w.value.find(':');
    const std::string team = colon == std::string::npos ? "" : w.value.substr(0, colon);
    if (team.empty() || colon + 1 >= w.value.size()) {
      error("TeamQuota=" + w.value + " is not <team>:<gpu_type>=<gpus>[,<gpu_type>=<gpus>...] (e.g. vision:h100=64,a100=32)");
      return;
    }
    if (config_.team_quotas.count(team)) {
      error("TeamQuota: team " + team + " has two TeamQuota lines; put all its GPU types on one");
      return;
    }
    std::map<std::string, uint32_t> quota;
    for (const auto& item : split(w.value.substr(colon + 1), ',')) {
      const size_t eq = item.find('=');
      const std::string type = lowercase(trim(item.substr(0, eq)));
      const auto gpus = eq == std::string::npos ? std::nullopt : parse_uint(item.substr(eq + 1));
      if (type.empty() || !gpus || *gpus > 1000000) {
        error("TeamQuota=" + w.value + ": '" + item + "' is not <gpu_type>=<gpus> (e.g. h100=64)");
        return;
      }
      const size_t at = type.find('@');
      if (at != std::string::npos) {
        const std::string gpu_type = type.substr(0, at), pool = type.substr(at + 1);
        const bool pool_ok = !pool.empty() && pool.size() <= 64 &&
                             std::all_of(pool.begin(), pool.end(), [](unsigned char c) {
                               return std::isalnum(c) || c == '_' || c == '-' || c == '.';
                             });
        if (gpu_type.empty() || !pool_ok) {
          error("TeamQuota=" + w.value + ": '" + item + "' is not <gpu_type>@<partition>=<gpus> (e.g. a100@train=8)");
          return;
        }
      }
      if (!quota.emplace(type, static_cast<uint32_t>(*gpus)).second) {
        error("TeamQuota=" + w.value + ": GPU type " + type + " given twice");
        return;
      }
    }
    for (const auto& [type, gpus] : quota)
      if (type.find('@') != std::string::npos) config_.pool_quota_kinds.insert(type);
    config_.team_quotas[team] = quota;
  }

  // AttainedService=off | all | team:<account>,partition:<name>,...
  void attained_service_scope(const Word& w) {
    Config::AttainedServiceScope scope;
    const std::string all = lowercase(trim(w.value));
    if (all == "off" || all == "all") {
      scope.all = all == "all";
      config_.attained_service = scope;
      return;
    }
    for (const auto& item : split(w.value, ',')) {
      const size_t colon = item.find(':');
      const std::string kind = colon == std::string::npos ? "" : lowercase(trim(item.substr(0, colon)));
      const std::string name = colon == std::string::npos ? "" : trim(item.substr(colon + 1));
      if (name.empty() || (kind != "team" && kind != "partition")) {
        error("AttainedService: '" + item + "' is not team:<account> or partition:<name> (or write off or all)");
        return;
      }
      (kind == "team" ? scope.teams : scope.partitions).push_back(name);
    }
    config_.attained_service = scope;
  }

  // AttainedServiceThresholds=1h,10h: GPU-time, as GPU-seconds (3600) or with a
  // unit (1h = one GPU-hour); ascending.
  void attained_service_thresholds(const Word& w) {
    std::vector<uint64_t> thresholds;
    for (const auto& item : split(w.value, ',')) {
      const auto v = long_duration(Word{w.key, item}, 1);
      if (!v) return;
      if (!thresholds.empty() && *v <= thresholds.back()) {
        error("AttainedServiceThresholds=" + w.value + ": thresholds must be ascending");
        return;
      }
      thresholds.push_back(*v);
    }
    if (thresholds.empty() || thresholds.size() > 8) {
      error("AttainedServiceThresholds=" + w.value + " needs 1 to 8 GPU-time thresholds (e.g. 1h,10h)");
      return;
    }
    config_.attained_service_thresholds = thresholds;
  }

  // PriorityWeightJobType=interactive:3000,inference:2000
  void job_type_weights(const Word& w) {
    for (const auto& item : split(w.value, ',')) {
      const size_t colon = item.find(':');
      const auto type = colon == std::string::npos ? std::nullopt : parse_job_type(item.substr(0, colon));
      const auto weight = colon == std::string::npos ? std::nullopt : parse_uint(item.substr(colon + 1));
      if (!type || !weight || *weight > kMaxPriorityWeight) {
        error("PriorityWeightJobType: '" + item + "' is not <job type>:<weight> (job types: " +
              join(job_type_names(), ", ") + "; weight up to " + std::to_string(kMaxPriorityWeight) + ")");
        continue;
      }
      config_.priority_weight_job_type[static_cast<int>(*type)] = static_cast<uint32_t>(*weight);
    }
  }
  // ==== end priority/mlsched settings ===========================================

  void job_type_line(const std::vector<Word>& pairs) {
    auto type = parse_job_type(pairs[0].value);
    if (!type) {
      error("JobType=" + pairs[0].value + " is not a job type (" + join(job_type_names(), ", ") + ")");
      return;
    }
    JobTypeDefaults& d = config_.job_types[static_cast<int>(*type)];
    for (size_t i = 1; i < pairs.size(); ++i) {
      auto key = canonical_key(pairs[i].key, kJobTypeKeys, " on a JobType line");
      if (!key) continue;
      Word w{*key, pairs[i].value};
      if (*key == "Preemptible") {
        if (auto p = parse_preemptible_policy(w.value)) d.preemptible = *p;
        else error("Preemptible=" + w.value + " must be yes, no or required");
      } else if (*key == "CheckpointSignal") {
        if (auto s = parse_signal(w.value)) d.checkpoint_signal = *s;
        else error("CheckpointSignal=" + w.value + " is not a signal a job can catch (e.g. USR1, USR2, TERM)");
      } else if (*key == "CheckpointGrace") {
        if (auto v = seconds(w, 65535)) d.checkpoint_grace = *v;
      } else if (*key == "CheckpointInterval") {
        if (auto v = seconds(w, 100000000)) d.checkpoint_interval = *v;
      } else if (*key == "MaxRestarts") {
        if (auto v = count(w, 100000)) d.max_restarts = *v;
      } else if (*key == "Locality") {
        if (auto l = parse_locality(w.value)) d.locality = *l;
        else error("Locality=" + w.value + " must be one of " + join(locality_names(), ", "));
      } else if (*key == "LocalityMode") {
        if (auto m = parse_locality_mode(w.value)) d.locality_mode = *m;
        else error("LocalityMode=" + w.value + " must be strict or prefer");
      }
    }
  }

  void domain_line(const std::vector<Word>& pairs) {
    NvlinkDomainSpec spec;
    spec.name = pairs[0].value;
    spec.line = line_;
    bool have_nodes = false;
    for (size_t i = 1; i < pairs.size(); ++i) {
      auto key = canonical_key(pairs[i].key, kDomainKeys, " on an NvlinkDomain line");
      if (!key) return;
      try {
        spec.nodes = expand_hostlist(pairs[i].value);
        have_nodes = !spec.nodes.empty();
      } catch (const std::invalid_argument& e) {
        error(std::string("NvlinkDomain=") + spec.name + ": " + e.what());
        return;
      }
    }
    if (!have_nodes) {
      error("NvlinkDomain=" + spec.name + " needs Nodes=<host list>");
      return;
    }
    config_.nvlink_domains.push_back(spec);
  }

  // A node belongs to at most one NVLink domain; names are unique.
  void check_domains() {
    std::map<std::string, std::string> owner;
    std::set<std::string> names;
    for (const auto& d : config_.nvlink_domains) {
      line_ = d.line;
      if (!names.insert(d.name).second) error("NvlinkDomain=" + d.name + " is declared twice");
      for (const auto& n : d.nodes) {
        auto [it, inserted] = owner.emplace(n, d.name);
        if (!inserted && it->second != d.name)
          error("node " + n + " is in NvlinkDomain=" + it->second + " and NvlinkDomain=" + d.name +
                "; a node belongs to one domain");
      }
    }
  }

  std::string source_;
  int line_ = 0;
  int attained_preempt_line_ = 0;
  Config config_;
  std::vector<std::string> errors_;
};

}  // namespace

ConfigResult parse_config(std::string_view text, std::string_view source) {
  return Parser(source).run(text);
}

namespace {

// Whether any line holds something other than blanks and a comment.
bool has_settings(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    if (!split_words(line).empty()) return true;
  }
  return false;
}

}  // namespace

ConfigResult load_config_file(const std::string& path) {
  ConfigResult r;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.errors.push_back(path + ": cannot be read");
    return r;
  }
  // mlsched.conf is a few hundred lines; a bigger file is not one.
  constexpr std::streamsize kMaxBytes = 1 << 20;
  std::string text(static_cast<size_t>(kMaxBytes) + 1, '\0');
  in.read(&text[0], kMaxBytes + 1);
  if (in.bad()) {
    r.errors.push_back(path + ": cannot be read");
    return r;
  }
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > static_cast<size_t>(kMaxBytes)) {
    r.errors.push_back(path + ": is larger than 1 MiB; not an mlsched.conf");
    return r;
  }
  // An empty file is far more often a write cut short (or a config management
  // tool's truncate) than a wish for every default: taking it would silently drop
  // NVLink domains and caps. It is an error, and the previous configuration stays.
  if (!has_settings(text)) {
    r.errors.push_back(path + ": has no settings (empty or only comments); write at least one, e.g. "
                              "DefaultJobType=training, to run with the defaults");
    return r;
  }
  return parse_config(text, path);
}

ConfigKeys config_keys() { return ConfigKeys{kTopKeys, kJobTypeKeys, kDomainKeys}; }

}  // namespace mlsched
