// `mlsched why <jobid>`: reads the job, the nodes, the switches and every job
// from slurmctld through libslurm's public API, copies them into the core's
// snapshot values, and prints the core's explanation.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/config.h"
#include "core/directives.h"
#include "core/job_record.h"
#include "core/fairshare.h"
#include "core/ops.h"
#include "core/preempt.h"
#include "core/priority.h"
#include "core/submit.h"
#include "core/hostlist.h"
#include "core/text.h"
#include "core/why.h"
#include "tools/mlsched/cli.h"

#include "slurm_public.h"  // the release line's (src/plugins/common/slurm-X.Y)
// Likewise the state names sinfo prints ("IDLE", "MIXED", "DRAINED", "DOWN" ...).
extern "C" const char* slurm_node_state_string(uint32_t inx);

namespace mlsched::tool {

std::vector<TeamShareInfo> load_team_shares();  // shares.cc

namespace {

const char* const kWhyHelp =
    "usage: mlsched why <jobid> [--json]\n"
    "\n"
    "For a pending job: every reason it waits, with numbers (GPUs it needs vs.\n"
    "free now per GPU type, NVLink domain and switch), the running jobs in its\n"
    "way and when they end, its rank among pending jobs for the same GPUs, the\n"
    "ETA, and changes that would let it start now (computed on the same\n"
    "snapshot), and its team's GPUs against its guarantee and fair share. For a\n"
    "running job: where it runs (nodes, GPU indices, NVLink domain, switch and\n"
    "cliques), whether it borrows, its last checkpoint under `mlsched run` (as the\n"
    "job reported it to slurmctld, else from its checkpoint directory), and\n"
    "its preemption history (also for a pending, requeued job).\n"
    "\n"
    "NVLink domains and quotas come from mlsched.conf ($MLSCHED_CONF, else next\n"
    "to slurm.conf); NVLink cliques from gres.conf next to slurm.conf; switches\n"
    "from Slurm's topology; team usage and shares from slurmctld (as sshare).\n"
    "\n"
    "Reasons:\n";

}  // namespace

// Shared with history_cmd.cc (cli.h).
std::string user_name(uint32_t uid, const char* given) {
  if (given && *given) return given;
  if (struct passwd* pw = getpwuid(uid)) return pw->pw_name;
  return std::to_string(uid);
}

namespace {

}  // namespace

std::string slurm_error(const std::string& what) {
  return what + ": " + slurm_strerror(errno);
}

namespace {

// Where slurm.conf is (SLURM_CONF, as Slurm's clients read it); mlsched.conf and
// gres.conf are beside it.
std::string slurm_conf_dir() {
  std::string slurm_conf = "/etc/slurm/slurm.conf";
  if (const char* env = std::getenv("SLURM_CONF"); env && *env) slurm_conf = env;
  const size_t slash = slurm_conf.rfind('/');
  return slash == std::string::npos ? std::string(".") : slurm_conf.substr(0, slash);
}

// An admin's config file, read up to `max_bytes` (a gres.conf of 25,000 8-GPU
// nodes is ~20 MB; past the bound the rest is ignored, as the row bound does).
std::optional<std::string> read_text(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char chunk[65536];
  while (text.size() < max_bytes && in) {
    in.read(chunk, static_cast<std::streamsize>(std::min(sizeof chunk, max_bytes - text.size())));
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  return text;
}

}  // namespace

std::string mlsched_conf_path() {
  if (const char* env = std::getenv("MLSCHED_CONF"); env && *env) return env;
  return slurm_conf_dir() + "/mlsched.conf";
}

// The nodes and switches as the core's model, plus which GPUs are busy and, when
// asked, each node's Slurm state and reason.
void load_cluster(Cluster& cluster, ClusterState& state, std::vector<std::string>& notes,
                  std::vector<NodeHealth>* health) {
  node_info_msg_t* nodes = nullptr;
  if (slurm_load_node(0, &nodes, SHOW_ALL | SHOW_DETAIL | SHOW_MIXED) != SLURM_SUCCESS)
    throw ToolError(slurm_error("cannot read the nodes from slurmctld"));
  std::unique_ptr<node_info_msg_t, void (*)(node_info_msg_t*)> guard(nodes, slurm_free_node_info_msg);
  // NVLink cliques come from gres.conf beside slurm.conf: libslurm does not hand
  // out the Links= matrix slurmd reported, and gres.conf is what slurmd read it from.
  std::map<std::string, std::vector<std::vector<int>>> cliques;
  if (auto gres = read_text(slurm_conf_dir() + "/gres.conf", kMaxGresConfBytes)) cliques = nvlink_cliques_from_gres_conf(*gres);
  std::vector<NodeFacts> facts;
  std::vector<const node_info_t*> infos;
  for (uint32_t i = 0; i < nodes->record_count; ++i) {
    const node_info_t& n = nodes->node_array[i];
    if (!n.name) continue;
    auto c = cliques.find(n.name);
    facts.push_back({n.name, str(n.features), str(n.gres),
                     c == cliques.end() ? std::vector<std::vector<int>>() : std::move(c->second)});
    infos.push_back(&n);
  }

  std::vector<NvlinkDomainSpec> domains;
  const std::string conf_path = mlsched_conf_path();
  ConfigResult conf = load_config_file(conf_path);
  if (conf.config)
    domains = conf.config->nvlink_domains;
  else
    notes.push_back("NVLink domains unknown: " + (conf.errors.empty() ? conf_path + " unreadable" : conf.errors[0]));

  std::vector<SwitchSpec> switches;
  topo_info_response_msg_t* topo = nullptr;
  if (slurm_load_topo(&topo) == SLURM_SUCCESS && topo) {
    for (const auto& t : mlsched::tool::release::switches_of(*topo)) {
      SwitchSpec s;
      s.name = t.name;
      s.level = t.level;
      try {
        if (!t.nodes.empty()) s.nodes = expand_hostlist(t.nodes);
      } catch (const std::invalid_argument& e) {
        notes.push_back("switch " + s.name + ": " + e.what());
      }
      switches.push_back(std::move(s));
    }
    slurm_free_topo_info_msg(topo);
  }

  const ModelProblems problems = build_cluster_model(cluster, std::move(facts), domains, std::move(switches));
  for (const auto* list : {&problems.nodes, &problems.nvlink_domains})
    notes.insert(notes.end(), list->begin(), list->end());

  // The live state, parallel to the model's nodes.
  for (size_t k = 0; k < infos.size(); ++k) {
    const node_info_t& n = *infos[k];
    const uint32_t gpus = cluster.nodes()[k].gpus;
    NodeState ns;
    const uint32_t base = n.node_state & NODE_STATE_BASE;
    NodeCondition cond;
    cond.down = base == NODE_STATE_DOWN;
    cond.not_yet_up = base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN;
    cond.drained = n.node_state & NODE_STATE_DRAIN;
    cond.failing = n.node_state & NODE_STATE_FAIL;
    cond.not_responding = n.node_state & NODE_STATE_NO_RESPOND;
    ns.usable = usable_node(cond);
    ns.gpu_busy.assign(gpus, false);
    for (int idx : gpu_indices_from_gres(str(n.gres_used)))
      if (idx >= 0 && static_cast<uint32_t>(idx) < gpus) ns.gpu_busy[idx] = true;
    state.push_back(std::move(ns));
    if (health) {
      const char* name = slurm_node_state_string(n.node_state);
      health->push_back({lowercase(name ? name : "unknown"), str(n.reason)});
    }
  }
}

// The partitions (GPU pools) and their nodes. A partition whose node list cannot
// be read is left out, with a note.
std::vector<Pool> load_pools(std::vector<std::string>& notes) {
  partition_info_msg_t* parts = nullptr;
  if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS || !parts) {
    notes.push_back(slurm_error("partitions unknown (every node is considered)"));
    return {};
  }
  std::unique_ptr<partition_info_msg_t, void (*)(partition_info_msg_t*)> guard(parts, slurm_free_partition_info_msg);
  std::vector<Pool> pools;
  for (uint32_t i = 0; i < parts->record_count; ++i) {
    const partition_info_t& p = parts->partition_array[i];
    if (!p.name) continue;
    Pool pool;
    pool.name = p.name;
    try {
      if (p.nodes) pool.nodes = expand_hostlist(p.nodes);
    } catch (const std::invalid_argument& e) {
      notes.push_back("partition " + pool.name + ": " + e.what());
      continue;
    }
    pools.push_back(std::move(pool));
  }
  return pools;
}

namespace {

// What a job asks for in GPUs: from its TRES, refined by its mlsched directives.
GpuNeed request_of(const slurm_job_info_t& j, const std::optional<JobDirectives>& d) {
  JobRequest jr;
  jr.tres_per_node = str(j.tres_per_node);
  jr.tres_per_job = str(j.tres_per_job);
  jr.tres_per_task = str(j.tres_per_task);
  GpuRequest gpus;
  try {
    gpus = read_gpu_request(jr);
  } catch (const std::invalid_argument&) {
    // TRES text neither Slurm nor job_submit would hand out: explain it as no GPUs.
  }
  // The same normalization select/mlsched places with (core/submit gang_request).
  const GangRequest g = gang_request(gpus, j.num_nodes, j.num_tasks, d);
  GpuNeed r;
  r.gang = g.request.gang;
  r.gpu_types = g.request.gpu_types;
  r.locality = g.request.locality;
  r.locality_mode = g.request.mode;
  return r;
}

}  // namespace

// Shared with history_cmd.cc (cli.h).
std::map<std::string, std::vector<int>> gpus_by_node(const slurm_job_info_t& j) {
  std::map<std::string, std::vector<int>> out;
  if (!j.nodes || !*j.nodes) return out;
  std::vector<std::string> hosts;
  try {
    hosts = expand_hostlist(j.nodes);
  } catch (const std::invalid_argument&) {
    return out;
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    out[hosts[i]];
    if (i < j.gres_detail_cnt && j.gres_detail_str && j.gres_detail_str[i])
      out[hosts[i]] = gpu_indices_from_gres(j.gres_detail_str[i]);
  }
  return out;
}

const char* job_state_text(uint32_t state) {
  switch (state & JOB_STATE_BASE) {
    case JOB_PENDING: return "PENDING";
    case JOB_RUNNING: return "RUNNING";
    case JOB_SUSPENDED: return "SUSPENDED";
    case JOB_COMPLETE: return "COMPLETED";
    case JOB_CANCELLED: return "CANCELLED";
    case JOB_FAILED: return "FAILED";
    case JOB_TIMEOUT: return "TIMEOUT";
    case JOB_NODE_FAIL: return "NODE_FAIL";
    case JOB_PREEMPTED: return "PREEMPTED";
    case JOB_BOOT_FAIL: return "BOOT_FAIL";
    case JOB_DEADLINE: return "DEADLINE";
    case JOB_OOM: return "OUT_OF_MEMORY";
  }
  return "UNKNOWN";
}

std::string state_name(const slurm_job_info_t& j) { return job_state_text(j.job_state); }

namespace {

json_object* jstr(const std::string& s) { return json_object_new_string(s.c_str()); }

// For as long as it lives, the process acts as `uid`/`gid` for file access
// (effective ids and groups), when it runs as root: `mlsched why` is often run by
// root or an operator, and a user's checkpoint directory must be read with that
// user's rights only, so a link planted there to /etc/shadow opens nothing.
class AsUser {
 public:
  AsUser(uid_t uid, gid_t gid) {
    if (geteuid() != 0 || uid == 0) return;
    const int n = getgroups(0, nullptr);
    saved_groups_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (n > 0 && getgroups(n, saved_groups_.data()) != n) saved_groups_.clear();
    saved_gid_ = getegid();
    if (setgroups(1, &gid) != 0 || setegid(gid) != 0 || seteuid(uid) != 0) {
      error_ = std::string("cannot take the job's user's identity: ") + strerror(errno);
      restore();
      return;
    }
    dropped_ = true;
  }
  ~AsUser() {
    if (dropped_) restore();
  }
  const std::string& error() const { return error_; }

 private:
  void restore() {
    // Back to root first: only root may set the groups and gid again.
    if (seteuid(0) != 0 || setegid(saved_gid_) != 0 ||
        setgroups(saved_groups_.size(), saved_groups_.data()) != 0) {
      // Going on with another identity than the operator's would be worse than stopping.
      fprintf(stderr, "mlsched: cannot restore root's identity: %s\n", strerror(errno));
      _exit(70);
    }
  }
  std::vector<gid_t> saved_groups_;
  gid_t saved_gid_ = 0;
  bool dropped_ = false;
  std::string error_;
};

// The latest complete checkpoint `mlsched run` recorded in its default directory
// (mlsched-checkpoints/<jobid> in the job's working directory), read as the
// job's user, the way the job itself checks it (core/checkpoint.h).
void find_checkpoint(JobFacts& job, const std::string& work_dir, uid_t uid, gid_t gid) {
  if (work_dir.empty()) {
    job.checkpoint_note = "unknown (no working directory)";
    return;
  }
  job.checkpoint_dir = work_dir + "/mlsched-checkpoints/" + std::to_string(job.job_id);
  const AsUser as_user(uid, gid);
  if (!as_user.error().empty()) {
    job.checkpoint_note = "not read (" + as_user.error() + ")";
    return;
  }
  const LatestCheckpoint latest = read_latest_checkpoint(job.checkpoint_dir, uid);
  if (latest.record) {
    job.last_checkpoint = latest.record->time;
    job.last_checkpoint_path = latest.record->path;
  } else if (latest.missing) {
    job.checkpoint_note = "none marked in " + job.checkpoint_dir + " (or not readable by you; `mlsched run " +
                          "--checkpoint-dir` elsewhere is not seen)";
  } else {
    job.checkpoint_note = "not read: " + latest.problem;
  }
}

// Each team's usage and shares (as sshare shows them), the GPUs its running jobs
// hold, and its guarantee the way the plugins compute it.
void load_teams(Snapshot& snap, const Cluster& cluster, const job_info_msg_t* jobs, std::vector<std::string>& notes) {
  std::vector<TeamShareInfo> shares;
  try {
    shares = load_team_shares();
  } catch (const ToolError& e) {
    notes.push_back(std::string(e.what()) + "; fair share not shown");
  }
  std::map<std::string, TeamStanding> standing;
  for (const auto& t : shares) {
    TeamView& v = snap.teams[t.team];
    v.has_shares = true;
    v.shares_norm = t.shares_norm;
    v.usage_norm = t.usage_norm;
    v.fairshare = t.fairshare;
    standing[t.team].shares_norm = t.shares_norm;
  }
  ConfigResult conf = load_config_file(mlsched_conf_path());
  const Config config = conf.config ? *conf.config : Config{};
  snap.config = config;
  for (uint32_t i = 0; jobs && i < jobs->record_count; ++i) {
    const slurm_job_info_t& o = jobs->job_array[i];
    const uint32_t base = o.job_state & JOB_STATE_BASE;
    if (base != JOB_RUNNING || !o.account) continue;
    // Suspended jobs are left out, as priority/mlsched counts them; GPUs by quota
    // kind (TeamQuota per pool: the partition the job runs in).
    const GpuCounts g = gpus_by_quota_kind(config, gpu_counts_from_tres(str(o.tres_alloc_str)), str(o.partition));
    TeamView& v = snap.teams[o.account];
    for (const auto& [type, n] : g.by_type) v.in_use[lowercase(type)] += n;
    if (g.untyped) v.in_use[""] += g.untyped;
  }
  // Partitions are read only where a quota names one.
  const std::vector<Pool> pools = config.pool_quota_kinds.empty() ? std::vector<Pool>{} : load_pools(notes);
  const std::map<std::string, uint32_t> cluster_gpus = cluster_gpus_by_quota_kind(config, cluster, pools);
  const Quotas quotas(config, standing, cluster_gpus);
  for (auto& [team, v] : snap.teams)
    for (const auto& [type, n] : cluster_gpus) v.guaranteed[type] = quotas.guaranteed(team, type);
}

json_object* blockers_json(const WhyReport& rep) {
  json_object* blockers = json_object_new_array();
  for (const auto& b : rep.blockers) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "job_id", json_object_new_int64(b.job.job_id));
    json_object_object_add(o, "name", jstr(b.job.name));
    json_object_object_add(o, "user", jstr(b.job.user));
    json_object_object_add(o, "gpus", json_object_new_int64(b.gpus));
    json_object_object_add(o, "expected_end", json_object_new_int64(b.job.expected_end));
    json_object_array_add(blockers, o);
  }
  return blockers;
}

// Each pool a job accepts: whether it fits there now, what is in its way, until when.
json_object* pools_json(const std::vector<PoolReport>& pools) {
  json_object* arr = json_object_new_array();
  for (const auto& p : pools) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "pool", jstr(p.pool.name));
    json_object_object_add(o, "nodes", jstr(compress_hostlist(p.pool.nodes)));
    json_object_object_add(o, "fits_now", json_object_new_boolean(p.report.placement_now.empty()));
    json_object_object_add(o, "placement_now", jstr(p.report.placement_now));
    json_object_object_add(o, "blocked_place", jstr(p.report.blocked_place));
    json_object_object_add(o, "blockers", blockers_json(p.report));
    json_object_object_add(o, "model_eta", json_object_new_int64(p.report.model_eta));
    json_object_array_add(arr, o);
  }
  return arr;
}

// Long (~145 lines) on purpose: the JSON document field by field, in the order of
// format_why()'s screen, so the two stay easy to compare; no logic here.
json_object* report_json(const JobFacts& job, const WhyReport& rep, const std::vector<std::string>& notes) {
  json_object* root = json_object_new_object();
  json_object_object_add(root, "job_id", json_object_new_int64(job.job_id));
  json_object_object_add(root, "name", jstr(job.name));
  json_object_object_add(root, "user", jstr(job.user));
  json_object_object_add(root, "account", jstr(job.account));
  json_object_object_add(root, "partition", jstr(job.partition));
  json_object_object_add(root, "state", jstr(job.state));
  json_object_object_add(root, "slurm_reason", jstr(job.slurm_reason));
  json_object_object_add(root, "priority", json_object_new_int64(job.priority));
  json_object_object_add(root, "needs", jstr(rep.need));
  json_object_object_add(root, "directives", job.directives ? jstr(job.directives->to_string()) : nullptr);
  json_object* gpus = json_object_new_object();
  for (const auto& [node, idx] : job.gpus_by_node) {
    json_object* arr = json_object_new_array();
    for (int i : idx) json_object_array_add(arr, json_object_new_int(i));
    json_object_object_add(gpus, node.c_str(), arr);
  }
  json_object_object_add(root, "gpus_by_node", gpus);
  json_object* reasons = json_object_new_array();
  for (const auto& f : rep.findings) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "reason", jstr(f.reason));
    json_object_object_add(o, "message", jstr(f.message));
    json_object_array_add(reasons, o);
  }
  json_object_object_add(root, "reasons", reasons);
  json_object* free = json_object_new_array();
  for (const auto& u : rep.free) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "gpu_type", jstr(u.gpu_type));
    json_object_object_add(o, "scope", jstr(u.scope));
    json_object_object_add(o, "unit", jstr(u.unit));
    json_object_object_add(o, "free", json_object_new_int64(u.free));
    json_object_object_add(o, "total", json_object_new_int64(u.total));
    json_object_object_add(o, "on_unusable_nodes", json_object_new_int64(u.unusable));
    json_object_array_add(free, o);
  }
  json_object_object_add(root, "free_gpus", free);
  json_object* cf = json_object_new_array();
  for (const auto& c : rep.counterfactuals) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "change", jstr(c.change));
    json_object_object_add(o, "message", jstr(c.message));
    json_object_array_add(cf, o);
  }
  json_object_object_add(root, "counterfactuals", cf);
  json_object* blockers = blockers_json(rep);
  json_object* attained = nullptr;
  if (rep.attained.applies) {
    attained = json_object_new_object();
    json_object_object_add(attained, "level", json_object_new_int(rep.attained.level));
    json_object_object_add(attained, "levels", json_object_new_int(rep.attained.levels));
    json_object_object_add(attained, "gpu_seconds", json_object_new_int64(std::llround(rep.attained.gpu_seconds)));
    json_object_object_add(attained, "promote_at", json_object_new_int64(rep.attained.promote_at));
    json_object_object_add(attained, "preemptible_by_team", json_object_new_boolean(rep.attained.preemptible_by_team));
  }
  json_object_object_add(root, "attained_service", attained);
  json_object_object_add(root, "blocked_place", jstr(rep.blocked_place));
  json_object_object_add(root, "blockers", blockers);
  json_object_object_add(root, "slurm_start_estimate",
                         json_object_new_int64(job.state == "PENDING" ? job.start_time : 0));
  json_object_object_add(root, "model_eta", json_object_new_int64(rep.model_eta));
  json_object_object_add(root, "rank", json_object_new_int(rep.rank));
  json_object_object_add(root, "competing", json_object_new_int(rep.competing));
  json_object* ahead = json_object_new_array();
  for (const auto& p : rep.ahead) json_object_array_add(ahead, json_object_new_int64(p.job_id));
  json_object_object_add(root, "ahead", ahead);
  json_object* jnotes = json_object_new_array();
  for (const auto& n : notes) json_object_array_add(jnotes, jstr(n));
  json_object_object_add(root, "notes", jnotes);

  auto team_json = [](const TeamView& v) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "share", v.has_shares ? json_object_new_double(v.shares_norm) : nullptr);
    json_object_object_add(o, "usage_share", v.has_shares ? json_object_new_double(v.usage_norm) : nullptr);
    json_object_object_add(o, "fairshare", v.has_shares ? json_object_new_double(v.fairshare) : nullptr);
    return o;
  };
  const TeamReport& t = rep.team;
  if (t.known) {
    json_object* o = team_json(t.view);
    json_object_object_add(o, "team", jstr(t.team));
    json_object_object_add(o, "gpu_type", jstr(t.gpu_type));
    json_object_object_add(o, "holds", json_object_new_int64(t.holds));
    json_object_object_add(o, "guaranteed", json_object_new_int64(t.guaranteed));
    json_object_object_add(o, "job_gpus", json_object_new_int64(t.job_gpus));
    json_object_object_add(o, "job_borrows", json_object_new_boolean(t.job_borrows));
    if (t.kept_by) json_object_object_add(o, "guarantee_kept_for", json_object_new_int64(t.kept_by));
    json_object_object_add(o, "borrowing_from", t.borrowing_from.empty() ? nullptr : jstr(t.borrowing_from));
    json_object_object_add(o, "best_effort_rule", json_object_new_boolean(t.best_effort_rule));
    json_object_object_add(root, "team", o);
  } else {
    json_object_object_add(root, "team", nullptr);
  }
  json_object* ahead_teams = json_object_new_array();
  for (const auto& [name, v] : rep.teams_ahead) {
    json_object* o = team_json(v);
    json_object_object_add(o, "team", jstr(name));
    json_object_array_add(ahead_teams, o);
  }
  json_object_object_add(root, "teams_ahead", ahead_teams);
  // A large gang's reservation: the one this job holds (pending) or was lent (running).
  auto reservation_json = [](const std::optional<GangReservation>& r) -> json_object* {
    if (!r) return nullptr;
    json_object* o = json_object_new_object();
    json_object_object_add(o, "job_id", json_object_new_int64(r->job_id));
    json_object_object_add(o, "nodes", jstr(compress_hostlist(r->nodes)));
    json_object_object_add(o, "since", json_object_new_int64(r->since));
    return o;
  };
  json_object_object_add(root, "reservation", reservation_json(job.reservation));
  json_object_object_add(root, "lent_from", reservation_json(rep.lent_from));
  json_object_object_add(root, "borrowing_mark", job.borrowing_mark ? jstr(*job.borrowing_mark) : nullptr);
  json_object* pre = json_object_new_object();
  json_object_object_add(pre, "times", json_object_new_int64(job.preemptions.times));
  json_object_object_add(pre, "last_at", json_object_new_int64(job.preemptions.last_at));
  json_object_object_add(pre, "last_by", json_object_new_int64(job.preemptions.last_by));
  json_object_object_add(pre, "lost_gpu_seconds", json_object_new_double(job.preemptions.lost_gpu_seconds));
  json_object_object_add(root, "preemptions", pre);
  if (job.last_checkpoint) {
    json_object* ck = json_object_new_object();
    json_object_object_add(ck, "time", json_object_new_int64(job.last_checkpoint));
    json_object_object_add(ck, "path", job.last_checkpoint_path.empty() ? nullptr : jstr(job.last_checkpoint_path));
    json_object_object_add(ck, "reported", json_object_new_boolean(job.checkpoint_reported));
    json_object_object_add(root, "last_checkpoint", ck);
  } else {
    json_object_object_add(root, "last_checkpoint", nullptr);
  }
  json_object* placement = json_object_new_array();
  for (const auto& p : rep.placement) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "node", jstr(p.node));
    json_object* g = json_object_new_array();
    for (int i : p.gpus) json_object_array_add(g, json_object_new_int(i));
    json_object_object_add(o, "gpus", g);
    json_object_object_add(o, "nvlink_domain", p.nvlink_domain.empty() ? nullptr : jstr(p.nvlink_domain));
    json_object_object_add(o, "switch", p.leaf_switch.empty() ? nullptr : jstr(p.leaf_switch));
    json_object* cl = json_object_new_array();
    for (const auto& c : p.cliques) {
      json_object* one = json_object_new_array();
      for (int i : c) json_object_array_add(one, json_object_new_int(i));
      json_object_array_add(cl, one);
    }
    json_object_object_add(o, "nvlink_cliques", cl);
    json_object_array_add(placement, o);
  }
  json_object_object_add(root, "placement", placement);
  // select/mlsched's recorded reason beside why's recomputation (null when none).
  json_object* sel = nullptr;
  if (!job.select_reason.empty() || !rep.placement_now.empty()) {
    sel = json_object_new_object();
    json_object_object_add(sel, "select_reason", job.select_reason.empty() ? nullptr : jstr(job.select_reason));
    json_object_object_add(sel, "select_evaluated",
                           job.select_evaluated ? json_object_new_int64(job.select_evaluated) : nullptr);
    json_object_object_add(sel, "recomputed", rep.placement_now.empty() ? nullptr : jstr(rep.placement_now));
    json_object_object_add(sel, "differs", json_object_new_boolean(rep.select_differs));
  }
  json_object_object_add(root, "placement_reason", sel);
  json_object* ml = nullptr;
  if (job.ml) {
    ml = json_object_new_object();
    json_object_object_add(ml, "state", jstr(ml_state_name(job.ml->state)));
    json_object_object_add(ml, "run", json_object_new_int64(job.ml->run));
    json_object_object_add(ml, "detail", jstr(job.ml->detail));
  }
  json_object_object_add(root, "ml_state", ml);
  return root;
}

}  // namespace

namespace {

// The job itself, as `mlsched why` explains it: Slurm's view, mlsched's record,
// its checkpoint (read with the job owner's rights) and its upstream jobs.
JobFacts facts_of(const slurm_job_info_t& j, time_t now) {
  JobFacts job;
  job.job_id = j.job_id;
  job.name = str(j.name);
  job.user = user_name(j.user_id, j.user_name);
  job.account = str(j.account);
  job.partition = str(j.partition);
  job.state = state_name(j);
  job.slurm_reason = j.state_reason == WAIT_NO_REASON ? "None" : str(mlsched::tool::release::job_reason_text(static_cast<job_state_reason>(j.state_reason)));
  job.slurm_reason_detail = str(j.state_desc);
  job.priority = j.priority;
  job.submit_time = j.submit_time;
  // A pending job's eligible time is its --begin (Slurm shows it as EligibleTime).
  job.begin_time = job.state == "PENDING" && j.eligible_time > now ? j.eligible_time : 0;
  job.start_time = j.start_time;
  job.end_time = j.end_time;
  job.time_limit = j.time_limit == INFINITE || j.time_limit == NO_VAL ? 0 : int64_t{j.time_limit} * 60;
  job.admin_comment = str(j.admin_comment);
  const JobRecord record = decode_job_record(job.admin_comment);
  job.directives = record.directives;
  job.request = request_of(j, job.directives);
  job.gpus_by_node = gpus_by_node(j);
  job.borrowing_mark = record.marks.borrowing;
  job.preemptions = record.preemptions;
  job.restarts = j.restart_cnt;
  if (job.state == "PENDING" && j.priority > 0) job.reservation = reservation_of(job.job_id, record.marks);
  job.select_reason = select_reason_of(str(j.system_comment));
  job.select_evaluated = j.last_sched_eval;
  job.ml = ml_status(job_view(j));
  if (job.state == "RUNNING" || job.state == "SUSPENDED") {
    find_checkpoint(job, str(j.work_dir), j.user_id, j.group_id);
    // What the job reported to slurmctld (its Comment) is readable from any login
    // node; the directory's record, when readable, adds the path. Counted only within
    // this run, as preempt/mlsched counts it.
    const auto reported = trusted_checkpoint_time(checkpoint_report(str(j.comment)), j.start_time, now);
    if (reported && *reported >= job.last_checkpoint) {
      if (*reported != job.last_checkpoint) job.last_checkpoint_path.clear();
      job.last_checkpoint = *reported;
      job.checkpoint_reported = true;
    }
  }

  for (const auto& ref : parse_dependencies(str(j.dependency))) {
    UpstreamJob up;
    up.ref = ref;
    JobsMsg m;
    if (ref.job_id && slurm_load_job(&m.msg, ref.job_id, SHOW_ALL) == SLURM_SUCCESS && m.msg && m.msg->record_count) {
      const slurm_job_info_t& u = m.msg->job_array[0];
      up.found = true;
      up.name = str(u.name);
      up.state = state_name(u);
      if ((u.job_state & JOB_STATE_BASE) == JOB_RUNNING && u.time_limit != INFINITE) up.expected_end = u.end_time;
    }
    job.upstream.push_back(up);
  }
  return job;
}

// Every running and pending job of the cluster, for the counterfactuals and rank.
void add_other_jobs(Snapshot& snap, const job_info_msg_t* msg) {
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const slurm_job_info_t& o = msg->job_array[i];
    const uint32_t base = o.job_state & JOB_STATE_BASE;
    if (base == JOB_RUNNING || base == JOB_SUSPENDED) {
      RunningJob rj;
      rj.job_id = o.job_id;
      rj.name = str(o.name);
      rj.user = user_name(o.user_id, o.user_name);
      rj.account = str(o.account);
      rj.gpus_by_node = gpus_by_node(o);
      rj.expected_end = o.time_limit == INFINITE ? 0 : o.end_time;
      rj.preemption = preemption_view(o.job_id, decode_job_record(str(o.admin_comment)), o.restart_cnt);
      rj.preemption.start_time = o.start_time;
      for (const auto& [node, idx] : rj.gpus_by_node) rj.preemption.gpus_on_node[node] = std::max<uint32_t>(1, idx.size());
      snap.running.push_back(rj);
    } else if (base == JOB_PENDING) {
      // A job that waits for another job (a later pipeline stage) or can never run
      // does not compete for GPUs now.
      if (o.state_reason == WAIT_DEPENDENCY || o.state_reason == WAIT_DEP_INVALID) continue;
      PendingJob pj;
      pj.job_id = o.job_id;
      pj.name = str(o.name);
      pj.user = user_name(o.user_id, o.user_name);
      pj.partition = str(o.partition);
      pj.account = str(o.account);
      pj.priority = o.priority;
      const auto record = decode_job_record(str(o.admin_comment));
      // A large gang's reservation (select/mlsched drops it once the gang is held).
      if (o.priority > 0)
        if (auto r = reservation_of(o.job_id, record.marks)) snap.reservations.push_back(std::move(*r));
      // As priority/mlsched orders the queue: a requeued job keeps its first submission.
      pj.submit_time = o.submit_time;
      if (record.marks.first_submit > 0 && record.marks.first_submit < pj.submit_time)
        pj.submit_time = record.marks.first_submit;
      pj.eligible = !(o.eligible_time > snap.now);
      pj.preemptible = record.directives && record.directives->preemptible;
      const GpuNeed r = request_of(o, record.directives);
      pj.gpu_types = r.gpu_types;
      pj.gpus = r.total_gpus();
      if (pj.gpus > 0) snap.pending.push_back(pj);
    }
  }
}

}  // namespace

// explain() within the pools (partitions) the job accepts; the whole snapshot when
// none of them is known. What `mlsched why` and `pipeline status` both show.
namespace {
WhyReport explain_in_pools(const JobFacts& job, const Snapshot& whole, const std::vector<Pool>& pools) {
  const std::vector<Pool> mine = pools_of(job.partition, pools);
  if (mine.empty()) return explain(job, whole);
  Cluster in_pools;
  return explain(job, restrict_to_pools(whole, mine, in_pools));
}
}  // namespace

// The why model's start ETA of each pending job (0: unknown), on one snapshot:
// what `pipeline status` shows beside its stages.
std::map<uint32_t, time_t> model_etas(const job_info_msg_t* all, const std::vector<const slurm_job_info_t*>& jobs,
                                      std::vector<std::string>& notes) {
  std::map<uint32_t, time_t> out;
  if (jobs.empty()) return out;
  const time_t now = time(nullptr);
  Cluster cluster;
  Snapshot snap;
  load_cluster(cluster, snap.state, notes, nullptr);
  snap.cluster = &cluster;
  snap.now = now;
  add_other_jobs(snap, all);
  load_teams(snap, cluster, all, notes);
  const std::vector<Pool> pools = load_pools(notes);
  for (const auto* j : jobs) out[j->job_id] = explain_in_pools(facts_of(*j, now), snap, pools).model_eta;
  return out;
}

// Every region's copy of a federated job (SHOW_SIBLING: libslurm asks each region's
// controller and keeps every copy). A region that does not answer is left out, with a note.
std::vector<RegionView> region_views(uint32_t job_id, std::vector<std::string>& notes) {
  std::vector<RegionView> out;
  JobsMsg m;
  if (slurm_load_job(&m.msg, job_id, SHOW_DETAIL | SHOW_ALL | SHOW_SIBLING) != SLURM_SUCCESS || !m.msg) {
    notes.push_back(slurm_error("cannot read the job's copies in the other regions"));
    return out;
  }
  const std::string here = cluster_name_from_slurmctld();
  std::string active;  // the regions holding a copy, as the copy here (else any) lists them
  for (uint32_t i = 0; i < m.msg->record_count && out.size() < kMaxRegionsShown; ++i) {
    const slurm_job_info_t& s = m.msg->job_array[i];
    if (s.job_id != job_id) continue;
    RegionView v;
    v.region = str(s.cluster);
    v.here = v.region == here;
    v.state = state_name(s);
    if (v.state == "PENDING" && s.state_reason != WAIT_NO_REASON)
      v.reason = str(mlsched::tool::release::job_reason_text(static_cast<job_state_reason>(s.state_reason)));
    v.start = s.start_time;
    v.nodes = v.state == "PENDING" ? str(s.sched_nodes) : str(s.nodes);
    v.select_note = select_reason_of(str(s.system_comment));
    if (active.empty() || v.here) active = str(s.fed_siblings_active_str);
    out.push_back(std::move(v));
  }
  // A region whose controller is down sends nothing: name it rather than leave it out.
  add_silent_regions(out, active);
  return out;
}

// "west (RUNNING)" for a job id this region has no copy of, from the federation's view.
std::string regions_holding(uint32_t job_id) {
  std::vector<std::string> notes;
  std::vector<std::string> where;
  for (const auto& r : region_views(job_id, notes)) where.push_back(r.region + " (" + r.state + ")");
  return join(where, ", ");
}

json_object* regions_json(const std::vector<RegionView>& regions) {
  if (regions.empty()) return nullptr;
  json_object* arr = json_object_new_array();
  for (const auto& r : regions) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "region", jstr(r.region));
    json_object_object_add(o, "here", json_object_new_boolean(r.here));
    json_object_object_add(o, "state", r.answered ? jstr(r.state) : nullptr);
    json_object_object_add(o, "answered", json_object_new_boolean(r.answered));
    json_object_object_add(o, "reason", r.reason.empty() ? nullptr : jstr(r.reason));
    json_object_object_add(o, "start_time", r.start > 0 ? json_object_new_int64(r.start) : nullptr);
    json_object_object_add(o, "nodes", r.nodes.empty() ? nullptr : jstr(r.nodes));
    json_object_object_add(o, "select_reason", r.select_note.empty() ? nullptr : jstr(r.select_note));
    json_object_array_add(arr, o);
  }
  return arr;
}

int cmd_why(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kWhyHelp, stdout);
    for (const auto& d : wait_reason_docs()) printf("  %-26s %s\n", d.code, d.meaning);
    return 0;
  }
  const bool json = args.flag("--json");
  const std::string id_text = args.positional();
  args.expect_no_more("why");
  if (id_text.empty()) throw UsageError("which job? give a job id");
  const auto id = parse_uint(id_text);
  if (!id || *id == 0 || *id > 0xfffffff0ULL) throw UsageError("'" + id_text + "' is not a job id");

  slurm_init(nullptr);
  // This region's copy (SHOW_LOCAL): in a federation libslurm would otherwise ask every
  // region and keep one copy, perhaps another region's, which this region's model
  // (its nodes, its mlsched.conf) cannot explain. Other regions come in below.
  JobsMsg target;
  if (slurm_load_job(&target.msg, static_cast<uint32_t>(*id), SHOW_DETAIL | SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS) {
    const int err = errno;
    if (err == ESLURM_INVALID_JOB_ID) {
      const std::string elsewhere = regions_holding(static_cast<uint32_t>(*id));
      if (!elsewhere.empty())
        throw ToolError("job " + id_text + " has no copy in this region; it is in " + elsewhere +
                        ": run mlsched why where it is (SLURM_CONF of that region)");
      throw ToolError("job " + id_text + " does not exist (or has left Slurm's memory)");
    }
    throw ToolError(slurm_error("cannot read job " + id_text + " from slurmctld"));
  }
  if (!target.msg || target.msg->record_count == 0) throw ToolError("job " + id_text + " does not exist");
  const slurm_job_info_t& j = target.msg->job_array[0];

  const time_t now = time(nullptr);
  const JobFacts job = facts_of(j, now);
  std::vector<std::string> notes;

  // A federated job: every region's copy, as that region's controller sees it. When
  // another region runs it, there is no wait here to explain.
  const std::string origin = str(j.fed_origin_str);
  const std::vector<RegionView> regions = origin.empty() ? std::vector<RegionView>() : region_views(j.job_id, notes);
  if (const RegionView* where = running_elsewhere(regions)) {
    if (json) {
      json_object* root = json_object_new_object();
      json_object_object_add(root, "job_id", json_object_new_int64(job.job_id));
      json_object_object_add(root, "state", jstr(job.state));
      json_object_object_add(root, "runs_in_region", jstr(where->region));
      json_object_object_add(root, "origin_region", jstr(origin));
      json_object_object_add(root, "regions", regions_json(regions));
      print_json(root);
    } else {
      printf("%s\n%s", format_runs_elsewhere(job, *where, now).c_str(), format_regions(origin, regions, now).c_str());
      for (const auto& n : notes) printf("note: %s\n", n.c_str());
    }
    return 0;
  }

  Cluster cluster;
  Snapshot snap;
  load_cluster(cluster, snap.state, notes, nullptr);
  snap.cluster = &cluster;
  snap.now = now;

  JobsMsg all;
  if (slurm_load_jobs(0, &all.msg, SHOW_DETAIL | SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS)
    throw ToolError(slurm_error("cannot read the job list from slurmctld"));
  add_other_jobs(snap, all.msg);

  load_teams(snap, cluster, all.msg, notes);

  // Explained against the pools (partitions) it may run in; a pending job that
  // names several also gets each pool's view.
  const std::vector<Pool> all_pools = load_pools(notes);
  const WhyReport report = explain_in_pools(job, snap, all_pools);
  const std::vector<Pool> pools = pools_of(job.partition, all_pools);
  const std::vector<PoolReport> per_pool =
      job.state == "PENDING" && pools.size() > 1 ? explain_pools(job, snap, pools) : std::vector<PoolReport>();
  // A pipeline stage: what comes after it and what happens to that.
  const std::string pipeline = pipeline_note(j, all.msg, now);
  if (json) {
    json_object* root = report_json(job, report, notes);
    json_object_object_add(root, "pipeline", pipeline.empty() ? nullptr : jstr(pipeline));
    json_object_object_add(root, "pools", pools_json(per_pool));
    json_object_object_add(root, "origin_region", origin.empty() ? nullptr : jstr(origin));
    json_object_object_add(root, "regions", regions_json(regions));
    print_json(root);
  } else {
    fputs(format_why(job, report, now).c_str(), stdout);
    if (!per_pool.empty()) printf("\n%s", format_pools(per_pool, now).c_str());
    if (!regions.empty()) printf("\n%s", format_regions(origin, regions, now).c_str());
    if (!pipeline.empty()) printf("\n%s\n", pipeline.c_str());
    for (const auto& n : notes) printf("note: %s\n", n.c_str());
  }
  return 0;
}

}  // namespace mlsched::tool
