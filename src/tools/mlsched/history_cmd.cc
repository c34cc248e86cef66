// `mlsched history` and `mlsched jobs`: a job's runs from slurmdbd's per-run
// accounting (libslurmdb, no shell, no sacct) plus mlsched's record, and the jobs
// of a user with their ML state. The states and the history are the core's
// (core/lifecycle.h); this file only reads Slurm into its values.
#include <pwd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "core/hostlist.h"
#include "core/job_record.h"
#include "core/lifecycle.h"
#include "core/text.h"
#include "core/tres.h"
#include "tools/mlsched/cli.h"

#include "slurm_public.h"  // the release line's (src/plugins/common/slurm-X.Y)

namespace mlsched::tool {

namespace {

const char* const kHistoryHelp =
    "usage: mlsched history [--json] <jobid>\n"
    "\n"
    "Every run of a job: when and where it ran (nodes; GPU indices of the current\n"
    "run), how it ended (completed; preempted by job X; node failure on node N;\n"
    "time limit; cancelled by whom; requeued), the checkpoint it resumed from and\n"
    "the last one it reported, and the GPU-time it used and lost (GPUs x the time\n"
    "after its last checkpoint, for runs cut short). Built from slurmdbd's record\n"
    "of each run (so it is complete after slurmctld restarts and after the job left\n"
    "slurmctld) plus mlsched's record on the job; when accounting cannot be read it\n"
    "says which runs are unknown. Checkpoints are those `mlsched ckpt done`\n"
    "reported to slurmctld.\n"
    "\n"
    "  --json   the same as JSON\n";

const char* const kJobsHelp =
    "usage: mlsched jobs [--all | --user NAME] [--json]\n"
    "\n"
    "Jobs slurmctld holds with their ML state, run count, the age of their last\n"
    "reported checkpoint and a one-line reason: yours, another user's (--user), or\n"
    "everyone's (--all). States:\n";

// Lists from libslurm, freed on every path.
struct ListGuard {
  struct xlist* list = nullptr;  // List (22.05) or list_t* (24.11): the same struct
  ~ListGuard() {
    if (list) slurm_list_destroy(list);
  }
};

std::string passwd_name(uint32_t uid) {
  struct passwd pw, *found = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
  return "";
}

// AccountingStoreFlags=job_comment: accounting keeps each run's Comment.
bool g_comments_stored = true;

struct AccountingOfJob {
  std::vector<AccountedRun> runs;
  std::vector<NodeDownEvent> node_events;
  std::string name, user, account;
};

// Every record accounting keeps of one job (one per run of a requeued job), and
// the node-down events of the nodes those runs used. Throws ToolError when
// slurmdbd cannot be asked.
AccountingOfJob load_job_accounting(uint32_t job_id, time_t now) {
  std::string cluster_name;
  {
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || !conf)
      throw ToolError(slurm_error("cannot read the cluster's configuration from slurmctld"));
    cluster_name = str(conf->cluster_name);
    g_comments_stored = mlsched::tool::release::stores_job_comment(*conf);
    slurm_free_ctl_conf(conf);
  }
  uint16_t persist_flags = 0;
  void* db = slurmdb_connection_get(&persist_flags);
  if (!db) throw ToolError(slurm_error("cannot reach the accounting database (slurmdbd)"));
  std::unique_ptr<void, void (*)(void*)> db_guard(db, [](void* c) { slurmdb_connection_close(&c); });
  const std::string gpu_id = accounting_gpu_tres_id(db);

  slurmdb_job_cond_t cond = {};
  ListGuard clusters, steps, records;
  clusters.list = slurm_list_create(nullptr);
  if (!cluster_name.empty()) slurm_list_append(clusters.list, const_cast<char*>(cluster_name.c_str()));
  cond.cluster_list = clusters.list;
  slurm_selected_step_t step = {};
  step.array_task_id = NO_VAL;
  step.het_job_offset = NO_VAL;
  step.step_id.job_id = job_id;
  step.step_id.step_id = NO_VAL;
  step.step_id.step_het_comp = NO_VAL;
  steps.list = slurm_list_create(nullptr);
  slurm_list_append(steps.list, &step);
  cond.step_list = steps.list;
  cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;
  // Every run (duplicates), no steps; no time window, so run times are not clipped.
  cond.flags = JOBCOND_FLAG_DUP | JOBCOND_FLAG_NO_STEP;
  records.list = slurmdb_jobs_get(db, &cond);
  if (!records.list) throw ToolError(slurm_error("cannot read job " + std::to_string(job_id) + " from accounting"));

  AccountingOfJob out;
  std::vector<std::string> nodes;
  int64_t earliest = 0;
  struct listIterator* it = slurm_list_iterator_create(records.list);
  size_t read = 0;
  while (auto* j = static_cast<slurmdb_job_rec_t*>(slurm_list_next(it))) {
    if (j->jobid != job_id) continue;
    if (++read > kMaxHistoryRuns * 2) break;  // bounded whatever the database holds
    AccountedRun r;
    r.state = (j->state & JOB_STATE_BASE) == JOB_PENDING && (j->state & JOB_REQUEUE) ? "REQUEUED"
                                                                                      : job_state_text(j->state);
    r.requeue_flag = j->state & JOB_REQUEUE;
    // sacct's REQUEUED: accounting stores a run that ended into a requeue as JOB_REQUEUE.
    if ((j->state & JOB_STATE_BASE) == JOB_PENDING && j->start && j->end) r.state = "REQUEUED";
    r.start = j->start;
    r.end = j->end;
    r.nodes = str(j->nodes);
    if (r.nodes == "None assigned") r.nodes.clear();
    for (const auto& item : split(str(j->tres_alloc_str), ','))
      if (!gpu_id.empty() && starts_with(item, gpu_id + "="))
        r.gpus = static_cast<uint32_t>(parse_uint(item.substr(gpu_id.size() + 1)).value_or(0));
    r.requid = j->requid;
    if (r.state == "CANCELLED" && j->requid != NO_VAL && j->requid != INFINITE) r.requester = passwd_name(j->requid);
    r.exit_code = j->exitcode;
    r.comment = str(j->derived_es);
    r.admin_comment = str(j->admin_comment);
    if (out.name.empty()) out.name = str(j->jobname);
    if (out.user.empty()) out.user = j->user ? str(j->user) : passwd_name(j->uid);
    if (out.account.empty()) out.account = str(j->account);
    if (r.start > 0) {
      if (!earliest || r.start < earliest) earliest = r.start;
      try {
        for (auto& n : expand_hostlist(r.nodes)) nodes.push_back(std::move(n));
      } catch (const std::exception&) {
      }
    }
    out.runs.push_back(std::move(r));
  }
  slurm_list_iterator_destroy(it);

  if (!nodes.empty()) {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const std::string node_list = compress_hostlist(nodes);
    slurmdb_event_cond_t ev = {};
    ev.cluster_list = clusters.list;
    ev.event_type = SLURMDB_EVENT_NODE;
    ev.node_list = const_cast<char*>(node_list.c_str());
    ev.period_start = earliest - 60;
    ev.period_end = now;
    ListGuard events;
    events.list = slurmdb_events_get(db, &ev);
    if (events.list) {
      struct listIterator* e = slurm_list_iterator_create(events.list);
      size_t n = 0;
      while (auto* rec = static_cast<slurmdb_event_rec_t*>(slurm_list_next(e))) {
        if (++n > 10000) break;
        if ((rec->state & NODE_STATE_BASE) != NODE_STATE_DOWN || !rec->node_name) continue;
        out.node_events.push_back({str(rec->node_name), static_cast<int64_t>(rec->period_start), str(rec->reason)});
      }
      slurm_list_iterator_destroy(e);
    }
  }
  return out;
}

json_object* jstr(const std::string& s) { return json_object_new_string(s.c_str()); }

json_object* checkpoint_json(const std::optional<CheckpointReport>& c) {
  if (!c) return nullptr;
  json_object* o = json_object_new_object();
  json_object_object_add(o, "name", c->name.empty() ? nullptr : jstr(c->name));
  json_object_object_add(o, "time", json_object_new_int64(c->time));
  return o;
}

json_object* status_json(const MlStatus& s) {
  json_object* o = json_object_new_object();
  json_object_object_add(o, "state", jstr(ml_state_name(s.state)));
  json_object_object_add(o, "run", json_object_new_int64(s.run));
  json_object_object_add(o, "detail", jstr(s.detail));
  json_object_object_add(o, "last_checkpoint", checkpoint_json(s.last_checkpoint));
  json_object_object_add(o, "resumed_from", s.resumed_from.empty() ? nullptr : jstr(s.resumed_from));
  json_object_object_add(o, "preempted_by", s.preempted_by ? json_object_new_int64(s.preempted_by) : nullptr);
  return o;
}

json_object* history_json(const JobHistory& h) {
  json_object* root = json_object_new_object();
  json_object_object_add(root, "job_id", json_object_new_int64(h.job_id));
  json_object_object_add(root, "name", jstr(h.name));
  json_object_object_add(root, "user", jstr(h.user));
  json_object_object_add(root, "account", jstr(h.account));
  json_object_object_add(root, "status", h.status_known ? status_json(h.status) : nullptr);
  json_object_object_add(root, "in_controller", json_object_new_boolean(h.in_controller));
  json_object_object_add(root, "accounting_read", json_object_new_boolean(h.accounting_read));
  json_object_object_add(root, "accounting_problem",
                         h.accounting_problem.empty() ? nullptr : jstr(h.accounting_problem));
  json_object_object_add(root, "gpu_seconds", json_object_new_double(h.gpu_seconds));
  json_object_object_add(root, "lost_gpu_seconds", json_object_new_double(h.lost_gpu_seconds));
  json_object* p = json_object_new_object();
  json_object_object_add(p, "times", json_object_new_int64(h.preemptions.times));
  json_object_object_add(p, "last_by", h.preemptions.last_by ? json_object_new_int64(h.preemptions.last_by) : nullptr);
  json_object_object_add(p, "last_at", h.preemptions.last_at ? json_object_new_int64(h.preemptions.last_at) : nullptr);
  json_object_object_add(p, "estimated_lost_gpu_seconds", json_object_new_double(h.preemptions.lost_gpu_seconds));
  json_object_object_add(root, "preemptions", p);
  json_object* runs = json_object_new_array();
  for (const auto& r : h.runs) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "run", json_object_new_int64(r.run));
    json_object_object_add(o, "start", json_object_new_int64(r.start));
    json_object_object_add(o, "end", r.end ? json_object_new_int64(r.end) : nullptr);
    json_object_object_add(o, "nodes", jstr(r.nodes));
    json_object_object_add(o, "gpus", json_object_new_int64(r.gpus));
    json_object* idx = nullptr;
    if (!r.gpu_indices.empty()) {
      idx = json_object_new_object();
      for (const auto& [node, ids] : r.gpu_indices) {
        json_object* a = json_object_new_array();
        for (int i : ids) json_object_array_add(a, json_object_new_int(i));
        json_object_object_add(idx, node.c_str(), a);
      }
    }
    json_object_object_add(o, "gpu_indices", idx);
    json_object_object_add(o, "ended", jstr(run_end_name(r.end_cause)));
    json_object_object_add(o, "ended_detail", jstr(r.end_detail));
    json_object_object_add(o, "preempted_by", r.preempted_by ? json_object_new_int64(r.preempted_by) : nullptr);
    json_object* failed = json_object_new_array();
    for (const auto& n : r.failed_nodes) json_object_array_add(failed, jstr(n));
    json_object_object_add(o, "failed_nodes", failed);
    json_object_object_add(o, "resumed_from", checkpoint_json(r.resumed_from));
    json_object_object_add(o, "ended_with", checkpoint_json(r.ended_with));
    json_object_object_add(o, "gpu_seconds", json_object_new_double(r.gpu_seconds));
    json_object_object_add(o, "lost_gpu_seconds", json_object_new_double(r.lost_gpu_seconds));
    json_object_array_add(runs, o);
  }
  json_object_object_add(root, "runs", runs);
  json_object* notes = json_object_new_array();
  for (const auto& n : h.notes) json_object_array_add(notes, jstr(n));
  json_object_object_add(root, "notes", notes);
  return root;
}

uint32_t job_id_arg(const std::string& text) {
  if (text.empty()) throw UsageError("which job? give a job id");
  const auto id = parse_uint(text);
  if (!id || *id == 0 || *id > 0xfffffff0ULL) throw UsageError("'" + shown(text) + "' is not a job id");
  return static_cast<uint32_t>(*id);
}

}  // namespace

SlurmJobView job_view(const slurm_job_info_t& j) {
  SlurmJobView v;
  v.state = state_name(j);
  v.configuring = j.job_state & JOB_CONFIGURING;
  v.requeuing = j.job_state & (JOB_REQUEUE | JOB_REQUEUE_HOLD);
  if ((j.job_state & JOB_STATE_BASE) == JOB_PENDING)
    v.reason = j.state_reason == WAIT_NO_REASON
                   ? "None"
                   : str(mlsched::tool::release::job_reason_text(static_cast<job_state_reason>(j.state_reason)));
  v.restarts = j.restart_cnt;
  v.allocated = j.nodes && *j.nodes;
  const uint32_t base = j.job_state & JOB_STATE_BASE;
  // A pending job's start_time is Slurm's estimate of its next start, not a run's.
  v.start_time = base == JOB_PENDING ? 0 : j.start_time;
  // A running job's end_time is its expected end; only an ended one's is real.
  v.end_time = base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED ? 0 : j.end_time;
  v.queued_since = j.submit_time;
  v.preempt_time = j.preempt_time;
  v.exit_code = j.exit_code;
  v.comment = str(j.comment);
  v.admin_comment = str(j.admin_comment);
  if (const auto d = decode_job_record(v.admin_comment).directives) v.checkpoint_grace = d->checkpoint_grace;
  return v;
}

int cmd_history(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kHistoryHelp, stdout);
    return 0;
  }
  const bool json = args.flag("--json");
  const std::string id_text = args.positional();
  args.expect_no_more("history");
  const uint32_t id = job_id_arg(id_text);
  slurm_init(nullptr);

  HistoryInput in;
  in.job_id = id;
  in.now = time(nullptr);
  JobsMsg target;
  if (slurm_load_job(&target.msg, id, SHOW_DETAIL | SHOW_ALL) == SLURM_SUCCESS && target.msg &&
      target.msg->record_count) {
    const slurm_job_info_t& j = target.msg->job_array[0];
    in.controller = job_view(j);
    in.name = str(j.name);
    in.user = user_name(j.user_id, j.user_name);
    in.account = str(j.account);
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    if (base == JOB_RUNNING || base == JOB_SUSPENDED) {
      in.controller_nodes = str(j.nodes);
      in.controller_gpus = gpu_counts_from_tres(str(j.tres_alloc_str)).total();
      in.gpu_indices = gpus_by_node(j);
    }
  } else if (errno != ESLURM_INVALID_JOB_ID) {  // libslurm sets errno on both release lines
    throw ToolError(slurm_error("cannot read job " + id_text + " from slurmctld"));
  }
  try {
    AccountingOfJob a = load_job_accounting(id, in.now);
    in.accounting_read = true;
    in.comments_in_accounting = g_comments_stored;
    in.accounted = std::move(a.runs);
    in.node_events = std::move(a.node_events);
    if (in.name.empty()) in.name = a.name;
    if (in.user.empty()) in.user = a.user;
    if (in.account.empty()) in.account = a.account;
  } catch (const ToolError& e) {
    in.accounting_problem = e.what();
  }
  if (!in.controller && in.accounted.empty()) {
    if (!in.accounting_read)
      throw ToolError("job " + id_text + " is not in slurmctld, and accounting could not be read: " +
                      in.accounting_problem);
    throw ToolError("job " + id_text + " does not exist (neither slurmctld nor accounting knows it)");
  }
  const JobHistory h = build_history(in);
  if (json) print_json(history_json(h));
  else fputs(format_history(h, in.now).c_str(), stdout);
  return 0;
}

int cmd_jobs(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kJobsHelp, stdout);
    for (MlState s : ml_states()) printf("  %s\n", ml_state_name(s));
    return 0;
  }
  const bool all = args.flag("--all");
  const bool json = args.flag("--json");
  std::string user = args.value("--user");
  args.expect_no_more("jobs");
  if (all && !user.empty()) throw UsageError("--all and --user exclude each other");
  uid_t uid = getuid();
  if (!user.empty()) {
    struct passwd pw, *found = nullptr;
    char buf[1024];
    if (getpwnam_r(user.c_str(), &pw, buf, sizeof buf, &found) != 0 || !found)
      throw ToolError("no such user '" + shown(user) + "'");
    uid = found->pw_uid;
  }
  slurm_init(nullptr);
  JobsMsg jobs;
  if (slurm_load_jobs(0, &jobs.msg, SHOW_ALL) != SLURM_SUCCESS)
    throw ToolError(slurm_error("cannot read the job list from slurmctld"));
  const int64_t now = time(nullptr);
  std::vector<JobListRow> rows;
  for (uint32_t i = 0; i < jobs.msg->record_count; ++i) {
    const slurm_job_info_t& j = jobs.msg->job_array[i];
    if (!all && j.user_id != uid) continue;
    JobListRow r;
    r.job_id = j.job_id;
    r.name = str(j.name);
    r.user = user_name(j.user_id, j.user_name);
    r.account = str(j.account);
    r.status = ml_status(job_view(j));
    r.now = now;
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [](const JobListRow& a, const JobListRow& b) { return a.job_id < b.job_id; });
  if (json) {
    json_object* arr = json_object_new_array();
    for (const auto& r : rows) {
      json_object* o = json_object_new_object();
      json_object_object_add(o, "job_id", json_object_new_int64(r.job_id));
      json_object_object_add(o, "name", jstr(r.name));
      json_object_object_add(o, "user", jstr(r.user));
      json_object_object_add(o, "account", jstr(r.account));
      json_object_object_add(o, "status", status_json(r.status));
      json_object_array_add(arr, o);
    }
    print_json(arr);
    return 0;
  }
  fputs(format_job_list(rows).c_str(), stdout);
  return 0;
}

}  // namespace mlsched::tool
