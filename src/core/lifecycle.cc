// An ML job's states and the history of its runs (see lifecycle.h).
#include "core/lifecycle.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/hostlist.h"
#include "core/ops.h"
#include "core/preempt.h"
#include "core/text.h"
#include "core/why.h"

namespace mlsched {

const std::vector<MlState>& ml_states() {
  static const std::vector<MlState> all = {MlState::queued,    MlState::placed,    MlState::running,
                                           MlState::checkpointing, MlState::preempted, MlState::requeued,
                                           MlState::resumed,   MlState::completed, MlState::failed,
                                           MlState::cancelled};
  return all;
}

const char* ml_state_name(MlState s) {
  switch (s) {
    case MlState::queued: return "queued";
    case MlState::placed: return "placed";
    case MlState::running: return "running";
    case MlState::checkpointing: return "checkpointing";
    case MlState::preempted: return "preempted";
    case MlState::requeued: return "requeued";
    case MlState::resumed: return "resumed";
    case MlState::completed: return "completed";
    case MlState::failed: return "failed";
    case MlState::cancelled: return "cancelled";
  }
  return "unknown";
}

namespace {

// Slack for clocks and for the time between a run's end and its record.
constexpr int64_t kSlackSeconds = 5;
// Without a declared checkpoint-grace, how long before a requeue a preemption may lie
// and still be its cause (MaxCheckpointGrace's default).
constexpr int64_t kDefaultGraceWindow = 600;

std::string failure_detail(const std::string& state, uint32_t exit_code) {
  if (state == "TIMEOUT") return "time limit reached";
  if (state == "NODE_FAIL") return "node failure";
  if (state == "OUT_OF_MEMORY") return "out of memory";
  if (state == "BOOT_FAIL") return "nodes failed to boot";
  if (state == "DEADLINE") return "deadline reached";
  if (state == "PREEMPTED") return "preempted and not requeued";
  const uint32_t status = exit_code >> 8, signal = exit_code & 0xff;
  if (signal) return "killed by signal " + std::to_string(signal);
  return "exit code " + std::to_string(status);
}

bool ended_state(const std::string& s) {
  return s == "COMPLETED" || s == "CANCELLED" || s == "FAILED" || s == "TIMEOUT" || s == "NODE_FAIL" ||
         s == "PREEMPTED" || s == "BOOT_FAIL" || s == "DEADLINE" || s == "OUT_OF_MEMORY" || s == "REQUEUED";
}

}  // namespace

MlStatus ml_status(const SlurmJobView& job) {
  MlStatus s;
  const JobRecord record = decode_job_record(job.admin_comment);
  const PreemptionHistory& p = record.preemptions;
  s.last_checkpoint = checkpoint_report_of(job.comment);
  const std::string& st = job.state;
  const bool waiting_again = st == "PENDING" || (ended_state(st) && job.requeuing) || st == "REQUEUED";

  if (waiting_again) {
    // Waiting after a requeue: Restarts counts the runs so far (one being carried
    // out is counted a moment later, so at least one).
    s.run = std::max<uint32_t>(job.restarts, 1);
    if (st == "PENDING" && job.restarts == 0) {
      s.state = MlState::queued;
      s.run = 0;
      s.detail = job.reason.empty() ? "waiting" : "waiting: " + job.reason;
      return s;
    }
    // Was the run that just ended stopped by a preemption? Its grace ends in the requeue.
    bool by_preemption = false;
    if (p.times && p.last_at > 0) {
      if (job.start_time > 0) {
        by_preemption = p.last_at >= job.start_time &&
                        (job.end_time == 0 || p.last_at <= job.end_time + kSlackSeconds);
      } else if (job.queued_since > 0) {
        const int64_t grace = job.checkpoint_grace ? job.checkpoint_grace : kDefaultGraceWindow;
        by_preemption = p.last_at >= job.queued_since - grace - kSlackSeconds &&
                        p.last_at <= job.queued_since + kSlackSeconds;
      }
    }
    if (by_preemption || st == "PREEMPTED") {
      s.state = MlState::preempted;
      s.preempted_by = p.last_by;
      s.detail = "after run " + std::to_string(s.run) + ", preempted" +
                 (p.last_by ? " by job " + std::to_string(p.last_by) : std::string()) + "; waiting to resume";
    } else {
      s.state = MlState::requeued;
      std::string cause = st == "NODE_FAIL" ? "node failure" : st == "TIMEOUT" ? "time limit" : "";
      s.detail = "after run " + std::to_string(s.run) + (cause.empty() ? "" : " (" + cause + ")") +
                 "; waiting to resume";
    }
    if (s.last_checkpoint && !s.last_checkpoint->name.empty()) s.detail += " from " + s.last_checkpoint->name;
    if (st == "PENDING" && !job.reason.empty() && job.reason != "None") s.detail += " (Slurm: " + job.reason + ")";
    return s;
  }

  if (st == "RUNNING" || st == "SUSPENDED") {
    s.run = job.restarts + 1;
    // The mark is written during the run it ends (whole seconds, never before its
    // start): one from an earlier run is older than this run's start.
    const bool victim = job.preempt_time > 0 ||
                        (p.times && p.last_at > 0 && job.start_time > 0 && p.last_at >= job.start_time);
    if (job.configuring) {
      s.state = MlState::placed;
      s.detail = "allocated; nodes and job launching";
    } else if (victim) {
      s.state = MlState::checkpointing;
      s.preempted_by = p.last_by;
      s.detail = "checkpoint signal sent" + (p.last_by ? " (preempted by job " + std::to_string(p.last_by) + ")" : "") +
                 "; grace running";
    } else if (job.restarts > 0) {
      s.state = MlState::resumed;
      // `mlsched run` reports what it resumed from; a checkpoint report from before
      // this run's start says the same when that report is missing (or older).
      std::optional<CheckpointReport> from = resume_report_of(job.comment);
      if (s.last_checkpoint && s.last_checkpoint->time < job.start_time &&
          (!from || s.last_checkpoint->time > from->time))
        from = s.last_checkpoint;
      if (from) s.resumed_from = from->name;
      s.detail = "run " + std::to_string(s.run) +
                 (s.resumed_from.empty() ? "" : ", resumed from " + s.resumed_from);
    } else {
      s.state = MlState::running;
      s.detail = "run 1";
    }
    if (st == "SUSPENDED") s.detail += " (suspended)";
    return s;
  }

  // A requeue clears the run's times: an end without a start came while it waited
  // again after `restarts` runs (or before any).
  // Cancelling a waiting job sets its start to its end, and it holds no nodes.
  const bool ended_while_waiting = job.start_time == 0 || (st == "CANCELLED" && !job.allocated);
  s.run = ended_while_waiting ? job.restarts : job.restarts + 1;
  if (st == "COMPLETED") {
    s.state = MlState::completed;
    s.detail = s.run ? "finished in run " + std::to_string(s.run) : "finished";
  } else if (st == "CANCELLED") {
    s.state = MlState::cancelled;
    s.detail = ended_while_waiting ? (s.run ? "cancelled while waiting after run " + std::to_string(s.run)
                                            : std::string("cancelled while queued"))
                                   : "cancelled in run " + std::to_string(s.run);
  } else {
    s.state = MlState::failed;
    s.detail = failure_detail(st, job.exit_code) + (s.run ? " in run " + std::to_string(s.run) : "");
  }
  return s;
}

std::string format_status(const MlStatus& s) {
  return std::string(ml_state_name(s.state)) + (s.detail.empty() ? "" : ": " + escape_controls(s.detail));
}

// ==== history ======================================================================

const char* run_end_name(RunEnd e) {
  switch (e) {
    case RunEnd::running: return "running";
    case RunEnd::completed: return "completed";
    case RunEnd::failed: return "failed";
    case RunEnd::time_limit: return "time_limit";
    case RunEnd::cancelled: return "cancelled";
    case RunEnd::preempted: return "preempted";
    case RunEnd::node_failure: return "node_failure";
    case RunEnd::requeued: return "requeued";
    case RunEnd::unknown: return "unknown";
  }
  return "unknown";
}

namespace {

std::vector<std::string> nodes_of(const std::string& hostlist) {
  try {
    return expand_hostlist(hostlist);
  } catch (const std::exception&) {
    return {};
  }
}

// Nodes of the run that went down while it ran (or just after: slurmctld notices
// a dead node up to SlurmdTimeout later, and ends the run then).
std::vector<std::string> failed_nodes_of(const AccountedRun& r, const std::vector<NodeDownEvent>& events) {
  std::vector<std::string> out;
  if (r.start <= 0) return out;
  const auto nodes = nodes_of(r.nodes);
  for (const auto& e : events) {
    if (e.at + kSlackSeconds < r.start || (r.end > 0 && e.at > r.end + kSlackSeconds)) continue;
    if (std::find(nodes.begin(), nodes.end(), e.node) == nodes.end()) continue;
    if (std::find(out.begin(), out.end(), e.node) == out.end()) out.push_back(e.node);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void classify_end(const AccountedRun& r, const std::vector<NodeDownEvent>& events, RunRecord& run) {
  const PreemptionHistory p = decode_job_record(r.admin_comment).preemptions;
  const bool preempted_in_run = p.times && p.last_at > 0 && r.end > 0 &&
                                run_ended_by_preemption(p.last_at, r.start, r.end + kSlackSeconds);
  run.failed_nodes = failed_nodes_of(r, events);
  const std::string& st = r.state;
  if (r.end == 0 || st == "RUNNING" || st == "SUSPENDED") {
    run.end_cause = RunEnd::running;
    run.end_detail = "still running";
  } else if (st == "COMPLETED") {
    run.end_cause = RunEnd::completed;
    run.end_detail = "completed";
  } else if (st == "CANCELLED") {
    run.end_cause = RunEnd::cancelled;
    run.end_detail = "cancelled";
    if (!r.requester.empty()) run.end_detail += " by " + shown(r.requester);
    else if (r.requid != 0xfffffffe && r.requid != 0xffffffff) run.end_detail += " by uid " + std::to_string(r.requid);
  } else if (st == "PREEMPTED" || ((st == "REQUEUED" || r.requeue_flag) && preempted_in_run)) {
    run.end_cause = RunEnd::preempted;
    run.preempted_by = preempted_in_run ? p.last_by : 0;
    run.end_detail = "preempted" + (run.preempted_by ? " by job " + std::to_string(run.preempted_by) : std::string());
  } else if (st == "NODE_FAIL" || (st == "REQUEUED" && !run.failed_nodes.empty())) {
    run.end_cause = RunEnd::node_failure;
    run.end_detail = run.failed_nodes.empty() ? "node failure on one of " + r.nodes
                                              : "node failure on " + join(run.failed_nodes, ",");
  } else if (st == "TIMEOUT") {
    run.end_cause = RunEnd::time_limit;
    run.end_detail = "time limit reached";
  } else if (st == "REQUEUED") {
    run.end_cause = RunEnd::requeued;
    run.end_detail = "requeued (by the job itself or an administrator)";
  } else {
    run.end_cause = RunEnd::failed;
    run.end_detail = "failed: " + failure_detail(st, r.exit_code);
  }
}

bool interrupted(RunEnd e) {
  return e == RunEnd::preempted || e == RunEnd::node_failure || e == RunEnd::requeued || e == RunEnd::time_limit;
}

}  // namespace

JobHistory build_history(const HistoryInput& in) {
  JobHistory h;
  h.job_id = in.job_id;
  h.name = in.name;
  h.user = in.user;
  h.account = in.account;
  h.in_controller = in.controller.has_value();
  h.accounting_read = in.accounting_read;
  h.accounting_problem = in.accounting_problem;

  // Runs: records that started, oldest first, one per start time.
  std::vector<AccountedRun> runs;
  for (const auto& r : in.accounted)
    if (r.start > 0) runs.push_back(r);
  std::stable_sort(runs.begin(), runs.end(), [](const AccountedRun& a, const AccountedRun& b) { return a.start < b.start; });
  std::vector<AccountedRun> unique;
  for (auto& r : runs) {
    if (!unique.empty() && unique.back().start == r.start) {
      if (r.end >= unique.back().end) unique.back() = std::move(r);  // the later word on that run
      continue;
    }
    unique.push_back(std::move(r));
  }
  // The controller's current run, when accounting has not recorded it (or was not read).
  if (in.controller && in.controller->start_time > 0 && in.controller->end_time == 0 &&
      (in.controller->state == "RUNNING" || in.controller->state == "SUSPENDED")) {
    const auto same = std::find_if(unique.begin(), unique.end(),
                                   [&](const AccountedRun& r) { return r.start == in.controller->start_time; });
    if (same == unique.end()) {
      AccountedRun now;
      now.state = in.controller->state;
      now.start = in.controller->start_time;
      now.nodes = in.controller_nodes;
      now.gpus = in.controller_gpus;
      now.comment = in.controller->comment;
      now.admin_comment = in.controller->admin_comment;
      unique.push_back(std::move(now));
    } else {
      // Accounting's record of a running run carries the Comment from its start.
      same->comment = in.controller->comment;
      same->admin_comment = in.controller->admin_comment;
      if (same->nodes.empty()) same->nodes = in.controller_nodes;
      if (!same->gpus) same->gpus = in.controller_gpus;
      same->end = 0;
      same->state = in.controller->state;
    }
  }
  size_t first = 0;
  if (unique.size() > kMaxHistoryRuns) {
    first = unique.size() - kMaxHistoryRuns;
    h.notes.push_back("only the newest " + std::to_string(kMaxHistoryRuns) + " of " + std::to_string(unique.size()) +
                      " runs are listed");
  }

  // Every checkpoint any record's Comment names, by time: the last one each run
  // reported, and the one each later run resumed from (`mlsched run`'s resume
  // report, which is also the last checkpoint of the run before, should that run's
  // own report have landed after accounting recorded its end).
  std::vector<CheckpointReport> reports;
  auto add_report = [&](const std::string& comment) {
    if (auto r = checkpoint_report_of(comment)) reports.push_back(*r);
    if (auto r = resume_report_of(comment)) reports.push_back(*r);
  };
  for (const auto& r : in.accounted) add_report(r.comment);
  if (in.controller) add_report(in.controller->comment);
  std::sort(reports.begin(), reports.end(),
            [](const CheckpointReport& a, const CheckpointReport& b) { return a.time < b.time; });

  uint32_t number = static_cast<uint32_t>(first);
  // Runs the controller counts but accounting does not hold are numbered after them.
  if (in.controller && !in.accounting_read) {
    const bool running = in.controller->state == "RUNNING" || in.controller->state == "SUSPENDED";
    const uint32_t expected = in.controller->restarts + (running || in.controller->start_time > 0 ? 1 : 0);
    h.runs_expected = expected;
    if (expected > unique.size()) number = expected - static_cast<uint32_t>(unique.size());
  }
  for (size_t i = first; i < unique.size(); ++i) {
    const AccountedRun& r = unique[i];
    RunRecord run;
    run.run = ++number;
    run.start = r.start;
    run.end = r.end;
    run.nodes = r.nodes;
    run.gpus = r.gpus;
    classify_end(r, in.node_events, run);
    if (run.end_cause == RunEnd::running) {
      run.end = 0;
      run.gpu_indices = in.gpu_indices;
    }
    const int64_t until = run.end ? run.end : std::max(in.now, run.start);
    // Reports are in time order; of two of the same checkpoint, the one with its name.
    auto newer = [](const CheckpointReport& c, const std::optional<CheckpointReport>& than) {
      return !than || c.time > than->time || (c.time == than->time && !c.name.empty());
    };
    for (const auto& c : reports) {
      if (c.time < r.start) {
        if (newer(c, run.resumed_from)) run.resumed_from = c;
      } else if (c.time <= until + kSlackSeconds && newer(c, run.ended_with)) {
        run.ended_with = c;
      }
    }
    run.gpu_seconds = static_cast<double>(run.gpus) * static_cast<double>(std::max<int64_t>(0, until - run.start));
    if (interrupted(run.end_cause) && run.end) {
      const int64_t kept_until = run.ended_with ? std::min(run.ended_with->time, run.end) : run.start;
      run.lost_gpu_seconds = static_cast<double>(run.gpus) * static_cast<double>(std::max<int64_t>(0, run.end - kept_until));
    }
    h.gpu_seconds += run.gpu_seconds;
    h.lost_gpu_seconds += run.lost_gpu_seconds;
    h.runs.push_back(std::move(run));
  }

  // Its state now: the controller's word, else accounting's last record.
  if (in.controller) {
    h.status = ml_status(*in.controller);
    h.status_known = true;
    h.preemptions = decode_job_record(in.controller->admin_comment).preemptions;
  } else if (!in.accounted.empty()) {
    const AccountedRun* last = &in.accounted.front();
    for (const auto& r : in.accounted)
      if (r.start > last->start || (r.start == last->start && r.end > last->end) ||
          (r.start == 0 && last->start > 0 && r.state == "CANCELLED"))
        last = &r;
    SlurmJobView v;
    v.state = last->state;
    v.requeuing = last->requeue_flag;
    v.start_time = last->start;
    v.end_time = last->end;
    v.allocated = !last->nodes.empty();
    v.exit_code = last->exit_code;
    v.comment = last->comment;
    v.admin_comment = last->admin_comment;
    v.restarts = h.runs.empty() ? 0 : h.runs.back().run - 1;
    h.status = ml_status(v);
    h.status_known = true;
    h.preemptions = decode_job_record(last->admin_comment).preemptions;
  }
  if (in.accounting_read && !in.comments_in_accounting && h.runs.size() > 1)
    h.notes.push_back("checkpoints of earlier runs unknown: accounting keeps a run's Comment (where `mlsched ckpt "
                      "done` reports them) only with AccountingStoreFlags=job_comment in slurm.conf");
  if (!in.accounting_read) {
    const size_t known = h.runs.size();
    if (h.runs_expected > known)
      h.notes.push_back("runs 1-" + std::to_string(h.runs_expected - known) +
                        " unknown: accounting (slurmdbd) could not be read" +
                        (in.accounting_problem.empty() ? "" : " (" + in.accounting_problem + ")"));
    else
      h.notes.push_back("accounting (slurmdbd) could not be read" +
                        (in.accounting_problem.empty() ? std::string() : " (" + in.accounting_problem + ")") +
                        ": earlier runs, if any, are unknown");
  } else if (in.controller && in.controller->restarts + 1 > h.runs.size() && !h.runs.empty() &&
             h.runs.size() < kMaxHistoryRuns) {
    const bool running = in.controller->state == "RUNNING";
    const uint32_t expected = in.controller->restarts + (running ? 1 : 0);
    if (expected > h.runs.size())
      h.notes.push_back("slurmctld counts " + std::to_string(expected) + " runs, accounting holds " +
                        std::to_string(h.runs.size()) + " (it may lag behind by a few seconds)");
  }
  return h;
}

namespace {

std::string gpu_seconds_text(double v) {
  char buf[64];
  if (v >= 3600) snprintf(buf, sizeof buf, "%.0f GPU-seconds (%.1f GPU-hours)", v, v / 3600);
  else snprintf(buf, sizeof buf, "%.0f GPU-seconds", v);
  return buf;
}

std::string checkpoint_text(const CheckpointReport& c) {
  return (c.name.empty() ? std::string("a checkpoint (name not reported)") : escape_controls(c.name)) + " marked at " +
         local_clock(c.time);
}

std::string indices_text(const std::map<std::string, std::vector<int>>& by_node) {
  std::vector<std::string> parts;
  for (const auto& [node, idx] : by_node) {
    std::vector<std::string> ids;
    for (int i : idx) ids.push_back(std::to_string(i));
    parts.push_back(node + " GPU " + join(ids, ","));
  }
  return join(parts, "; ");
}

}  // namespace

std::string format_history(const JobHistory& h, int64_t now) {
  std::string out = "job " + std::to_string(h.job_id);
  if (!h.name.empty()) out += " " + shown(h.name);
  out += " (" + (h.user.empty() ? std::string("user unknown") : shown(h.user)) +
         (h.account.empty() ? "" : ", account " + shown(h.account)) + "): ";
  out += h.status_known ? format_status(h.status) : std::string("state unknown");
  out += "\n";
  out += "  runs:       " + std::to_string(h.runs.size()) + (h.accounting_read ? " (from accounting)" : " known") + "\n";
  out += "  GPU-time:   " + gpu_seconds_text(h.gpu_seconds) + " used; " + gpu_seconds_text(h.lost_gpu_seconds) +
         " lost (work after the last checkpoint of each interrupted run)\n";
  if (h.preemptions.times) {
    out += "  preempted:  " + std::to_string(h.preemptions.times) + (h.preemptions.times == 1 ? " time" : " times");
    if (h.preemptions.last_by) out += ", last by job " + std::to_string(h.preemptions.last_by);
    char buf[64];
    snprintf(buf, sizeof buf, "%.0f", h.preemptions.lost_gpu_seconds);
    out += std::string("; estimated at preemption: ") + buf + " GPU-seconds at risk in all\n";
  }
  if (!h.in_controller) out += "  slurmctld:  no longer holds the job; from accounting only\n";
  for (const auto& n : h.notes) out += "  note:       " + n + "\n";
  for (const auto& r : h.runs) {
    out += "\nrun " + std::to_string(r.run) + "  " + local_clock(r.start) + " - " +
           (r.end ? local_clock(r.end) : std::string("now")) + " (" +
           format_duration(std::max<int64_t>(0, (r.end ? r.end : now) - r.start)) + ")";
    out += " on " + (r.nodes.empty() ? std::string("unknown nodes") : shown(r.nodes, 256)) + ", " +
           std::to_string(r.gpus) + (r.gpus == 1 ? " GPU\n" : " GPUs\n");
    if (!r.gpu_indices.empty()) out += "  GPUs:         " + indices_text(r.gpu_indices) + "\n";
    out += "  ended:        " + r.end_detail + "\n";
    out += "  resumed from: " +
           (r.resumed_from ? checkpoint_text(*r.resumed_from)
                           : std::string(r.run == 1 ? "nothing (first run)" : "no checkpoint reported before it")) +
           "\n";
    out += "  checkpoint:   " +
           (r.ended_with ? checkpoint_text(*r.ended_with) + (r.end ? " (the last of this run)" : " (the latest)")
                         : std::string("none reported in this run")) +
           "\n";
    out += "  GPU-time:     " + gpu_seconds_text(r.gpu_seconds) + " used";
    if (interrupted(r.end_cause)) out += ", " + gpu_seconds_text(r.lost_gpu_seconds) + " lost";
    out += "\n";
  }
  if (h.runs.empty()) out += "\nno run yet" + std::string(h.accounting_read ? "" : " known") + "\n";
  return out;
}

std::string format_job_list(const std::vector<JobListRow>& rows) {
  struct Line {
    std::string id, name, user, state, run, ckpt, detail;
  };
  std::vector<Line> lines;
  lines.push_back({"JOBID", "NAME", "USER", "STATE", "RUN", "CHECKPOINT", "REASON"});
  for (const auto& r : rows) {
    Line l;
    l.id = std::to_string(r.job_id);
    l.name = shown(r.name, 24);
    l.user = shown(r.user, 16);
    l.state = ml_state_name(r.status.state);
    l.run = r.status.run ? std::to_string(r.status.run) : "-";
    if (r.status.last_checkpoint && r.status.last_checkpoint->time > 0)
      l.ckpt = format_duration(std::max<int64_t>(0, r.now - r.status.last_checkpoint->time)) + " ago";
    else
      l.ckpt = "-";
    l.detail = shown(r.status.detail, 120);
    lines.push_back(std::move(l));
  }
  size_t w[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& l : lines) {
    w[0] = std::max(w[0], l.id.size());
    w[1] = std::max(w[1], l.name.size());
    w[2] = std::max(w[2], l.user.size());
    w[3] = std::max(w[3], l.state.size());
    w[4] = std::max(w[4], l.run.size());
    w[5] = std::max(w[5], l.ckpt.size());
  }
  auto pad = [](const std::string& s, size_t n) { return s + std::string(n > s.size() ? n - s.size() : 0, ' '); };
  std::string out;
  for (const auto& l : lines)
    out += pad(l.id, w[0]) + "  " + pad(l.name, w[1]) + "  " + pad(l.user, w[2]) + "  " + pad(l.state, w[3]) + "  " +
           pad(l.run, w[4]) + "  " + pad(l.ckpt, w[5]) + "  " + l.detail + "\n";
  return out;
}

}  // namespace mlsched
