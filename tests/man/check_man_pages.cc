// Checks the manual pages against the code they describe, so they cannot drift:
// mlsched.conf(5) must document exactly the keys the parser accepts, each with the
// default that Config's member initializers give it, and mlsched-directives(7) exactly
// the keys job_submit/mlsched reads.
//
//   check_man_pages conf mlsched.conf.5
//   check_man_pages directives mlsched-directives.7
//
// Conventions the pages follow (and this program reads from the roff source):
//   .TP / \fBKey\fR=...      one entry per key; .SS headings naming "JobType" or
//                            "NvlinkDomain" hold the keys of those lines
//   Default: \fBvalue\fR     in the entry's paragraph, a value that parses to the
//                            built-in default; "none", "unset" and "per" (per job
//                            type) are the only words allowed instead
//   JobType=... lines        under the .SS "Built-in job types": the built-in
//                            defaults of every job type, as mlsched.conf lines
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/directives.h"

using namespace mlsched;

namespace {

int failures = 0;
void fail(const std::string& msg) {
  std::cerr << "check_man_pages: " << msg << "\n";
  ++failures;
}

// Field by field: Config has no operator==. A new key means a new field, and the key
// check below fails until the page documents it; add the field here with it.
bool same_job_type(const JobTypeDefaults& a, const JobTypeDefaults& b) {
  return a.preemptible == b.preemptible && a.checkpoint_signal == b.checkpoint_signal &&
         a.checkpoint_grace == b.checkpoint_grace && a.checkpoint_interval == b.checkpoint_interval &&
         a.max_restarts == b.max_restarts && a.locality == b.locality && a.locality_mode == b.locality_mode;
}

bool same(const Config& a, const Config& b) {
  for (int t = 0; t < kJobTypeCount; ++t)
    if (!same_job_type(a.job_types[t], b.job_types[t])) return false;
  return a.max_checkpoint_grace == b.max_checkpoint_grace && a.default_job_type == b.default_job_type &&
         a.max_restarts_limit == b.max_restarts_limit && a.nvlink_domains.size() == b.nvlink_domains.size() &&
         a.node_failure_window == b.node_failure_window && a.large_gang_nodes == b.large_gang_nodes &&
         a.gpu_type_speed == b.gpu_type_speed &&
         a.preempt_min_run_time == b.preempt_min_run_time && a.preempt_max_per_job == b.preempt_max_per_job &&
         a.preempt_for_large_gang_gpus == b.preempt_for_large_gang_gpus &&
         a.preempt_for_large_gang_wait == b.preempt_for_large_gang_wait && a.gpu_weights == b.gpu_weights &&
         a.team_quotas == b.team_quotas && a.priority_decay_half_life == b.priority_decay_half_life &&
         a.priority_calc_period == b.priority_calc_period && a.priority_max_age == b.priority_max_age &&
         a.priority_weight_fairshare == b.priority_weight_fairshare &&
         a.priority_weight_quota == b.priority_weight_quota && a.priority_weight_age == b.priority_weight_age &&
         a.priority_weight_job_size == b.priority_weight_job_size &&
         a.priority_weight_qos == b.priority_weight_qos &&
         a.priority_weight_partition == b.priority_weight_partition &&
         a.priority_weight_job_type == b.priority_weight_job_type &&
         a.attained_service.all == b.attained_service.all && a.attained_service.teams == b.attained_service.teams &&
         a.attained_service.partitions == b.attained_service.partitions &&
         a.attained_service_thresholds == b.attained_service_thresholds &&
         a.priority_weight_attained_service == b.priority_weight_attained_service &&
         a.attained_service_promote_after == b.attained_service_promote_after;
}

// What "Default: none/unset" may mean for each key that has no value by default.
const std::map<std::string, std::function<bool(const Config&)>> kNoDefault = {
    {"GpuWeight", [](const Config& c) { return c.gpu_weights.empty(); }},
    {"GpuTypeSpeed", [](const Config& c) { return c.gpu_type_speed.empty(); }},
    {"TeamQuota", [](const Config& c) { return c.team_quotas.empty(); }},
    {"NvlinkDomain", [](const Config& c) { return c.nvlink_domains.empty(); }},
    {"PriorityDecayHalfLife", [](const Config& c) { return !c.priority_decay_half_life; }},
    {"PriorityCalcPeriod", [](const Config& c) { return !c.priority_calc_period; }},
};

// Roff source to the words a reader sees: font escapes and \& go, \- is a dash.
std::string plain(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == 'f' && i + 2 < s.size()) {
        i += 2;
        if (s[i] == '(') i += 2;
        continue;
      }
      if (n == '-') { out += '-'; ++i; continue; }
      if (n == '&') { ++i; continue; }
      if (n == 'e') { out += '\\'; ++i; continue; }
    }
    out += s[i];
  }
  return out;
}

struct Entry {
  std::string key;
  std::string section;  // "top", "JobType" or "NvlinkDomain"
  std::string default_value;  // "" when the entry has no Default: line
  int line = 0;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    fail(path + ": cannot be read");
    return {};
  }
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Entries are `.TP` followed by a tag line "\fBKey\fR=..." (a key, then '=').
std::vector<Entry> read_entries(const std::vector<std::string>& lines) {
  std::vector<Entry> entries;
  std::string section = "top";
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind(".SH", 0) == 0) section = "top";
    if (l.rfind(".SS", 0) == 0) {
      section = l.find("JobType") != std::string::npos        ? "JobType"
                : l.find("NvlinkDomain") != std::string::npos ? "NvlinkDomain"
                                                              : "top";
    }
    if (l != ".TP" || i + 1 >= lines.size()) continue;
    const std::string tag = plain(lines[i + 1]);
    const size_t eq = tag.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string key = tag.substr(0, eq);
    if (!std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '-'; }))
      continue;
    Entry e{key, section, "", static_cast<int>(i + 2)};
    for (size_t j = i + 2; j < lines.size(); ++j) {
      const std::string& p = lines[j];
      if (p == ".TP" || p.rfind(".SS", 0) == 0 || p.rfind(".SH", 0) == 0) break;
      const std::string text = plain(p);
      const size_t d = text.find("Default: ");
      if (d == std::string::npos) continue;
      std::string v = text.substr(d + 9);
      v = v.substr(0, v.find(' '));
      while (!v.empty() && (v.back() == '.' || v.back() == ',' || v.back() == ';' || v.back() == ':')) v.pop_back();
      e.default_value = v;
      break;
    }
    entries.push_back(e);
  }
  return entries;
}

void compare_keys(const std::string& what, const std::vector<std::string>& code,
                  const std::set<std::string>& page) {
  for (const auto& k : code)
    if (!page.count(k)) fail(what + " key " + k + " is accepted by the code but not documented");
  for (const auto& k : page)
    if (std::find(code.begin(), code.end(), k) == code.end())
      fail(what + " key " + k + " is documented but the code does not accept it");
}

int check_conf(const std::string& path) {
  const auto lines = read_lines(path);
  const auto entries = read_entries(lines);
  const Config builtin;
  const ConfigKeys keys = config_keys();
  std::map<std::string, std::set<std::string>> documented;
  for (const auto& e : entries) {
    const std::string where = path + ":" + std::to_string(e.line) + ": " + e.key;
    if (!documented[e.section].insert(e.key).second) fail(where + " is documented twice");
    if (e.section == "NvlinkDomain") continue;  // Nodes= has no default: it is required
    if (e.default_value.empty()) {
      fail(where + " has no 'Default:' line");
    } else if (e.default_value == "per") {
      if (e.section != "JobType" && e.key != "JobType")
        fail(where + ": only JobType keys have per-type defaults");
    } else if (e.default_value == "none" || e.default_value == "unset") {
      auto it = kNoDefault.find(e.key);
      if (it == kNoDefault.end()) fail(where + ": 'Default: " + e.default_value + "' but the key has a default");
      else if (!it->second(builtin)) fail(where + ": 'Default: " + e.default_value + "' but the built-in value is set");
    } else if (e.section != "top") {
      fail(where + ": a JobType key's default is per type, in the JobType= lines of the example");
    } else {
      const auto parsed = parse_config(e.key + "=" + e.default_value, "page");
      if (!parsed.config) fail(where + ": the documented default '" + e.default_value + "' is refused: " +
                                parsed.errors.front());
      else if (!same(*parsed.config, builtin))
        fail(where + ": the documented default '" + e.default_value + "' is not the built-in default");
    }
  }
  compare_keys("mlsched.conf", keys.top, documented["top"]);
  compare_keys("JobType line", keys.job_type, documented["JobType"]);
  compare_keys("NvlinkDomain line", keys.nvlink_domain, documented["NvlinkDomain"]);

  // The built-in job types as JobType= lines (in an .EX block), each with every key.
  std::string job_type_lines;
  std::set<std::string> types_shown;
  bool in_builtin = false;  // under the .SS heading "Built-in job types"
  for (const auto& l : lines) {
    if (l.rfind(".SS", 0) == 0 || l.rfind(".SH", 0) == 0) in_builtin = l.find("Built-in job types") != std::string::npos;
    const std::string text = plain(l);
    if (!in_builtin || text.rfind("JobType=", 0) != 0) continue;
    job_type_lines += text + "\n";
    std::istringstream words(text);
    std::string word;
    words >> word;
    types_shown.insert(word.substr(8));
    for (const auto& k : keys.job_type)
      if (text.find(" " + k + "=") == std::string::npos) fail("the built-in line '" + text + "' lacks " + k + "=");
  }
  for (const auto& t : job_type_names())
    if (!types_shown.count(t)) fail("no built-in JobType=" + t + " line");
  const auto parsed = parse_config(job_type_lines, "page");
  if (!parsed.config) {
    for (const auto& e : parsed.errors) fail("built-in JobType lines: " + e);
  } else if (!same(*parsed.config, builtin)) {
    fail("the built-in JobType= lines do not match the built-in job type defaults");
  }
  const size_t checked = entries.size();
  if (failures == 0) std::cout << path << ": " << checked << " keys and " << types_shown.size()
                               << " built-in job types match the code\n";
  return failures ? 1 : 0;
}

int check_directives(const std::string& path) {
  const auto entries = read_entries(read_lines(path));
  std::set<std::string> documented;
  for (const auto& e : entries)
    if (!documented.insert(e.key).second) fail(path + ": " + e.key + " is documented twice");
  compare_keys("directive", directive_keys(), documented);
  if (failures == 0) std::cout << path << ": " << documented.size() << " directive keys match the code\n";
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: check_man_pages conf|directives PAGE\n";
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "conf") return check_conf(argv[2]);
  if (mode == "directives") return check_directives(argv[2]);
  std::cerr << "check_man_pages: unknown mode " << mode << "\n";
  return 2;
}
