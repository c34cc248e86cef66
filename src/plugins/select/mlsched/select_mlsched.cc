// select/mlsched: topology-aware GPU gang placement layered on select/cons_tres.
// Every select_p_* call is forwarded to cons_tres (loaded as an inner plugin, the
// way select/other wraps linear or cons_tres for Cray); the forwarding and the
// symbol list are the release line's (plugins/common/slurm-X.Y/select.cc), and
// job_test and job_fini come back here. job_test first lets the core
// choose *where* a GPU job may run (one GPU type, the smallest topology unit that
// fits, best fit) and hands cons_tres the narrowed node set; after a successful
// run-now it moves the job's GPUs onto one NVLink clique per node where possible.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/directives.h"
#include "core/node_failures.h"
#include "core/placement.h"
#include "core/preempt.h"
#include "core/hostlist.h"
#include "core/safe_file.h"
#include "core/submit.h"
#include "core/text.h"
#include "plugins/common/cluster_snapshot.h"
#include "plugins/common/config_store.h"
#include "plugins/common/ctld.h"
#include "plugins/common/guard.h"
#include "plugins/common/job_records.h"
#include "plugins/common/periodic_worker.h"
#include "plugins/common/release.h"
#include "plugins/common/slurm_headers.h"


MLSCHED_EXPORT const char plugin_name[] = "mlsched select plugin: topology-aware GPU gang placement over cons_tres";
MLSCHED_EXPORT const char plugin_type[] = "select/mlsched";
// Unique among the select plugins in PluginDir (all of them are loaded) and >= 100.
MLSCHED_EXPORT const uint32_t plugin_id = 190;
MLSCHED_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

namespace {

using mlsched::plugin::guarded;
using mlsched::plugin::release::JobTestTail;
constexpr const char* kLog = "select/mlsched";

mlsched::plugin::ConfigStore g_config;
mlsched::plugin::ClusterSnapshot g_cluster;

// Nodes that failed under a job, for failure-aware placement. Changed in job_fini
// (job write lock held) and when old failures are forgotten during job_test; the
// saver thread writes it to StateSaveLocation, so the memory outlives this process
// (a restart; on 24.11 also `scontrol reconfigure`, which starts a new slurmctld).
// No file is touched under slurmctld's locks: those paths only poke the saver.
constexpr const char* kFailuresFile = "select_mlsched_node_failures";
constexpr size_t kMaxFailuresFileBytes = 8 << 20;
std::mutex g_failures_mutex;
mlsched::NodeFailureMemory g_failures;  // under g_failures_mutex
bool g_failures_unsaved = false;        // under g_failures_mutex
mlsched::plugin::PeriodicWorker g_saver;

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// What select/mlsched costs slurmctld: job tests, the cons_tres evaluations they
// make, and the time inside them. Counted under slurmctld's locks (atomics only, no
// I/O) and logged once a minute by the saver thread (SlurmctldDebug=verbose), so a
// site, or bench/sched_cost, can see what a scheduling pass pays for placement.
struct CostCounters {
  std::atomic<uint64_t> job_tests{0};
  std::atomic<uint64_t> cons_tres_calls{0};
  std::atomic<uint64_t> nanoseconds{0};
  std::atomic<uint64_t> slowest_ns{0};
};
CostCounters g_cost;

// Counts one select_p_job_test from construction to destruction.
class CostTimer {
 public:
  CostTimer() : start_(std::chrono::steady_clock::now()) {}
  ~CostTimer() {
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
    g_cost.job_tests.fetch_add(1, std::memory_order_relaxed);
    g_cost.nanoseconds.fetch_add(ns, std::memory_order_relaxed);
    uint64_t prev = g_cost.slowest_ns.load(std::memory_order_relaxed);
    while (ns > prev && !g_cost.slowest_ns.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
    }
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

void log_cost() {
  const uint64_t tests = g_cost.job_tests.exchange(0, std::memory_order_relaxed);
  const uint64_t calls = g_cost.cons_tres_calls.exchange(0, std::memory_order_relaxed);
  const uint64_t ns = g_cost.nanoseconds.exchange(0, std::memory_order_relaxed);
  const uint64_t slowest = g_cost.slowest_ns.exchange(0, std::memory_order_relaxed);
  if (tests == 0) return;
  verbose("%s: cost since the last report: %" PRIu64 " job tests, %" PRIu64
          " cons_tres evaluations (%.1f per test), %.1f ms in all (%.3f ms per test, slowest %.1f ms)",
          kLog, tests, calls, static_cast<double>(calls) / tests, ns / 1e6, ns / 1e6 / tests, slowest / 1e6);
}

bool is_gpu(const gres_state_t* gres_state) { return gres_state->gres_name && !strcmp(gres_state->gres_name, "gpu"); }

// What the core needs to know about the job: its gang and its directives.
bool gpu_request(job_record_t* job_ptr, uint32_t min_nodes, mlsched::PlacementRequest& req) {
  mlsched::JobRequest jr;
  jr.tres_per_node = str(job_ptr->tres_per_node);
  jr.tres_per_job = str(job_ptr->tres_per_job);
  jr.tres_per_task = str(job_ptr->tres_per_task);
  const mlsched::GangRequest g = mlsched::gang_request(mlsched::read_gpu_request(jr), min_nodes, 0,
                                                      mlsched::plugin::job_record_of(job_ptr)->directives);
  req = g.request;
  return g.placed_by_mlsched;
}

// Free/busy GPUs and node health now, in the model's node order.
mlsched::ClusterState current_state(const mlsched::plugin::ClusterModel& model, const mlsched::Config& config) {
  const time_t now = time(nullptr);
  mlsched::ClusterState state(model.cluster.nodes().size());
  node_record_t** table = mlsched::plugin::ctld::node_table();
  std::lock_guard<std::mutex> lock(g_failures_mutex);
  for (size_t k = 0; k < state.size(); ++k) {
    node_record_t* node_ptr = table ? table[model.slurm_index[k]] : nullptr;
    const uint32_t gpus = model.cluster.nodes()[k].gpus;
    state[k].gpu_busy.assign(gpus, false);
    if (!node_ptr) {
      state[k].usable = false;
      continue;
    }
    state[k].usable = mlsched::usable_node(mlsched::plugin::node_condition(node_ptr));
    if (node_ptr->gres_list) {
      ListIterator it = list_iterator_create(node_ptr->gres_list);
      gres_state_t* gres_state;
      while ((gres_state = static_cast<gres_state_t*>(list_next(it)))) {
        if (!is_gpu(gres_state)) continue;
        auto* ns = static_cast<gres_node_state_t*>(gres_state->gres_data);
        if (!ns) continue;
        if (ns->gres_bit_alloc) {
          const int64_t bits = bit_size(ns->gres_bit_alloc);
          for (int64_t g = 0; g < bits && g < static_cast<int64_t>(gpus); g++)
            state[k].gpu_busy[g] = bit_test(ns->gres_bit_alloc, g);
        } else {
          for (uint64_t g = 0; g < ns->gres_cnt_alloc && g < gpus; g++) state[k].gpu_busy[g] = true;
        }
      }
      list_iterator_destroy(it);
    }
    state[k].recent_failures = g_failures.recent(model.cluster.nodes()[k].name, now, config.node_failure_window);
  }
  if (g_failures.forget_older_than(now, config.node_failure_window)) {
    g_failures_unsaved = true;
    g_saver.poke();
  }
  return state;
}

std::string failures_path() { return str(slurm_conf.state_save_location) + "/" + kFailuresFile; }

// From init(), before any job is placed and without slurmctld's locks. A missing
// file is a first start; a damaged one is kept aside and named, and placement
// starts without failure marks rather than slurmctld not starting.
void load_failures() {
  const std::string path = failures_path();
  // Bound by position: Slurm 24.11's headers define `error` as a macro, which
  // would rename the member.
  const auto [missing, text, problem] = mlsched::read_small_file(path, geteuid(), kMaxFailuresFileBytes);
  if (missing) return;
  std::string why = problem;
  std::optional<mlsched::NodeFailureMemory> memory;
  if (text)
    memory = mlsched::NodeFailureMemory::parse(*text, static_cast<int64_t>(time(nullptr)) +
                                                          mlsched::NodeFailureMemory::kMaxClockSkew, &why);
  if (!memory) {
    const std::string aside = path + ".corrupt";
    const bool kept = text && std::rename(path.c_str(), aside.c_str()) == 0;
    error("%s: WARNING: remembered node failures in %s not used (%s)%s", kLog, path.c_str(), why.c_str(),
          kept ? ("; kept it as " + aside).c_str() : "");
    return;
  }
  std::lock_guard<std::mutex> lock(g_failures_mutex);
  g_failures = std::move(*memory);
  if (!g_failures.empty())
    info("%s: remembered failures of %zu node(s) from %s", kLog, g_failures.nodes(), path.c_str());
}

// The saver thread's work (and fini's last save): writes the memory when it changed.
void save_failures() {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(g_failures_mutex);
    if (!g_failures_unsaved) return;
    text = g_failures.serialize();
    g_failures_unsaved = false;
  }
  const std::string problem = mlsched::write_file_atomically(failures_path(), text, 0600);
  if (problem.empty()) return;
  error("%s: cannot save node failures: %s", kLog, problem.c_str());
  std::lock_guard<std::mutex> lock(g_failures_mutex);
  g_failures_unsaved = true;  // tried again at the next change or period
}

void saver_loop(mlsched::plugin::PeriodicWorker& worker) {
  while (!worker.stopping()) {
    save_failures();
    log_cost();
    worker.sleep_for(std::chrono::seconds(60));
  }
}

bitstr_t* bitmap_of(const mlsched::plugin::ClusterModel& model, const std::vector<size_t>& nodes, bitstr_t* within) {
  bitstr_t* b = bit_alloc(bit_size(within));
  for (size_t k : nodes) bit_set(b, model.slurm_index[k]);
  bit_and(b, within);
  return b;
}

// Tells users (scontrol show job, `mlsched why`) why the job could not be placed.
// Only mlsched's own note is ever replaced; an admin's system comment stays.
void set_reason(job_record_t* job_ptr, const std::string& reason) {
  const std::string current = str(job_ptr->system_comment);
  if (!current.empty() && current.rfind(mlsched::kSelectReasonPrefix, 0) != 0) return;
  const std::string wanted = reason.empty() ? "" : mlsched::kSelectReasonPrefix + reason;
  if (current == wanted) return;
  xfree(job_ptr->system_comment);
  if (!wanted.empty()) job_ptr->system_comment = xstrdup(wanted.c_str());
}

// After cons_tres picked GPUs on each node, move them onto one NVLink clique where
// the node's free GPUs allow it. Counts per node do not change.
void align_gpus_to_cliques(job_record_t* job_ptr, bitstr_t* selected, const mlsched::plugin::ClusterModel& model,
                           const mlsched::ClusterState& state) {
  if (!job_ptr->gres_list_req) return;
  ListIterator it = list_iterator_create(job_ptr->gres_list_req);
  gres_state_t* gres_state;
  while ((gres_state = static_cast<gres_state_t*>(list_next(it)))) {
    if (!is_gpu(gres_state)) continue;
    auto* js = static_cast<gres_job_state_t*>(gres_state->gres_data);
    if (!js || !js->gres_bit_select) continue;
    for (int64_t i = bit_ffs(selected); i >= 0 && i <= bit_fls(selected); i++) {
      if (!bit_test(selected, i) || i >= static_cast<int64_t>(js->total_node_cnt)) continue;
      bitstr_t* pick = js->gres_bit_select[i];
      const int m = i < static_cast<int64_t>(model.model_index.size()) ? model.model_index[i] : -1;
      if (!pick || m < 0) continue;
      const auto& node = model.cluster.nodes()[m];
      if (node.nvlink_cliques.size() < 2) continue;
      const int64_t bits = bit_size(pick);
      std::vector<bool> free(bits, false);
      uint32_t count = 0;
      bool picked_free = true;
      for (int64_t g = 0; g < bits; g++) {
        free[g] = g < static_cast<int64_t>(state[m].gpu_busy.size()) && !state[m].gpu_busy[g];
        if (bit_test(pick, g)) {
          ++count;
          picked_free = picked_free && free[g];
        }
      }
      if (!picked_free || count == 0) continue;  // e.g. GPUs of preempted jobs: leave cons_tres's choice
      const std::vector<int> better = mlsched::choose_gpus(node.nvlink_cliques, free, count);
      if (better.size() != count) continue;
      bit_clear_all(pick);
      for (int g : better) bit_set(pick, g);
    }
  }
  list_iterator_destroy(it);
}

int inner_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                   uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                   const JobTestTail& tail) {
  g_cost.cons_tres_calls.fetch_add(1, std::memory_order_relaxed);
  return mlsched::plugin::release::cons_tres_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode,
                                                     preemptee_candidates, preemptee_job_list, tail);
}

// Nodes of the acceptable GPU types (all GPU types when none is named).

mlsched::PlacementPolicy policy_of(const mlsched::Config& config) {
  mlsched::PlacementPolicy policy;
  policy.large_gang_nodes = config.large_gang_nodes;
  policy.type_speed = config.gpu_type_speed;
  return policy;
}

// The job's time limit in seconds; 0 when it has none (speed-aware choice then
// never makes it wait).
uint64_t time_limit_seconds(const job_record_t* job_ptr) {
  const uint32_t minutes = job_ptr->time_limit;
  if (minutes == NO_VAL || minutes == INFINITE || minutes == 0) return 0;
  return static_cast<uint64_t>(minutes) * 60;
}

// The nodes of every partition (GPU pool) the job accepts; nullptr when it has
// none. A job that names several (-p h100,a100) is tested in one partition at a
// time, with job_ptr->part_ptr set to it; part_ptr_list holds them all.
bitstr_t* job_partition_nodes(const job_record_t* job_ptr, int64_t bitmap_size) {
  bitstr_t* nodes = nullptr;
  auto add = [&](const part_record_t* part) {
    if (!part || !part->node_bitmap || bit_size(part->node_bitmap) != bitmap_size) return;
    if (!nodes) nodes = bit_copy(part->node_bitmap);
    else bit_or(nodes, part->node_bitmap);
  };
  if (job_ptr->part_ptr_list) {
    ListIterator it = list_iterator_create(job_ptr->part_ptr_list);
    while (const auto* part = static_cast<const part_record_t*>(list_next(it))) add(part);
    list_iterator_destroy(it);
  }
  if (!nodes) add(job_ptr->part_ptr);
  return nodes;
}

// GpuTypeSpeed: when could the job start on `faster` (0: unknown)? cons_tres's
// will-run on that type's nodes. A gpu-type list is a matching-OR constraint
// ([h100|a100]), which slurmctld tests one type at a time, and a job that names
// several pools is tested in one pool at a time, so the job's bitmap may hold only
// the slower type's nodes: the faster type's are taken from every partition the
// job accepts (up, not excluded). At most one question per type, or per unit for a
// strict job (AttemptLimits::will_run_units).
time_t faster_type_start(job_record_t* job_ptr, int64_t bitmap_size, uint32_t min_nodes, uint32_t max_nodes,
                         uint32_t req_nodes, const JobTestTail& tail, const mlsched::PlacementRequest& request,
                         const mlsched::Config& config, const mlsched::plugin::ClusterModel& model,
                         const mlsched::ClusterState& state, const std::string& faster) {
  bitstr_t* part = job_partition_nodes(job_ptr, bitmap_size);
  if (!part) return 0;
  bitstr_t* excluded = job_ptr->details ? job_ptr->details->exc_node_bitmap : nullptr;
  std::vector<bool> faster_eligible(model.cluster.nodes().size(), false);
  for (size_t k = 0; k < faster_eligible.size(); ++k) {
    const auto i = static_cast<int64_t>(model.slurm_index[k]);
    faster_eligible[k] = state[k].usable && i < bit_size(part) && bit_test(part, i) &&
                         !(excluded && i < bit_size(excluded) && bit_test(excluded, i));
  }
  FREE_NULL_BITMAP(part);
  mlsched::PlacementRequest only_faster = request;
  only_faster.gpu_types = {faster};
  const auto ask =
      mlsched::will_run_attempts(model.cluster, model.index, state, faster_eligible, only_faster, policy_of(config));
  const time_t original_start = job_ptr->start_time;
  time_t start = 0;
  for (const auto& offer : ask.attempts) {
    bitstr_t* trial = bit_alloc(bitmap_size);
    for (size_t k : offer.nodes)
      if (faster_eligible[k]) bit_set(trial, model.slurm_index[k]);
    if (bit_set_count(trial) >= static_cast<int64_t>(std::max<uint32_t>(1, min_nodes))) {
      job_ptr->start_time = original_start;
      if (inner_job_test(job_ptr, trial, min_nodes, max_nodes, req_nodes, SELECT_MODE_WILL_RUN, nullptr, nullptr,
                         tail) == SLURM_SUCCESS &&
          (start == 0 || job_ptr->start_time < start))
        start = job_ptr->start_time;
    }
    FREE_NULL_BITMAP(trial);
  }
  job_ptr->start_time = original_start;
  return start;
}

// Run now: a job whose fastest acceptable type has no room, while a slower one has,
// is offered nothing when it would finish sooner by waiting for the faster type.
void consider_faster_type(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                          uint32_t req_nodes, const JobTestTail& tail, const mlsched::PlacementRequest& request,
                          const mlsched::Config& config, const mlsched::plugin::ClusterModel& model,
                          const mlsched::ClusterState& state, mlsched::AttemptPlan& plan) {
  const auto& acceptable = mlsched::acceptable_types(model.index, request);
  const std::string faster = mlsched::faster_type_to_ask(config.gpu_type_speed, acceptable, plan);
  const uint64_t limit = time_limit_seconds(job_ptr);
  if (faster.empty() || limit == 0) return;
  std::string now_type;
  for (const auto& a : plan.attempts)
    if (a.step == mlsched::AttemptStep::best_fit_nodes && now_type.empty()) now_type = a.gpu_type;
  const time_t start = faster_type_start(job_ptr, bit_size(bitmap), min_nodes, max_nodes, req_nodes, tail, request,
                                         config, model, state, faster);
  const auto wait =
      mlsched::weigh_faster_type(config.gpu_type_speed, acceptable, faster, start, now_type, limit, time(nullptr));
  debug2("%s: %pJ could start on %s now; on %s from %ld (0: unknown): %s", kLog, job_ptr, now_type.c_str(),
         faster.c_str(), static_cast<long>(start), wait.wait ? "waits for it" : "starts now");
  mlsched::hold_for_faster_type(plan, wait);
}

// The placement-aware job_test. Returns the inner plugin's code.
int placed_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                    uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                    const JobTestTail& tail, const mlsched::PlacementRequest& request,
                    const std::shared_ptr<const mlsched::Config>& config) {
  const auto model = g_cluster.get(*config, g_config.generation(), kLog);
  const mlsched::Cluster& cluster = model->cluster;
  std::vector<bool> eligible(cluster.nodes().size());
  for (size_t k = 0; k < eligible.size(); ++k) eligible[k] = bit_test(bitmap, model->slurm_index[k]);

  auto attempt = [&](const std::vector<size_t>& nodes, uint16_t attempt_mode, List* preemptees) -> std::pair<int, bitstr_t*> {
    bitstr_t* trial = bitmap_of(*model, nodes, bitmap);
    if (bit_set_count(trial) < static_cast<int64_t>(std::max<uint32_t>(1, min_nodes))) {
      FREE_NULL_BITMAP(trial);
      return {SLURM_ERROR, nullptr};
    }
    const int rc = inner_job_test(job_ptr, trial, min_nodes, max_nodes, req_nodes, attempt_mode,
                                  preemptee_candidates, preemptees, tail);
    if (rc != SLURM_SUCCESS) FREE_NULL_BITMAP(trial);
    return {rc, trial};
  };
  auto accept = [&](bitstr_t* trial) {
    bit_copybits(bitmap, trial);
    FREE_NULL_BITMAP(trial);
    return SLURM_SUCCESS;
  };

  // Which node sets to offer, in order, is core's (core/placement.h attempts).
  if (mode == SELECT_MODE_TEST_ONLY) {
    const auto plan = mlsched::ever_fits_attempts(model->index, request, job_ptr->fed_details != nullptr);
    auto [rc, trial] = attempt(plan.attempts.front().nodes, mode, preemptee_job_list);
    return rc == SLURM_SUCCESS ? accept(trial) : rc;
  }

  if (mode == SELECT_MODE_WILL_RUN) {
    // Backfill asks when the job could start: keep the earliest answer (with
    // GpuTypeSpeed, the one that ends soonest).
    const mlsched::ClusterState state = current_state(*model, *config);
    const auto plan = mlsched::will_run_attempts(cluster, model->index, state, eligible, request, policy_of(*config));
    const auto& acceptable = mlsched::acceptable_types(model->index, request);
    const uint64_t limit = time_limit_seconds(job_ptr);
    const time_t original_start = job_ptr->start_time;
    time_t best_start = 0, best_finish = 0;
    std::string best_type;
    bitstr_t* best = nullptr;
    List best_preemptees = nullptr;
    std::vector<std::string> asked;  // types whose nodes this call holds (a gpu-type list: one type a call)
    for (const auto& offer : plan.attempts) {
      uint32_t usable = 0;
      for (size_t k : offer.nodes) usable += eligible[k] ? 1 : 0;
      if (usable >= std::max<uint32_t>(1, min_nodes)) asked.push_back(offer.gpu_type);
      List preemptees = nullptr;
      job_ptr->start_time = original_start;
      auto [rc, trial] = attempt(offer.nodes, mode, preemptee_job_list ? &preemptees : nullptr);
      if (rc != SLURM_SUCCESS) continue;
      const time_t finish =
          mlsched::expected_finish(config->gpu_type_speed, acceptable, offer.gpu_type, job_ptr->start_time, limit);
      if (!best || finish < best_finish) {
        FREE_NULL_BITMAP(best);
        FREE_NULL_LIST(best_preemptees);
        best = trial;
        best_start = job_ptr->start_time;
        best_finish = finish;
        best_type = offer.gpu_type;
        best_preemptees = preemptees;
      } else {
        FREE_NULL_BITMAP(trial);
        FREE_NULL_LIST(preemptees);
      }
    }
    // This call may have seen only slower types (a gpu-type list's matching-OR pass):
    // when the job ends sooner on the faster type, this pass has no answer, so
    // backfill keeps the faster type's and reserves its GPUs for the job.
    if (best) {
      const std::string faster =
          mlsched::faster_type_not_asked(config->gpu_type_speed, acceptable, asked, best_type);
      if (!faster.empty() && limit) {
        const time_t start = faster_type_start(job_ptr, bit_size(bitmap), min_nodes, max_nodes, req_nodes, tail,
                                               request, *config, *model, state, faster);
        if (mlsched::weigh_faster_type(config->gpu_type_speed, acceptable, faster, start, best_type, limit, best_start)
                .wait) {
          debug2("%s: %pJ will-run: %s from %ld ends sooner than %s from %ld; no answer on %s", kLog, job_ptr,
                 faster.c_str(), static_cast<long>(start), best_type.c_str(), static_cast<long>(best_start),
                 best_type.c_str());
          FREE_NULL_BITMAP(best);
          FREE_NULL_LIST(best_preemptees);
        }
      }
    }
    if (!best) {
      job_ptr->start_time = original_start;
      return SLURM_ERROR;
    }
    job_ptr->start_time = best_start;
    if (preemptee_job_list) *preemptee_job_list = best_preemptees;
    return accept(best);
  }

  // Run now (also the preemption path, with candidates to preempt): the first offer
  // cons_tres accepts.
  const mlsched::ClusterState state = current_state(*model, *config);
  auto plan = mlsched::run_now_attempts(cluster, model->index, state, eligible, request, policy_of(*config),
                                        preemptee_candidates != nullptr);
  consider_faster_type(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, tail, request, *config, *model, state, plan);
  for (const auto& offer : plan.attempts) {
    auto [rc, trial] = attempt(offer.nodes, mode, preemptee_job_list);
    if (rc != SLURM_SUCCESS) continue;
    const bool preempting = preemptee_job_list && *preemptee_job_list && list_count(*preemptee_job_list) > 0;
    if (offer.align_gpus && !preempting) align_gpus_to_cliques(job_ptr, trial, *model, state);
    if (offer.clears_reason) set_reason(job_ptr, "");
    debug3("%s: %pJ placed by offer %s", kLog, job_ptr, mlsched::attempt_step_name(offer.step));
    return accept(trial);
  }
  // A job that names several pools is tested in each in turn: its slower pool's
  // "waits for <faster type>" stays when this pass is in the pool of that type,
  // whose lack of room is the reason it waits, instead of being replaced at every
  // pass. Any other pass's reason replaces it.
  bool in_waited_pool = false;
  if (job_ptr->part_ptr_list && list_count(job_ptr->part_ptr_list) > 1) {
    const std::string waited = mlsched::faster_type_waited_for(mlsched::select_reason_of(str(job_ptr->system_comment)));
    for (size_t k = 0; k < eligible.size() && !waited.empty() && !in_waited_pool; ++k)
      in_waited_pool = eligible[k] && mlsched::lowercase(cluster.nodes()[k].gpu_type) == mlsched::lowercase(waited);
  }
  if (!in_waited_pool) set_reason(job_ptr, plan.reason);
  return SLURM_ERROR;
}

// ==== reservations for large gangs (ReserveForGangGpus; core/preempt.h) ==========
// The one reservation in force. Taken when backfill asks when a large gang that has
// waited ReserveForGangWait could start (will-run: the nodes of its answer are the
// unit it will run in), recorded on the gang's record for preempt/mlsched and
// `mlsched why`, and dropped once the gang is no longer waiting. Kept in memory
// only: after a restart the gang's next will-run takes it again. Read and changed
// under slurmctld's job lock, which every job test holds; the mutex only orders it.
struct HeldReservation {
  mlsched::GangReservation reservation;
  std::vector<int64_t> node_index;  // its nodes in slurmctld's node table (fixed until a restart)
  int64_t ready = 0;                // reserved_unit_ready() when last worked out,
  int64_t ready_at = -1;            // at this second (at most once a second: it walks job_list)
};
std::mutex g_reservation_mutex;
std::optional<HeldReservation> g_reservation;

// The reservation in force, if its gang is still waiting to start (not held).
std::optional<HeldReservation> reservation_now() {
  std::lock_guard<std::mutex> lock(g_reservation_mutex);
  if (!g_reservation) return std::nullopt;
  const mlsched::GangReservation& r = g_reservation->reservation;
  const job_record_t* gang = mlsched::plugin::ctld::find_job(r.job_id);
  if (!gang || !IS_JOB_PENDING(gang) || gang->priority == 0) {
    info("%s: JobId=%u no longer waits: its reservation of %s ends", kLog, r.job_id,
         mlsched::compress_hostlist(r.nodes).c_str());
    g_reservation.reset();
  }
  return g_reservation;
}

// A gang that starts no longer holds its reservation. reservation_now() would drop it
// at the next job test that asks, but that may come much later (at the end of a run,
// never), and the log would then say the reservation lasted that long. Caller holds
// the job write lock (slurmctld starts a job under it).
void end_reservation_of_started(const job_record_t* job_ptr) {
  std::lock_guard<std::mutex> lock(g_reservation_mutex);
  if (!g_reservation || g_reservation->reservation.job_id != job_ptr->job_id) return;
  info("%s: %pJ starts: its reservation of %s ends", kLog, job_ptr,
       mlsched::compress_hostlist(g_reservation->reservation.nodes).c_str());
  g_reservation.reset();
}

// After a will-run answer for `job_ptr` on `nodes`: a large gang that has waited
// long enough reserves them when no other gang holds a reservation. Caller holds
// the job write lock (the gang's record changes).
void maybe_reserve(job_record_t* job_ptr, bitstr_t* nodes, const mlsched::Config& config) {
  const time_t now = time(nullptr);
  const uint32_t gpus = mlsched::gpu_counts_from_tres(str(job_ptr->tres_fmt_req_str)).total();
  const int64_t eligible_since = job_ptr->details ? job_ptr->details->begin_time : 0;
  if (!mlsched::may_reserve_for_gang(gpus, eligible_since, config, now) || job_ptr->priority == 0) return;
  if (reservation_now()) return;
  HeldReservation held;
  mlsched::GangReservation& r = held.reservation;
  r.job_id = job_ptr->job_id;
  r.since = now;
  node_record_t** table = mlsched::plugin::ctld::node_table();
  const int64_t count = mlsched::plugin::ctld::node_count();
  for (int64_t i = bit_ffs(nodes); table && i >= 0 && i <= bit_fls(nodes) && i < count; i++) {
    if (!bit_test(nodes, i) || !table[i]) continue;
    r.nodes.push_back(table[i]->name);
    held.node_index.push_back(i);
  }
  if (r.nodes.empty()) return;
  const std::string after = mlsched::with_reservation_recorded(str(job_ptr->admin_comment), r);
  xfree(job_ptr->admin_comment);
  job_ptr->admin_comment = xstrdup(after.c_str());
  info("%s: %pJ (%u GPUs, eligible for %ld s) reserves %s: GPUs freed there go only to preemptible jobs "
       "until it starts",
       kLog, job_ptr, gpus, static_cast<long>(now - eligible_since), mlsched::compress_hostlist(r.nodes).c_str());
  std::lock_guard<std::mutex> lock(g_reservation_mutex);
  g_reservation = std::move(held);
}

// The earliest the reserved unit can hold its gang (core reserved_unit_ready): from the
// GPUs its running jobs hold there, their time limits, and whether they were lent them.
// Worked out at most once a second, walking job_list as cons_tres's will-run does in
// the same job test. Caller holds the job read lock (every job test does).
int64_t unit_ready_time(const HeldReservation& held, const mlsched::Config& config, int64_t now) {
  {
    std::lock_guard<std::mutex> lock(g_reservation_mutex);
    if (g_reservation && g_reservation->reservation.job_id == held.reservation.job_id && g_reservation->ready_at == now)
      return g_reservation->ready;
  }
  const mlsched::GangReservation& r = held.reservation;
  const job_record_t* gang = mlsched::plugin::ctld::find_job(r.job_id);
  List jobs = mlsched::plugin::ctld::job_list();
  int64_t ready = now;
  if (gang && jobs) {
    const uint32_t gang_gpus = mlsched::gpu_counts_from_tres(str(gang->tres_fmt_req_str)).total();
    const auto model = g_cluster.get(config, g_config.generation(), kLog);
    const mlsched::ClusterState state = current_state(*model, config);
    uint32_t unit_gpus = 0;
    for (size_t k = 0; k < model->cluster.nodes().size() && k < state.size(); ++k) {
      const auto& node = model->cluster.nodes()[k];
      if (state[k].usable && std::find(r.nodes.begin(), r.nodes.end(), node.name) != r.nodes.end())
        unit_gpus += node.gpus;
    }
    std::vector<mlsched::UnitHolder> holders;
    ListIterator it = list_iterator_create(jobs);
    while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
      if ((!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) || !job_ptr->node_bitmap) continue;
      bool there = false;
      for (int64_t i : held.node_index)
        there = there || (i < bit_size(job_ptr->node_bitmap) && bit_test(job_ptr->node_bitmap, i));
      if (!there) continue;
      const mlsched::PreemptCandidate view = mlsched::plugin::running_view(job_ptr, config);
      mlsched::UnitHolder h;
      for (const auto& node : r.nodes)
        if (auto g = view.gpus_on_node.find(node); g != view.gpus_on_node.end()) h.gpus += g->second;
      h.start_time = job_ptr->start_time;
      h.end_time = job_ptr->end_time;
      h.lent = mlsched::lent_reserved_gpus(r, view, config);
      holders.push_back(h);
    }
    list_iterator_destroy(it);
    ready = mlsched::reserved_unit_ready(gang_gpus, unit_gpus, r.since, std::move(holders), now);
  }
  std::lock_guard<std::mutex> lock(g_reservation_mutex);
  if (g_reservation && g_reservation->reservation.job_id == r.job_id) {
    g_reservation->ready = ready;
    g_reservation->ready_at = now;
  }
  return ready;
}

// The reason a job kept off a reservation's nodes waits, when they have GPUs of a
// type it accepts free now ("" otherwise: it would not fit there anyway).
std::string kept_off_reason(const mlsched::GangReservation& r, int64_t ready, bitstr_t* bitmap,
                            const mlsched::PlacementRequest& request, const mlsched::Config& config) {
  const auto model = g_cluster.get(config, g_config.generation(), kLog);
  const mlsched::ClusterState state = current_state(*model, config);
  const auto& acceptable = mlsched::acceptable_types(model->index, request);
  uint32_t free = 0;
  for (size_t k = 0; k < model->cluster.nodes().size(); ++k) {
    const auto& node = model->cluster.nodes()[k];
    if (std::find(r.nodes.begin(), r.nodes.end(), node.name) == r.nodes.end()) continue;
    if (!bit_test(bitmap, model->slurm_index[k]) || !state[k].usable) continue;
    if (std::find(acceptable.begin(), acceptable.end(), mlsched::lowercase(node.gpu_type)) == acceptable.end() &&
        std::find(acceptable.begin(), acceptable.end(), node.gpu_type) == acceptable.end())
      continue;
    for (bool busy : state[k].gpu_busy) free += busy ? 0 : 1;
  }
  if (free == 0) return "";
  std::string text = std::to_string(free) + " free GPUs on " + mlsched::compress_hostlist(r.nodes) +
                     " are reserved for job " + std::to_string(r.job_id) + ", a large gang; only preemptible jobs";
  if (ready > time(nullptr))
    text += ", or jobs whose time limit ends by " + mlsched::local_clock(ready) + " (the earliest it can start there),";
  return text + " may use them until it starts";
}
// ==== end reservations for large gangs ============================================

}  // namespace

MLSCHED_EXPORT int init(void) {
  return guarded(kLog, "init", SLURM_ERROR, [] {
    if (!mlsched::plugin::release::load_cons_tres(kLog)) return SLURM_ERROR;
    // Client commands (sinfo, squeue, sprio) load every select plugin: they only
    // need the forwarding above. Policy state lives in slurmctld alone.
    if (!mlsched::plugin::ctld::in_slurmctld()) return SLURM_SUCCESS;
    if (!g_config.start(slurm_conf.slurm_conf, kLog)) return SLURM_ERROR;
    load_failures();
    g_saver.start(saver_loop);
    return SLURM_SUCCESS;
  });
}

MLSCHED_EXPORT int fini(void) {
  guarded(kLog, "fini", SLURM_SUCCESS, [] {
    g_config.stop_watching();
    g_saver.stop();
    if (mlsched::plugin::ctld::in_slurmctld()) save_failures();
    return SLURM_SUCCESS;
  });
  return mlsched::plugin::release::unload_cons_tres();
}

// select_p_job_test, whose signature is the release's (plugins/common/slurm-X.Y/select.cc).
int mlsched::plugin::shell::select_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes,
                                            uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
                                            List preemptee_candidates, List* preemptee_job_list,
                                            const JobTestTail& tail) {
  const CostTimer timer;
  try {
    mlsched::PlacementRequest request;
    std::shared_ptr<const mlsched::Config> config;
    if (mlsched::plugin::ctld::in_slurmctld() && (config = g_config.get()) && gpu_request(job_ptr, min_nodes, request)) {
      // A job that names its nodes (-w) gets them: only its GPUs inside each node
      // are still chosen by NVLink clique.
      const bool pinned = job_ptr->details && job_ptr->details->req_node_bitmap &&
                          bit_set_count(job_ptr->details->req_node_bitmap) > 0;
      if (!pinned) {
        // A large gang's reservation: a job that could not give its GPUs back is kept off
        // the gang's nodes (in run-now and will-run alike, so backfill plans it elsewhere).
        const auto held =
            mode == SELECT_MODE_TEST_ONLY || !config->reserve_for_gang_gpus ? std::nullopt : reservation_now();
        const mlsched::GangReservation* reservation = held ? &held->reservation : nullptr;
        if (reservation && reservation->job_id != job_ptr->job_id &&
            !mlsched::may_borrow_reserved_gpus(mlsched::plugin::preemption_view(job_ptr), *config)) {
          // It may still run there when its time limit ends before the unit can hold the
          // gang, the promise stock backfill makes: tried first with the unit's nodes.
          const time_t now = time(nullptr);
          const int64_t ready = unit_ready_time(*held, *config, now);
          const uint64_t limit = time_limit_seconds(job_ptr);
          if (mlsched::ends_before_unit_ready(now, limit, ready)) {
            bitstr_t* whole = bit_copy(bitmap);
            const time_t original_start = job_ptr->start_time;
            List preemptees = nullptr;
            const int rc = placed_job_test(job_ptr, whole, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                                           preemptee_job_list ? &preemptees : nullptr, tail, request, config);
            // Backfill's will-run may plan it for later: it must still end by then.
            if (rc == SLURM_SUCCESS &&
                (mode != SELECT_MODE_WILL_RUN || mlsched::ends_before_unit_ready(job_ptr->start_time, limit, ready))) {
              bit_copybits(bitmap, whole);
              FREE_NULL_BITMAP(whole);
              if (preemptee_job_list) *preemptee_job_list = preemptees;
              return rc;
            }
            FREE_NULL_LIST(preemptees);
            FREE_NULL_BITMAP(whole);
            job_ptr->start_time = original_start;
          }
          bitstr_t* narrowed = bit_copy(bitmap);
          bool kept_off = false;
          for (int64_t i : held->node_index)
            if (i < bit_size(narrowed) && bit_test(narrowed, i)) {
              bit_clear(narrowed, i);
              kept_off = true;
            }
          if (kept_off) {
            const int rc = placed_job_test(job_ptr, narrowed, min_nodes, max_nodes, req_nodes, mode,
                                           preemptee_candidates, preemptee_job_list, tail, request, config);
            // It cannot start now (backfill's will-run may plan it for later, and then
            // never asks run-now): say so when the reserved nodes have room it could use.
            if (rc != SLURM_SUCCESS || (mode == SELECT_MODE_WILL_RUN && job_ptr->start_time > time(nullptr))) {
              const std::string why = kept_off_reason(*reservation, ready, bitmap, request, *config);
              if (!why.empty()) set_reason(job_ptr, why);
            }
            if (rc == SLURM_SUCCESS) bit_copybits(bitmap, narrowed);
            FREE_NULL_BITMAP(narrowed);
            return rc;
          }
          FREE_NULL_BITMAP(narrowed);
        }
        const int rc = placed_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                                       preemptee_job_list, tail, request, config);
        if (rc == SLURM_SUCCESS && mode == SELECT_MODE_WILL_RUN && config->reserve_for_gang_gpus)
          maybe_reserve(job_ptr, bitmap, *config);
        return rc;
      }
      const int rc = inner_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                                    preemptee_job_list, tail);
      const bool preempting = preemptee_job_list && *preemptee_job_list && list_count(*preemptee_job_list) > 0;
      if (rc == SLURM_SUCCESS && mode == SELECT_MODE_RUN_NOW && !preempting) {
        const auto model = g_cluster.get(*config, g_config.generation(), kLog);
        align_gpus_to_cliques(job_ptr, bitmap, *model, current_state(*model, *config));
      }
      return rc;
    }
  } catch (const std::exception& e) {
    error("%s: placement of %pJ failed (%s); using cons_tres alone", kLog, job_ptr, e.what());
  } catch (...) {
    error("%s: placement of %pJ failed; using cons_tres alone", kLog, job_ptr);
  }
  return inner_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                        preemptee_job_list, tail);
}

void mlsched::plugin::shell::select_job_begin(const job_record_t* job_ptr) noexcept {
  try {
    end_reservation_of_started(job_ptr);
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: job_begin failed with a non-standard exception", kLog);
  }
}

int mlsched::plugin::shell::select_job_fini(job_record_t* job_ptr) {
  try {
    // A job that ended because a node failed marks the nodes that failed (down, failing
    // or not responding now) as flaky for a while; the healthy rest of its gang is not.
    if (IS_JOB_NODE_FAILED(job_ptr) && job_ptr->node_bitmap) {
      std::lock_guard<std::mutex> lock(g_failures_mutex);
      const time_t now = time(nullptr);
      node_record_t** table = mlsched::plugin::ctld::node_table();
      const int64_t count = mlsched::plugin::ctld::node_count();
      const auto config = g_config.get();
      for (int64_t i = bit_ffs(job_ptr->node_bitmap); i >= 0 && i <= bit_fls(job_ptr->node_bitmap); i++) {
        node_record_t* node_ptr = table && i < count ? table[i] : nullptr;
        if (!bit_test(job_ptr->node_bitmap, i) || !node_ptr) continue;
        if (IS_NODE_DOWN(node_ptr) || IS_NODE_FAIL(node_ptr) || IS_NODE_NO_RESPOND(node_ptr)) {
          g_failures.record(node_ptr->name, now);
          g_failures_unsaved = true;
          g_saver.poke();
          info("%s: %s failed under %pJ; large gangs avoid it for %u s while healthy nodes can hold them",
               kLog, node_ptr->name, job_ptr, config ? config->node_failure_window : 0);
        }
      }
    }
  } catch (...) {
    // Logged, not rethrown: nothing may cross into slurmctld.
    error("%s: job_fini failed with a non-standard exception", kLog);
  }
  return mlsched::plugin::release::cons_tres_job_fini(job_ptr);
}
