// priority/mlsched: fair share between teams (Slurm accounts) on GPU-type-weighted,
// decayed GPU-time, with guaranteed quotas, borrowing, and a size-aware age term
// so large gangs are not starved. A thread of ours runs one pass every
// PriorityCalcPeriod: it copies jobs and associations out under slurmctld's locks,
// lets the core price every pending job, writes priorities and the numbers sprio
// and sshare show back, and saves usage to StateSaveLocation after the locks are
// released. Client commands (sprio, sshare) load this plugin too: there, init()
// does nothing.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/safe_file.h"
#include "core/cluster.h"
#include "core/directives.h"
#include "core/job_record.h"
#include "core/fairshare.h"
#include "core/priority.h"
#include "core/text.h"
#include "plugins/common/cluster_snapshot.h"
#include "plugins/common/config_store.h"
#include "plugins/common/guard.h"
#include "plugins/common/job_records.h"
#include "plugins/common/ctld.h"
#include "plugins/common/periodic_worker.h"
#include "plugins/common/release.h"
#include "plugins/common/slurm_headers.h"

// slurmctld's own tables. sprio and sshare load this plugin too, and programs
// linked to the public libslurm define none of these: weak references let the
// plugin load there (it never touches them outside slurmctld).
#pragma weak job_list
#pragma weak last_job_update
#pragma weak assoc_mgr_assoc_list
#pragma weak assoc_mgr_root_assoc

MLSCHED_EXPORT const char plugin_name[] = "mlsched priority plugin: GPU fair share, quotas, gang-aware age";
MLSCHED_EXPORT const char plugin_type[] = "priority/mlsched";
MLSCHED_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

namespace {

constexpr const char* kLog = "priority/mlsched";
constexpr const char* kStateFile = "priority_mlsched.state";

mlsched::plugin::ConfigStore g_config;

// What priority_p_set() and priority_p_set_assoc_usage() read between passes.
// Lock order: slurmctld's locks, then assoc_mgr's, then g_mutex.
std::mutex g_mutex;
mlsched::UsageLedger g_ledger;
std::map<std::string, mlsched::TeamStanding> g_standing;
mlsched::TeamGpusInUse g_in_use;
// The last pass's guarantees as its pending jobs took them: a new job is priced as
// queued after them.
mlsched::GuaranteeQueue g_queue;
std::map<std::string, uint32_t> g_cluster_gpus;

// last_job_update as of our last look, and when we looked: a change means a job
// started, ended or was submitted, and running jobs' borrowing marks are then
// brought up to date at once rather than at the next full pass. last_job_update
// counts whole seconds, so a change in the very second we looked may hide behind an
// equal value: that second is looked at again. Only the pass thread touches these.
time_t g_seen_job_update = 0;
time_t g_seen_at = 0;

bool job_table_changed() {
  const time_t update = __atomic_load_n(&last_job_update, __ATOMIC_RELAXED);
  return update != g_seen_job_update || update >= g_seen_at;
}

// Caller holds the job lock.
void note_job_table_seen() {
  g_seen_job_update = last_job_update;
  g_seen_at = time(nullptr);
}

// The pass thread.
mlsched::plugin::PeriodicWorker g_worker;

// Pipeline stages' age starts (core pipeline_age_starts) from the last pass, by job
// id, for priority_p_set() between passes. Under g_mutex.
std::map<uint32_t, int64_t> g_pipeline_age_start;

// Set when the saved usage was missing or unusable: the first pass then rebuilds
// what the job table still tells (see rebuild_from_job_table). Under g_mutex.
bool g_rebuild_usage = false;

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

std::string state_path() { return str(slurm_conf.state_save_location) + "/" + kStateFile; }

uint32_t half_life(const mlsched::Config& c) {
  return c.priority_decay_half_life.value_or(slurm_conf.priority_decay_hl);
}

uint32_t calc_period(const mlsched::Config& c) {
  const uint32_t p = c.priority_calc_period.value_or(slurm_conf.priority_calc_period);
  return p ? p : 300;
}

mlsched::ChargedJob running_job(const job_record_t* job_ptr, const mlsched::GpuWeights& weights) {
  mlsched::ChargedJob r;
  r.job_id = job_ptr->job_id;
  r.team = str(job_ptr->account);
  r.allocation = mlsched::gpu_counts_from_tres(str(job_ptr->tres_fmt_alloc_str));
  r.gpus = r.allocation.total();
  r.weighted_gpus = weights.weighted(r.allocation);
  r.start_time = job_ptr->start_time;
  return r;
}

// A running job as quotas count it: its GPUs by quota kind (TeamQuota per pool: the
// partition it runs in). Charging uses running_job(): usage is by GPU type.
mlsched::ChargedJob holding_job(const job_record_t* job_ptr, const mlsched::GpuWeights& weights,
                                const mlsched::Config& config) {
  mlsched::ChargedJob r = running_job(job_ptr, weights);
  r.allocation = mlsched::gpus_by_quota_kind(config, r.allocation, job_ptr->part_ptr ? str(job_ptr->part_ptr->name) : "");
  return r;
}

// GPU-seconds a job consumed in its earlier runs, in mlsched's part of its admin
// comment: slurmctld saves that with the job, so it survives restarts (and a lost
// usage file), and `scontrol show job` shows it. Only requeued jobs carry it.
double attained_of(const job_record_t* job_ptr) {
  return mlsched::plugin::job_record_of(job_ptr)->marks.attained_gpu_seconds;
}

// When a requeued job was first submitted (epoch seconds): Slurm gives a requeued
// job a new submit time, and the age term counts from this one instead.
int64_t first_submit_of(const job_record_t* job_ptr) {
  return mlsched::plugin::job_record_of(job_ptr)->marks.first_submit;
}

// A run ended: a job that will run again (requeued, preempted, or requeued after a
// node failure) adds the run's GPU-seconds to its attained service and keeps its
// first submit time. Jobs that are done get no mark. This is called from
// priority_p_job_end() while Slurm still holds the original submit time (with
// AccountingStorageEnforce=limits), else from the next pass, after the requeue
// reset it: the age then restarts there. Caller holds the job write lock.
void record_run_end(job_record_t* job_ptr, double run_gpu_seconds) {
  const uint32_t base = job_ptr->job_state & JOB_STATE_BASE;
  mlsched::RunEndState end;
  end.requeue_flag = job_ptr->job_state & JOB_REQUEUE;
  end.pending = base == JOB_PENDING;
  end.preempted = base == JOB_PREEMPTED;
  end.node_failed = base == JOB_NODE_FAIL;
  if (!mlsched::runs_again(end)) return;
  const std::string before = str(job_ptr->admin_comment);
  const std::string text = mlsched::with_run_end_recorded(
      before, run_gpu_seconds, job_ptr->details ? static_cast<int64_t>(job_ptr->details->submit_time) : 0);
  if (text == before) return;
  xfree(job_ptr->admin_comment);
  job_ptr->admin_comment = xstrdup(text.c_str());
}

mlsched::PricedJob pending_job(const job_record_t* job_ptr, const mlsched::Config& config) {
  mlsched::PricedJob p;
  p.job_id = job_ptr->job_id;
  p.team = str(job_ptr->account);
  const auto gpus = mlsched::gpu_counts_from_tres(str(job_ptr->tres_fmt_req_str));
  p.gpus = gpus.total();
  // Counted against the quota of its pool (TeamQuota per pool): the partition Slurm
  // tries it in, the first it names until then.
  if (gpus.by_type.size() == 1 && gpus.untyped == 0)
    p.gpu_type = mlsched::quota_kind(config, gpus.by_type.begin()->first,
                                     job_ptr->part_ptr ? str(job_ptr->part_ptr->name) : "");
  p.submit_time = job_ptr->details ? job_ptr->details->submit_time : job_ptr->start_time;
  // A requeued job keeps the age it had: Slurm's submit time is that of the requeue.
  if (const int64_t first = first_submit_of(job_ptr); first > 0 && first < p.submit_time) {
    p.queued_time = p.submit_time;
    p.submit_time = first;
  }
  // Its directives (the job's type and whether it may be preempted) from one read
  // of its record; a job without directives is of the default type and not preemptible.
  const auto record = mlsched::plugin::job_record_of(job_ptr);
  p.type = record->directives ? record->directives->type : config.default_job_type;
  p.preemptible = record->directives && record->directives->preemptible;
  // Waiting on a dependency or a begin time: no place in the team's guarantee yet.
  p.eligible = job_ptr->state_reason != WAIT_DEPENDENCY && job_ptr->state_reason != WAIT_DEP_INVALID &&
               !(job_ptr->details && job_ptr->details->begin_time > time(nullptr));
  // Caller holds assoc_mgr's QOS read lock.
  if (job_ptr->qos_ptr && job_ptr->qos_ptr->usage) p.qos_norm = job_ptr->qos_ptr->usage->norm_priority;
  if (job_ptr->part_ptr) p.partition_norm = job_ptr->part_ptr->norm_priority;
  if (job_ptr->details) p.nice = static_cast<int64_t>(job_ptr->details->nice) - NICE_OFFSET;
  p.site = static_cast<int64_t>(job_ptr->site_factor) - NICE_OFFSET;
  if (config.attained_service.enabled()) {
    if (job_ptr->part_ptr) p.partition = str(job_ptr->part_ptr->name);
    p.attained_gpu_seconds = attained_of(job_ptr);
  }
  return p;
}

// Writes the terms where sprio reads them (sprio -l columns in the comments).
void store_factors(job_record_t* job_ptr, const mlsched::PriorityFactors& f) {
  using Factors = mlsched::plugin::release::JobPriorityFactors;
  if (!job_ptr->prio_factors) job_ptr->prio_factors = static_cast<Factors*>(xmalloc(sizeof(Factors)));
  Factors* o = job_ptr->prio_factors;
  o->priority_fs = f.fairshare;   // FAIRSHARE
  o->priority_assoc = f.quota;    // ASSOC: within the team's guaranteed quota
  o->priority_age = f.age;        // AGE
  o->priority_js = f.job_size;    // JOBSIZE: the size-aware age term
  o->priority_qos = f.qos;        // QOS
  o->priority_part = f.partition; // PARTITION
  // SITE: the job type's weight, the attained-service term (0 or negative), the
  // non-preemptible term and the admin's site factor (stored offset by NICE_OFFSET,
  // as sprio reads it).
  const int64_t site =
      static_cast<int64_t>(job_ptr->site_factor) + std::llround(f.job_type + f.attained_service + f.non_preemptible);
  o->priority_site = static_cast<uint32_t>(std::clamp<int64_t>(site, 0, UINT32_MAX));
  o->nice = job_ptr->details ? job_ptr->details->nice : NICE_OFFSET;
}

// The borrowing mark, in mlsched's part of the admin comment (beside the job's
// directives, which users cannot change): `borrowing=yes` on a running job whose
// GPUs are borrowed beyond its team's guarantee and may be reclaimed, `borrowing=no`
// on one inside it. A preempt plugin reads it with mlsched::read_marks().

// Sets (or, with nullopt, removes) the mark; true when the comment changed.
bool set_borrowing_mark(job_record_t* job_ptr, const std::optional<std::string>& value) {
  const std::string before = str(job_ptr->admin_comment);
  // Most jobs carry no mark and have nothing to remove: skip them cheaply.
  if (!value && before.find(mlsched::mark_key::borrowing) == std::string::npos) return false;
  const std::string after = mlsched::with_stored_token(before, mlsched::mark_key::borrowing, value);
  if (after == before) return false;
  xfree(job_ptr->admin_comment);
  job_ptr->admin_comment = after.empty() ? nullptr : xstrdup(after.c_str());
  return true;
}

// Marks running jobs; a pending job (requeued) loses its mark, since it borrows
// nothing until it runs again (sprio's ASSOC shows what it would do then).
// Caller holds the job write lock.
bool mark_borrowing(const std::vector<job_record_t*>& running_ptrs, const std::vector<bool>& borrowing,
                    const std::vector<job_record_t*>& pending_ptrs) {
  bool changed = false;
  for (size_t i = 0; i < running_ptrs.size() && i < borrowing.size(); ++i)
    changed = set_borrowing_mark(running_ptrs[i], std::string(borrowing[i] ? "yes" : "no")) || changed;
  for (job_record_t* job_ptr : pending_ptrs) changed = set_borrowing_mark(job_ptr, std::nullopt) || changed;
  return changed;
}

bool is_lost_to_node_failure(const job_record_t* job_ptr) {
  return (job_ptr->job_state & JOB_STATE_BASE) == JOB_NODE_FAIL;
}

// Up to when a run that ended at `end` is charged: all of it, but for a run whose
// node failed only the work its next run resumes from (its last checkpoint, or the
// bound its declared interval gives); the rest was lost and is not the team's use.
int64_t charged_until(const job_record_t* job_ptr, int64_t end) {
  if (!is_lost_to_node_failure(job_ptr)) return end;
  const auto record = mlsched::plugin::job_record_of(job_ptr);
  const auto& d = record->directives;
  return mlsched::work_at_risk_since(job_ptr->start_time, mlsched::checkpoint_report(str(job_ptr->comment)),
                                     d ? d->checkpoint_interval : 0, end);
}

// The numbers sshare shows. Team (account) rows carry the team's own; user rows
// repeat their team's, since mlsched shares GPUs between teams, not people.
void publish_to_assoc(slurmdb_assoc_rec_t* assoc, const mlsched::TeamStanding& s, double decayed) {
  if (!assoc->usage) return;
  assoc->usage->usage_raw = decayed;
  assoc->usage->usage_norm = s.usage_norm;
  assoc->usage->usage_efctv = s.usage_norm;
  assoc->usage->shares_norm = s.shares_norm;
  assoc->usage->fs_factor = s.fairshare;
  assoc->usage->level_fs = s.level;
}

std::vector<mlsched::TeamShares> teams_from_assoc_mgr() {
  std::vector<mlsched::TeamShares> teams;
  if (!assoc_mgr_assoc_list) return teams;
  ListIterator it = list_iterator_create(assoc_mgr_assoc_list);
  while (auto* assoc = static_cast<slurmdb_assoc_rec_t*>(list_next(it))) {
    if (assoc->user || assoc == assoc_mgr_root_assoc || !assoc->acct) continue;
    if (!xstrcasecmp(assoc->acct, "root")) continue;
    mlsched::TeamShares t;
    t.team = assoc->acct;
    // "parent" shares (SLURMDB_FS_USE_PARENT) or unset: one share, like any team.
    t.shares = (assoc->shares_raw == SLURMDB_FS_USE_PARENT || assoc->shares_raw == NO_VAL) ? 1 : assoc->shares_raw;
    teams.push_back(t);
  }
  list_iterator_destroy(it);
  return teams;
}

// GPUs of each quota kind in slurm.conf's node table: by type, and by type and
// partition where a TeamQuota names a pool. Caller holds the node and partition
// read locks.
std::map<std::string, uint32_t> cluster_gpus_by_kind(const mlsched::Config& config) {
  std::vector<mlsched::NodeGpus> nodes;
  node_record_t* node_ptr;
  node_record_t** table = mlsched::plugin::ctld::node_table();
  const int count = table ? mlsched::plugin::ctld::node_count() : 0;
  nodes.resize(count > 0 ? count : 0);
  for (int i = 0; i < count; i++) {
    if (!(node_ptr = table[i])) continue;
    try {
      for (const auto& g : mlsched::parse_node_gres(str(node_ptr->gres)))
        if (g.name == "gpu") nodes[i].by_type[mlsched::lowercase(g.type)] += static_cast<uint32_t>(g.count);
    } catch (const std::invalid_argument& e) {
      debug("%s: node %s: %s", kLog, node_ptr->name, e.what());
    }
  }
  // Partitions matter only where a quota names one.
  const auto pools_of_node = mlsched::plugin::partitions_of_nodes(config);
  for (size_t i = 0; i < pools_of_node.size() && i < nodes.size(); i++) nodes[i].pools = pools_of_node[i];
  return mlsched::cluster_gpus_by_quota_kind(config, nodes);
}

// The saved usage was missing or unusable: charge what the job table still holds,
// the jobs that ended within MinJobAge (running jobs are charged from their start by
// the pass itself). Older usage is gone: it is in slurmdbd, but reading it there
// would block under the locks, and with a half-life of days it weighs less each
// day anyway. Caller holds the job write lock and g_mutex.
void rebuild_from_job_table(const mlsched::GpuWeights& weights) {
  size_t ended = 0, running = 0;
  if (job_list) {
    ListIterator it = list_iterator_create(job_list);
    while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
      if (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)) {
        ++running;
        continue;
      }
      if (!IS_JOB_FINISHED(job_ptr) || !job_ptr->start_time || job_ptr->end_time <= job_ptr->start_time) continue;
      if (g_ledger.charged_through(job_ptr->job_id)) continue;
      g_ledger.settle_run(running_job(job_ptr, weights), job_ptr->end_time,
                          charged_until(job_ptr, job_ptr->end_time));
      ++ended;
    }
    list_iterator_destroy(it);
  }
  info("%s: rebuilt usage from the job table: %zu running jobs charged from their start, %zu jobs that ended "
       "within MinJobAge charged for their run; usage older than that starts from zero",
       kLog, running, ended);
}

// One pass; see the file comment. Returns the ledger's text to save.
// The jobs of one pass, from the job table (caller holds the job write lock).
struct PassJobs {
  std::vector<job_record_t*> pending;  // parallel to PassInput::pending
  std::vector<job_record_t*> running;  // parallel to PassInput::running
  // Every pending job loses its borrowing mark, held ones (priority 0) and ones an
  // admin prioritised too, though only the others are priced: this pass marks the
  // job table seen, so the mark pass would not look at them again until the next
  // change, and a held requeued victim would keep `borrowing=yes` while it waits.
  std::vector<job_record_t*> unmark;
  std::map<uint32_t, int64_t> pipeline_age_start;  // pipeline stages' age starts, by job id
};

// A job of a pipeline (its membership in mlsched's record), for its stages' age.
void note_stage(const job_record_t* job_ptr, std::vector<mlsched::StageQueueFacts>& stages) {
  if (!job_ptr->admin_comment) return;
  const auto record = mlsched::plugin::job_record_of(job_ptr);
  if (!record->pipeline) return;
  mlsched::StageQueueFacts f;
  f.job_id = job_ptr->job_id;
  f.user_id = job_ptr->user_id;
  f.membership = *record->pipeline;
  f.pending = IS_JOB_PENDING(job_ptr);
  if (job_ptr->details) f.eligible = job_ptr->details->begin_time;
  // Given nodes: it ran (Slurm also sets a start time on a pending job it cancels).
  if (!f.pending && job_ptr->nodes && *job_ptr->nodes) f.start = job_ptr->start_time;
  stages.push_back(std::move(f));
}

PassJobs gather_jobs(const mlsched::Config& config, const mlsched::GpuWeights& weights, mlsched::PassInput& in) {
  PassJobs jobs;
  std::vector<mlsched::StageQueueFacts> stages;
  if (job_list) {
    ListIterator it = list_iterator_create(job_list);
    while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
      note_stage(job_ptr, stages);
      if (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)) {
        // A suspended job holds its GPUs but runs nothing: charged only while running.
        if (IS_JOB_RUNNING(job_ptr)) {
          in.running.push_back(holding_job(job_ptr, weights, config));
          jobs.running.push_back(job_ptr);
        }
      } else if (IS_JOB_PENDING(job_ptr)) {
        if (job_ptr->admin_comment) jobs.unmark.push_back(job_ptr);
        if (job_ptr->priority != 0 && !job_ptr->direct_set_prio) {
          jobs.pending.push_back(job_ptr);
          in.pending.push_back(pending_job(job_ptr, config));
        }
      }
    }
    list_iterator_destroy(it);
  }
  // Pipeline stages: their age counts from when they became eligible, plus what
  // their upstream stages waited in the queue (core/priority pipeline_age_starts).
  jobs.pipeline_age_start = mlsched::pipeline_age_starts(stages, config.priority_max_age, time(nullptr));
  for (auto& p : in.pending)
    if (auto it = jobs.pipeline_age_start.find(p.job_id); it != jobs.pipeline_age_start.end()) p.submit_time = it->second;
  return jobs;
}

// Jobs charged before that are no longer running: settle those job_end() missed
// (it is only called when AccountingStorageEnforce has limits) or that ended while
// slurmctld was down. Caller holds the job write lock and g_mutex.
void settle_missed_runs(const mlsched::PassInput& in, const mlsched::GpuWeights& weights, time_t now) {
  std::map<uint32_t, bool> running_ids;
  for (const auto& r : in.running) running_ids[r.job_id] = true;
  for (uint32_t id : g_ledger.tracked_job_ids()) {
    if (running_ids.count(id)) continue;
    job_record_t* job_ptr = find_job_record(id);
    if (!job_ptr) {
      g_ledger.forget(id);
    } else if (!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) {
      // A requeued batch job is pending again with its run's start and end
      // cleared: it ran up to where it was last charged, no further.
      int64_t end = job_ptr->end_time;
      if (!end) end = job_ptr->start_time ? now : g_ledger.charged_through(id).value_or(now);
      record_run_end(job_ptr,
                     g_ledger.settle_run(running_job(job_ptr, weights), end, charged_until(job_ptr, end)));
    }
  }
}

// Each team's standing, where sshare and sprio read it (assoc_mgr write lock held).
void publish_standing(const mlsched::PassResult& result) {
  if (assoc_mgr_assoc_list) {
    ListIterator it = list_iterator_create(assoc_mgr_assoc_list);
    while (auto* assoc = static_cast<slurmdb_assoc_rec_t*>(list_next(it))) {
      if (!assoc->acct) continue;
      auto s = result.standing.find(assoc->acct);
      if (s != result.standing.end()) publish_to_assoc(assoc, s->second, g_ledger.decayed(assoc->acct));
    }
    list_iterator_destroy(it);
  }
}

std::string run_pass(const mlsched::Config& config) {
  slurmctld_lock_t job_write = {NO_LOCK, WRITE_LOCK, READ_LOCK, READ_LOCK, NO_LOCK};
  assoc_mgr_lock_t assoc_write = {WRITE_LOCK, NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  mlsched::GpuWeights weights;
  weights.by_type = config.gpu_weights;
  const time_t now = time(nullptr);

  lock_slurmctld(job_write);
  assoc_mgr_lock(&assoc_write);
  std::string saved;
  try {
    mlsched::PassInput in;
    in.cluster_gpus_by_type = cluster_gpus_by_kind(config);
    in.teams = teams_from_assoc_mgr();
    const PassJobs jobs = gather_jobs(config, weights, in);
    std::lock_guard<std::mutex> guard(g_mutex);
    g_ledger.set_half_life(half_life(config));
    settle_missed_runs(in, weights, now);
    if (g_rebuild_usage) {
      rebuild_from_job_table(weights);
      g_rebuild_usage = false;
    }
    const mlsched::PassResult result = mlsched::priority_pass(config, g_ledger, in, now);
    for (size_t i = 0; i < jobs.pending.size(); ++i) {
      jobs.pending[i]->priority = result.pending[i].total;
      store_factors(jobs.pending[i], result.pending[i]);
    }
    publish_standing(result);
    const bool marks_changed = mark_borrowing(jobs.running, result.running_borrowing, jobs.unmark);
    g_standing = result.standing;
    g_pipeline_age_start = jobs.pipeline_age_start;
    g_in_use = result.in_use;
    g_queue = result.queue;
    g_cluster_gpus = in.cluster_gpus_by_type;
    if (!jobs.pending.empty() || marks_changed) last_job_update = now;
    note_job_table_seen();
    saved = g_ledger.serialize();
  } catch (...) {
    assoc_mgr_unlock(&assoc_write);
    unlock_slurmctld(job_write);
    throw;
  }
  assoc_mgr_unlock(&assoc_write);
  unlock_slurmctld(job_write);
  return saved;
}

// Between full passes: a job started or ended, so bring the borrowing marks of
// running jobs up to date with the last pass's standing. Nothing is charged or
// re-priced here; the full pass does that every PriorityCalcPeriod.
void run_mark_pass(const mlsched::Config& config) {
  slurmctld_lock_t job_write = {NO_LOCK, WRITE_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  mlsched::GpuWeights weights;
  weights.by_type = config.gpu_weights;
  lock_slurmctld(job_write);
  try {
    std::vector<mlsched::ChargedJob> running;
    std::vector<job_record_t*> running_ptrs;
    std::vector<job_record_t*> pending_ptrs;
    if (job_list) {
      ListIterator it = list_iterator_create(job_list);
      while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
        if (IS_JOB_RUNNING(job_ptr)) {
          running.push_back(holding_job(job_ptr, weights, config));
          running_ptrs.push_back(job_ptr);
        } else if (IS_JOB_PENDING(job_ptr) && job_ptr->admin_comment) {
          pending_ptrs.push_back(job_ptr);
        }
      }
      list_iterator_destroy(it);
    }
    std::lock_guard<std::mutex> guard(g_mutex);
    const mlsched::Quotas quotas(config, g_standing, g_cluster_gpus);
    g_in_use = mlsched::gpus_in_use(running);
    if (mark_borrowing(running_ptrs, mlsched::running_borrowing(quotas, running), pending_ptrs))
      last_job_update = time(nullptr);
    note_job_table_seen();
  } catch (...) {
    unlock_slurmctld(job_write);
    throw;
  }
  unlock_slurmctld(job_write);
}

// Atomic replace: a crash leaves either the old file or the new one, never half.
void save_state(const std::string& text) {
  const std::string path = state_path();
  // Usage is the site's accounting of teams: readable by slurmctld's user only.
  const std::string problem = mlsched::write_file_atomically(path, text, 0600);
  if (!problem.empty()) error("%s: cannot save usage: %s", kLog, problem.c_str());
}

// A missing or unreadable state is not fatal: slurmctld starts, and the first pass
// rebuilds usage from the job table (rebuild_from_job_table). A corrupt file is
// kept aside for the admin rather than overwritten by the next save. Called from
// init(), before the pass thread starts and without slurmctld's locks.
void load_state(uint32_t half_life_seconds) {
  const std::string path = state_path();
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    // No saved state of slurmctld's either (its job_state file) means a first start:
    // nothing was lost, so no error line for an admin to chase. Otherwise usage was
    // lost; Slurm 22.05 has no warning level: error() with the word, as for a corrupt file.
    struct stat st;
    const std::string jobs = str(slurm_conf.state_save_location) + "/job_state";
    if (err == ENOENT && stat(jobs.c_str(), &st) != 0 && errno == ENOENT)
      info("%s: no saved usage yet (%s; slurmctld's first start here): usage starts from the job table", kLog,
           path.c_str());
    else
      error("%s: WARNING: saved usage %s: %s; rebuilding usage from the job table (expected on the first start with "
            "priority/mlsched)",
            kLog, path.c_str(), err == ENOENT ? "no such file" : strerror(err));
    std::lock_guard<std::mutex> guard(g_mutex);
    g_rebuild_usage = true;
    return;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string why;
  // A read error leaves the text short of its "end" line, which parse() rejects.
  auto ledger = mlsched::UsageLedger::parse(buf.str(), half_life_seconds, &why,
                                            static_cast<int64_t>(time(nullptr)) +
                                                mlsched::UsageLedger::kMaxStateClockSkew);
  if (!ledger) {
    const std::string aside = path + ".corrupt";
    const bool kept = std::rename(path.c_str(), aside.c_str()) == 0;
    error("%s: WARNING: saved usage in %s is corrupt (%s); %s; rebuilding usage from the job table", kLog,
          path.c_str(), why.c_str(), kept ? ("kept it as " + aside).c_str() : "could not move it aside");
    std::lock_guard<std::mutex> guard(g_mutex);
    g_rebuild_usage = true;
    return;
  }
  std::lock_guard<std::mutex> guard(g_mutex);
  g_ledger = std::move(*ledger);
  info("%s: resumed usage of %zu teams and %zu running jobs from %s", kLog, g_ledger.teams().size(),
       g_ledger.tracked_jobs(), path.c_str());
}

void pass_loop(mlsched::plugin::PeriodicWorker& worker) {
  while (!worker.stopping()) {
    uint32_t period = 300;
    unsigned generation = 0;
    try {
      generation = g_config.generation();
      if (auto config = g_config.get()) {
        period = calc_period(*config);
        save_state(run_pass(*config));
      }
    } catch (const std::exception& e) {
      error("%s: priority pass failed: %s", kLog, e.what());
    } catch (...) {
      error("%s: priority pass failed", kLog);
    }
    // Wake early for scontrol reconfigure (a poke) or a changed mlsched.conf, so a
    // shorter PriorityCalcPeriod or new weights apply at once rather than after the
    // old period. Between passes, borrowing marks follow the job table each second.
    const auto due = std::chrono::steady_clock::now() + std::chrono::seconds(period);
    while (g_config.generation() == generation && std::chrono::steady_clock::now() < due) {
      if (worker.sleep_for(std::chrono::seconds(1))) break;
      if (!job_table_changed()) continue;
      try {
        if (auto config = g_config.get()) run_mark_pass(*config);
      } catch (const std::exception& e) {
        error("%s: borrowing marks: %s", kLog, e.what());
      } catch (...) {
        error("%s: borrowing marks failed", kLog);
      }
    }
  }
}

}  // namespace

MLSCHED_EXPORT int init(void) {
  return mlsched::plugin::guarded(kLog, "init", SLURM_ERROR, [] {
    // sprio and sshare load this plugin too: only the controller keeps state.
    if (!mlsched::plugin::ctld::in_slurmctld()) return SLURM_SUCCESS;
    if (!g_config.start(slurm_conf.slurm_conf, kLog)) return SLURM_ERROR;
    load_state(half_life(*g_config.get()));
    if (mlsched::plugin::release::kPriorityThreadStartsInInit) g_worker.start(pass_loop);
    return SLURM_SUCCESS;
  });
}

MLSCHED_EXPORT int fini(void) {
  try {
    g_worker.stop();
    g_config.stop_watching();
    if (mlsched::plugin::ctld::in_slurmctld()) {
      std::string text;
      {
        std::lock_guard<std::mutex> guard(g_mutex);
        if (g_ledger.decayed_through() != 0) text = g_ledger.serialize();
      }
      if (!text.empty()) save_state(text);
    }
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: fini failed with a non-standard exception", kLog);
  }
  return SLURM_SUCCESS;
}

// A new, requeued or updated job: priced at once with the last pass's standing.
// Called with slurmctld's job write lock held.
MLSCHED_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr) {
  try {
    const auto config = g_config.get();
    if (!config) return 1;
    assoc_mgr_lock_t qos_read = {READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
    assoc_mgr_lock(&qos_read);
    mlsched::PricedJob job = pending_job(job_ptr, *config);
    assoc_mgr_unlock(&qos_read);
    std::lock_guard<std::mutex> guard(g_mutex);
    if (auto it = g_pipeline_age_start.find(job.job_id); it != g_pipeline_age_start.end()) job.submit_time = it->second;
    uint32_t cluster_gpus = 0;
    for (const auto& [type, count] : g_cluster_gpus) cluster_gpus += count;
    const mlsched::Quotas quotas(*config, g_standing, g_cluster_gpus);
    const auto factors =
        mlsched::job_priority(job, {*config, g_standing, quotas, g_in_use, cluster_gpus, &g_queue}, time(nullptr));
    store_factors(job_ptr, factors);
    return factors.total;
  } catch (const std::exception& e) {
    error("%s: priority of job %u: %s", kLog, job_ptr ? job_ptr->job_id : 0, e.what());
  } catch (...) {
    error("%s: priority of job %u failed", kLog, job_ptr ? job_ptr->job_id : 0);
  }
  return 1;  // lowest runnable priority rather than none
}

MLSCHED_EXPORT void priority_p_reconfig(bool assoc_clear) {
  try {
    g_worker.poke();
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: reconfig failed with a non-standard exception", kLog);
  }
}

// assoc_mgr asks for an association's effective usage (e.g. a new user row, or
// sshare before the first pass). Called with assoc_mgr's assoc lock held.
MLSCHED_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc) {
  try {
    if (!assoc || !assoc->usage || !assoc->acct) return;
    std::lock_guard<std::mutex> guard(g_mutex);
    auto s = g_standing.find(assoc->acct);
    if (s != g_standing.end()) {
      publish_to_assoc(assoc, s->second, g_ledger.decayed(assoc->acct));
    } else {
      assoc->usage->usage_norm = 0;
      assoc->usage->usage_efctv = 0;
    }
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: set_assoc_usage failed with a non-standard exception", kLog);
  }
}

// Same curve as a team's fair-share factor: 1 unused, 0.5 at its entitlement.
MLSCHED_EXPORT double priority_p_calc_fs_factor(long double usage_efctv, long double shares_norm) {
  if (shares_norm <= 0) return 0.0;
  return std::exp2(-static_cast<double>(usage_efctv / shares_norm));
}

// Where the release starts threads after init() (priority_p_thread_start).
void mlsched::plugin::shell::priority_thread_start() {
  mlsched::plugin::guarded(kLog, "thread start", 0, [] {
    if (mlsched::plugin::ctld::in_slurmctld() && g_config.get()) g_worker.start(pass_loop);
    return 0;
  });
}

// sprio (priority_p_get_priority_factors_list, whose signature and locking are the
// release's): the pending jobs this pass priced, as multifactor shows them.
bool mlsched::plugin::shell::sprio_shows(const job_record_t* job_ptr, time_t now, uid_t uid) {
  if (!IS_JOB_PENDING(job_ptr) || IS_JOB_REVOKED(job_ptr) || job_ptr->priority == 0) return false;
  if (!job_ptr->details || !job_ptr->details->begin_time || job_ptr->details->begin_time > now) return false;
  if (!job_ptr->prio_factors) return false;
  return !(slurm_conf.private_data & PRIVATE_DATA_JOBS) || job_ptr->user_id == uid || validate_operator(uid);
}

// A job ended: charge its last seconds now rather than at the next pass (or take
// back its usage when a node failure lost its work). Called with the job write lock.
MLSCHED_EXPORT void priority_p_job_end(job_record_t* job_ptr) {
  try {
    if (!mlsched::plugin::ctld::in_slurmctld() || !job_ptr) return;
    const auto config = g_config.get();
    if (!config) return;
    mlsched::GpuWeights weights;
    weights.by_type = config->gpu_weights;
    const auto job = running_job(job_ptr, weights);
    std::lock_guard<std::mutex> guard(g_mutex);
    if (!g_ledger.charged_through(job.job_id) && !job.start_time) return;
    const int64_t end = job_ptr->end_time ? job_ptr->end_time : time(nullptr);
    record_run_end(job_ptr, g_ledger.settle_run(job, end, charged_until(job_ptr, end)));
  } catch (const std::exception& e) {
    error("%s: job_end of job %u: %s", kLog, job_ptr ? job_ptr->job_id : 0, e.what());
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: job_end failed with a non-standard exception", kLog);
  }
}
