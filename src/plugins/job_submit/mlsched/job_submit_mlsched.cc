// job_submit/mlsched: reads ML directives (#MLSCHED lines, --comment "mlsched: ...")
// at submission, refuses bad ones with a message sbatch prints, and rewrites the job
// so Slurm asks for what they mean. The decision itself is core's plan_submit().
#include <algorithm>
#include <csignal>
#include <exception>
#include <string>

#include "core/checkpoint.h"
#include "core/submit.h"
#include "core/text.h"
#include "plugins/common/cluster_snapshot.h"
#include "plugins/common/config_store.h"
#include "plugins/common/ctld.h"
#include "plugins/common/guard.h"
#include "plugins/common/release.h"
#include "plugins/common/slurm_headers.h"

MLSCHED_EXPORT const char plugin_name[] = "mlsched job submit plugin: ML directives";
MLSCHED_EXPORT const char plugin_type[] = "job_submit/mlsched";
MLSCHED_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

namespace {

using mlsched::plugin::guarded;
constexpr const char* kLog = "job_submit/mlsched";

mlsched::plugin::ConfigStore g_config;
mlsched::plugin::ClusterSnapshot g_cluster;

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// Copies the fields the decision reads out of Slurm's request.
mlsched::JobRequest copy_request(const job_desc_msg_t* job_desc) {
  mlsched::JobRequest req;
  req.script = str(job_desc->script);
  req.comment = str(job_desc->comment);
  req.tres_per_node = str(job_desc->tres_per_node);
  req.tres_per_job = str(job_desc->tres_per_job);
  req.tres_per_task = str(job_desc->tres_per_task);
  req.tres_per_socket = str(job_desc->tres_per_socket);
  req.features = str(job_desc->features);
  req.prefer = str(job_desc->prefer);
  if (job_desc->min_nodes != NO_VAL && job_desc->min_nodes != 0) req.min_nodes = job_desc->min_nodes;
  if (job_desc->num_tasks != NO_VAL && job_desc->num_tasks != 0) req.num_tasks = job_desc->num_tasks;
  if (job_desc->warn_signal != NO_VAL16 && job_desc->warn_signal != 0) {
    req.warn_signal = job_desc->warn_signal;
    if (job_desc->warn_time != NO_VAL16) req.warn_time = job_desc->warn_time;
  }
  if (job_desc->requeue != NO_VAL16) req.requeue = job_desc->requeue != 0;
  if (job_desc->time_limit != NO_VAL && job_desc->time_limit != INFINITE) req.time_limit = job_desc->time_limit;
  if (job_desc->het_job_offset != NO_VAL) {
    req.het_component = job_desc->het_job_offset;
    // slurmctld calls job_submit once per component, one after the other in the same
    // RPC thread, and only the leader (offset 0) carries the batch script: the later
    // components read their part of the leader's.
    thread_local std::string leader_script;
    if (job_desc->het_job_offset == 0) leader_script = req.script;
    else if (req.script.empty()) req.script = leader_script;
  }
  req.placement_orders_types = !xstrcasecmp(slurm_conf.select_type, "select/mlsched");
  return req;
}

// A federated job's view of the other regions (docs/regions.md): the GPU types they
// declare as cluster features, when every region of the federation declares some,
// and whether this request is a sibling copy sent by the origin region. The
// federation read lock is held by job_submit's callers, origin and sibling alike.
void add_regions(const job_desc_msg_t* job_desc, uint32_t submit_uid, mlsched::JobRequest& req) {
  slurmdb_federation_rec_t* fed = mlsched::plugin::ctld::federation();
  slurmdb_cluster_rec_t* self = mlsched::plugin::ctld::federation_self();
  if (!fed || !fed->cluster_list || !self || !self->name) return;
  req.cluster_features = str(job_desc->cluster_features);
  // Only the origin sends a copy with the viable siblings set, as uid 0 (fed_mgr.c).
  req.sibling_copy = submit_uid == 0 && job_desc->fed_siblings_viable != 0;
  // --clusters limits where a federated job may go.
  std::vector<std::string> allowed;
  for (const auto& c : mlsched::split(mlsched::lowercase(str(job_desc->clusters)), ','))
    if (!mlsched::trim(c).empty()) allowed.push_back(mlsched::trim(c));
  std::vector<std::string> types;
  bool all_declare = true;
  ListIterator it = list_iterator_create(fed->cluster_list);
  while (auto* c = static_cast<slurmdb_cluster_rec_t*>(list_next(it))) {
    if (!c->name) continue;
    if (!c->fed.feature_list || list_count(c->fed.feature_list) == 0) {
      all_declare = false;
      break;
    }
    const std::string name = mlsched::lowercase(c->name);
    if (name == mlsched::lowercase(self->name)) continue;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) continue;
    ListIterator f = list_iterator_create(c->fed.feature_list);
    while (auto* feature = static_cast<char*>(list_next(f)))
      if (types.size() < 256) types.push_back(mlsched::lowercase(feature));
    list_iterator_destroy(f);
  }
  list_iterator_destroy(it);
  if (!all_declare) return;
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  req.other_region_gpu_types = types;
}

// nullopt leaves the field; "" clears it.
void replace(char** field, const std::optional<std::string>& value) {
  if (!value) return;
  xfree(*field);
  *field = value->empty() ? nullptr : xstrdup(value->c_str());
}

// Writes the plan back into the request.
void apply(const mlsched::SubmitPlan& plan, job_desc_msg_t* job_desc) {
  replace(&job_desc->tres_per_node, plan.tres_per_node);
  replace(&job_desc->tres_per_job, plan.tres_per_job);
  replace(&job_desc->tres_per_task, plan.tres_per_task);
  replace(&job_desc->tres_per_socket, plan.tres_per_socket);
  replace(&job_desc->features, plan.features);
  replace(&job_desc->prefer, plan.prefer);
  replace(&job_desc->cluster_features, plan.cluster_features);
  if (plan.warn_signal) {
    job_desc->warn_signal = static_cast<uint16_t>(*plan.warn_signal);
    job_desc->warn_time = static_cast<uint16_t>(plan.warn_time.value_or(0));
    if (job_desc->warn_flags == NO_VAL16) job_desc->warn_flags = 0;
    if (plan.warn_batch_only) job_desc->warn_flags |= KILL_JOB_BATCH;
  }
  if (plan.requeue) job_desc->requeue = *plan.requeue ? 1 : 0;
  // The admin comment is the one job field users cannot change, so the other
  // plugins can trust what they read there. Keep an admin's own note after ours.
  std::string stored = plan.stored;
  if (job_desc->admin_comment && *job_desc->admin_comment) stored += "; " + str(job_desc->admin_comment);
  xfree(job_desc->admin_comment);
  job_desc->admin_comment = xstrdup(stored.c_str());
}

void tell_user(char** err_msg, const std::string& msg) {
  if (msg.empty() || !err_msg) return;
  if (*err_msg) xstrfmtcat(*err_msg, "\n%s", msg.c_str());
  else *err_msg = xstrdup(msg.c_str());
}

}  // namespace

// job_submit plugins are loaded by slurmctld only.
MLSCHED_EXPORT int init(void) {
  return guarded(kLog, "init", SLURM_ERROR,
                 [] { return g_config.start(slurm_conf.slurm_conf, kLog) ? SLURM_SUCCESS : SLURM_ERROR; });
}

MLSCHED_EXPORT int fini(void) {
  return guarded(kLog, "fini", SLURM_SUCCESS, [] {
    g_config.stop_watching();
    return SLURM_SUCCESS;
  });
}

// Called with read locks on config, job, node and partition (job_submit.c). From
// 23.02 on, several submissions (and updates) may be in here at once: every piece of
// state is guarded (ConfigStore and ClusterSnapshot hold mutexes) or per thread
// (copy_request's leader script, whose components one RPC thread submits in turn).
MLSCHED_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  try {
    const auto config = g_config.get();
    if (!config) {
      tell_user(err_msg, "mlsched: the scheduler's configuration is not loaded; ask your admin");
      return SLURM_ERROR;
    }
    const auto model = g_cluster.get(*config, g_config.generation(), kLog);
    mlsched::JobRequest req = copy_request(job_desc);
    add_regions(job_desc, submit_uid, req);
    const mlsched::SubmitPlan plan = plan_submit(req, *config, model->cluster);
    const std::string msg = plan.user_message();
    if (!plan.accepted()) {
      info("%s: refused a job of uid %u: %s", kLog, submit_uid, msg.c_str());
      tell_user(err_msg, msg);
      return SLURM_ERROR;
    }
    // A pipeline stage without directives still gets its membership stored.
    if (plan.has_directives || !plan.stored.empty()) apply(plan, job_desc);
    tell_user(err_msg, msg);
    return SLURM_SUCCESS;
  } catch (const std::exception& e) {
    error("%s: job_submit failed: %s", kLog, e.what());
  } catch (...) {
    error("%s: job_submit failed", kLog);
  }
  // Refuse rather than silently drop directives the user relies on.
  tell_user(err_msg, "mlsched: internal error while reading this job's directives; the job was not "
                     "submitted. Ask your admin to check slurmctld's log");
  return SLURM_ERROR;
}

// job_modify, whose signature is the release's (plugins/common/slurm-X.Y/job_submit.cc).
// The rules are core's (check_update). The reason always goes to slurmctld's log;
// where the release gives job_modify a message channel (`err_msg`, from 23.02) the
// user sees it too, and otherwise only Slurm's text for the error code (README:
// "When an update is refused").
int mlsched::plugin::shell::job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid,
                                       char** err_msg) {
  try {
    mlsched::JobUpdate u;
    if (job_desc->comment) u.comment = job_desc->comment;
    u.current_comment = str(job_ptr->comment);
    u.admin_comment = str(job_ptr->admin_comment);
    u.request = copy_request(job_desc);
    const auto config = g_config.get();
    const mlsched::UpdateVerdict v = mlsched::check_update(u, config ? *config : mlsched::Config{});
    if (v.allowed()) return SLURM_SUCCESS;
    info("%s: refused update of job %u by uid %u: %s", kLog, job_ptr->job_id, submit_uid, v.reason.c_str());
    tell_user(err_msg, v.reason);
    return v.kind == mlsched::UpdateVerdict::Kind::gpu_type_excluded ? ESLURM_INVALID_GRES : ESLURM_NOT_SUPPORTED;
  } catch (const std::exception& e) {
    error("%s: job_modify failed: %s", kLog, e.what());
  } catch (...) {
    error("%s: job_modify failed", kLog);
  }
  return SLURM_ERROR;
}
