// See why.h. The resource model is deliberately the one the plugins use: GPUs of
// one type, a gang inside one unit of a locality scope, nodes down or drained
// count as full. CPUs and memory are not modelled; Slurm's own reason covers them.
#include "core/why.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "core/hostlist.h"
#include "core/placement.h"
#include "core/priority.h"
#include "core/text.h"
#include "core/topo.h"

namespace mlsched {

namespace wr = wait_reason;

const std::vector<WaitReasonDoc>& wait_reason_docs() {
  static const std::vector<WaitReasonDoc> docs = {
      {wr::kHeldByUser, "the owner held the job (scontrol hold / sbatch -H); scontrol release starts it"},
      {wr::kHeldByAdmin, "an administrator held the job; only an administrator can release it"},
      {wr::kWaitingForDependency, "upstream jobs named in --dependency have not finished as required"},
      {wr::kDependencyNeverSatisfied, "an upstream job ended in a way that can never satisfy the dependency"},
      {wr::kBeginTimeNotReached, "the job asked not to start before --begin"},
      {wr::kBadDirectives, "the mlsched directives stored with the job cannot be read"},
      {wr::kGpuTypeNotInCluster, "no node of the cluster has the GPU type the job asks for"},
      {wr::kNotEnoughFreeGpus, "fewer GPUs of the acceptable types are free than the job needs"},
      {wr::kFreeGpusFragmented, "enough GPUs are free in total, but not on few enough nodes for the job's shape"},
      {wr::kStrictLocality, "the gang would fit now, but not inside one unit of its strict locality scope"},
      {wr::kFasterGpuType,
       "a slower GPU type the job accepts has room now, but by its time limit it finishes sooner by waiting for a "
       "faster type (GpuTypeSpeed)"},
      {wr::kGpuNodesUnavailable, "nodes with the acceptable GPU types are down or drained"},
      {wr::kWaitingForReservedUnit,
       "the job is a large gang holding a reservation (ReserveForGangGpus): GPUs freed on its nodes go only to "
       "preemptible jobs, and it starts, preempting them, once those nodes hold nothing else"},
      {wr::kKeptOffReservedUnit,
       "free GPUs it could use are reserved for a large gang; only jobs that give GPUs back on request "
       "(preemptible, with requeues left) may use them until the gang starts"},
      {wr::kBehindHigherPriority, "pending jobs with higher priority want the same GPU types"},
      {wr::kBestEffortBehind,
       "the job is preemptible (best effort) and pending jobs ahead of it for the same GPU types are not: they rank "
       "PriorityWeightNonPreemptible higher"},
      {wr::kTeamFairShareBehind,
       "the job's team has had more of the cluster's recent GPU-time, for its entitlement, than the teams whose "
       "jobs come first (sshare's numbers)"},
      {wr::kTeamBeyondQuota,
       "starting the job would take its team beyond its guaranteed GPUs of that type: it gets no quota priority "
       "(TeamQuotaPartialCredit: the share of its GPUs that fit), "
       "and once running it borrows GPUs that a team within its quota may reclaim"},
      {wr::kTeamQuotaKeptForEarlierJob,
       "the job would fit its team's guarantee now, but the team's earlier pending job that needs more of it comes "
       "first: the rest of the guarantee is kept for that job, so this one gets no quota priority until it starts"},
      {wr::kAttainedServiceLevel,
       "the job used GPU-time in earlier runs: in a higher attained-service level it waits behind its team's jobs "
       "in lower levels until it is promoted (AttainedService)"},
      {wr::kAccountOrQosLimit, "a limit of the job's account (team) or QOS holds it back"},
      {wr::kPartitionLimit, "the job exceeds a limit of its partition"},
      {wr::kReservation, "the job waits for its reservation, or reserved nodes are in its way"},
      {wr::kOtherSlurmReason, "Slurm gives a reason mlsched does not analyse further"},
      {wr::kWaitingForScheduler, "nothing blocks the job in mlsched's model; Slurm starts it at its next cycle"},
  };
  return docs;
}

std::vector<DependencyRef> parse_dependencies(std::string_view slurm_dependency) {
  std::vector<DependencyRef> out;
  const std::string text = trim(slurm_dependency);
  if (text.empty() || text == "(null)") return out;
  // Entries are separated by ',' (all must hold) or '?' (any may hold).
  std::string item;
  auto flush = [&]() {
    std::string entry = trim(item);
    item.clear();
    if (entry.empty()) return;
    DependencyRef ref;
    if (const size_t paren = entry.find('('); paren != std::string::npos) {
      const size_t close = entry.find(')', paren);
      ref.status = entry.substr(paren + 1, close == std::string::npos ? std::string::npos : close - paren - 1);
      entry.resize(paren);
    }
    const auto parts = split(entry, ':');
    ref.condition = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
      DependencyRef one = ref;
      // "812+60" (time delay) and "812_*" (array) keep only the job id.
      std::string id = parts[i];
      id = id.substr(0, id.find_first_of("+_"));
      if (auto n = parse_uint(id)) one.job_id = static_cast<uint32_t>(*n);
      out.push_back(one);
    }
    if (parts.size() == 1) out.push_back(ref);
  };
  for (char c : text) {
    if (c == ',' || c == '?') flush();
    else item += c;
  }
  flush();
  return out;
}

std::map<std::string, std::vector<std::vector<int>>> nvlink_cliques_from_gres_conf(std::string_view text) {
  std::map<std::string, std::vector<std::vector<int>>> rows;  // node -> link rows in GPU order
  size_t total_rows = 0;
  for (const auto& raw : split(text, '\n')) {
    std::string line = raw.substr(0, raw.find('#'));
    std::string nodes, name, links;
    for (const auto& word : split_words(line)) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = lowercase(word.substr(0, eq)), value = word.substr(eq + 1);
      if (key == "nodename") nodes = value;
      else if (key == "name") name = value;
      else if (key == "links") links = value;
    }
    if (nodes.empty() || name != "gpu" || links.empty()) continue;
    std::vector<int> row;
    for (const auto& v : split(links, ',')) {
      const std::string t = trim(v);
      if (t == "-1") row.push_back(-1);
      else if (auto n = parse_uint(t)) row.push_back(static_cast<int>(std::min<uint64_t>(*n, 1000000)));
      else row.push_back(0);
    }
    std::vector<std::string> names;
    try {
      names = expand_hostlist(nodes);
    } catch (const std::invalid_argument&) {
      continue;
    }
    // Each line may name up to 100,000 nodes (expand_hostlist's bound), so without
    // a bound over the whole file a long one costs minutes. A real gres.conf has
    // one row per GPU of each node (10,000 nodes x 8 GPUs is a very large cluster);
    // past kMaxGresConfRows the rest is not read, and those nodes' cliques are
    // unknown, as when gres.conf has no Links=.
    if (total_rows + names.size() > kMaxGresConfRows) break;
    total_rows += names.size();
    for (const auto& n : names) rows[n].push_back(row);
  }
  std::map<std::string, std::vector<std::vector<int>>> out;
  for (const auto& [node, matrix] : rows) out[node] = cliques_from_links(matrix);
  return out;
}

namespace {

// The narrowest unit of a scope a node is in ("" when none): for switches its leaf.
std::string narrowest_unit(const Cluster& cluster, const GpuNode& n, Locality scope) {
  const auto units = cluster.units_of(n, scope);
  return units.empty() ? std::string() : units.front();
}

std::string scope_word(Locality scope) { return scope == Locality::any ? "cluster" : to_string(scope); }

// Node indexes of each unit of a scope holding GPUs of the type, by unit name.
std::map<std::string, std::vector<size_t>> units(const Cluster& cluster, Locality scope, const std::string& type) {
  std::map<std::string, std::vector<size_t>> out;
  const auto& nodes = cluster.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].gpus == 0 || nodes[i].gpu_type != type) continue;
    for (const std::string& u : cluster.units_of(nodes[i], scope)) out[u].push_back(i);
  }
  return out;
}

std::string percent(double share) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f%%", share * 100.0);
  return buf;
}

// "has had 62.0% of recent GPU-time for a 33.3% entitlement (fair-share factor 0.270)"
std::string share_text(const TeamView& v) {
  char factor[32];
  snprintf(factor, sizeof factor, "%.3f", v.fairshare);
  return "has had " + percent(v.usage_norm) + " of recent GPU-time for a " + percent(v.shares_norm) +
         " entitlement (fair-share factor " + factor + ")";
}

uint32_t free_on(const ClusterState& state, size_t i) { return i < state.size() ? state[i].free_gpus() : 0; }

// The select plugin's own placement, restricted to the nodes in `allowed`, with
// one GPU type and one scope, never wider: so "would fit" here means the plugin
// would place it.
PlacementPlan place_exactly(const Cluster& cluster, const ClusterState& state, const std::vector<bool>& allowed,
                            Locality scope, const std::string& type, const GangShape& gang) {
  PlacementRequest req;
  req.gang = gang;
  req.gpu_types = {type};
  req.locality = scope;
  req.mode = LocalityMode::strict;
  return plan_placement(cluster, state, allowed, req);
}

std::vector<bool> usable_mask(const ClusterState& state) {
  std::vector<bool> mask(state.size());
  for (size_t i = 0; i < state.size(); ++i) mask[i] = state[i].usable;
  return mask;
}

std::string need_text(const GpuNeed& r, const std::vector<std::string>& types) {
  const std::string type_text = types.empty() ? "" : join(types, " or ") + " ";
  std::string s = std::to_string(r.total_gpus()) + " " + type_text + "GPUs";
  if (r.gang.gpus_per_node) s += " as " + std::to_string(r.gang.nodes) + " node" + (r.gang.nodes > 1 ? "s" : "") + " x " +
                                 std::to_string(r.gang.gpus_per_node);
  else if (r.gang.nodes > 1) s += " on at least " + std::to_string(r.gang.nodes) + " nodes";
  s += ", locality " + to_string(r.locality) + " (" + to_string(r.locality_mode) + ")";
  return s;
}

std::string job_label(uint32_t id, const std::string& name) {
  return name.empty() ? std::to_string(id) : name + " " + std::to_string(id);
}

bool shares_type(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() || b.empty()) return true;
  for (const auto& t : a)
    if (std::find(b.begin(), b.end(), t) != b.end()) return true;
  return false;
}

}  // namespace

FitNow fit_now(const Cluster& cluster, const ClusterState& state, Locality scope, const std::string& gpu_type,
               const GangShape& gang) {
  FitNow out;
  if (state.size() != cluster.nodes().size()) return out;
  const PlacementPlan plan = place_exactly(cluster, state, usable_mask(state), scope, gpu_type, gang);
  if (!plan.candidates.empty()) {
    const PlacementCandidate& c = plan.candidates.front();
    out.fits = true;
    out.unit = c.unit;
    for (size_t i : c.unit_nodes) out.free_in_unit += free_on(state, i);
    for (size_t i : c.nodes) out.nodes.push_back(cluster.nodes()[i].name);
    return out;
  }
  for (const auto& s : plan.shortfalls) {
    if (s.gpu_type != gpu_type) continue;
    out.unit = s.best_unit;
    out.free_in_unit = s.best_unit_free_gpus;
  }
  return out;
}

void compare_with_select(const JobFacts& job, const Snapshot& snap, WhyReport& rep) {
  PlacementRequest request;
  request.gang = job.request.gang;
  request.gpu_types = job.request.gpu_types;
  request.locality = job.request.locality;
  request.mode = job.request.locality_mode;
  // Select sees Slurm's bitmap for the job (partition, features); the tool sees
  // every node, and the snapshot's usable flags rule out the rest.
  const std::vector<bool> eligible(snap.cluster->nodes().size(), true);
  const PlacementPlan plan = plan_placement(*snap.cluster, snap.state, eligible, request);
  rep.placement_now = plan.candidates.empty()
                          ? (plan.reason.empty() ? "no placement in the allowed topology scope" : plan.reason)
                          : "";
  rep.select_differs = !job.select_reason.empty() && job.select_reason != rep.placement_now;
}

namespace {

// Running: where its GPUs are, with their NVLink neighbourhood.
void explain_placement(const JobFacts& job, const Snapshot& snap, WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  for (const auto& [node, idx] : job.gpus_by_node) {
    PlacedGpus p;
    p.node = node;
    p.gpus = idx;
    if (const GpuNode* n = cluster.find_node(node)) {
      p.nvlink_domain = n->nvlink_domain;
      p.leaf_switch = n->leaf_switch;
      for (const auto& clique : n->nvlink_cliques) {
        std::vector<int> mine;
        for (int g : idx)
          if (std::find(clique.begin(), clique.end(), g) != clique.end()) mine.push_back(g);
        if (!mine.empty()) p.cliques.push_back(mine);
      }
    }
    rep.placement.push_back(std::move(p));
  }
}

// Holds, dependencies, --begin and unreadable directives. Returns when the last
// upstream job may end (0: none known), for the ETA.
time_t explain_holds_and_dependencies(const JobFacts& job, const Snapshot& snap, WhyReport& rep) {
  const std::string& sr = job.slurm_reason;
  if (sr == "JobHeldUser") rep.findings.push_back({wr::kHeldByUser, "held by its owner; `scontrol release " + std::to_string(job.job_id) + "` lets it start"});
  if (sr == "JobHeldAdmin") rep.findings.push_back({wr::kHeldByAdmin, "held by an administrator (priority 0); ask them to release it"});

  // Dependencies: name every upstream job that is still in the way.
  std::vector<std::string> waiting, broken;
  time_t upstream_end = 0;
  for (const auto& up : job.upstream) {
    if (up.ref.status != "unfulfilled" && up.ref.status != "failed") continue;
    std::string text = up.ref.condition + " on " + (up.ref.job_id ? job_label(up.ref.job_id, up.name) : std::string("singleton"));
    if (!up.found && up.ref.job_id) text += " (no longer known to Slurm)";
    else if (!up.state.empty()) {
      text += ", " + up.state;
      if (up.state == "RUNNING" && up.expected_end > snap.now) {
        text += ", ~" + format_duration(up.expected_end - snap.now) + " left at most";
        upstream_end = std::max(upstream_end, up.expected_end);
      }
    }
    (up.ref.status == "failed" ? broken : waiting).push_back(text);
  }
  if (!waiting.empty()) rep.findings.push_back({wr::kWaitingForDependency, "waits for " + join(waiting, "; ")});
  if (!broken.empty() || sr == "DependencyNeverSatisfied")
    rep.findings.push_back({wr::kDependencyNeverSatisfied,
                            (broken.empty() ? std::string("Slurm reports the dependency can never be satisfied")
                                            : "can never start: " + join(broken, "; ") + " ended the wrong way") +
                                "; cancel it or change --dependency"});
  if (sr == "BeginTime" || job.begin_time > snap.now)
    rep.findings.push_back({wr::kBeginTimeNotReached, "asked not to start before --begin, " +
                                                           format_duration(job.begin_time - snap.now) + " from now"});
  // Stored text with directive keys that did not parse; a plain mark such as
  // "mlsched: borrowing=no" on a job without directives is not a problem.
  auto has_directive_key = [&] {
    for (const auto& key : directive_keys())
      if (stored_token(job.admin_comment, key)) return true;
    return false;
  };
  if (!job.directives && starts_with(lowercase(trim(job.admin_comment)), kStoredPrefix) && has_directive_key())
    rep.findings.push_back({wr::kBadDirectives, "the stored directives cannot be read: '" + job.admin_comment + "'"});

  return upstream_end;
}

// The acceptable GPU types the cluster has (`present`) and those it lacks.
void gpu_types_of(const JobFacts& job, const Cluster& cluster, std::vector<std::string>& present,
                  std::vector<std::string>& missing) {
  const GpuNeed& req = job.request;
  if (req.gpu_types.empty()) present = cluster.gpu_types();
  for (const auto& t : req.gpu_types) {
    if (auto c = cluster.canonical_gpu_type(t)) present.push_back(*c);
    else missing.push_back(t);
  }

}

// The team's earlier pending job that the rest of its guarantee is kept for, when
// that is why this pending job gets no quota term although it would fit now:
// places_in_guarantee() over the snapshot's pending jobs, as priority/mlsched walks
// them (its pipeline-age adjustment of submit times is not seen here). 0: none.
uint32_t guarantee_kept_for(const JobFacts& job, const Snapshot& snap, const std::string& gpu_type, uint32_t need) {
  auto priced = [](uint32_t id, const std::string& team, const std::string& type, uint32_t gpus, time_t submit,
                   bool eligible) {
    PricedJob p;
    p.job_id = id;
    p.team = team;
    p.gpu_type = type;
    p.gpus = gpus;
    p.submit_time = submit;
    p.eligible = eligible;
    return p;
  };
  std::vector<PricedJob> pending;
  size_t self = SIZE_MAX;
  for (const auto& p : snap.pending) {
    if (p.priority == 0 && p.job_id != job.job_id) continue;  // held: priority/mlsched prices it not
    if (p.job_id == job.job_id) self = pending.size();
    const std::string kind = p.gpu_types.size() == 1
                                 ? quota_kind(snap.config, p.gpu_types[0], pending_pool(p.partition))
                                 : std::string();
    pending.push_back(priced(p.job_id, p.account, kind, p.gpus, p.submit_time, p.eligible));
  }
  if (self == SIZE_MAX) {
    self = pending.size();
    pending.push_back(priced(job.job_id, job.account, gpu_type, need, job.submit_time, job.begin_time <= snap.now));
  }
  TeamGpusInUse in_use;
  for (const auto& [team, v] : snap.teams) in_use[team] = v.in_use;
  // The guarantees the tool read the way the plugins compute them (TeamView).
  const GuaranteeOf guaranteed = [&](const std::string& team, const std::string& type) -> uint32_t {
    auto v = snap.teams.find(team);
    return v == snap.teams.end() ? 0 : static_cast<uint32_t>(gpus_of_type(v->second.guaranteed, type));
  };
  return places_in_guarantee(pending, guaranteed, in_use, snap.config.team_quota_kept_for_gpus)[self].kept_by;
}

// The team against its guarantee, for the type the job uses (running) or would
// get first (pending), the way the plugins count it (core/priority.h Quotas).
void explain_team(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present, WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  const GpuNeed& req = job.request;
  const uint32_t need = req.total_gpus();
  const bool running = job.state == "RUNNING" || job.state == "SUSPENDED";
  TeamReport& t = rep.team;
  t.team = job.account;
  if (running) {
    for (const auto& [node, idx] : job.gpus_by_node) {
      t.job_gpus += static_cast<uint32_t>(idx.size());
      const GpuNode* n = cluster.find_node(node);
      if (n && t.gpu_type.empty()) t.gpu_type = quota_kind(snap.config, n->gpu_type, job.partition);
    }
  } else {
    t.job_gpus = need;
    // A job that names one type is counted against that type; one that names
    // several or none is counted against all types together, as the plugins do.
    // With quotas per pool, against that type in the first pool it names (where
    // Slurm tries it first).
    if (req.gpu_types.size() == 1 && present.size() == 1)
      t.gpu_type = quota_kind(snap.config, present[0], pending_pool(job.partition));
  }
  auto v = snap.teams.find(job.account);
  if (v != snap.teams.end()) {
    t.known = true;
    t.view = v->second;
    // Counted as the plugins count them (priority.h: the one definition of borrowing).
    t.holds = static_cast<uint32_t>(gpus_of_type(t.view.in_use, t.gpu_type));
    t.guaranteed = static_cast<uint32_t>(gpus_of_type(t.view.guaranteed, t.gpu_type));
  }
  if (snap.config.preempt_for_non_preemptible) {
    const bool preemptible = job.directives && job.directives->preemptible;
    t.best_effort_rule = running ? preemptible : !preemptible;
  }
  if (running) {
    if (job.borrowing_mark && (*job.borrowing_mark == "yes" || *job.borrowing_mark == "no")) {
      t.job_borrows = *job.borrowing_mark == "yes";
      t.borrowing_from = "priority/mlsched's mark";
    } else if (t.known) {
      t.job_borrows = would_borrow(t.holds, 0, t.guaranteed);
      t.borrowing_from = "estimate: the team holds more than its guarantee";
    }
  } else if (t.known && need > 0) {
    t.job_borrows = would_borrow(t.holds, need, t.guaranteed);
    if (t.job_borrows && job.state == "PENDING") {
      const std::string type = t.gpu_type.empty() ? std::string("GPUs") : t.gpu_type;
      // TeamQuotaPartialCredit: the share of its GPUs still within the guarantee.
      const uint32_t within = t.guaranteed > t.holds ? std::min(need, t.guaranteed - t.holds) : 0;
      const std::string priority =
          snap.config.team_quota_partial_credit && within > 0
              ? std::to_string(within) + " of them fit the guarantee, so the quota term is " +
                    std::to_string(within) + "/" + std::to_string(need) + " of PriorityWeightQuota (TeamQuotaPartialCredit)"
              : std::string("no quota priority");
      rep.findings.push_back(
          {wr::kTeamBeyondQuota,
           "team " + t.team + " holds " + std::to_string(t.holds) + " " + type + " of the " +
               std::to_string(t.guaranteed) + " it is guaranteed; this job's " + std::to_string(need) +
               " would be borrowed: " + priority + ", and preemptible by a team within its quota" +
               (t.best_effort_rule ? std::string("; as it is not preemptible it may still preempt a preemptible job "
                                                 "whose team stays at least as far beyond its guarantee "
                                                 "(PreemptForNonPreemptible)")
                                   : std::string())});
    } else if (!t.job_borrows && job.state == "PENDING") {
      t.kept_by = guarantee_kept_for(job, snap, t.gpu_type, need);
      if (t.kept_by) {
        uint32_t kept_gpus = 0;
        for (const auto& p : snap.pending)
          if (p.job_id == t.kept_by) kept_gpus = p.gpus;
        const std::string type = t.gpu_type.empty() ? std::string("GPUs") : t.gpu_type;
        rep.findings.push_back(
            {wr::kTeamQuotaKeptForEarlierJob,
             "team " + t.team + " holds " + std::to_string(t.holds) + " " + type + " of the " +
                 std::to_string(t.guaranteed) + " it is guaranteed; the rest is kept for its job " +
                 std::to_string(t.kept_by) + " (" + std::to_string(kept_gpus) +
                 " GPUs), queued before this one: no quota priority until that job starts"});
      }
    }
  }
}

// Free GPUs against the need, per type and scope: the shortfall, fragmentation and
// strict-locality findings, and the nodes that are down. Returns whether the job fits now.
bool explain_shortfalls(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present,
                        WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  const GpuNeed& req = job.request;
  const uint32_t need = req.total_gpus();
  const bool strict = req.locality_mode == LocalityMode::strict;
  bool fits_now = false;
  std::vector<std::string> short_of, fragmented, too_narrow;
  uint32_t unusable_nodes = 0, unusable_gpus = 0;
  std::vector<std::string> unusable_names;
  for (const auto& type : present) {
    uint32_t free = 0, total = 0;
    const auto& nodes = cluster.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].gpu_type != type) continue;
      total += nodes[i].gpus;
      free += free_on(snap.state, i);
      if (i < snap.state.size() && !snap.state[i].usable) {
        ++unusable_nodes;
        unusable_gpus += nodes[i].gpus;
        unusable_names.push_back(nodes[i].name);
      }
    }
    const FitNow in_scope = fit_now(cluster, snap.state, req.locality, type, req.gang);
    const FitNow anywhere = fit_now(cluster, snap.state, Locality::any, type, req.gang);
    if (in_scope.fits || (!strict && anywhere.fits)) {
      fits_now = true;
      continue;
    }
    if (free < need) {
      short_of.push_back(std::to_string(free) + " of " + std::to_string(total) + " " + type + " free");
    } else if (!anywhere.fits) {
      std::string shape = req.gang.gpus_per_node
                              ? "no " + std::to_string(req.gang.nodes) + " node" + (req.gang.nodes > 1 ? "s" : "") +
                                    " with " + std::to_string(req.gang.gpus_per_node) + " free each"
                              : "not on " + std::to_string(req.gang.nodes) + " node(s)";
      fragmented.push_back(std::to_string(free) + " " + type + " free in total (needs " + std::to_string(need) + ") but " + shape);
    } else {
      too_narrow.push_back("no single " + scope_word(req.locality) + " can take " + std::to_string(need) + " " + type +
                           " now (best: " + in_scope.unit + " with " + std::to_string(in_scope.free_in_unit) +
                           " free)");
    }
  }
  if (!fits_now) {
    if (!short_of.empty() && fragmented.empty() && too_narrow.empty())
      rep.findings.push_back({wr::kNotEnoughFreeGpus, "needs " + std::to_string(need) + "; " + join(short_of, ", ")});
    else if (!short_of.empty())
      rep.findings.push_back({wr::kNotEnoughFreeGpus, join(short_of, ", ") + " (needs " + std::to_string(need) + ")"});
    if (!fragmented.empty()) rep.findings.push_back({wr::kFreeGpusFragmented, join(fragmented, "; ")});
    if (!too_narrow.empty())
      rep.findings.push_back({wr::kStrictLocality, join(too_narrow, "; ") + " and locality-mode=strict forbids running wider"});
  }
  if (unusable_nodes > 0)
    rep.findings.push_back({wr::kGpuNodesUnavailable, std::to_string(unusable_nodes) + " node(s) with " +
                                                          std::to_string(unusable_gpus) + " GPUs are down or drained (" +
                                                          join(unusable_names, ",") + ")"});
  return fits_now;
}

// Free GPUs per unit (NVLink domain, switch, cluster) of each wanted type, for the screen.
void list_free_units(const Snapshot& snap, const std::vector<std::string>& present, WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  for (const auto& type : present) {
    std::vector<Locality> scopes;
    if (cluster.has_nvlink_domains()) scopes.push_back(Locality::nvlink_domain);
    if (cluster.has_switches()) scopes.push_back(Locality::switch_scope);
    scopes.push_back(Locality::any);
    for (Locality scope : scopes) {
      for (const auto& [name, members] : units(cluster, scope, type)) {
        UnitUse u{scope_word(scope), name, type, 0, 0, 0};
        for (size_t i : members) {
          u.total += cluster.nodes()[i].gpus;
          u.free += free_on(snap.state, i);
          if (i < snap.state.size() && !snap.state[i].usable) u.unusable += cluster.nodes()[i].gpus;
        }
        rep.free.push_back(u);
      }
    }
  }
}

// What would fit now if the user changed one directive (locality-mode, locality, gpu-type),
// each computed on the same snapshot as the findings.
void explain_counterfactuals(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present,
                             WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  const GpuNeed& req = job.request;
  const bool strict = req.locality_mode == LocalityMode::strict;
  for (const auto& type : present) {
    if (req.locality == Locality::any) break;
    const FitNow anywhere = fit_now(cluster, snap.state, Locality::any, type, req.gang);
    if (!anywhere.fits) continue;
    uint32_t free = 0;
    std::set<std::string> spanned;
    for (const auto& name : anywhere.nodes) {
      const GpuNode* n = cluster.find_node(name);
      const auto& nodes = cluster.nodes();
      const size_t idx = static_cast<size_t>(n - nodes.data());
      free += free_on(snap.state, idx);
      spanned.insert(narrowest_unit(cluster, *n, req.locality));
    }
    if (strict)
      rep.counterfactuals.push_back({"locality-mode=prefer", "would fit now: " + std::to_string(free) + " " + type +
                                                                 " free across " + std::to_string(spanned.size()) + " " +
                                                                 scope_word(req.locality) + (spanned.size() > 1 ? "s" : "") +
                                                                 " (" + join(anywhere.nodes, ",") + ")"});
    // The narrowest wider scope that works, when it is not "any".
    for (int s = static_cast<int>(req.locality) + 1; s < static_cast<int>(Locality::any); ++s) {
      const Locality wider = static_cast<Locality>(s);
      if (wider == Locality::switch_scope && !cluster.has_switches()) continue;
      const FitNow f = fit_now(cluster, snap.state, wider, type, req.gang);
      if (f.fits) {
        rep.counterfactuals.push_back({"locality=" + to_string(wider), "would fit now in " + f.unit + " (" +
                                                                           std::to_string(f.free_in_unit) + " " + type +
                                                                           " free there)"});
        break;
      }
    }
    break;
  }
  for (const auto& type : cluster.gpu_types()) {
    if (std::find(present.begin(), present.end(), type) != present.end()) continue;
    const FitNow f = fit_now(cluster, snap.state, req.locality, type, req.gang);
    const FitNow wide = fit_now(cluster, snap.state, Locality::any, type, req.gang);
    if (f.fits)
      rep.counterfactuals.push_back({"gpu-type=" + type, "would fit now in " + f.unit + " (" +
                                                             std::to_string(f.free_in_unit) + " " + type + " free there)"});
    else if (!strict && wide.fits)
      rep.counterfactuals.push_back({"gpu-type=" + type, "would fit now across " + join(wide.nodes, ",")});
  }
}

// Who holds the place the job would get first, and when they are due to end: releases
// the running jobs of each unit in end order until the gang fits there.
void explain_blockers(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present,
                      time_t upstream_end, WhyReport& rep) {
  const Cluster& cluster = *snap.cluster;
  const GpuNeed& req = job.request;
  const bool strict = req.locality_mode == LocalityMode::strict;
  const Locality scope = strict ? req.locality : Locality::any;
  time_t best_time = 0;
  for (const auto& type : present) {
    for (const auto& [name, members] : units(cluster, scope, type)) {
      std::set<std::string> member_names;
      for (size_t i : members) member_names.insert(cluster.nodes()[i].name);
      std::vector<Blocker> holders;
      for (const auto& rj : snap.running) {
        Blocker b{rj, 0};
        for (const auto& [node, idx] : rj.gpus_by_node)
          if (member_names.count(node)) b.gpus += static_cast<uint32_t>(idx.size());
        if (b.gpus) holders.push_back(b);
      }
      std::stable_sort(holders.begin(), holders.end(), [](const Blocker& a, const Blocker& b) {
        const time_t ea = a.job.expected_end ? a.job.expected_end : INT64_MAX;
        const time_t eb = b.job.expected_end ? b.job.expected_end : INT64_MAX;
        return ea != eb ? ea < eb : a.job.job_id < b.job.job_id;
      });
      ClusterState state = snap.state;
      std::vector<Blocker> released;
      bool fits = false;
      time_t when = 0;
      for (const auto& h : holders) {
        if (!h.job.expected_end) break;  // never ends by itself
        for (const auto& [node, idx] : h.job.gpus_by_node) {
          const GpuNode* n = cluster.find_node(node);
          if (!n) continue;
          auto& ns = state[static_cast<size_t>(n - cluster.nodes().data())];
          for (int g : idx)
            if (g >= 0 && static_cast<size_t>(g) < ns.gpu_busy.size()) ns.gpu_busy[g] = false;
        }
        released.push_back(h);
        when = h.job.expected_end;
        std::vector<bool> only_unit(cluster.nodes().size(), false);
        for (size_t i : members) only_unit[i] = state[i].usable;
        if (!place_exactly(cluster, state, only_unit, scope, type, req.gang).candidates.empty()) {
          fits = true;
          break;
        }
      }
      if (fits && (best_time == 0 || when < best_time)) {
        best_time = when;
        rep.blocked_place = name == "cluster" ? "the cluster" : name;
        rep.blockers = released;
      }
    }
  }
  rep.model_eta = best_time;
  if (rep.model_eta && upstream_end > rep.model_eta) rep.model_eta = upstream_end;
}

// Free GPUs against the need: findings, the free units, counterfactuals and the running
// jobs in the way with the ETA. Returns whether the job fits now.
bool explain_resources(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present,
                       const std::vector<std::string>& missing, time_t upstream_end, WhyReport& rep) {
  if (job.request.total_gpus() == 0) return true;
  if (!missing.empty())
    rep.findings.push_back({wr::kGpuTypeNotInCluster, "no node has " + join(missing, ", ") + " GPUs; the cluster has " +
                                                           join(snap.cluster->gpu_types(), ", ")});
  const bool fits_now = explain_shortfalls(job, snap, present, rep);
  list_free_units(snap, present, rep);
  if (!fits_now) {
    explain_counterfactuals(job, snap, present, rep);
    explain_blockers(job, snap, present, upstream_end, rep);
  }
  return fits_now;
}

// Rank among pending jobs for the same GPUs, and teams ahead with better fair share.
void explain_rank(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present, WhyReport& rep) {
  const GpuNeed& req = job.request;
  // Priority among pending jobs that want the same GPU types.
  std::vector<PendingJob> rivals;
  for (const auto& p : snap.pending) {
    if (p.job_id == job.job_id || p.priority == 0) continue;
    if (!shares_type(p.gpu_types, present.empty() ? req.gpu_types : present)) continue;
    rivals.push_back(p);
  }
  std::stable_sort(rivals.begin(), rivals.end(), [](const PendingJob& a, const PendingJob& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.job_id < b.job_id;
  });
  rep.competing = static_cast<int>(rivals.size()) + 1;
  rep.rank = 1;
  int not_preemptible_ahead = 0;
  for (const auto& p : rivals) {
    if (p.priority > job.priority || (p.priority == job.priority && p.job_id < job.job_id)) {
      ++rep.rank;
      if (!p.preemptible) ++not_preemptible_ahead;
      if (rep.ahead.size() < 5) rep.ahead.push_back(p);
    }
  }
  // Fair share: teams of the jobs ahead that stand better than the job's own.
  {
    auto mine = snap.teams.find(job.account);
    std::set<std::string> seen;
    std::vector<std::string> better;
    for (const auto& p : rep.ahead) {
      if (p.account.empty() || p.account == job.account || !seen.insert(p.account).second) continue;
      auto v = snap.teams.find(p.account);
      if (v == snap.teams.end()) continue;
      rep.teams_ahead.emplace_back(p.account, v->second);
      if (mine != snap.teams.end() && mine->second.has_shares && v->second.has_shares &&
          v->second.fairshare > mine->second.fairshare)
        better.push_back(p.account + " " + share_text(v->second));
    }
    if (!better.empty() && job.state == "PENDING")
      rep.findings.push_back({wr::kTeamFairShareBehind, "team " + job.account + " " + share_text(mine->second) +
                                                            "; ahead: " + join(better, "; ")});
  }

  if (!rep.ahead.empty() && job.priority > 0) {
    std::vector<std::string> names;
    for (const auto& p : rep.ahead)
      names.push_back(job_label(p.job_id, p.name) + " (" + p.user + ", priority " + std::to_string(p.priority) + ")");
    rep.findings.push_back({wr::kBehindHigherPriority, std::to_string(rep.rank - 1) + " pending job(s) for the same GPUs come first: " +
                                                           join(names, ", ")});
  }
  // Best effort queues behind (PriorityWeightNonPreemptible): say how many of the
  // jobs ahead are there for that reason alone or in part.
  const uint32_t np_weight = snap.config.priority_weight_non_preemptible;
  if (np_weight > 0 && not_preemptible_ahead > 0 && job.priority > 0 && job.state == "PENDING" && job.directives &&
      job.directives->preemptible)
    rep.findings.push_back({wr::kBestEffortBehind,
                            "the job is preemptible; " + std::to_string(not_preemptible_ahead) + " of the " +
                                std::to_string(rep.rank - 1) +
                                " pending job(s) ahead for the same GPUs are not, and rank " +
                                std::to_string(np_weight) + " higher for it (PriorityWeightNonPreemptible)"});

}

// Slurm's own reason, when it says more than the analysis above; else that
// nothing blocks it.
void explain_slurm_reason(const JobFacts& job, bool fits_now, WhyReport& rep) {
  const std::string& sr = job.slurm_reason;
  const uint32_t need = job.request.total_gpus();
  // Slurm's own reason, when it says more than the analysis above.
  static const std::set<std::string> covered = {"None", "Resources", "Priority", "Dependency", "JobHeldUser",
                                                "JobHeldAdmin", "BeginTime", "DependencyNeverSatisfied", ""};
  if (!covered.count(sr)) {
    const std::string detail = job.slurm_reason_detail.empty() ? "" : " (" + job.slurm_reason_detail + ")";
    if (starts_with(sr, "Assoc") || starts_with(sr, "QOS") || starts_with(sr, "MaxGRES"))
      rep.findings.push_back({wr::kAccountOrQosLimit, "Slurm: " + sr + detail});
    else if (starts_with(sr, "Partition"))
      rep.findings.push_back({wr::kPartitionLimit, "Slurm: " + sr + detail});
    else if (sr.find("Reserv") != std::string::npos)
      rep.findings.push_back({wr::kReservation, "Slurm: " + sr + detail});
    else
      rep.findings.push_back({wr::kOtherSlurmReason, "Slurm: " + sr + detail});
  }
  if (rep.findings.empty() && job.state == "PENDING")
    rep.findings.push_back({wr::kWaitingForScheduler, fits_now && need > 0
                                                          ? "the GPUs it needs are free now; Slurm should start it within a scheduling cycle"
                                                          : "nothing in mlsched's model blocks it; Slurm should start it within a scheduling cycle"});

}

// Listing order: the order of wait_reason_docs().
// Attained service (priority/mlsched's levels, preempt/mlsched's comparison): the
// same core functions the plugins use, on the job's attained-gpu-seconds mark.
void explain_attained(const JobFacts& job, const Snapshot& snap, WhyReport& rep) {
  const Config& c = snap.config;
  const bool running = job.state == "RUNNING";
  if (!running && job.state != "PENDING") return;
  double used = read_marks(job.admin_comment).attained_gpu_seconds;
  if (running && job.start_time && snap.now > job.start_time)
    used += static_cast<double>(job.request.total_gpus()) * static_cast<double>(snap.now - job.start_time);
  // Slurm's submit time is that of the last requeue: the wait promotion counts.
  const int64_t waited = !running && job.submit_time ? snap.now - job.submit_time : 0;
  const int level = attained_service_level_of(c, job.account, job.partition, used, waited);
  if (level < 0) return;
  AttainedReport& a = rep.attained;
  a.applies = true;
  a.levels = static_cast<int>(c.attained_service_thresholds.size()) + 1;
  a.gpu_seconds = used;
  a.level = level;
  if (running) {
    // Level 0 is the lowest: nobody's level is below it.
    a.preemptible_by_team =
        c.preempt_for_attained_service && a.level > 0 && job.directives && job.directives->preemptible;
    return;
  }
  if (a.level == 0) return;
  if (c.attained_service_promote_after > 0 && job.submit_time)
    a.promote_at = job.submit_time + static_cast<time_t>(c.attained_service_promote_after);
  char text[64];
  snprintf(text, sizeof text, "%.0f", a.gpu_seconds);
  rep.findings.push_back(
      {wr::kAttainedServiceLevel,
       "it used " + std::string(text) + " GPU-seconds in earlier runs: attained-service level " + std::to_string(a.level) +
           " of " + std::to_string(a.levels - 1) + ", behind its team's jobs in lower levels" +
           (a.promote_at ? "; back in level 0 at " + local_clock(a.promote_at) + " (AttainedServicePromoteAfter)"
                         : "; never promoted (AttainedServicePromoteAfter=0)")});
}

void order_findings(WhyReport& rep) {
  const auto& docs = wait_reason_docs();
  auto order = [&](const Finding& f) {
    for (size_t i = 0; i < docs.size(); ++i)
      if (f.reason == docs[i].code) return i;
    return docs.size();
  };
  std::stable_sort(rep.findings.begin(), rep.findings.end(),
                   [&](const Finding& a, const Finding& b) { return order(a) < order(b); });
}

// reserved_unit_ready() over the snapshot: the gang's GPUs, the unit's usable GPUs and
// what its running jobs hold there.
int64_t reserved_unit_ready(const GangReservation& r, const Snapshot& snap) {
  auto on_unit = [&](const std::string& node) { return std::find(r.nodes.begin(), r.nodes.end(), node) != r.nodes.end(); };
  uint32_t gang_gpus = 0, unit_gpus = 0;
  for (const auto& p : snap.pending)
    if (p.job_id == r.job_id) gang_gpus = p.gpus;
  for (size_t k = 0; k < snap.cluster->nodes().size() && k < snap.state.size(); ++k)
    if (snap.state[k].usable && on_unit(snap.cluster->nodes()[k].name)) unit_gpus += snap.cluster->nodes()[k].gpus;
  std::vector<UnitHolder> holders;
  for (const auto& rj : snap.running) {
    UnitHolder h;
    for (const auto& [node, n] : rj.preemption.gpus_on_node) h.gpus += on_unit(node) ? n : 0;
    if (h.gpus == 0) continue;
    h.start_time = rj.preemption.start_time;
    h.end_time = rj.expected_end;
    h.lent = lent_reserved_gpus(r, rj.preemption, snap.config);
    holders.push_back(h);
  }
  if (gang_gpus == 0) return snap.now;
  return mlsched::reserved_unit_ready(gang_gpus, unit_gpus, r.since, std::move(holders), snap.now);
}

// Large gangs' reservations (ReserveForGangGpus, preempt.h): the gang waits for its
// unit; a job that could not give GPUs back is kept off it; a preemptible job may
// run there on lent GPUs.
void explain_reservations(const JobFacts& job, const Snapshot& snap, const std::vector<std::string>& present,
                          WhyReport& rep) {
  auto free_on = [&](const GangReservation& r, uint32_t& free, uint32_t& total) {
    free = total = 0;
    for (size_t k = 0; k < snap.cluster->nodes().size() && k < snap.state.size(); ++k) {
      const auto& node = snap.cluster->nodes()[k];
      if (std::find(r.nodes.begin(), r.nodes.end(), node.name) == r.nodes.end()) continue;
      if (!present.empty() && std::find(present.begin(), present.end(), lowercase(node.gpu_type)) == present.end())
        continue;
      total += node.gpus;
      if (!snap.state[k].usable) continue;
      for (bool busy : snap.state[k].gpu_busy) free += busy ? 0 : 1;
    }
  };
  PreemptCandidate self;
  self.job_id = job.job_id;
  self.has_directives = job.directives.has_value();
  self.preemptible = job.directives && job.directives->preemptible;
  self.max_restarts = job.directives ? job.directives->max_restarts : 0;
  self.times_preempted = job.preemptions.times;
  self.restarts = job.restarts;
  if (job.state == "RUNNING") {
    self.start_time = job.start_time;
    for (const auto& [node, idx] : job.gpus_by_node) self.gpus_on_node[node] = std::max<uint32_t>(1, idx.size());
    for (const auto& r : snap.reservations)
      if (lent_reserved_gpus(r, self, snap.config)) rep.lent_from = r;
    return;
  }
  if (job.state != "PENDING") return;
  if (job.reservation) {
    uint32_t free = 0, total = 0;
    free_on(*job.reservation, free, total);
    rep.findings.push_back(
        {wr::kWaitingForReservedUnit,
         "it reserved " + compress_hostlist(job.reservation->nodes) + " at " + local_clock(job.reservation->since) +
             " (ReserveForGangWait); " + std::to_string(free) + " of its " + std::to_string(total) +
             " GPUs there are free, and GPUs freed there go only to preemptible jobs, which it preempts once "
             "those nodes hold nothing else"});
    return;
  }
  if (may_borrow_reserved_gpus(self, snap.config)) return;
  for (const auto& r : snap.reservations) {
    if (r.job_id == job.job_id) continue;
    uint32_t free = 0, total = 0;
    free_on(r, free, total);
    if (free == 0) continue;
    // When the unit can hold the gang at the earliest, as select/mlsched works it out: a
    // job whose time limit ends by then may run there all the same.
    const int64_t ready = reserved_unit_ready(r, snap);
    std::string text = std::to_string(free) + " free GPUs on " + compress_hostlist(r.nodes) + " are reserved for job " +
                       std::to_string(r.job_id) + ", a large gang, since " + local_clock(r.since) + "; ";
    const std::string spent = "this job cannot be preempted again (PreemptMaxPerJob or its max-restarts), so it may ";
    if (ready > snap.now) {
      text += (self.preemptible ? spent + "use them only if its time limit ends"
                                : std::string("only preemptible jobs may use them, or a job whose time limit ends")) +
              " by " + local_clock(ready) + " (the earliest the gang can start there); " +
              (job.time_limit > 0 ? "its time limit of " + std::to_string(job.time_limit / 60) + " min would end at " +
                                        local_clock(snap.now + job.time_limit)
                                  : std::string("it has no time limit"));
    } else {
      text += self.preemptible ? spent + "not use them" : "only preemptible jobs may use them until the gang starts";
    }
    rep.findings.push_back({wr::kKeptOffReservedUnit, text});
  }
}

}  // namespace

// The driver: one function per reason family, in listing order of concern.
WhyReport explain(const JobFacts& job, const Snapshot& snap) {
  WhyReport rep;
  if (job.state == "RUNNING" || job.state == "SUSPENDED") explain_placement(job, snap, rep);
  const time_t upstream_end = explain_holds_and_dependencies(job, snap, rep);
  std::vector<std::string> present, missing;
  gpu_types_of(job, *snap.cluster, present, missing);
  rep.need = job.request.total_gpus() ? need_text(job.request, job.request.gpu_types) : "no GPUs";
  explain_team(job, snap, present, rep);
  explain_attained(job, snap, rep);
  const bool fits_now = explain_resources(job, snap, present, missing, upstream_end, rep);
  // Fits now but waits for a running upstream job: it can start when that one ends.
  if (fits_now && !rep.model_eta && upstream_end > snap.now) {
    rep.model_eta = upstream_end;
    rep.eta_is_upstream_end = true;
  }
  explain_rank(job, snap, present, rep);
  explain_reservations(job, snap, present, rep);
  // select/mlsched keeps it for a faster type (GpuTypeSpeed): its own words say
  // which, when, and how much sooner it should finish.
  if (job.state == "PENDING" && is_faster_type_wait(job.select_reason))
    rep.findings.push_back({wr::kFasterGpuType, "select/mlsched: it " + job.select_reason});
  explain_slurm_reason(job, fits_now, rep);
  order_findings(rep);
  if (job.state == "PENDING" && job.request.total_gpus() > 0) compare_with_select(job, snap, rep);
  return rep;
}

// Long (~135 lines) on purpose: the screen top to bottom, one short block per line
// of output in the order users read it; the decisions were made in explain().
std::string format_why(const JobFacts& job, const WhyReport& rep, time_t now) {
  std::string out;
  // Job names, users' paths and Slurm's reasons are users' text: no raw control
  // bytes reach the reader's terminal.
  auto line = [&](const std::string& s) { out += escape_controls(s) + "\n"; };
  auto clock = [](time_t t) { return local_clock(t); };
  std::string head = "job " + job_label(job.job_id, job.name) + " (" + job.user + ", account " + job.account +
                     ", partition " + job.partition + "): " + job.state;
  if (job.state == "PENDING" && job.submit_time) head += " for " + format_duration(now - job.submit_time);
  line(head);
  if (job.ml) line("  ML state:   " + format_status(*job.ml));
  line("  needs:      " + rep.need);
  line("  directives: " + (job.directives ? job.directives->to_string() : std::string("none (not an mlsched job)")));
  const TeamReport& t = rep.team;
  if (t.known) {
    const std::string type = t.gpu_type.empty() ? std::string("GPUs") : t.gpu_type;
    std::string s = "  team:       " + t.team + " holds " + std::to_string(t.holds) + " " + type + ", guaranteed " +
                    std::to_string(t.guaranteed);
    if (t.view.has_shares) s += "; " + share_text(t.view);
    line(s);
  }
  if (job.preemptions.times > 0) {
    const PreemptionHistory& h = job.preemptions;
    std::string s = "  preempted:  " + std::to_string(h.times) + (h.times == 1 ? " time" : " times");
    if (h.last_at) s += ", last at " + clock(h.last_at) + " (" + format_duration(now - h.last_at) + " ago)";
    if (h.last_by) s += " by job " + std::to_string(h.last_by);
    char lost[64];
    snprintf(lost, sizeof lost, "%.0f", h.lost_gpu_seconds);
    s += "; work lost, estimated: " + std::string(lost) + " GPU-seconds in all";
    line(s);
  }

  if (!job.select_reason.empty())
    line("  select:     " + job.select_reason +
         (job.select_evaluated ? " (select/mlsched's view, " + clock(job.select_evaluated) + ")" : " (select/mlsched's view)"));
  if (job.state == "PENDING" && (!job.select_reason.empty() || !rep.placement_now.empty())) {
    if (rep.placement_now.empty())
      line("  now:        the GPUs it needs can be placed now (mlsched why's recomputation, " + clock(now) + ")" +
           (job.select_reason.empty()                  ? ""
            : is_faster_type_wait(job.select_reason) ? "; select/mlsched holds it for the faster type above"
                                                       : "; select/mlsched's view above is older"));
    else
      line("  now:        " + rep.placement_now + " (mlsched why's recomputation, " + clock(now) + ")" +
           (job.select_reason.empty() ? ""
            : rep.select_differs ? "; differs from select/mlsched's view: the cluster changed since, or select "
                                   "sees other eligible nodes (partition, features)"
                                 : "; agrees with select/mlsched"));
  }

  if (job.state == "RUNNING") {
    std::vector<std::string> where;
    for (const auto& [node, idx] : job.gpus_by_node) {
      std::vector<unsigned> u(idx.begin(), idx.end());
      where.push_back(node + (idx.empty() ? "" : " (GPU " + format_ranges(u) + ")"));
    }
    line("  runs on:    " + (where.empty() ? std::string("-") : join(where, ", ")));
    for (const auto& p : rep.placement) {
      std::vector<std::string> parts;
      parts.push_back(p.nvlink_domain.empty() ? "no multi-node NVLink domain" : "nvlink-domain " + p.nvlink_domain);
      if (!p.leaf_switch.empty()) parts.push_back("switch " + p.leaf_switch);
      if (!p.cliques.empty()) {
        std::vector<std::string> groups;
        for (const auto& c : p.cliques) {
          std::vector<unsigned> u(c.begin(), c.end());
          groups.push_back("{" + format_ranges(u) + "}");
        }
        parts.push_back(std::string(p.cliques.size() == 1 ? "GPUs in one NVLink clique " : "GPUs split over NVLink cliques ") +
                        join(groups, " "));
      }
      line("  locality:   " + p.node + ": " + join(parts, ", "));
    }
    if (rep.attained.applies) {
      char used[64];
      snprintf(used, sizeof used, "%.0f", rep.attained.gpu_seconds);
      line("  attained:   level " + std::to_string(rep.attained.level) + " of " +
           std::to_string(rep.attained.levels - 1) + " (" + used + " GPU-seconds, this run included)" +
           (rep.attained.preemptible_by_team ? ": its team's jobs in a lower level may preempt it" : ""));
    }
    if (!t.borrowing_from.empty())
      line("  borrowing:  " + std::string(t.job_borrows ? "yes" : "no") + " (" + t.borrowing_from + ")" +
           (t.job_borrows ? ": a team within its quota may reclaim its GPUs" : ""));
    if (t.best_effort_rule)
      line("  best effort: non-preemptible jobs of team " + t.team + " may preempt it" +
           (t.job_borrows ? std::string(", and those of a team that stays no further beyond its guarantee")
                          : std::string()) +
           " (PreemptForNonPreemptible)");
    if (rep.lent_from)
      line("  lent:       it runs on GPUs reserved since " + clock(rep.lent_from->since) + " for job " +
           std::to_string(rep.lent_from->job_id) + ", a large gang, on " + compress_hostlist(rep.lent_from->nodes) +
           "; it is checkpoint-preempted and requeued once those nodes hold nothing else");
    if (job.last_checkpoint)
      line("  checkpoint: " + (job.last_checkpoint_path.empty() ? std::string() : job.last_checkpoint_path + " ") +
           "marked complete at " + clock(job.last_checkpoint) + " (" + format_duration(now - job.last_checkpoint) +
           " ago)" + (job.checkpoint_reported ? ", reported to slurmctld" : ""));
    else if (job.directives)  // a job without directives is not run under `mlsched run`
      line("  checkpoint: " + (job.checkpoint_note.empty() ? std::string("none known") : job.checkpoint_note));
    if (job.start_time) line("  started:    " + clock(job.start_time) + " (" + format_duration(now - job.start_time) + " ago)");
    if (job.end_time > now) line("  ends:       " + clock(job.end_time) + " at the latest (in " + format_duration(job.end_time - now) + ")");
    return out;
  }
  if (job.state != "PENDING") return out;

  line("  Slurm says: " + (job.slurm_reason.empty() ? std::string("-") : job.slurm_reason));
  line("");
  line("why it waits:");
  size_t width = 0;
  for (const auto& f : rep.findings) width = std::max(width, f.reason.size());
  for (const auto& f : rep.findings) line("  " + f.reason + std::string(width - f.reason.size() + 2, ' ') + f.message);

  if (!rep.free.empty()) {
    line("");
    line("free GPUs now:");
    for (const auto& u : rep.free) {
      const std::string where = u.scope == "cluster" ? std::string("whole cluster") : u.scope + " " + u.unit;
      std::string s = "  " + u.gpu_type + "  " + where + ": " + std::to_string(u.free) + " of " +
                      std::to_string(u.total) + " free";
      if (u.unusable) s += " (" + std::to_string(u.unusable) + " on nodes down or drained)";
      line(s);
    }
  }
  if (!rep.counterfactuals.empty()) {
    line("");
    line("would start sooner with:");
    for (const auto& c : rep.counterfactuals) line("  " + c.change + ": " + c.message);
  }
  if (!rep.blockers.empty()) {
    line("");
    line("in its way (" + rep.blocked_place + "):");
    for (const auto& b : rep.blockers)
      line("  job " + job_label(b.job.job_id, b.job.name) + " (" + b.job.user + ", " + b.job.account + ") holds " +
           std::to_string(b.gpus) + " GPUs, " +
           (b.job.expected_end ? "ends by " + clock(b.job.expected_end) + " (in " + format_duration(b.job.expected_end - now) + ")"
                               : std::string("has no time limit")));
  }
  line("");
  std::string eta = "ETA: ";
  if (job.start_time > now)
    eta += clock(job.start_time) + " (in " + format_duration(job.start_time - now) + "), Slurm's backfill estimate";
  else
    eta += "Slurm has no estimate yet";
  if (rep.model_eta)
    eta += "; mlsched's model: by " + clock(rep.model_eta) + " (in " + format_duration(rep.model_eta - now) +
           (rep.eta_is_upstream_end ? "), when the jobs it waits for reach their time limits (its GPUs are free now)"
                                    : "), when the jobs in its way reach their time limits");
  line(eta);
  std::string prio = "priority: " + std::to_string(job.priority) + ", rank " + std::to_string(rep.rank) + " of " +
                     std::to_string(rep.competing) + " pending jobs for the same GPU types";
  line(prio);
  return out;
}

// ==== GPU pools ====================================================================

std::vector<Pool> pools_of(const std::string& partitions, const std::vector<Pool>& pools) {
  std::vector<Pool> out;
  for (const auto& name : split(partitions, ','))
    for (const auto& p : pools)
      if (p.name == name && std::none_of(out.begin(), out.end(), [&](const Pool& o) { return o.name == name; }))
        out.push_back(p);
  return out;
}

Snapshot restrict_to_pools(const Snapshot& whole, const std::vector<Pool>& pools, Cluster& cluster) {
  std::set<std::string> keep, names;
  for (const auto& p : pools) {
    keep.insert(p.nodes.begin(), p.nodes.end());
    names.insert(p.name);
  }
  Snapshot part;
  part.now = whole.now;
  part.teams = whole.teams;
  part.config = whole.config;
  part.reservations = whole.reservations;  // by node name: those outside the pool find no GPUs
  cluster = Cluster();
  const auto& all = whole.cluster->nodes();
  for (size_t k = 0; k < all.size() && k < whole.state.size(); ++k) {
    if (!keep.count(all[k].name)) continue;
    cluster.add_node(all[k]);
    part.state.push_back(whole.state[k]);
  }
  // Switches keep the pool's nodes below them; a switch with none is left out.
  std::vector<SwitchSpec> switches;
  for (SwitchSpec sw : whole.cluster->switches()) {
    sw.nodes.erase(std::remove_if(sw.nodes.begin(), sw.nodes.end(), [&](const std::string& n) { return !keep.count(n); }),
                   sw.nodes.end());
    if (!sw.nodes.empty()) switches.push_back(std::move(sw));
  }
  cluster.set_switches(std::move(switches));
  cluster.set_teams(whole.cluster->teams());
  part.cluster = &cluster;
  for (RunningJob r : whole.running) {
    for (auto it = r.gpus_by_node.begin(); it != r.gpus_by_node.end();)
      it = keep.count(it->first) ? std::next(it) : r.gpus_by_node.erase(it);
    if (!r.gpus_by_node.empty()) part.running.push_back(std::move(r));
  }
  for (const auto& p : whole.pending) {
    const auto theirs = split(p.partition, ',');
    if (std::any_of(theirs.begin(), theirs.end(), [&](const std::string& n) { return names.count(n) > 0; }))
      part.pending.push_back(p);
  }
  return part;
}

std::vector<PoolReport> explain_pools(const JobFacts& job, const Snapshot& whole, const std::vector<Pool>& pools) {
  std::vector<PoolReport> out;
  for (const auto& pool : pools) {
    Cluster cluster;
    const Snapshot part = restrict_to_pools(whole, {pool}, cluster);
    out.push_back({pool, explain(job, part)});
  }
  return out;
}

std::string format_pools(const std::vector<PoolReport>& pools, time_t now) {
  if (pools.empty()) return "";
  std::string out = "pools it accepts (mlsched why's recomputation, " + local_clock(now) + "):\n";
  for (const auto& p : pools) {
    const WhyReport& r = p.report;
    std::string s = "  " + p.pool.name + " (" + compress_hostlist(p.pool.nodes) + "): ";
    if (r.placement_now.empty()) {
      s += "the GPUs it needs can be placed now";
    } else {
      s += r.placement_now;
      if (!r.blockers.empty()) {
        std::vector<std::string> in_way;
        for (const auto& b : r.blockers)
          in_way.push_back("job " + job_label(b.job.job_id, b.job.name) + " (" + b.job.user + ", " +
                           std::to_string(b.gpus) + " GPUs" +
                           (b.job.expected_end ? ", ends by " + local_clock(b.job.expected_end) : std::string()) + ")");
        s += "; in its way (" + r.blocked_place + "): " + join(in_way, ", ");
      }
      if (r.model_eta)
        s += "; mlsched's model: by " + local_clock(r.model_eta) + " (in " + format_duration(r.model_eta - now) + ")";
    }
    out += escape_controls(s) + "\n";
  }
  return out;
}

std::string format_regions(const std::string& origin, const std::vector<RegionView>& regions, time_t now) {
  if (regions.empty()) return "";
  std::string out = "regions holding a copy of the job (each region's controller" +
                    (origin.empty() ? std::string() : "; submitted to " + origin) + "):\n";
  const RegionView* running = nullptr;
  const RegionView* first = nullptr;
  for (const auto& r : regions) {
    std::string s = "  " + r.region + (r.here ? " (here)" : "") + ": " + (r.state.empty() ? "unknown" : r.state);
    if (!r.answered) {
      s = "  " + r.region + ": no answer from its controller (down or unreachable); its copy is not shown";
    } else if (r.state == "PENDING") {
      if (!r.reason.empty()) s += " (" + r.reason + ")";
      if (r.start > 0) {
        s += "; Slurm's estimate " + local_clock(r.start) + (r.start > now ? " (in " + format_duration(r.start - now) + ")" : "");
        if (!r.nodes.empty()) s += " on " + r.nodes;
        if (!first || r.start < first->start) first = &r;
      }
      if (!r.select_note.empty()) s += "; select/mlsched there: " + r.select_note;
    } else if (r.holds_job()) {
      if (!r.nodes.empty()) s += " on " + r.nodes;
      if (r.start > 0) s += " since " + local_clock(r.start);
      running = &r;
    } else if (r.state == "REVOKED") {
      s += ": another region started the job";
    }
    out += shown(s, 600) + "\n";
  }
  if (running)
    out += "  the job runs in " + escape_controls(running->region) + "; Slurm revokes its copies elsewhere\n";
  else if (first) {
    std::vector<std::string> earliest;  // every region at the earliest estimate: a tie is said as one
    for (const auto& r : regions)
      if (r.state == "PENDING" && r.start == first->start) earliest.push_back(r.region);
    out += "  first to start as the estimates stand: " + shown(join(earliest, " and "), 400) + " (" +
           local_clock(first->start) + "); the first region that can start it runs it, whatever the estimates\n";
  }
  return out;
}

void add_silent_regions(std::vector<RegionView>& views, const std::string& active_siblings) {
  for (const auto& name : split(active_siblings, ',')) {
    const std::string region = trim(name);
    if (region.empty() || views.size() >= kMaxRegionsShown) continue;
    bool seen = false;
    for (const auto& v : views) seen = seen || v.region == region;
    if (seen) continue;
    RegionView v;
    v.region = region;
    v.answered = false;
    views.push_back(std::move(v));
  }
}

const RegionView* running_elsewhere(const std::vector<RegionView>& regions) {
  for (const auto& r : regions)
    if (!r.here && r.holds_job()) return &r;
  return nullptr;
}

std::string format_runs_elsewhere(const JobFacts& job, const RegionView& where, time_t now) {
  std::string s = "job " + job_label(job.job_id, job.name) + " (" + job.user + ", account " + job.account + ") " +
                  (where.state == "RUNNING" ? "runs" : "is " + where.state) + " in region " + where.region;
  if (!where.nodes.empty()) s += " on " + where.nodes;
  if (where.start > 0) s += " since " + local_clock(where.start) + (where.start <= now ? " (" + format_duration(now - where.start) + ")" : "");
  s += "; this region's copy (" + (job.state.empty() ? std::string("unknown") : job.state) +
       ") is Slurm's record of it: run mlsched why in " + where.region + " for the job itself";
  return shown(s, 800) + "\n";
}

}  // namespace mlsched
