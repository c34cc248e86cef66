// `mlsched metrics` and `mlsched top`: one snapshot of nodes, jobs and fair share
// read through libslurm, summarised by the core (core/ops.h) and printed as
// Prometheus text, served over loopback HTTP, or shown as an operator screen.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/fairshare.h"
#include "core/ops.h"
#include "core/preempt.h"
#include "core/priority.h"
#include "core/text.h"
#include "tools/mlsched/cli.h"

#include "slurm_public.h"  // the release line's (src/plugins/common/slurm-X.Y)

namespace mlsched::tool {

std::vector<TeamShareInfo> load_team_shares();  // shares.cc

std::string cluster_name_from_slurmctld() {
  slurm_conf_t* conf = nullptr;
  if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || !conf)
    throw ToolError(slurm_error("cannot read the cluster's name from slurmctld"));
  const std::string name = str(conf->cluster_name);
  slurm_free_ctl_conf(conf);
  return name;
}

std::string accounting_gpu_tres_id(void* db) {
  slurmdb_tres_cond_t tres_cond;
  slurmdb_init_tres_cond(&tres_cond, 0);
  struct xlist* types = slurm_list_create(nullptr);  // List (22.05) or list_t* (24.11)
  struct xlist* names = slurm_list_create(nullptr);
  slurm_list_append(types, const_cast<char*>("gres"));
  slurm_list_append(names, const_cast<char*>("gpu"));
  tres_cond.type_list = types;
  tres_cond.name_list = names;
  struct xlist* tres = slurmdb_tres_get(db, &tres_cond);
  slurm_list_destroy(types);
  slurm_list_destroy(names);
  if (!tres) throw ToolError(slurm_error("cannot read TRES from the accounting database"));
  std::string id;
  struct listIterator* it = slurm_list_iterator_create(tres);
  while (auto* t = static_cast<slurmdb_tres_rec_t*>(slurm_list_next(it)))
    if (t->name && !strcmp(t->name, "gpu") && t->type && !strcmp(t->type, "gres")) id = std::to_string(t->id);
  slurm_list_iterator_destroy(it);
  slurm_list_destroy(tres);
  return id;
}

namespace {

const char* const kMetricsHelp =
    "usage: mlsched metrics [--listen ADDR:PORT]\n"
    "\n"
    "Prometheus text exposition of the cluster now: allocated/idle/unavailable GPUs\n"
    "by type and NVLink domain, GPUs in use and entitled per team, fair share and\n"
    "usage per team (sshare), pending jobs by Slurm reason, a histogram of how long\n"
    "pending jobs have waited, the fragmentation index, nodes by state, restarts,\n"
    "preemptions and the GPU-hours they lost, per team and in all, and jobs by\n"
    "ML state (mlsched_jobs_by_ml_state{state=...}; see mlsched jobs --help).\n"
    "\n"
    "Preemptions (mlsched_preemptions, mlsched_team_preemptions ...) are read from\n"
    "the marks preempt/mlsched leaves on each victim (preempted=, lost-gpu-seconds=\n"
    "in its AdminComment). They cover the jobs slurmctld still holds (pending,\n"
    "running, and those that ended within MinJobAge) and, when accounting (slurmdbd)\n"
    "answers, every job with a run in the last 24 h; a job counts all its\n"
    "preemptions. They are gauges: a job leaving that window lowers them. Requeues\n"
    "for other causes (time limit, node failure, scontrol requeue) are counted apart\n"
    "(mlsched_requeues_other_causes). Runs cut short in the last 24 h, by cause,\n"
    "come from accounting only (mlsched_interrupted_runs).\n"
    "\n"
    "  --listen ADDR:PORT  serve GET /metrics over HTTP instead of printing once;\n"
    "                      loopback addresses only (127.0.0.0/8): there is no\n"
    "                      authentication. Port 0 picks a free port; the address\n"
    "                      served is printed on stderr.\n";

const char* const kTopHelp =
    "usage: mlsched top [--once] [--json] [--interval SECONDS]\n"
    "\n"
    "The cluster for operators: GPUs by type, GPUs per team against its\n"
    "entitlement and fair share, queue wait percentiles and pending jobs by reason,\n"
    "the fragmentation index, nodes down or drained, preemptions and the GPU-hours\n"
    "they lost per team (from preempt/mlsched's marks on the jobs slurmctld still\n"
    "holds, ended ones for MinJobAge, and accounting's last 24 h when slurmdbd\n"
    "answers) beside requeues for other causes, and a map with one character\n"
    "per GPU (# allocated, . idle, x unavailable; coloured on a terminal).\n"
    "Refreshes every --interval seconds (default 5) until interrupted, unless\n"
    "--once or --json.\n";

// Everything one summary needs; the snapshot points into `cluster`.
struct OpsData {
  Cluster cluster;
  OpsSnapshot snap;
  std::vector<std::string> notes;
};

std::map<std::string, uint32_t> as_gpu_map(const GpuCounts& c) {
  std::map<std::string, uint32_t> out = c.by_type;
  if (c.untyped) out["untyped"] += c.untyped;
  return out;
}

// Lists from libslurm, freed on every path.
struct ListGuard {
  struct xlist* list = nullptr;  // List (22.05) or list_t* (24.11): the same struct
  ~ListGuard() {
    if (list) slurm_list_destroy(list);
  }
};

// What accounting holds for the window.
struct AccountingRead {
  std::vector<InterruptedRun> interrupted;
  std::vector<JobPreemptions> preemptions;  // one per job with a run in the window
};

// Runs of this cluster cut short within the window, from slurmdbd: the records
// of every run of a job (a requeued job has one per run), without steps. Each
// record keeps the admin comment as it was when its run ended, so preempt/mlsched's
// marks tell preemptions from other requeues.
AccountingRead load_accounting(time_t now) {
  const std::string cluster_name = cluster_name_from_slurmctld();

  uint16_t persist_flags = 0;
  void* db = slurmdb_connection_get(&persist_flags);
  if (!db) throw ToolError(slurm_error("cannot reach the accounting database (slurmdbd)"));
  std::unique_ptr<void, void (*)(void*)> db_guard(db, [](void* c) { slurmdb_connection_close(&c); });
  const std::string gpu_tres_id = accounting_gpu_tres_id(db);
  // Without a GPU TRES no run's GPUs are known (counted as 0), but marks still count.

  slurmdb_job_cond_t job_cond = {};
  ListGuard clusters, records;
  clusters.list = slurm_list_create(nullptr);
  slurm_list_append(clusters.list, const_cast<char*>(cluster_name.c_str()));
  job_cond.cluster_list = clusters.list;
  job_cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;  // no filter on scheduling flags (0 is one, matching none)
  job_cond.flags = JOBCOND_FLAG_DUP | JOBCOND_FLAG_NO_STEP;
  job_cond.usage_start = now - kInterruptedWindowSeconds;
  job_cond.usage_end = now;
  records.list = slurmdb_jobs_get(db, &job_cond);
  if (!records.list) throw ToolError(slurm_error("cannot read jobs from the accounting database"));
  AccountingRead out;
  std::map<uint32_t, JobPreemptions> jobs;
  struct listIterator* it = slurm_list_iterator_create(records.list);
  while (auto* j = static_cast<slurmdb_job_rec_t*>(slurm_list_next(it))) {
    const PreemptionHistory h = preemption_history(str(j->admin_comment));
    JobPreemptions& job = jobs[j->jobid];
    job.job_id = j->jobid;
    if (job.team.empty()) job.team = str(j->account);
    if (h.times > job.preempted || (h.times == job.preempted && h.lost_gpu_seconds > job.lost_gpu_seconds)) {
      job.preempted = h.times;
      job.lost_gpu_seconds = h.lost_gpu_seconds;
    }
    InterruptedRun r;
    const bool requeued = j->state & JOB_REQUEUE;
    if (requeued) r.cause = run_ended_by_preemption(h.last_at, j->start, j->end) ? "preempted" : "requeued";
    else if ((j->state & JOB_STATE_BASE) == JOB_PREEMPTED) r.cause = "preempted";
    else if ((j->state & JOB_STATE_BASE) == JOB_NODE_FAIL) r.cause = "node_fail";
    else continue;
    // A run that ends requeued (or preempted by Slurm, which requeues) is one restart.
    if (requeued || r.cause == "preempted") ++job.restarts;
    for (const auto& item : split(str(j->tres_alloc_str), ','))
      if (!gpu_tres_id.empty() && starts_with(item, gpu_tres_id + "="))
        r.gpus = static_cast<uint32_t>(parse_uint(item.substr(gpu_tres_id.size() + 1)).value_or(0));
    r.seconds = j->elapsed;
    out.interrupted.push_back(std::move(r));
  }
  slurm_list_iterator_destroy(it);
  for (auto& [id, job] : jobs) out.preemptions.push_back(std::move(job));
  return out;
}

void load_ops(OpsData& d) {
  load_cluster(d.cluster, d.snap.state, d.notes, &d.snap.health);
  d.snap.cluster = &d.cluster;
  d.snap.pools = load_pools(d.notes);
  d.snap.now = time(nullptr);

  JobsMsg jobs;
  // This region's jobs only: in a federation libslurm would add the other regions'
  // jobs, whose GPUs are not on these nodes.
  if (slurm_load_jobs(0, &jobs.msg, SHOW_ALL | SHOW_DETAIL | SHOW_LOCAL) != SLURM_SUCCESS)
    throw ToolError(slurm_error("cannot read the job list from slurmctld"));
  std::vector<JobPreemptions> table_preemptions;
  for (uint32_t i = 0; i < jobs.msg->record_count; ++i) {
    const slurm_job_info_t& j = jobs.msg->job_array[i];
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    {
      const SlurmJobView view = job_view(j);
      OpsJobState ml;
      ml.state = ml_status(view).state;
      if (ml.state == MlState::checkpointing)
        ml.checkpointing_since =
            view.preempt_time ? view.preempt_time : preemption_history(view.admin_comment).last_at;
      d.snap.ml_jobs.push_back(ml);
    }
    // Every job the controller holds, finished ones too (for MinJobAge).
    if (j.restart_cnt || j.admin_comment) {
      const PreemptionHistory h = preemption_history(str(j.admin_comment));
      if (j.restart_cnt || h.times)
        table_preemptions.push_back({j.job_id, str(j.account), j.restart_cnt, h.times, h.lost_gpu_seconds});
    }
    if (base == JOB_RUNNING || base == JOB_SUSPENDED) {
      d.snap.running.push_back({j.job_id, str(j.account), as_gpu_map(gpu_counts_from_tres(str(j.tres_alloc_str))),
                                j.restart_cnt, static_cast<int64_t>(j.start_time)});
    } else if (base == JOB_PENDING) {
      OpsPendingJob p;
      p.job_id = j.job_id;
      p.team = str(j.account);
      p.slurm_reason = j.state_reason == WAIT_NO_REASON
                           ? "None"
                           : str(mlsched::tool::release::job_reason_text(static_cast<job_state_reason>(j.state_reason)));
      p.waiting_seconds = d.snap.now - j.submit_time;
      p.gpus = pending_gpus(str(j.tres_req_str));
      p.restarts = j.restart_cnt;
      p.partitions = str(j.partition);
      d.snap.pending.push_back(std::move(p));
    }
  }

  try {
    d.snap.teams = load_team_shares();
  } catch (const ToolError& e) {
    // GPUs and the queue are still worth showing without fair share.
    d.notes.push_back(e.what());
  }

  std::vector<JobPreemptions> accounted;
  try {
    AccountingRead acct = load_accounting(d.snap.now);
    d.snap.interrupted = std::move(acct.interrupted);
    accounted = std::move(acct.preemptions);
    d.snap.accounting_read = true;
  } catch (const ToolError& e) {
    d.notes.push_back(std::string(e.what()) + "; interrupted runs not shown, preemptions from slurmctld's jobs only");
  }
  d.snap.preemptions = merge_job_preemptions(table_preemptions, accounted);

  // Entitlements the way priority/mlsched computes its quotas.
  ConfigResult conf = load_config_file(mlsched_conf_path());
  const Config config = conf.config ? *conf.config : Config{};
  std::map<std::string, TeamStanding> standing;
  for (const auto& t : d.snap.teams) {
    TeamStanding s;
    s.shares_norm = t.shares_norm;
    s.usage_norm = t.usage_norm;
    s.fairshare = t.fairshare;
    standing[t.team] = s;
  }
  // By GPU type: a team's quotas per pool (TeamQuota=nlp:a100@train=8) are summed
  // into their type's.
  const std::map<std::string, uint32_t> cluster_gpus = cluster_gpus_by_quota_kind(config, d.cluster, d.snap.pools);
  const Quotas quotas(config, standing, cluster_gpus);
  for (const auto& t : d.snap.teams)
    for (const auto& type : d.cluster.gpu_types()) {
      uint32_t& e = d.snap.entitlement[t.team][type];
      e = 0;
      for (const auto& [kind, n] : cluster_gpus)
        if (type_of_quota_kind(kind) == lowercase(type)) e += quotas.guaranteed(t.team, kind);
    }
}

OpsSummary summary_now(std::vector<std::string>& notes) {
  OpsData d;
  load_ops(d);
  notes = d.notes;
  return summarize(d.snap);
}

// ---- --listen -------------------------------------------------------------------

struct ListenAddress {
  in_addr addr{};
  uint16_t port = 0;
  std::string text;
};

ListenAddress parse_listen(const std::string& value) {
  const std::string hint = " (want ADDR:PORT on loopback, e.g. 127.0.0.1:9400)";
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) throw UsageError("--listen '" + value + "' has no port" + hint);
  std::string host = value.substr(0, colon);
  const auto port = parse_uint(value.substr(colon + 1));
  if (!port || *port > 65535) throw UsageError("--listen '" + value + "': bad port" + hint);
  if (host == "localhost") host = "127.0.0.1";
  ListenAddress a;
  if (inet_pton(AF_INET, host.c_str(), &a.addr) != 1)
    throw UsageError("--listen '" + value + "': '" + host + "' is not an IPv4 address" + hint);
  if ((ntohl(a.addr.s_addr) >> 24) != 127)
    throw UsageError("--listen '" + value + "': only loopback addresses (127.0.0.0/8) are served, since " +
                     "the metrics endpoint has no authentication");
  a.port = static_cast<uint16_t>(*port);
  a.text = host;
  return a;
}

void send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away; nothing to tell it
    sent += static_cast<size_t>(n);
  }
}

void respond(int fd, int code, const char* status, const std::string& type, const std::string& body) {
  std::string head = "HTTP/1.0 " + std::to_string(code) + " " + status + "\r\nContent-Type: " + type +
                     "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  send_all(fd, head + body);
}

// One request per connection, one connection at a time: a scrape every few seconds
// needs no more, and a slow or stuck client is cut off by the socket timeouts.
void serve_one(int client) {
  timeval timeout{5, 0};
  setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  constexpr size_t kMaxRequest = 8192;
  std::string request;
  char buf[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequest) {
    const ssize_t n = recv(client, buf, sizeof buf, 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  const size_t eol = request.find("\r\n");
  if (eol == std::string::npos) {
    respond(client, 400, "Bad Request", "text/plain", "incomplete or oversized request\n");
    return;
  }
  const auto parts = split_words(request.substr(0, eol));
  if (parts.size() != 3) {
    respond(client, 400, "Bad Request", "text/plain", "malformed request line\n");
    return;
  }
  if (parts[0] != "GET") {
    respond(client, 405, "Method Not Allowed", "text/plain", "only GET /metrics is served\n");
    return;
  }
  const std::string path = parts[1].substr(0, parts[1].find('?'));
  if (path != "/metrics") {
    respond(client, 404, "Not Found", "text/plain", "not here: GET /metrics\n");
    return;
  }
  try {
    std::vector<std::string> notes;
    const std::string body = format_metrics(summary_now(notes));
    for (const auto& n : notes) fprintf(stderr, "mlsched metrics: %s\n", n.c_str());
    respond(client, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body);
  } catch (const std::exception& e) {
    // Slurm unreachable: the scraper records the failure; the server stays up.
    respond(client, 503, "Service Unavailable", "text/plain", std::string(e.what()) + "\n");
    fprintf(stderr, "mlsched metrics: %s\n", e.what());
  }
}

[[noreturn]] void serve(const ListenAddress& where) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ToolError(std::string("cannot open a socket: ") + strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = where.addr;
  sa.sin_port = htons(where.port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 8) != 0) {
    const int err = errno;
    close(fd);
    throw ToolError("cannot listen on " + where.text + ":" + std::to_string(where.port) + ": " + strerror(err));
  }
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  fprintf(stderr, "mlsched metrics: serving http://%s:%u/metrics\n", where.text.c_str(), ntohs(sa.sin_port));
  fflush(stderr);
  for (;;) {
    const int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      throw ToolError(std::string("accepting a connection failed: ") + strerror(errno));
    }
    serve_one(client);
    close(client);
  }
}

// ---- top --json ---------------------------------------------------------------------

json_object* tally_json(const GpuTally& t) {
  json_object* o = json_object_new_object();
  json_object_object_add(o, "total", json_object_new_int64(t.total));
  json_object_object_add(o, "allocated", json_object_new_int64(t.allocated));
  json_object_object_add(o, "idle", json_object_new_int64(t.idle));
  json_object_object_add(o, "unavailable", json_object_new_int64(t.unavailable));
  return o;
}

json_object* counts_json(const std::map<std::string, uint32_t>& m) {
  json_object* o = json_object_new_object();
  for (const auto& [k, v] : m) json_object_object_add(o, k.c_str(), json_object_new_int64(v));
  return o;
}

json_object* summary_json(const OpsSummary& s, const std::vector<std::string>& notes) {
  json_object* root = json_object_new_object();
  json_object_object_add(root, "time", json_object_new_int64(s.now));
  json_object* types = json_object_new_object();
  for (const auto& [type, t] : s.by_type) json_object_object_add(types, type.c_str(), tally_json(t));
  json_object_object_add(root, "gpus_by_type", types);
  json_object* domains = json_object_new_object();
  for (const auto& [domain, by_type] : s.by_domain) {
    json_object* d = json_object_new_object();
    for (const auto& [type, t] : by_type) json_object_object_add(d, type.c_str(), tally_json(t));
    json_object_object_add(domains, domain.c_str(), d);
  }
  json_object_object_add(root, "gpus_by_nvlink_domain", domains);
  json_object* pools = json_object_new_object();
  for (const auto& [pool, row] : s.by_pool) {
    json_object* p = tally_json(row.gpus);
    json_object_object_add(p, "pending_jobs", json_object_new_int64(row.pending_jobs));
    json_object_object_add(p, "pending_gpus", json_object_new_int64(row.pending_gpus));
    json_object_object_add(pools, pool.c_str(), p);
  }
  json_object_object_add(root, "pools", pools);
  json_object* teams = json_object_new_object();
  for (const auto& [team, row] : s.teams) {
    json_object* t = json_object_new_object();
    json_object_object_add(t, "gpus_in_use", counts_json(row.gpus_in_use));
    json_object_object_add(t, "entitlement", counts_json(row.entitlement));
    json_object_object_add(t, "running_jobs", json_object_new_int64(row.running_jobs));
    json_object_object_add(t, "pending_jobs", json_object_new_int64(row.pending_jobs));
    json_object_object_add(t, "pending_gpus", json_object_new_int64(row.pending_gpus));
    json_object_object_add(t, "borrowed_gpus", json_object_new_int64(row.borrowed_gpus));
    json_object_object_add(t, "fairshare", row.has_shares ? json_object_new_double(row.shares.fairshare) : nullptr);
    json_object_object_add(t, "share", row.has_shares ? json_object_new_double(row.shares.shares_norm) : nullptr);
    json_object_object_add(t, "usage_share", row.has_shares ? json_object_new_double(row.shares.usage_norm) : nullptr);
    json_object_object_add(teams, team.c_str(), t);
  }
  json_object_object_add(root, "teams", teams);
  json_object* queue = json_object_new_object();
  json_object_object_add(queue, "pending", json_object_new_int64(static_cast<int64_t>(s.wait_count)));
  json_object_object_add(queue, "running", json_object_new_int64(s.running_jobs));
  json_object_object_add(queue, "wait_p50_seconds", json_object_new_int64(s.wait_p50));
  json_object_object_add(queue, "wait_p90_seconds", json_object_new_int64(s.wait_p90));
  json_object_object_add(queue, "wait_max_seconds", json_object_new_int64(s.wait_max));
  json_object_object_add(queue, "pending_by_reason", counts_json(s.pending_by_reason));
  json_object_object_add(queue, "jobs_restarted", json_object_new_int64(s.jobs_restarted));
  json_object_object_add(queue, "restarts", json_object_new_int64(s.restarts));
  json_object_object_add(root, "queue", queue);
  auto preemption_json = [](const PreemptionTally& t) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "preemptions", json_object_new_int64(t.preemptions));
    json_object_object_add(o, "jobs_preempted", json_object_new_int64(t.jobs_preempted));
    json_object_object_add(o, "lost_gpu_seconds", json_object_new_double(t.lost_gpu_seconds));
    json_object_object_add(o, "other_requeues", json_object_new_int64(t.other_requeues));
    return o;
  };
  json_object* preempt = preemption_json(s.preemptions_total);
  json_object* by_team = json_object_new_object();
  for (const auto& [team, t] : s.preemptions) json_object_object_add(by_team, team.c_str(), preemption_json(t));
  json_object_object_add(preempt, "teams", by_team);
  json_object_object_add(preempt, "window", json_object_new_string(s.accounting_read ? "job table and accounting's last 24 h"
                                                                                     : "job table"));
  json_object_object_add(root, "preemptions", preempt);
  json_object* frag = json_object_new_object();
  json_object_object_add(frag, "node_index", json_object_new_double(s.fragmentation.node_index));
  json_object_object_add(frag, "nvlink_domain_index", json_object_new_double(s.fragmentation.domain_index));
  json_object_object_add(frag, "free_gpus", json_object_new_int64(s.fragmentation.free_gpus));
  json_object_object_add(frag, "idle_nodes", json_object_new_int64(s.fragmentation.idle_nodes));
  json_object_object_add(frag, "idle_nvlink_domains", json_object_new_int64(s.fragmentation.idle_domains));
  json_object_object_add(root, "fragmentation", frag);
  json_object* down = json_object_new_array();
  for (const auto& n : s.unavailable_nodes) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "node", json_object_new_string(n.name.c_str()));
    json_object_object_add(o, "state", json_object_new_string(n.state.c_str()));
    json_object_object_add(o, "reason", json_object_new_string(n.reason.c_str()));
    json_object_object_add(o, "gpus", json_object_new_int64(n.gpus));
    json_object_array_add(down, o);
  }
  json_object_object_add(root, "nodes_unavailable", down);
  json_object* map = json_object_new_object();
  for (const auto& m : s.gpu_map) json_object_object_add(map, m.node.c_str(), json_object_new_string(m.gpus.c_str()));
  json_object_object_add(root, "gpu_map", map);
  json_object* jnotes = json_object_new_array();
  for (const auto& n : notes) json_object_array_add(jnotes, json_object_new_string(n.c_str()));
  json_object_object_add(root, "notes", jnotes);
  return root;
}

}  // namespace

int cmd_metrics(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kMetricsHelp, stdout);
    return 0;
  }
  const std::string listen_at = args.value("--listen");
  args.expect_no_more("metrics");
  slurm_init(nullptr);
  if (!listen_at.empty()) serve(parse_listen(listen_at));
  std::vector<std::string> notes;
  const std::string text = format_metrics(summary_now(notes));
  fputs(text.c_str(), stdout);
  // Notes go to stderr so stdout stays valid exposition text.
  for (const auto& n : notes) fprintf(stderr, "mlsched metrics: %s\n", n.c_str());
  return 0;
}

int cmd_top(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kTopHelp, stdout);
    return 0;
  }
  const bool once = args.flag("--once");
  const bool json = args.flag("--json");
  const std::string interval_text = args.value("--interval");
  args.expect_no_more("top");
  uint64_t interval = 5;
  if (!interval_text.empty()) {
    const auto v = parse_uint(interval_text);
    if (!v || *v == 0 || *v > 3600) throw UsageError("--interval '" + interval_text + "' is not 1..3600 seconds");
    interval = *v;
  }
  slurm_init(nullptr);
  const bool tty = isatty(STDOUT_FILENO);
  for (;;) {
    std::vector<std::string> notes;
    const OpsSummary s = summary_now(notes);
    if (json) {
      print_json(summary_json(s, notes));
      return 0;
    }
    if (!once && tty) fputs("\033[H\033[2J", stdout);  // redraw in place
    fputs(format_top(s, tty).c_str(), stdout);
    for (const auto& n : notes) printf("note: %s\n", n.c_str());
    fflush(stdout);
    if (once) return 0;
    sleep(static_cast<unsigned>(interval));
  }
}

}  // namespace mlsched::tool
