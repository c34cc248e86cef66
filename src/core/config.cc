// Parser for mlsched.conf. The format follows slurm.conf (Key=Value words, '#'
// comments) so admins read it without a manual; every unknown key is an error that
// names the line, so a typo never silently changes policy.
#include "core/config.h"

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

const std::vector<std::string> kTopKeys = {"MaxCheckpointGrace", "DefaultJobType", "MaxRestartsLimit",
                                           "JobType", "NvlinkDomain"};
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
      } else if (*key == "DefaultJobType") {
        if (auto t = parse_job_type(w.value)) config_.default_job_type = *t;
        else error("DefaultJobType=" + w.value + " is not a job type (" + join(job_type_names(), ", ") + ")");
      }
    }
  }

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
  Config config_;
  std::vector<std::string> errors_;
};

}  // namespace

ConfigResult parse_config(std::string_view text, std::string_view source) {
  return Parser(source).run(text);
}

ConfigResult load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ConfigResult r;
    r.errors.push_back(path + ": cannot be read");
    return r;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

}  // namespace mlsched
