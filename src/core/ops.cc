// Summary, metrics and the top screen for operators (see ops.h).
#include "core/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/fairshare.h"
#include "core/priority.h"
#include "core/text.h"
#include "core/why.h"

namespace mlsched {

uint32_t pending_gpus(std::string_view tres_req) {
  // total() already counts the untyped GPUs.
  return gpu_counts_from_tres(tres_req).total();
}

namespace {

const char* const kColourAllocated = "\033[33m";
const char* const kColourIdle = "\033[32m";
const char* const kColourUnavailable = "\033[31m";
const char* const kColourReset = "\033[0m";

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return buf;
}

void add(GpuTally& t, uint32_t gpus, uint32_t busy, bool usable) {
  t.total += gpus;
  t.allocated += busy;
  (usable ? t.idle : t.unavailable) += gpus - busy;
}

bool unavailable_state(const std::string& state) {
  return state.find("down") != std::string::npos || state.find("drain") != std::string::npos ||
         state.find("fail") != std::string::npos || state.find("not_responding") != std::string::npos ||
         state.find("future") != std::string::npos || state.find("unknown") != std::string::npos;
}

}  // namespace

uint32_t TeamSummary::in_use_total() const {
  uint32_t n = 0;
  for (const auto& [type, count] : gpus_in_use) n += count;
  return n;
}

uint32_t TeamSummary::entitlement_total() const {
  uint32_t n = 0;
  for (const auto& [type, count] : entitlement) n += count;
  return n;
}

const std::vector<std::string>& interruption_causes() {
  static const std::vector<std::string> causes = {"node_fail", "preempted", "requeued"};
  return causes;
}

bool run_ended_by_preemption(int64_t last_preempted_at, int64_t run_start, int64_t run_end) {
  // Whole seconds on both sides: the mark is written when Slurm picks the victim,
  // during the run, and the requeue follows within its checkpoint grace.
  return last_preempted_at > 0 && run_start > 0 && last_preempted_at >= run_start &&
         (run_end <= 0 || last_preempted_at <= run_end);
}

std::vector<JobPreemptions> merge_job_preemptions(const std::vector<JobPreemptions>& job_table,
                                                  const std::vector<JobPreemptions>& accounting) {
  std::map<uint32_t, JobPreemptions> by_id;
  for (const auto& j : accounting) {
    auto [it, fresh] = by_id.emplace(j.job_id, j);
    if (fresh) continue;
    // Several runs of one job: its marks only grow, so the largest is the latest.
    JobPreemptions& have = it->second;
    if (j.preempted > have.preempted || (j.preempted == have.preempted && j.lost_gpu_seconds > have.lost_gpu_seconds)) {
      have.preempted = j.preempted;
      have.lost_gpu_seconds = j.lost_gpu_seconds;
    }
    have.restarts = std::max(have.restarts, j.restarts);
    if (have.team.empty()) have.team = j.team;
  }
  for (const auto& j : job_table) by_id[j.job_id] = j;  // slurmctld's record is the newest
  std::vector<JobPreemptions> out;
  for (auto& [id, j] : by_id) out.push_back(std::move(j));
  return out;
}

// Wide enough apart to tell "just submitted" from "waiting a day" at a glance.
const std::vector<double>& queue_wait_buckets() {
  static const std::vector<double> b = {60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 7 * 86400};
  return b;
}

int64_t percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

namespace {
// Which running jobs borrow, by the one definition (priority.h) against the
// entitlement the tool computed the way priority/mlsched computes its quotas.
std::vector<bool> running_borrowing_of(const OpsSnapshot& snap) {
  std::vector<GpuHolding> held;
  for (const auto& j : snap.running) {
    GpuHolding h{j.job_id, j.team, j.start_time, {}};
    for (const auto& [type, count] : j.gpus_by_type) {
      if (type == "untyped") h.gpus.untyped += count;
      else h.gpus.by_type[type] += count;
    }
    held.push_back(std::move(h));
  }
  return borrowing_in_start_order(held, [&](const std::string& team, const std::string& type) -> uint32_t {
    auto t = snap.entitlement.find(team);
    return t == snap.entitlement.end() ? 0 : static_cast<uint32_t>(gpus_of_type(t->second, type));
  });
}
}  // namespace

namespace {

// Nodes by state, the unavailable ones, and GPUs by type and NVLink domain.
void summarize_nodes(const OpsSnapshot& snap, OpsSummary& s) {
  const auto& nodes = snap.cluster->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GpuNode& n = nodes[i];
    const NodeState& ns = snap.state[i];
    const NodeHealth& h = snap.health[i];
    ++s.nodes_by_state[h.state.empty() ? "unknown" : h.state];
    if (!ns.usable || unavailable_state(h.state))
      s.unavailable_nodes.push_back({n.name, h.state, h.reason, n.gpus});
    if (n.gpus == 0) continue;
    uint32_t busy = 0;
    NodeGpuMap map{n.name, n.gpu_type, n.nvlink_domain, std::string(n.gpus, kGpuIdle)};
    for (uint32_t g = 0; g < n.gpus; ++g) {
      const bool is_busy = g < ns.gpu_busy.size() && ns.gpu_busy[g];
      busy += is_busy ? 1 : 0;
      map.gpus[g] = is_busy ? kGpuAllocated : ns.usable ? kGpuIdle : kGpuUnavailable;
    }
    const std::string type = n.gpu_type.empty() ? "untyped" : n.gpu_type;
    add(s.by_type[type], n.gpus, busy, ns.usable);
    if (!n.nvlink_domain.empty()) add(s.by_domain[n.nvlink_domain][type], n.gpus, busy, ns.usable);
    s.gpu_map.push_back(std::move(map));
  }
  std::sort(s.unavailable_nodes.begin(), s.unavailable_nodes.end(),
            [](const UnavailableNode& a, const UnavailableNode& b) { return a.name < b.name; });
}

// Each team's shares, entitlement, running jobs and borrowed GPUs.
void summarize_teams(const OpsSnapshot& snap, OpsSummary& s) {
  for (const auto& t : snap.teams) {
    TeamSummary& row = s.teams[t.team];
    row.has_shares = true;
    row.shares = t;
  }
  for (const auto& [team, by_type] : snap.entitlement) s.teams[team].entitlement = by_type;
  const std::vector<bool> borrowing = running_borrowing_of(snap);
  for (size_t i = 0; i < snap.running.size(); ++i) {
    const OpsRunningJob& j = snap.running[i];
    TeamSummary& row = s.teams[j.team];
    ++row.running_jobs;
    if (borrowing[i])
      for (const auto& [type, count] : j.gpus_by_type) row.borrowed_gpus += count;
    for (const auto& [type, count] : j.gpus_by_type) row.gpus_in_use[type] += count;
    ++s.running_jobs;
    if (j.restarts) {
      ++s.jobs_restarted;
      s.restarts += j.restarts;
    }
  }
}

// Pending jobs: per team, per Slurm reason, and the queue-wait histogram.
void summarize_queue(const OpsSnapshot& snap, OpsSummary& s) {
  const auto& bounds = queue_wait_buckets();
  s.wait_bucket_counts.assign(bounds.size() + 1, 0);
  std::vector<int64_t> waits;
  for (const auto& j : snap.pending) {
    TeamSummary& row = s.teams[j.team];
    ++row.pending_jobs;
    row.pending_gpus += j.gpus;
    ++s.pending_by_reason[j.slurm_reason.empty() ? "None" : j.slurm_reason];
    const int64_t wait = std::max<int64_t>(0, j.waiting_seconds);
    waits.push_back(wait);
    for (size_t b = 0; b < bounds.size(); ++b)
      if (static_cast<double>(wait) <= bounds[b]) ++s.wait_bucket_counts[b];
    ++s.wait_bucket_counts.back();
    s.wait_sum_seconds += static_cast<double>(wait);
    if (j.restarts) {
      ++s.jobs_restarted;
      s.restarts += j.restarts;
    }
  }
  s.wait_count = waits.size();
  s.wait_p50 = percentile(waits, 50);
  s.wait_p90 = percentile(waits, 90);
  s.wait_max = percentile(waits, 100);
}

// Each pool's GPUs (from its nodes) and the pending jobs that accept it.
void summarize_pools(const OpsSnapshot& snap, OpsSummary& s) {
  const auto& nodes = snap.cluster->nodes();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].name] = i;
  for (const auto& pool : snap.pools) {
    PoolSummary& row = s.by_pool[pool.name];
    for (const auto& name : pool.nodes) {
      const auto it = index.find(name);
      if (it == index.end() || nodes[it->second].gpus == 0) continue;
      const NodeState& ns = snap.state[it->second];
      uint32_t busy = 0;
      for (bool b : ns.gpu_busy) busy += b ? 1 : 0;
      add(row.gpus, nodes[it->second].gpus, busy, ns.usable);
    }
  }
  for (const auto& j : snap.pending)
    for (const auto& name : split(j.partitions, ',')) {
      const auto it = s.by_pool.find(name);
      if (it == s.by_pool.end()) continue;
      ++it->second.pending_jobs;
      it->second.pending_gpus += j.gpus;
    }
}

// Interrupted runs (from accounting) and preemptions per team.
void summarize_interruptions(const OpsSnapshot& snap, OpsSummary& s) {
  s.accounting_read = snap.accounting_read;
  if (snap.accounting_read) {
    for (const auto& cause : interruption_causes()) s.interrupted[cause];
    for (const auto& r : snap.interrupted) {
      InterruptedTally& t = s.interrupted[r.cause];
      ++t.runs;
      t.gpu_seconds += static_cast<double>(r.gpus) * static_cast<double>(std::max<int64_t>(0, r.seconds));
    }
  }
  for (const auto& [team, row] : s.teams) s.preemptions[team];
  for (const auto& j : snap.preemptions) {
    PreemptionTally& t = s.preemptions[j.team];
    PreemptionTally& all = s.preemptions_total;
    const uint32_t other = j.restarts > j.preempted ? j.restarts - j.preempted : 0;
    const double lost = std::max(0.0, j.lost_gpu_seconds);
    for (PreemptionTally* p : {&t, &all}) {
      p->preemptions += j.preempted;
      p->jobs_preempted += j.preempted ? 1 : 0;
      p->lost_gpu_seconds += lost;
      p->other_requeues += other;
    }
  }
}

}  // namespace

OpsSummary summarize(const OpsSnapshot& snap) {
  if (!snap.cluster) throw std::invalid_argument("summarize: snapshot without a cluster");
  const auto& nodes = snap.cluster->nodes();
  if (snap.state.size() != nodes.size() || snap.health.size() != nodes.size())
    throw std::invalid_argument("summarize: node state and health must be parallel to the cluster's nodes");
  OpsSummary s;
  s.now = snap.now;
  s.nodes = static_cast<uint32_t>(nodes.size());
  summarize_nodes(snap, s);
  summarize_teams(snap, s);
  summarize_queue(snap, s);
  summarize_pools(snap, s);
  s.fragmentation = measure_fragmentation(*snap.cluster, snap.state);
  summarize_interruptions(snap, s);
  for (MlState st : ml_states()) s.jobs_by_ml_state[ml_state_name(st)] = 0;
  for (const auto& j : snap.ml_jobs) {
    ++s.jobs_by_ml_state[ml_state_name(j.state)];
    if (j.state == MlState::checkpointing && j.checkpointing_since > 0)
      s.checkpointing_seconds += static_cast<double>(std::max<int64_t>(0, snap.now - j.checkpointing_since));
  }
  return s;
}

// ---- Prometheus text exposition ---------------------------------------------

bool MetricsWriter::valid_metric_name(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool MetricsWriter::valid_label_name(const std::string& name) {
  // Names starting with "__" are reserved for Prometheus itself.
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string MetricsWriter::escape_help(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string MetricsWriter::escape_label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

std::string MetricsWriter::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Whole numbers (counts, bucket bounds) in plain digits, never as 6e+01.
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void MetricsWriter::family(const std::string& name, const std::string& type, const std::string& help) {
  if (!valid_metric_name(name)) throw std::invalid_argument("metric name '" + name + "' is not valid in Prometheus");
  if (type != "gauge" && type != "counter" && type != "histogram" && type != "untyped")
    throw std::invalid_argument("metric " + name + ": unknown type '" + type + "'");
  if (std::find(begun_.begin(), begun_.end(), name) != begun_.end())
    throw std::invalid_argument("metric " + name + " written twice: a family must be contiguous");
  begun_.push_back(name);
  current_ = name;
  out_ += "# HELP " + name + " " + escape_help(help) + "\n";
  out_ += "# TYPE " + name + " " + type + "\n";
}

void MetricsWriter::sample(const Labels& labels, double value, const std::string& suffix) {
  if (current_.empty()) throw std::invalid_argument("metric sample before any family");
  std::string line = current_ + suffix;
  if (!labels.empty()) {
    line += "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      if (!valid_label_name(labels[i].first))
        throw std::invalid_argument("metric " + current_ + ": label name '" + labels[i].first + "' is not valid");
      line += (i ? "," : "") + labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
    }
    line += "}";
  }
  out_ += line + " " + format_value(value) + "\n";
}

// Long (~115 lines) on purpose: one metric family after another, in the order a
// scrape shows them, each with its help text beside its samples; there is no
// logic to factor out beyond MetricsWriter.
std::string format_metrics(const OpsSummary& s) {
  MetricsWriter w;
  const char* const states[] = {"allocated", "idle", "unavailable"};
  auto tally = [&](MetricsWriter::Labels labels, const GpuTally& t) {
    const uint32_t values[] = {t.allocated, t.idle, t.unavailable};
    for (int k = 0; k < 3; ++k) {
      auto l = labels;
      l.emplace_back("state", states[k]);
      w.sample(l, values[k]);
    }
  };
  w.family("mlsched_gpus", "gauge",
           "GPUs by type and state: allocated (held by jobs), idle (free on usable nodes), "
           "unavailable (free but on nodes down, drained or failing).");
  for (const auto& [type, t] : s.by_type) tally({{"gpu_type", type}}, t);
  w.family("mlsched_nvlink_domain_gpus", "gauge", "GPUs by NVLink domain, type and state (as mlsched_gpus).");
  for (const auto& [domain, types] : s.by_domain)
    for (const auto& [type, t] : types) tally({{"nvlink_domain", domain}, {"gpu_type", type}}, t);

  w.family("mlsched_pool_gpus", "gauge", "GPUs by pool (Slurm partition) and state (as mlsched_gpus).");
  for (const auto& [pool, row] : s.by_pool) tally({{"pool", pool}}, row.gpus);
  w.family("mlsched_pool_jobs_pending", "gauge",
           "Pending jobs that accept each pool (Slurm partition); a job that names several counts in each.");
  for (const auto& [pool, row] : s.by_pool) w.sample({{"pool", pool}}, row.pending_jobs);
  w.family("mlsched_pool_pending_gpus", "gauge", "GPUs those pending jobs ask for, by pool.");
  for (const auto& [pool, row] : s.by_pool) w.sample({{"pool", pool}}, row.pending_gpus);

  w.family("mlsched_team_gpus_in_use", "gauge", "GPUs held by the running jobs of each team (Slurm account), by type.");
  for (const auto& [team, row] : s.teams)
    for (const auto& [type, n] : row.gpus_in_use) w.sample({{"team", team}, {"gpu_type", type}}, n);
  w.family("mlsched_team_gpu_entitlement", "gauge",
           "GPUs each team is guaranteed, by type: TeamQuota in mlsched.conf, else its fair share of the type.");
  for (const auto& [team, row] : s.teams)
    for (const auto& [type, n] : row.entitlement) w.sample({{"team", team}, {"gpu_type", type}}, n);
  w.family("mlsched_team_gpus_borrowed", "gauge",
           "GPUs of each team's running jobs beyond its entitlement, counted in start order as priority/mlsched "
           "marks them (borrowing=yes): a team within its quota may reclaim them.");
  for (const auto& [team, row] : s.teams) w.sample({{"team", team}}, row.borrowed_gpus);
  w.family("mlsched_team_share", "gauge", "Each team's entitlement as a fraction of the cluster (sshare NormShares).");
  for (const auto& [team, row] : s.teams)
    if (row.has_shares) w.sample({{"team", team}}, row.shares.shares_norm);
  w.family("mlsched_team_usage_share", "gauge", "Each team's share of all teams' decayed GPU usage (sshare NormUsage).");
  for (const auto& [team, row] : s.teams)
    if (row.has_shares) w.sample({{"team", team}}, row.shares.usage_norm);
  w.family("mlsched_team_usage", "gauge",
           "Each team's decayed GPU-seconds, weighted by GPU type (sshare RawUsage).");
  for (const auto& [team, row] : s.teams)
    if (row.has_shares) w.sample({{"team", team}}, row.shares.usage_raw);
  w.family("mlsched_team_fairshare", "gauge",
           "Each team's fair-share factor, 2^(-usage/entitlement): 1 unused, 0.5 at its entitlement (sshare FairShare).");
  for (const auto& [team, row] : s.teams)
    if (row.has_shares) w.sample({{"team", team}}, row.shares.fairshare);
  w.family("mlsched_team_jobs", "gauge", "Jobs of each team by state (running, pending).");
  for (const auto& [team, row] : s.teams) {
    w.sample({{"team", team}, {"state", "pending"}}, row.pending_jobs);
    w.sample({{"team", team}, {"state", "running"}}, row.running_jobs);
  }

  w.family("mlsched_jobs_pending", "gauge", "Pending jobs by Slurm's reason (Resources, Priority, JobHeldUser ...).");
  for (const auto& [reason, n] : s.pending_by_reason) w.sample({{"reason", reason}}, n);
  w.family("mlsched_jobs_running", "gauge", "Running (or suspended) jobs.");
  w.sample({}, s.running_jobs);
  w.family("mlsched_queue_wait_seconds", "histogram", "How long the jobs pending now have waited since submission.");
  const auto& bounds = queue_wait_buckets();
  for (size_t b = 0; b < bounds.size(); ++b)
    w.sample({{"le", MetricsWriter::format_value(bounds[b])}}, static_cast<double>(s.wait_bucket_counts[b]), "_bucket");
  w.sample({{"le", "+Inf"}}, static_cast<double>(s.wait_bucket_counts.back()), "_bucket");
  w.sample({}, s.wait_sum_seconds, "_sum");
  w.sample({}, static_cast<double>(s.wait_count), "_count");

  w.family("mlsched_fragmentation_index", "gauge",
           "Share of free GPUs not on a wholly free node (level=node) or NVLink domain (level=nvlink_domain): "
           "0 all free GPUs are in whole units, 1 none are.");
  w.sample({{"level", "node"}}, s.fragmentation.node_index);
  w.sample({{"level", "nvlink_domain"}}, s.fragmentation.domain_index);
  w.family("mlsched_idle_nodes", "gauge", "GPU nodes with every GPU free (level=node) and wholly free NVLink domains.");
  w.sample({{"level", "node"}}, s.fragmentation.idle_nodes);
  w.sample({{"level", "nvlink_domain"}}, s.fragmentation.idle_domains);

  w.family("mlsched_nodes", "gauge", "Nodes by Slurm state.");
  for (const auto& [state, n] : s.nodes_by_state) w.sample({{"state", state}}, n);
  w.family("mlsched_jobs_by_ml_state", "gauge",
           "Jobs slurmctld holds by ML state (queued, placed, running, checkpointing, preempted, requeued, "
           "resumed, completed, failed, cancelled; see mlsched jobs --help). Ended jobs count until they "
           "leave slurmctld (MinJobAge).");
  for (MlState st : ml_states()) {
    const auto it = s.jobs_by_ml_state.find(ml_state_name(st));
    w.sample({{"state", ml_state_name(st)}}, it == s.jobs_by_ml_state.end() ? 0 : it->second);
  }
  w.family("mlsched_checkpointing_seconds", "gauge",
           "Seconds the jobs checkpointing now have spent since their checkpoint signal, summed.");
  w.sample({}, s.checkpointing_seconds);
  w.family("mlsched_job_restarts", "gauge",
           "Restarts (requeues after preemption or node failure) of the jobs pending or running now.");
  w.sample({}, s.restarts);
  w.family("mlsched_jobs_restarted", "gauge", "Jobs pending or running now that were requeued at least once.");
  w.sample({}, s.jobs_restarted);
  // Gauges, not counters: a job leaves the window (MinJobAge, accounting's 24 h),
  // so the numbers can fall.
  const std::string window =
      " Over the jobs slurmctld still holds (pending, running, and ended within MinJobAge)" +
      std::string(s.accounting_read ? " and jobs with a run in the last 24 h in accounting" : "") +
      "; each job counts all its preemptions.";
  w.family("mlsched_preemptions", "gauge",
           "Preemptions by preempt/mlsched, from the preempted= mark on each victim." + window);
  w.sample({}, s.preemptions_total.preemptions);
  w.family("mlsched_preemption_lost_gpu_seconds", "gauge",
           "GPU-seconds of work lost at those preemptions, as preempt/mlsched estimated it when it chose each "
           "victim (GPUs times the time since its last checkpoint; the lost-gpu-seconds= mark)." + window);
  w.sample({}, s.preemptions_total.lost_gpu_seconds);
  w.family("mlsched_requeues_other_causes", "gauge",
           "Requeues not by preempt/mlsched (time limit checkpoint, node failure, scontrol requeue): "
           "each job's restart count less its preemptions." + window);
  w.sample({}, s.preemptions_total.other_requeues);
  w.family("mlsched_team_preemptions", "gauge", "mlsched_preemptions by team (the victim's Slurm account).");
  for (const auto& [team, t] : s.preemptions) w.sample({{"team", team}}, t.preemptions);
  w.family("mlsched_team_preemption_lost_gpu_seconds", "gauge",
           "mlsched_preemption_lost_gpu_seconds by team (the victim's Slurm account).");
  for (const auto& [team, t] : s.preemptions) w.sample({{"team", team}}, t.lost_gpu_seconds);
  w.family("mlsched_team_requeues_other_causes", "gauge", "mlsched_requeues_other_causes by team (Slurm account).");
  for (const auto& [team, t] : s.preemptions) w.sample({{"team", team}}, t.other_requeues);
  // Left out, not zero, when accounting could not be read: a scraper then sees the
  // series go missing instead of a false "nothing was lost".
  if (s.accounting_read) {
    w.family("mlsched_interrupted_runs", "gauge",
             "Runs cut short in the last 24 h (accounting), by cause: preempted (by preempt/mlsched, or by "
             "Slurm), requeued (for any other cause), node_fail.");
    for (const auto& [cause, t] : s.interrupted) w.sample({{"cause", cause}}, t.runs);
    w.family("mlsched_interrupted_gpu_seconds", "gauge",
             "GPU-seconds of the runs cut short in the last 24 h, by cause: an upper bound on the work lost, "
             "since checkpoints are not counted.");
    for (const auto& [cause, t] : s.interrupted) w.sample({{"cause", cause}}, t.gpu_seconds);
  }
  return w.text();
}

// ---- mlsched top ---------------------------------------------------------------

// Long (~120 lines) on purpose: the screen top to bottom (header, GPUs by type,
// domains, teams, queue, unavailable nodes, GPU map), so that the code reads like
// its output; each section is a few lines of formatting.
std::string format_top(const OpsSummary& s, bool colour) {
  std::string out;
  char when[32] = "";
  const time_t now = s.now;
  struct tm tm_now;
  if (localtime_r(&now, &tm_now)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm_now);
  uint32_t gpus = 0, allocated = 0;
  for (const auto& [type, t] : s.by_type) {
    gpus += t.total;
    allocated += t.allocated;
  }
  out += fmt("mlsched top  %s  %u nodes, %u GPUs, %u allocated, %u jobs running, %llu pending\n\n", when, s.nodes, gpus,
             allocated, s.running_jobs, static_cast<unsigned long long>(s.wait_count));

  out += fmt("%-14s %6s %6s %6s %8s\n", "GPUs by type", "total", "alloc", "idle", "unavail");
  for (const auto& [type, t] : s.by_type)
    out += fmt("  %-12s %6u %6u %6u %8u\n", type.c_str(), t.total, t.allocated, t.idle, t.unavailable);

  // Pools only where there are several (one partition of every node says nothing new).
  if (s.by_pool.size() > 1) {
    out += fmt("\n%-14s %6s %6s %6s %8s %8s %9s\n", "GPUs by pool", "total", "alloc", "idle", "unavail", "pending",
               "pend GPUs");
    for (const auto& [pool, row] : s.by_pool)
      out += fmt("  %-12s %6u %6u %6u %8u %8u %9u\n", pool.c_str(), row.gpus.total, row.gpus.allocated, row.gpus.idle,
                 row.gpus.unavailable, row.pending_jobs, row.pending_gpus);
  }

  out += fmt("\n%-14s %6s %8s %9s %7s %7s %9s  %s\n", "teams", "in use", "entitled", "fairshare", "running",
             "pending", "pend GPUs", "in use by type");
  for (const auto& [team, row] : s.teams) {
    std::vector<std::string> types;
    for (const auto& [type, n] : row.gpus_in_use) types.push_back(type + ":" + std::to_string(n));
    const std::string fs = row.has_shares ? fmt("%.3f", row.shares.fairshare) : "-";
    // Borrowed GPUs are named only when there are some, after the types.
    if (row.borrowed_gpus) types.push_back(fmt("(borrowing %u)", row.borrowed_gpus));
    std::string line = fmt("  %-12s %6u %8u %9s %7u %7u %9u  %s", team.c_str(), row.in_use_total(),
                           row.entitlement_total(), fs.c_str(), row.running_jobs, row.pending_jobs, row.pending_gpus,
                           join(types, " ").c_str());
    out += trim(line).empty() ? "" : line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }

  out += fmt("\nqueue: %llu pending", static_cast<unsigned long long>(s.wait_count));
  if (s.wait_count) {
    out += "; waited p50 " + format_duration(s.wait_p50) + ", p90 " + format_duration(s.wait_p90) + ", max " +
           format_duration(s.wait_max) + "\n";
    std::vector<std::pair<std::string, uint32_t>> reasons(s.pending_by_reason.begin(), s.pending_by_reason.end());
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> parts;
    for (const auto& [reason, n] : reasons) parts.push_back(fmt("%s %u", reason.c_str(), n));
    out += "  by reason: " + join(parts, ", ") + "\n";
  } else {
    out += "\n";
  }
  if (s.restarts) out += fmt("  requeued: %u jobs, %u restarts in all\n", s.jobs_restarted, s.restarts);
  {
    std::vector<std::string> parts;
    for (MlState st : ml_states()) {
      const auto it = s.jobs_by_ml_state.find(ml_state_name(st));
      if (it != s.jobs_by_ml_state.end() && it->second) parts.push_back(fmt("%s %u", ml_state_name(st), it->second));
    }
    if (!parts.empty()) {
      out += "  ML states: " + join(parts, ", ");
      const auto c = s.jobs_by_ml_state.find("checkpointing");
      if (c != s.jobs_by_ml_state.end() && c->second)
        out += " (checkpointing for " + format_duration(static_cast<long long>(s.checkpointing_seconds)) + " in all)";
      out += "\n";
    }
  }
  if (s.accounting_read) {
    uint32_t runs = 0;
    double gpu_seconds = 0;
    std::vector<std::string> parts;
    for (const auto& [cause, t] : s.interrupted) {
      runs += t.runs;
      gpu_seconds += t.gpu_seconds;
      if (t.runs) parts.push_back(fmt("%s %u", cause.c_str(), t.runs));
    }
    out += fmt("  interrupted in the last 24 h: %u runs, %.1f GPU-hours at most lost", runs, gpu_seconds / 3600.0) +
           (parts.empty() ? std::string() : " (" + join(parts, ", ") + ")") + "\n";
  }

  {
    const PreemptionTally& t = s.preemptions_total;
    // GPU-seconds beside the hours: a preemption after a fresh checkpoint loses
    // seconds, which 0.1 GPU-hours would hide.
    out += fmt("\npreemptions: %u of %u jobs, %.1f GPU-hours (%.0f GPU-seconds) lost, estimated at each; "
               "%u requeues for other causes\n",
               t.preemptions, t.jobs_preempted, t.lost_gpu_seconds / 3600.0, t.lost_gpu_seconds, t.other_requeues);
    out += std::string("  (jobs slurmctld holds: pending, running, ended within MinJobAge") +
           (s.accounting_read ? "; and accounting's last 24 h" : "") + ")\n";
    for (const auto& [team, p] : s.preemptions)
      if (p.preemptions || p.other_requeues)
        out += fmt("  %-12s %4u preempted %8.1f GPU-hours (%.0f GPU-seconds) lost %4u other requeues\n", team.c_str(),
                   p.preemptions, p.lost_gpu_seconds / 3600.0, p.lost_gpu_seconds, p.other_requeues);
  }

  const Fragmentation& f = s.fragmentation;
  out += fmt("\nfragmentation: node %.2f, nvlink-domain %.2f  (%u free GPUs, %u on idle nodes; idle nodes %u, idle domains %u)\n",
             f.node_index, f.domain_index, f.free_gpus, f.free_gpus_on_idle_nodes, f.idle_nodes, f.idle_domains);

  if (s.unavailable_nodes.empty()) {
    out += "nodes down/drained: none\n";
  } else {
    out += fmt("nodes down/drained: %zu\n", s.unavailable_nodes.size());
    for (const auto& n : s.unavailable_nodes)
      out += fmt("  %-10s %-16s %2u GPUs  %s\n", n.name.c_str(), n.state.c_str(), n.gpus,
                 n.reason.empty() ? "" : ("\"" + n.reason + "\"").c_str());
  }

  out += fmt("\nGPU map (%c allocated, %c idle, %c unavailable):\n", kGpuAllocated, kGpuIdle, kGpuUnavailable);
  // One line per NVLink domain (or per node type when there are none), so a
  // domain's free GPUs can be seen side by side.
  std::string line_key, line;
  size_t visible = 0;  // the line's width without colour codes
  auto flush = [&]() {
    if (!line.empty()) out += line + "\n";
    line.clear();
    visible = 0;
  };
  for (const auto& m : s.gpu_map) {
    const std::string key = (m.nvlink_domain.empty() ? "-" : m.nvlink_domain) + " " + m.gpu_type;
    if (key != line_key || visible > 100) {
      flush();
      line_key = key;
      line = fmt("  %-12s", key.c_str());
      visible = line.size();
    }
    line += " " + m.node + " ";
    visible += m.node.size() + 2 + m.gpus.size();
    for (char c : m.gpus) {
      if (!colour) {
        line += c;
        continue;
      }
      line += c == kGpuAllocated ? kColourAllocated : c == kGpuIdle ? kColourIdle : kColourUnavailable;
      line += c;
      line += kColourReset;
    }
  }
  flush();
  return out;
}

}  // namespace mlsched
