// preempt/mlsched: checkpoint-signal preemption that loses the least work. A team
// within its guaranteed GPU quota reclaims GPUs from other teams' borrowing,
// preemptible jobs; with PreemptForAttainedService a team's fresh jobs also take
// GPUs from its own jobs that attained more service. The victims get their
// checkpoint signal, their own checkpoint-grace to save, and are requeued.
//
// How it fits Slurm 22.05 (src/slurmctld/preempt.c): for one pending job, Slurm
// asks preempt_p_preemptable() about every running job, then sorts the accepted
// ones by PREEMPT_DATA_PRIO (lowest first), and the select plugin removes them in
// that order until the job fits. So preemptable() records the accepted candidates
// of the scan in progress (per thread: scans run on the scheduling thread that
// holds the job lock), and the first PRIO request of that scan lets the core
// choose the least-lost-work victim set and ranks it first.
//
// Slurm iterates job_list with the list's write lock held while it asks
// preempt_p_preemptable(), so the plugin must not walk job_list there. Whether a
// job is borrowing depends on all of its team's running jobs: a thread of ours
// copies them out under slurmctld's read locks every second into a snapshot, and
// the decisions read that snapshot plus the two jobs' own fresh records. No file
// or network I/O happens under slurmctld's locks.
#include <chrono>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/directives.h"
#include "core/job_record.h"
#include "core/fairshare.h"
#include "core/hostlist.h"
#include "core/preempt.h"
#include "core/priority.h"
#include "core/text.h"
#include "plugins/common/cluster_snapshot.h"
#include "plugins/common/config_store.h"
#include "plugins/common/guard.h"
#include "plugins/common/job_records.h"
#include "plugins/common/ctld.h"
#include "plugins/common/periodic_worker.h"
#include "plugins/common/slurm_headers.h"

// slurmctld's tables; weak so the plugin load test (libslurmfull, no controller)
// can dlopen it. Only slurmctld loads preempt plugins, and it defines them.
#pragma weak job_list
#pragma weak last_job_update
#pragma weak assoc_mgr_assoc_list
#pragma weak assoc_mgr_root_assoc

MLSCHED_EXPORT const char plugin_name[] = "mlsched preempt plugin: reclaim borrowed GPUs, least lost work first";
MLSCHED_EXPORT const char plugin_type[] = "preempt/mlsched";
MLSCHED_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

namespace {

constexpr const char* kLog = "preempt/mlsched";
// Candidates outside a scan's ranking sort after every ranked one.
constexpr uint32_t kUnranked = 0x7fffffff;

mlsched::plugin::ConfigStore g_config;
mlsched::plugin::ClusterSnapshot g_snapshot;

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// Running GPU jobs and GPU nodes as of the last refresh (see the file comment).
struct Snapshot {
  std::map<uint32_t, mlsched::PreemptCandidate> running;  // borrowing marked
  std::vector<mlsched::PreemptNode> nodes;
  std::vector<int> node_index;  // parallel to nodes: index in slurmctld's node table
  mlsched::TeamGpusInUse in_use;
  std::map<std::string, mlsched::TeamStanding> standing;  // shares_norm only
  std::map<std::string, uint32_t> cluster_gpus;            // lowercase gpu_type -> GPUs
};
std::mutex g_snapshot_mutex;
std::shared_ptr<const Snapshot> g_latest;

// Victims chosen for each preemptor, so that while one is still saving its
// checkpoint or being requeued, Slurm does not pick further victims for the same
// preemptor (stock Slurm would, once the first one's GPUs show as completing).
std::mutex g_reclaim_mutex;
std::map<uint32_t, std::vector<uint32_t>> g_reclaiming;  // preemptor -> victims

mlsched::plugin::PeriodicWorker g_worker;

// Whether priority/mlsched is the priority plugin: then its `borrowing=` marks on
// running jobs say which jobs borrow (see mlsched::decide_borrowing). PriorityType
// only changes with a controller restart, so init() reads it once.
bool g_priority_marks = false;

// One preemptor's scan over the running jobs.
struct Scan {
  uint32_t preemptor_id = 0;
  time_t started = 0;
  bool ranked = false;
  bool have_snapshot = false;  // false before the first refresh: nobody is preempted
  std::shared_ptr<const Snapshot> snapshot;
  mlsched::Preemptor preemptor;
  std::vector<mlsched::PreemptNode> nodes;          // those the preemptor may run on
  std::set<uint32_t> in_progress;                  // victims already giving way to it
  std::set<uint32_t> asked;                        // candidates seen in this scan
  std::vector<mlsched::PreemptCandidate> allowed;  // accepted, in the order Slurm asked
  std::map<uint32_t, uint32_t> rank;
  mlsched::BeyondGuaranteeOf beyond;  // teams' standings in the snapshot (PreemptForNonPreemptible)
};
thread_local std::unique_ptr<Scan> t_scan;

std::shared_ptr<const mlsched::Config> config() { return g_config.get(); }

// Entitlements for quotas that mlsched.conf does not fix: shares over all teams.
std::map<std::string, mlsched::TeamStanding> team_shares() {
  std::map<std::string, mlsched::TeamStanding> standing;
  if (!assoc_mgr_assoc_list) return standing;
  assoc_mgr_lock_t assoc_read = {READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  assoc_mgr_lock(&assoc_read);
  std::map<std::string, uint32_t> shares;
  ListIterator it = list_iterator_create(assoc_mgr_assoc_list);
  while (auto* assoc = static_cast<slurmdb_assoc_rec_t*>(list_next(it))) {
    if (assoc->user || assoc == assoc_mgr_root_assoc || !assoc->acct || !xstrcasecmp(assoc->acct, "root")) continue;
    shares[assoc->acct] =
        (assoc->shares_raw == SLURMDB_FS_USE_PARENT || assoc->shares_raw == NO_VAL) ? 1 : assoc->shares_raw;
  }
  list_iterator_destroy(it);
  assoc_mgr_unlock(&assoc_read);
  double total = 0;
  for (const auto& [team, s] : shares) total += s;
  for (const auto& [team, s] : shares) standing[team].shares_norm = total > 0 ? s / total : 0;
  return standing;
}

// Copies running jobs and nodes out of slurmctld. Caller holds the job, node and partition
// read locks.
std::shared_ptr<const Snapshot> take_snapshot(const mlsched::Config& config, unsigned config_generation) {
  auto snap = std::make_shared<Snapshot>();
  const auto model = g_snapshot.get(config, config_generation, kLog);

  std::map<std::string, uint32_t> busy;  // node -> GPUs held by running jobs
  std::vector<mlsched::PreemptCandidate> running;
  if (job_list) {
    ListIterator it = list_iterator_create(job_list);
    while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
      if (!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) continue;
      auto c = mlsched::plugin::running_view(job_ptr, config);
      if (c.gpus() == 0) continue;
      for (const auto& [node, n] : c.gpus_on_node) busy[node] += n;
      running.push_back(std::move(c));
    }
    list_iterator_destroy(it);
  }

  node_record_t** table = mlsched::plugin::ctld::node_table();
  // The partitions of each node, where a TeamQuota names one (quotas per pool).
  const auto pools_of_node = mlsched::plugin::partitions_of_nodes(config);
  std::vector<mlsched::NodeGpus> gpu_nodes;
  for (size_t i = 0; i < model->cluster.nodes().size(); ++i) {
    const auto& n = model->cluster.nodes()[i];
    if (n.gpus == 0) continue;
    mlsched::NodeGpus g;
    g.by_type[mlsched::lowercase(n.gpu_type)] = n.gpus;
    if (model->slurm_index[i] < pools_of_node.size()) g.pools = pools_of_node[model->slurm_index[i]];
    gpu_nodes.push_back(std::move(g));
    mlsched::PreemptNode pn{n.name, n.gpu_type, n.nvlink_domain, 0};
    const node_record_t* node_ptr = table ? table[model->slurm_index[i]] : nullptr;
    const bool usable = node_ptr && mlsched::usable_node(mlsched::plugin::node_condition(node_ptr));
    const uint32_t held = busy[n.name];
    pn.free_gpus = usable && n.gpus > held ? n.gpus - held : 0;
    snap->nodes.push_back(std::move(pn));
    snap->node_index.push_back(static_cast<int>(model->slurm_index[i]));
  }
  snap->cluster_gpus = mlsched::cluster_gpus_by_quota_kind(config, gpu_nodes);

  snap->standing = team_shares();
  const mlsched::Quotas quotas(config, snap->standing, snap->cluster_gpus);
  mlsched::mark_borrowing(running, [&](const std::string& team, const std::string& type) {
    return quotas.guaranteed(team, type);
  });
  for (const auto& c : running) snap->in_use[c.team][c.kind()] += c.gpus();
  for (auto& c : running) snap->running.emplace(c.job_id, std::move(c));
  return snap;
}

void refresh_loop(mlsched::plugin::PeriodicWorker& worker) {
  time_t seen_job_update = -1, seen_node_update = -1;
  unsigned seen_generation = 0;
  while (!worker.stopping()) {
    try {
      const unsigned generation = g_config.generation();
      if (auto cfg = g_config.get()) {
        slurmctld_lock_t read = {NO_LOCK, READ_LOCK, READ_LOCK, READ_LOCK, NO_LOCK};  // jobs, nodes, partitions
        lock_slurmctld(read);
        std::shared_ptr<const Snapshot> snap;
        try {
          const time_t job_update = last_job_update, node_update = mlsched::plugin::ctld::last_node_update();
          // Unchanged jobs, nodes and config: the last snapshot still holds (time
          // rules are applied at decision time, not here).
          if (job_update != seen_job_update || node_update != seen_node_update || generation != seen_generation) {
            snap = take_snapshot(*cfg, generation);
            // Forget preemptors that are no longer waiting.
            std::lock_guard<std::mutex> guard(g_reclaim_mutex);
            for (auto it = g_reclaiming.begin(); it != g_reclaiming.end();) {
              const job_record_t* j = find_job_record(it->first);
              it = (j && IS_JOB_PENDING(j)) ? std::next(it) : g_reclaiming.erase(it);
            }
            seen_job_update = job_update;
            seen_node_update = node_update;
            seen_generation = generation;
          }
        } catch (...) {
          unlock_slurmctld(read);
          throw;
        }
        unlock_slurmctld(read);
        if (snap) {
          std::lock_guard<std::mutex> guard(g_snapshot_mutex);
          g_latest = std::move(snap);
        }
      }
    } catch (const std::exception& e) {
      error("%s: snapshot of running jobs failed: %s", kLog, e.what());
    } catch (...) {
      error("%s: snapshot of running jobs failed", kLog);
    }
    worker.sleep_for(std::chrono::seconds(1));
  }
}

// Builds a scan for `preemptor_ptr` on the latest snapshot. Caller (slurmctld)
// holds the job lock; job_list must not be walked (see the file comment).
std::unique_ptr<Scan> start_scan(const job_record_t* preemptor_ptr, std::shared_ptr<const mlsched::Config> cfg) {
  const mlsched::Config& config = *cfg;
  auto scan = std::make_unique<Scan>();
  scan->preemptor_id = preemptor_ptr->job_id;
  scan->started = time(nullptr);
  bool& have_snapshot = scan->have_snapshot;
  {
    std::lock_guard<std::mutex> guard(g_snapshot_mutex);
    have_snapshot = g_latest != nullptr;
    scan->snapshot = have_snapshot ? g_latest : std::make_shared<const Snapshot>();
  }
  const Snapshot& snap = *scan->snapshot;
  const mlsched::Quotas quotas(config, snap.standing, snap.cluster_gpus);
  // Only nodes of its partition that it did not exclude can take it (features and
  // GPU types are matched by the core).
  bitstr_t* partition = preemptor_ptr->part_ptr ? preemptor_ptr->part_ptr->node_bitmap : nullptr;
  bitstr_t* excluded = preemptor_ptr->details ? preemptor_ptr->details->exc_node_bitmap : nullptr;
  bitstr_t* required = preemptor_ptr->details ? preemptor_ptr->details->req_node_bitmap : nullptr;
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const int idx = snap.node_index[i];
    auto inside = [idx](bitstr_t* b) { return idx < bit_size(b) && bit_test(b, idx); };
    if (partition && !inside(partition)) continue;
    if (excluded && inside(excluded)) continue;
    if (required && !inside(required)) continue;
    scan->nodes.push_back(snap.nodes[i]);
  }

  mlsched::Preemptor& p = scan->preemptor;
  p.job_id = preemptor_ptr->job_id;
  p.team = str(preemptor_ptr->account);
  const auto wanted = mlsched::gpu_counts_from_tres(str(preemptor_ptr->tres_fmt_req_str));
  p.gpus = wanted.total();
  p.gpu_type = wanted.single_type();
  // Slurm sets begin_time when the job becomes eligible (dependencies met, --begin
  // passed) and again on a requeue: the large-gang rule counts from there.
  if (preemptor_ptr->details) p.eligible_since = preemptor_ptr->details->begin_time;
  const auto record = mlsched::plugin::job_record_of(preemptor_ptr);
  // Attained service: Slurm's submit time is that of the last requeue, when the job
  // last became pending (priority/mlsched's queued time).
  p.attained_gpu_seconds = record->marks.attained_gpu_seconds;
  if (preemptor_ptr->details) p.queued_since = preemptor_ptr->details->submit_time;
  if (preemptor_ptr->part_ptr) p.partition = str(preemptor_ptr->part_ptr->name);
  // A job submitted without directives never offered to give way (candidate_of).
  p.preemptible = record->directives && record->directives->preemptible;
  // A large gang's reservation (select/mlsched took it): jobs lent its GPUs yield.
  p.reservation = mlsched::reservation_of(p.job_id, record->marks);
  if (const auto& d = record->directives) {
    // Only a strict locality binds the select plugin; a preferred one may widen.
    if (d->locality_mode == mlsched::LocalityMode::strict) p.locality = d->locality;
    if (p.gpu_type.empty() && d->gpu_types.size() == 1) p.gpu_type = mlsched::lowercase(d->gpu_types[0]);
  }
  // Victims picked earlier that are still in their grace time or being requeued:
  // the preemptor waits for them rather than taking more. find_job_record() reads
  // the job hash table, not job_list, so it is safe here.
  {
    std::lock_guard<std::mutex> guard(g_reclaim_mutex);
    auto it = g_reclaiming.find(p.job_id);
    if (it != g_reclaiming.end()) {
      for (uint32_t id : it->second) {
        const job_record_t* v = find_job_record(id);
        if (v && ((IS_JOB_RUNNING(v) && v->preempt_time) || IS_JOB_COMPLETING(v))) scan->in_progress.insert(id);
      }
    }
  }
  // Before the first snapshot nobody is known to be within quota: no preemption.
  p.borrowing = !have_snapshot ||
                quotas.borrowing(p.team, mlsched::quota_kind(config, p.gpu_type, p.partition), p.gpus, snap.in_use);
  if (have_snapshot && config.preempt_for_non_preemptible) {
    // Holds the snapshot and the config it was read with: the scan may outlive a reload.
    scan->beyond = [snapshot = scan->snapshot, cfg](
                       const std::string& team, const std::string& type) -> int64_t {
      const mlsched::Quotas q(*cfg, snapshot->standing, snapshot->cluster_gpus);
      auto t = snapshot->in_use.find(team);
      const uint64_t held = t == snapshot->in_use.end() ? 0 : mlsched::gpus_of_type(t->second, type);
      return static_cast<int64_t>(held) - static_cast<int64_t>(q.guaranteed(team, type));
    };
  }
  return scan;
}

void rank_scan(Scan& scan) {
  scan.ranked = true;
  const time_t now = time(nullptr);
  const auto choice = mlsched::choose_victims(scan.preemptor, scan.allowed, scan.nodes, now);
  scan.rank = mlsched::preemption_order(choice, scan.allowed, now);
  if (!choice.found) {
    debug("%s: JobId=%u: %s", kLog, scan.preemptor_id, choice.reason.c_str());
    return;
  }
  bool news = false;  // logged at info once per preemptor and victim set
  if (scan.in_progress.empty() && !choice.victims.empty()) {
    std::lock_guard<std::mutex> guard(g_reclaim_mutex);
    auto& known = g_reclaiming[scan.preemptor_id];
    news = known != choice.victims;
    known = choice.victims;
  }
  std::string ids;
  for (uint32_t id : choice.victims) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  if (choice.victims.empty()) return;
  char line[512];
  snprintf(line, sizeof line, "JobId=%u (team %s, %u GPUs) may reclaim from JobId=%s in %s, losing %.0f GPU-seconds of work",
           scan.preemptor_id, scan.preemptor.team.c_str(), scan.preemptor.gpus, ids.c_str(), choice.unit.c_str(),
           choice.lost_gpu_seconds);
  if (news) info("%s: %s", kLog, line);
  else debug("%s: %s", kLog, line);
}

// Slurm asks for the grace time exactly once per victim, when it picks it (the
// preemptor's scan on this thread chose it): the moment to record the preemption
// on the victim. Only the job record in memory changes here (slurmctld holds the
// job write lock); Slurm saves it with the job's requeue.
void record_preemption(job_record_t* job_ptr) {
  // Asked just before Slurm sets preempt_time: a set one means already recorded.
  if (!job_ptr || job_ptr->preempt_time != 0) return;
  const time_t now = time(nullptr);
  uint32_t preemptor = 0;
  std::optional<mlsched::PreemptCandidate> seen;
  if (t_scan) {
    for (const auto& c : t_scan->allowed)
      if (c.job_id == job_ptr->job_id) {
        preemptor = t_scan->preemptor_id;
        seen = c;
      }
  }
  if (!preemptor) {
    std::lock_guard<std::mutex> guard(g_reclaim_mutex);
    for (const auto& [by, victims] : g_reclaiming)
      for (uint32_t v : victims)
        if (v == job_ptr->job_id) preemptor = by;
  }
  const auto cfg = config();
  const mlsched::PreemptCandidate victim =
      seen ? *seen : mlsched::plugin::running_view(job_ptr, cfg ? *cfg : mlsched::Config{});
  const double lost = mlsched::lost_work(victim, now);
  const std::string after =
      mlsched::with_preemption_recorded(str(job_ptr->admin_comment), preemptor, now, lost);
  xfree(job_ptr->admin_comment);
  job_ptr->admin_comment = xstrdup(after.c_str());
  const auto checkpoint = mlsched::trusted_checkpoint_time(victim.last_checkpoint, victim.start_time, now);
  const std::string basis = checkpoint ? "its checkpoint reported " + std::to_string(now - *checkpoint) + " s ago"
                                       : "no checkpoint reported in this run";
  info("%s: JobId=%u preempted for JobId=%u, about %.0f GPU-seconds of work at risk (%s)", kLog, job_ptr->job_id,
       preemptor, lost, basis.c_str());
}

uint32_t grace_of(const job_record_t* job_ptr, const mlsched::Config& config) {
  if (!job_ptr) return 0;
  const auto record = mlsched::plugin::job_record_of(job_ptr);
  const auto& d = record->directives;
  if (!d) return 0;  // no directives: no checkpoint to wait for
  return std::min(d->checkpoint_grace, config.max_checkpoint_grace);
}

}  // namespace

// preempt plugins are loaded by slurmctld only.
MLSCHED_EXPORT int init(void) {
  return mlsched::plugin::guarded(kLog, "init", SLURM_ERROR, [] {
    if (!g_config.start(slurm_conf.slurm_conf, kLog)) return SLURM_ERROR;
    g_priority_marks = !xstrcasecmp(slurm_conf.priority_type, "priority/mlsched");
    g_worker.start(refresh_loop);
    verbose("%s loaded", plugin_type);
    return SLURM_SUCCESS;
  });
}

MLSCHED_EXPORT int fini(void) {
  try {
    g_worker.stop();
    g_config.stop_watching();
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: fini failed with a non-standard exception", kLog);
  }
  return SLURM_SUCCESS;
}

// May `preemptee` give way to `preemptor`? 22.05 passes the victim first (see
// _is_job_preempt_exempt_internal in src/slurmctld/preempt.c). Caller holds the
// job write lock.
MLSCHED_EXPORT bool preempt_p_preemptable(job_record_t* preemptee, job_record_t* preemptor) {
  try {
    if (!preemptee || !preemptor) return false;
    const auto cfg = config();
    if (!cfg) return false;
    const time_t now = time(nullptr);
    // A new scan: another preemptor, a candidate asked twice (Slurm started over),
    // a scan already ranked, or one left over from long ago.
    if (!t_scan || t_scan->preemptor_id != preemptor->job_id || t_scan->ranked ||
        t_scan->asked.count(preemptee->job_id) || now - t_scan->started > 10)
      t_scan = start_scan(preemptor, cfg);
    Scan& scan = *t_scan;
    scan.asked.insert(preemptee->job_id);
    if (!IS_JOB_RUNNING(preemptee) || !scan.have_snapshot) return false;
    if (!scan.in_progress.empty() && !scan.in_progress.count(preemptee->job_id)) {
      debug2("%s: JobId=%u waits for its earlier victims before JobId=%u", kLog, preemptor->job_id,
             preemptee->job_id);
      return false;
    }
    // The victim's own record is fresh. Whether it borrows: priority/mlsched's mark
    // when that plugin runs, else the snapshot's estimate (a job started since is
    // not known to borrow, so it is left alone).
    mlsched::PreemptCandidate victim = mlsched::plugin::running_view(preemptee, *cfg);
    auto known = scan.snapshot->running.find(preemptee->job_id);
    const bool estimate = known != scan.snapshot->running.end() && known->second.borrowing;
    const auto borrowing = mlsched::decide_borrowing(
        mlsched::plugin::job_record_of(preemptee)->marks.borrowing, g_priority_marks, estimate);
    victim.borrowing = borrowing.borrowing;
    if (borrowing.borrowing && scan.preemptor.borrowing &&
        mlsched::starving_large_gang(scan.preemptor, *cfg, now))
      debug("%s: JobId=%u (%u GPUs) has waited %ld s: as a large gang it may reclaim borrowed GPUs", kLog,
            preemptor->job_id, scan.preemptor.gpus, static_cast<long>(now - scan.preemptor.eligible_since));
    const auto verdict = mlsched::may_preempt(scan.preemptor, victim, *cfg, now, scan.beyond);
    if (verdict != mlsched::PreemptVerdict::allowed) {
      debug2("%s: JobId=%u may not preempt JobId=%u: %s (borrowing: %s)", kLog, preemptor->job_id,
             preemptee->job_id, mlsched::verdict_name(verdict), mlsched::borrowing_source_name(borrowing.source));
      return false;
    }
    scan.allowed.push_back(std::move(victim));
    return true;
  } catch (const std::exception& e) {
    error("%s: preemptable(JobId=%u, JobId=%u): %s", kLog, preemptee ? preemptee->job_id : 0,
          preemptor ? preemptor->job_id : 0, e.what());
  } catch (...) {
    error("%s: preemptable failed", kLog);
  }
  return false;
}

// Slurm sorts its pending queue with this (sort_job_queue2 in job_scheduler.c):
// "may the first pending job preempt the second?". mlsched's victims are running
// jobs holding borrowed GPUs, never pending ones, so the answer is always no and
// the queue keeps priority/mlsched's order (which already puts jobs within their
// team's quota first and, with PriorityWeightNonPreemptible, best effort behind the
// jobs that cannot be preempted: the order preempt/qos gives a scavenger QOS here,
// but priced, so sprio shows it). It is called for every comparison: it must stay
// trivial.
MLSCHED_EXPORT bool preempt_p_job_preempt_check(job_queue_rec_t* preemptor, job_queue_rec_t* preemptee) {
  return false;
}

MLSCHED_EXPORT int preempt_p_get_data(job_record_t* job_ptr, slurm_preempt_data_type_t data_type, void* data) {
  try {
    const auto cfg = config();
    switch (data_type) {
      case PREEMPT_DATA_ENABLED:
        *static_cast<bool*>(data) = slurm_conf.preempt_mode != PREEMPT_MODE_OFF;
        return SLURM_SUCCESS;
      case PREEMPT_DATA_MODE:
        // Victims are requeued and resume from their checkpoint; Slurm cancels a
        // job that cannot be requeued.
        *static_cast<uint16_t*>(data) = PREEMPT_MODE_REQUEUE;
        return SLURM_SUCCESS;
      case PREEMPT_DATA_PRIO: {
        // Lowest first: the least-lost-work victim set of the current scan.
        uint32_t prio = kUnranked;
        if (job_ptr && t_scan) {
          if (!t_scan->ranked) rank_scan(*t_scan);
          auto it = t_scan->rank.find(job_ptr->job_id);
          if (it != t_scan->rank.end()) prio = it->second;
        }
        *static_cast<uint32_t*>(data) = prio;
        return SLURM_SUCCESS;
      }
      case PREEMPT_DATA_GRACE_TIME:
        // Slurm asks once per victim when it is picked, then waits this long
        // after sending the checkpoint signal before requeueing it.
        *static_cast<uint32_t*>(data) = cfg ? grace_of(job_ptr, *cfg) : 0;
        record_preemption(job_ptr);
        return SLURM_SUCCESS;
    }
    error("%s: unknown preempt data type %d", kLog, static_cast<int>(data_type));
  } catch (const std::exception& e) {
    error("%s: get_data(%d): %s", kLog, static_cast<int>(data_type), e.what());
  } catch (...) {
    error("%s: get_data(%d) failed", kLog, static_cast<int>(data_type));
  }
  return SLURM_ERROR;
}
