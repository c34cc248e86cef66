// Directive grammar: one or more `key=value` words per line; `#` after the words
// starts a comment. Keys are fixed and lowercase; values are checked here, against
// the admin config, before anything about the cluster is considered.
#include "core/directives.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "core/job_record.h"
#include "core/text.h"

namespace mlsched {

const char* const kStoredPrefix = "mlsched:";

const std::vector<std::string>& directive_keys() {
  static const std::vector<std::string> keys = {
      "type",       "gpu-type",         "locality",          "locality-mode",      "checkpoint-signal",
      "checkpoint-grace", "checkpoint-interval", "preemptible", "max-restarts"};
  return keys;
}

std::string DirectiveOrigin::describe() const {
  if (kind == Kind::comment) return "--comment";
  return "line " + std::to_string(line);
}

void RawDirectives::error(std::string msg) {
  if (errors.size() < kMaxProblemsKept) errors.push_back(std::move(msg));
  else ++errors_dropped;
}

void RawDirectives::note(std::string msg) {
  if (notes.size() < kMaxProblemsKept) notes.push_back(std::move(msg));
  else ++notes_dropped;
}

bool is_gpu_type_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

namespace {

void read_words(std::string_view text, const DirectiveOrigin& origin, RawDirectives& out) {
  const size_t hash = text.find('#');
  if (hash != std::string_view::npos) text = text.substr(0, hash);
  for (const std::string& word : split_words(text)) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      out.error(origin.describe() + ": '" + shown(word) + "' is not key=value (e.g. gpu-type=a100)");
      continue;
    }
    const std::string key = lowercase(word.substr(0, eq));
    const std::string value = word.substr(eq + 1);
    const auto& pkeys = pipeline_keys();
    if (std::find(pkeys.begin(), pkeys.end(), key) != pkeys.end()) {
      if (value.empty()) {
        out.error(origin.describe() + ": " + key + "= has no value");
      } else if (!out.pipeline.emplace(key, GivenValue{value, origin}).second) {
        out.error(origin.describe() + ": " + key + " is given twice; keep one");
      }
      continue;
    }
    const auto& keys = directive_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string msg = origin.describe() + ": unknown key '" + shown(word.substr(0, eq)) + "'";
      if (auto near = closest_match(key, keys)) msg += "; did you mean '" + *near + "'?";
      else msg += " (known keys: " + join(keys, ", ") + ")";
      out.error(msg);
      continue;
    }
    if (value.empty()) {
      out.error(origin.describe() + ": " + key + "= has no value");
      continue;
    }
    auto [it, inserted] = out.values.emplace(key, GivenValue{value, origin});
    if (!inserted) {
      out.error(origin.describe() + ": " + key + " is given twice (also at " + it->second.origin.describe() +
                "); keep one");
    }
  }
}

bool is_blank_or_comment(std::string_view line) {
  const std::string t = trim(line);
  return t.empty() || t[0] == '#';
}

}  // namespace

// `#SBATCH hetjob` (or the older `packjob`): where the next hetjob component's
// options start.
static bool is_hetjob_separator(std::string_view line) {
  if (!starts_with(line, "#SBATCH")) return false;
  const auto words = split_words(line.substr(7));
  return words.size() == 1 && (words[0] == "hetjob" || words[0] == "packjob");
}

RawDirectives read_directives(std::string_view script, std::string_view comment,
                              std::optional<uint32_t> het_component) {
  RawDirectives out;
  // Slurm 22.05 itself hands each component a script of its own part only (the
  // shebang and that part's comment lines, no separator): then every line is this
  // component's. A script that still holds the separators is split here.
  if (het_component) {
    bool has_separator = false;
    std::istringstream scan{std::string(script)};
    std::string l;
    while (!has_separator && std::getline(scan, l)) has_separator = is_hetjob_separator(l);
    if (!has_separator) het_component.reset();
  }
  std::istringstream in{std::string(script)};
  std::string line;
  int number = 0;
  uint32_t component = 0;
  bool past_first_command = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!past_first_command && !is_blank_or_comment(line)) past_first_command = true;
    if (het_component && !past_first_command && is_hetjob_separator(line)) ++component;
    if (!starts_with(line, "#MLSCHED")) continue;
    if (het_component && component != *het_component && !past_first_command) continue;  // another component's
    const std::string_view rest = std::string_view(line).substr(8);
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') continue;  // e.g. "#MLSCHEDULER"
    if (past_first_command) {
      out.note("line " + std::to_string(number) +
               ": #MLSCHED after the script's first command is ignored (as sbatch ignores "
               "#SBATCH there); move it up");
      continue;
    }
    read_words(rest, DirectiveOrigin{DirectiveOrigin::Kind::script, number}, out);
  }
  const std::string c = trim(comment);
  if (starts_with(lowercase(c), kStoredPrefix)) {
    read_words(std::string_view(c).substr(std::string(kStoredPrefix).size()),
               DirectiveOrigin{DirectiveOrigin::Kind::comment, 0}, out);
  }
  return out;
}

std::string JobDirectives::to_string() const {
  std::string s = "type=" + mlsched::to_string(type);
  s += " gpu-type=" + (gpu_types.empty() ? std::string("any") : join(gpu_types, ","));
  s += " locality=" + mlsched::to_string(locality);
  s += " locality-mode=" + mlsched::to_string(locality_mode);
  s += " checkpoint-signal=" + signal_name(checkpoint_signal);
  s += " checkpoint-grace=" + std::to_string(checkpoint_grace);
  s += " checkpoint-interval=" + std::to_string(checkpoint_interval);
  s += " preemptible=" + std::string(preemptible ? "yes" : "no");
  s += " max-restarts=" + std::to_string(max_restarts);
  return s;
}

// Long (~100 lines) on purpose: one short block per directive key, in the order of
// directive_keys(), each reading its value over the job type's defaults with its
// own message. Split up, a key's check would sit apart from the default it
// overrides, and the blocks share only `get` and `fail`.
ResolvedDirectives resolve_directives(const RawDirectives& raw, const Config& config) {
  ResolvedDirectives out;
  out.errors = raw.errors;
  out.notes = raw.notes;
  out.errors_dropped = raw.errors_dropped;
  out.notes_dropped = raw.notes_dropped;
  auto get = [&](const std::string& key) -> const GivenValue* {
    auto it = raw.values.find(key);
    return it == raw.values.end() ? nullptr : &it->second;
  };
  auto fail = [&](const GivenValue& g, const std::string& key, const std::string& why) {
    out.errors.push_back(g.origin.describe() + ": " + key + "=" + shown(g.value) + " " + why);
  };

  JobDirectives d;
  if (const auto* g = get("type")) {
    if (auto t = parse_job_type(g->value)) d.type = *t;
    else fail(*g, "type", "is not a job type; use one of " + join(job_type_names(), ", "));
  } else {
    d.type = config.default_job_type;
  }
  const JobTypeDefaults& def = config.defaults_for(d.type);
  d.locality = def.locality;
  d.locality_mode = def.locality_mode;
  d.checkpoint_signal = def.checkpoint_signal;
  d.checkpoint_grace = def.checkpoint_grace;
  d.checkpoint_interval = def.checkpoint_interval;
  d.preemptible = def.preemptible != PreemptiblePolicy::no;
  d.max_restarts = def.max_restarts;

  if (const auto* g = get("gpu-type")) {
    std::set<std::string> seen;
    for (std::string t : split(g->value, ',')) {
      t = trim(t);
      if (t.empty()) {
        fail(*g, "gpu-type", "has an empty entry; write gpu-type=h100 or gpu-type=h100,a100");
        break;
      }
      if (!is_gpu_type_name(t)) {
        fail(*g, "gpu-type", "names '" + shown(t) + "', which is not a GPU type (letters, digits, '-', '_', '.')");
        break;
      }
      if (!seen.insert(lowercase(t)).second) {
        fail(*g, "gpu-type", "lists " + t + " twice");
        break;
      }
      d.gpu_types.push_back(t);
    }
  }
  if (const auto* g = get("locality")) {
    if (auto l = parse_locality(g->value)) d.locality = *l;
    else fail(*g, "locality", "is not a locality; use one of " + join(locality_names(), ", "));
  }
  if (const auto* g = get("locality-mode")) {
    if (auto m = parse_locality_mode(g->value)) d.locality_mode = *m;
    else fail(*g, "locality-mode", "must be strict (never run wider than asked) or prefer (widen if needed)");
  }
  if (const auto* g = get("checkpoint-signal")) {
    if (auto s = parse_signal(g->value)) d.checkpoint_signal = *s;
    else fail(*g, "checkpoint-signal", "is not a signal a job can catch; use USR1, USR2, TERM, INT or HUP");
  }
  if (const auto* g = get("checkpoint-grace")) {
    auto v = parse_duration(g->value);
    if (!v) {
      fail(*g, "checkpoint-grace", "is not a duration; write seconds (300) or 300s, 5m");
    } else if (*v > config.max_checkpoint_grace) {
      out.notes.push_back(g->origin.describe() + ": checkpoint-grace=" + shown(g->value) + " capped to " +
                          std::to_string(config.max_checkpoint_grace) +
                          " seconds (this cluster's MaxCheckpointGrace)");
      d.checkpoint_grace = config.max_checkpoint_grace;
    } else {
      d.checkpoint_grace = static_cast<uint32_t>(*v);
    }
  } else if (d.checkpoint_grace > config.max_checkpoint_grace) {
    d.checkpoint_grace = config.max_checkpoint_grace;
  }
  if (const auto* g = get("checkpoint-interval")) {
    if (auto v = parse_duration(g->value)) d.checkpoint_interval = static_cast<uint32_t>(*v);
    else fail(*g, "checkpoint-interval", "is not a duration; write seconds (1800) or 30m, 2h");
  }
  if (const auto* g = get("preemptible")) {
    auto b = parse_bool(g->value);
    if (!b) {
      fail(*g, "preemptible", "must be yes or no");
    } else if (!*b && def.preemptible == PreemptiblePolicy::required) {
      fail(*g, "preemptible",
           "is not allowed: " + mlsched::to_string(d.type) +
               " jobs must be preemptible on this cluster (admin policy); remove preemptible=no, or use a "
               "job type that may opt out");
    } else {
      d.preemptible = *b;
    }
  }
  if (const auto* g = get("max-restarts")) {
    auto v = parse_uint(g->value);
    if (!v) fail(*g, "max-restarts", "is not a whole number (e.g. max-restarts=5)");
    else if (*v > config.max_restarts_limit)
      fail(*g, "max-restarts", "is more than this cluster allows (" + std::to_string(config.max_restarts_limit) + ")");
    else d.max_restarts = static_cast<uint32_t>(*v);
  }
  for (const auto& [key, value] : raw.values) d.given[key] = true;
  if (out.errors.empty()) out.directives = d;
  return out;
}

std::optional<JobDirectives> directives_from_stored_words(const std::vector<std::string>& words) {
  JobDirectives d;
  bool any = false;
  for (const auto& word : words) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    // Only directive keys count: "mlsched: borrowing=no" (a plugin's mark on a job
    // submitted without directives) holds none, so it reads as no directives.
    const auto& keys = directive_keys();
    any = any || std::find(keys.begin(), keys.end(), key) != keys.end();
    if (key == "type") {
      if (auto t = parse_job_type(value)) d.type = *t; else return std::nullopt;
    } else if (key == "gpu-type") {
      if (value != "any") d.gpu_types = split(value, ',');
    } else if (key == "locality") {
      if (auto l = parse_locality(value)) d.locality = *l; else return std::nullopt;
    } else if (key == "locality-mode") {
      if (auto m = parse_locality_mode(value)) d.locality_mode = *m; else return std::nullopt;
    } else if (key == "checkpoint-signal") {
      if (auto s = parse_signal(value)) d.checkpoint_signal = *s; else return std::nullopt;
    } else if (key == "checkpoint-grace") {
      if (auto v = parse_uint(value)) d.checkpoint_grace = static_cast<uint32_t>(*v); else return std::nullopt;
    } else if (key == "checkpoint-interval") {
      if (auto v = parse_uint(value)) d.checkpoint_interval = static_cast<uint32_t>(*v); else return std::nullopt;
    } else if (key == "preemptible") {
      if (auto b = parse_bool(value)) d.preemptible = *b; else return std::nullopt;
    } else if (key == "max-restarts") {
      if (auto v = parse_uint(value)) d.max_restarts = static_cast<uint32_t>(*v); else return std::nullopt;
    }
    // Keys added by later versions are skipped, so old plugins read new jobs.
  }
  if (!any) return std::nullopt;
  return d;
}

// The stored text is decoded by one codec (job_record.h); these are its views.
std::optional<JobDirectives> parse_stored_directives(std::string_view admin_comment) {
  return decode_job_record(admin_comment).directives;
}

std::string with_stored_token(std::string_view admin_comment, std::string_view key,
                              const std::optional<std::string>& value) {
  JobRecord r = decode_job_record(admin_comment);
  r.set(key, value);
  return r.encode();
}

std::optional<std::string> stored_token(std::string_view admin_comment, std::string_view key) {
  return decode_job_record(admin_comment).get(key);
}

}  // namespace mlsched
