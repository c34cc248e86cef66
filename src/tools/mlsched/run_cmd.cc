// `mlsched run -- <command>`: runs a training process inside a batch job so it can
// be preempted and resume: it tells the process where to checkpoint and what to
// resume from, and forwards the job's checkpoint signal (Slurm delivers it to the
// batch shell only). `mlsched ckpt done <path>`: the training process reports a
// checkpoint as complete (and, inside a job, reports it to slurmctld). Record
// keeping, fencing and the report's format live in core/checkpoint.
#include <slurm/slurm.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/directives.h"
#include "core/text.h"
#include "tools/mlsched/cli.h"

namespace mlsched::tool {

namespace {

const char* const kRunHelp =
    "usage: exec mlsched run [--checkpoint-dir DIR] [--signal SIG] -- <command> [args...]\n"
    "\n"
    "Runs <command> as the training process of a batch job that may be preempted.\n"
    "Use `exec` so that mlsched receives the checkpoint signal Slurm sends to the\n"
    "batch shell. <command> gets in its environment:\n"
    "  MLSCHED_CHECKPOINT_DIR   where to write checkpoints (kept across requeues)\n"
    "  MLSCHED_RESUME_FROM      the latest complete checkpoint; empty on a first start\n"
    "  MLSCHED_RESTART_COUNT    how often the job was requeued (SLURM_RESTART_COUNT)\n"
    "  MLSCHED_CHECKPOINT_SIGNAL  the signal that asks for a checkpoint (e.g. USR1)\n"
    "On that signal it should write a checkpoint, then run `mlsched ckpt done <path>`.\n"
    "\n"
    "  --checkpoint-dir DIR  default: mlsched-checkpoints/$SLURM_JOB_ID in the job's working directory\n"
    "  --signal SIG          default: the job's checkpoint-signal directive, else USR1\n"
    "  --no-requeue          keep running after a checkpoint signal; by default, once\n"
    "                        <command> marks a checkpoint after the signal, the job\n"
    "                        requeues itself, giving its GPUs back before its grace\n"
    "                        time ends (preemption) and continuing in a new\n"
    "                        allocation (--signal=B:USR1@secs before the time limit),\n"
    "                        as long as the job's restarts stay below max-restarts\n"
    "\n"
    "Exits with <command>'s exit code (128 + signal number when a signal ended it).\n"
    "Refuses to start (exit 1) when a newer run of the same job owns the directory.\n";

const char* const kCkptHelp =
    "usage: mlsched ckpt done <path>\n"
    "\n"
    "Marks the checkpoint at <path> (absolute, or relative to MLSCHED_CHECKPOINT_DIR)\n"
    "complete, so the next run of the job resumes from it. Call it only after the\n"
    "checkpoint is fully written: a checkpoint never marked is never resumed from.\n"
    "Refused (exit 1) from a stale copy of the job: when a newer run (a higher\n"
    "restart count) owns the checkpoint directory.\n"
    "\n"
    "Inside a job (SLURM_JOB_ID set) it also reports the time to slurmctld, as\n"
    "mlsched-checkpoint=<epoch seconds> in the job's Comment (the rest of the comment\n"
    "is kept), so preemption counts the work at risk from there and `mlsched why`\n"
    "shows it. When that report fails it warns on stderr and still exits 0: the\n"
    "checkpoint is marked, and resuming needs only the mark.\n";

std::string env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

uint32_t restart_count() {
  const std::string v = env("SLURM_RESTART_COUNT");
  if (v.empty()) return 0;
  auto n = parse_uint(v);
  if (!n || *n > UINT32_MAX) throw ToolError("SLURM_RESTART_COUNT=" + v + " is not a count");
  return static_cast<uint32_t>(*n);
}

// The job's directives, read from slurmctld (nullopt outside a job, for a job
// without directives, or when slurmctld cannot be asked).
std::optional<JobDirectives> job_directives() {
  auto job_id = parse_uint(env("SLURM_JOB_ID"));
  if (!job_id) return std::nullopt;
  slurm_init(nullptr);
  job_info_msg_t* msg = nullptr;
  std::optional<JobDirectives> d;
  if (slurm_load_job(&msg, static_cast<uint32_t>(*job_id), SHOW_ALL) == SLURM_SUCCESS && msg && msg->record_count) {
    const char* admin_comment = msg->job_array[0].admin_comment;
    d = parse_stored_directives(admin_comment ? admin_comment : "");
  }
  if (msg) slurm_free_job_info_msg(msg);
  return d;
}

// The checkpoint's name as reported (inside its directory, as the LATEST record keeps it).
std::string reported_name(const std::string& dir, const std::string& path) {
  std::string prefix = dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  prefix += '/';
  if (path.rfind(prefix, 0) == 0) return path.substr(prefix.size());
  return path;
}

// Writes `time` into the job's Comment (checkpoint.h: with_checkpoint_report) as
// the job's owner. Returns "" or what went wrong.
std::string send_checkpoint_report(uint32_t job_id, int64_t time, const std::string& name, bool resume) {
  slurm_init(nullptr);
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job(&msg, job_id, SHOW_ALL) != SLURM_SUCCESS || !msg || !msg->record_count) {
    if (msg) slurm_free_job_info_msg(msg);
    return std::string("cannot read job ") + std::to_string(job_id) + ": " + slurm_strerror(errno);
  }
  const char* old = msg->job_array[0].comment;
  std::string comment = resume ? with_resume_report(old ? old : "", time, name)
                                 : with_checkpoint_report(old ? old : "", time, name);
  slurm_free_job_info_msg(msg);
  job_desc_msg_t update;
  slurm_init_job_desc_msg(&update);
  update.job_id = job_id;
  update.comment = comment.data();
  if (slurm_update_job(&update) != SLURM_SUCCESS)
    return std::string("cannot update job ") + std::to_string(job_id) + ": " + slurm_strerror(errno);
  return "";
}

// Reports the checkpoint to slurmctld without ever failing the checkpoint: in a
// child process, because libslurm ends the process (fatal) when it cannot read its
// configuration, and bounded in time, because a hung controller must not stall
// the training. The file mark is already written; this only informs preemption.
void report_checkpoint(uint32_t job_id, int64_t time, const std::string& name, bool resume = false) {
  // libslurm alone retries an unreachable controller for about 18 s.
  constexpr unsigned kReportTimeout = 10;  // seconds
  fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "mlsched ckpt: warning: checkpoint marked, but not reported to slurmctld (cannot fork: %s)\n",
            strerror(errno));
    return;
  }
  if (child == 0) {
    alarm(kReportTimeout);
    const std::string why = send_checkpoint_report(job_id, time, name, resume);
    if (!why.empty()) fprintf(stderr, "mlsched ckpt: %s\n", why.c_str());
    fflush(nullptr);
    _exit(why.empty() ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  fprintf(stderr,
          "mlsched ckpt: warning: checkpoint marked, but not reported to slurmctld%s; preemption estimates this "
          "job's work at risk without it\n",
          WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
              ? (" (no answer in " + std::to_string(kReportTimeout) + " s)").c_str()
              : "");
}

}  // namespace

namespace {

// What `mlsched run` was asked to do, with the job's directives applied.
struct RunSettings {
  std::vector<std::string> command;
  std::string dir;                 // absolute
  int checkpoint_signal = SIGUSR1;
  uint32_t restart = 0;
  bool requeue_when_checkpointed = true;
};

RunSettings settings_of(Args& args, std::vector<std::string> command) {
  RunSettings r;
  r.command = std::move(command);
  r.dir = args.value("--checkpoint-dir");
  const std::string signal_text = args.value("--signal");
  const bool no_requeue = args.flag("--no-requeue");
  args.expect_no_more("run");
  if (r.command.empty()) throw UsageError("no command to run after --");
  // Absolute, so that MLSCHED_CHECKPOINT_DIR means the same after the training chdirs.
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) throw ToolError(std::string("cannot read the working directory: ") + strerror(errno));
  if (r.dir.empty()) {
    const std::string job_id = env("SLURM_JOB_ID");
    if (job_id.empty()) throw UsageError("not inside a Slurm job: give --checkpoint-dir");
    // The job's working directory (sbatch -D, else where it was submitted): the
    // requeued job starts there again, so it finds its checkpoints.
    r.dir = std::string(cwd) + "/mlsched-checkpoints/" + job_id;
  } else if (r.dir[0] != '/') {
    r.dir = std::string(cwd) + "/" + r.dir;
  }
  const auto directives = job_directives();
  if (directives && directives->checkpoint_signal) r.checkpoint_signal = directives->checkpoint_signal;
  if (!signal_text.empty()) {
    auto sig = parse_signal(signal_text);
    if (!sig) throw UsageError("--signal " + signal_text + " is not a signal a job may use");
    r.checkpoint_signal = *sig;
  }
  r.restart = restart_count();
  // max-restarts bounds how often the job comes back by itself.
  r.requeue_when_checkpointed = !no_requeue;
  if (r.requeue_when_checkpointed && directives && r.restart >= directives->max_restarts) {
    fprintf(stderr, "mlsched run: restart %u reached max-restarts=%u: this run will not requeue itself\n", r.restart,
            directives->max_restarts);
    r.requeue_when_checkpointed = false;
  }
  return r;
}

// Starts the training with the signal mask it would have had without us.
pid_t start_training(std::vector<std::string>& command, const sigset_t& previous) {
  const pid_t child = fork();
  if (child < 0) throw ToolError(std::string("cannot fork: ") + strerror(errno));
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    std::vector<char*> argv;
    for (auto& a : command) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fprintf(stderr, "mlsched run: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  return child;
}

// How long `mlsched run` waits for a checkpoint's report before it requeues anyway.
constexpr int64_t kReportGraceSeconds = 3;

// Whether slurmctld holds a checkpoint report of `time` or later for the job.
bool reported_since(uint32_t job_id, int64_t time) {
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job(&msg, job_id, SHOW_ALL) != SLURM_SUCCESS || !msg || !msg->record_count) {
    if (msg) slurm_free_job_info_msg(msg);
    return true;  // cannot tell: do not hold the GPUs for it
  }
  const char* comment = msg->job_array[0].comment;
  const auto reported = checkpoint_report(comment ? comment : "");
  slurm_free_job_info_msg(msg);
  return reported && *reported >= time;
}

// After a checkpoint signal, once the training reports a checkpoint newer than the
// signal, the job gives its GPUs back at once by requeueing itself rather than
// holding them for the rest of its grace time. Returns true once it asked.
bool requeue_if_checkpointed(const RunSettings& r, uint32_t job_id, int64_t asked_at) {
  const LatestCheckpoint latest = read_latest_checkpoint(r.dir, geteuid());
  const auto& record = latest.record;
  if (!record || record->restart != r.restart || record->time < asked_at) return false;
  // `mlsched ckpt done` marks first and reports to slurmctld right after: give the
  // report a few seconds to land, so that the Comment accounting keeps for this run
  // names the checkpoint it ended with (`mlsched history`).
  if (static_cast<int64_t>(time(nullptr)) - record->time < kReportGraceSeconds && !reported_since(job_id, record->time))
    return false;
  fprintf(stderr, "mlsched run: checkpoint %s complete; requeueing job %u to give its GPUs back\n",
          record->path.c_str(), job_id);
  if (slurm_requeue(job_id, 0) != SLURM_SUCCESS)
    fprintf(stderr, "mlsched run: requeue failed (%s); Slurm requeues it when its grace ends\n",
            slurm_strerror(errno));
  return true;
}

// Passes signals on to the training until it ends; returns its exit status as a
// shell would.
int supervise(const RunSettings& r, pid_t child, const sigset_t& forwarded) {
  const auto job_id = parse_uint(env("SLURM_JOB_ID"));
  int64_t asked_at = 0;  // when the checkpoint signal came; 0 = none pending
  for (;;) {
    siginfo_t info;
    const struct timespec poll = {1, 0};
    const int sig = asked_at ? sigtimedwait(&forwarded, &info, &poll) : sigwaitinfo(&forwarded, &info);
    if (sig < 0) {
      if (errno == EAGAIN && asked_at && r.requeue_when_checkpointed && job_id) {
        if (requeue_if_checkpointed(r, static_cast<uint32_t>(*job_id), asked_at)) asked_at = 0;
        continue;
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      throw ToolError(std::string("sigwaitinfo: ") + strerror(errno));
    }
    if (sig != SIGCHLD) {
      if (sig == r.checkpoint_signal) {
        fprintf(stderr, "mlsched run: checkpoint signal %s, passing it on\n", signal_name(sig).c_str());
        if (!asked_at) asked_at = static_cast<int64_t>(time(nullptr));
      }
      kill(child, sig);
      continue;
    }
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    }
  }
}

}  // namespace

int cmd_run(Args& args) {
  // First, so that the command's own options are never taken for ours.
  std::vector<std::string> command = args.rest_after("--");
  if (args.flag("--help")) {
    fputs(kRunHelp, stdout);
    return 0;
  }
  RunSettings r = settings_of(args, std::move(command));

  // The job's user owns the directory, or the job does not start: a directory
  // another user prepared (a shared work directory) could hand it their checkpoint.
  const RunStart start = begin_run(r.dir, r.restart, geteuid());
  if (!start.ok) throw ToolError(start.error);
  if (!start.note.empty()) fprintf(stderr, "mlsched run: %s\n", start.note.c_str());
  fprintf(stderr, "mlsched run: restart %u, checkpoints in %s, resuming from %s\n", r.restart, r.dir.c_str(),
          start.resume_from.empty() ? "nothing (first start)" : start.resume_from.c_str());
  // Tell slurmctld what this run resumes from (the job's Comment, which accounting
  // keeps per run): `mlsched history` and `mlsched jobs` show it.
  if (const auto job_id = parse_uint(env("SLURM_JOB_ID")); job_id && *job_id > 0 && *job_id <= UINT32_MAX &&
                                                            !start.resume_from.empty()) {
    const LatestCheckpoint latest = read_latest_checkpoint(r.dir, geteuid());
    if (latest.record)
      report_checkpoint(static_cast<uint32_t>(*job_id), latest.record->time, reported_name(r.dir, latest.record->path), true);
  }

  setenv("MLSCHED_CHECKPOINT_DIR", r.dir.c_str(), 1);
  setenv("MLSCHED_RESUME_FROM", start.resume_from.c_str(), 1);
  setenv("MLSCHED_RESTART_COUNT", std::to_string(r.restart).c_str(), 1);
  setenv("MLSCHED_CHECKPOINT_SIGNAL", signal_name(r.checkpoint_signal).c_str(), 1);

  // Signals are taken synchronously (sigwaitinfo): blocked before the fork so none
  // is lost between fork and wait, unblocked again in the child before exec.
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int sig : {r.checkpoint_signal, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&forwarded, sig);
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  const pid_t child = start_training(r.command, previous);
  return supervise(r, child, forwarded);
}

int cmd_ckpt(Args& args) {
  if (args.flag("--help")) {
    fputs(kCkptHelp, stdout);
    return 0;
  }
  const std::string action = args.positional();
  if (action != "done") throw UsageError(action.empty() ? "missing action (done)" : "unknown action '" + action + "'");
  const std::string path = args.positional();
  args.expect_no_more("ckpt");
  if (path.empty()) throw UsageError("missing checkpoint path");
  const std::string dir = env("MLSCHED_CHECKPOINT_DIR");
  if (dir.empty()) throw ToolError("MLSCHED_CHECKPOINT_DIR is not set: run the training under `mlsched run`");
  // The restart count of *this* run, as `mlsched run` exported it: the fence
  // compares it with the newest run's.
  const std::string restart_text = env("MLSCHED_RESTART_COUNT");
  auto restart = parse_uint(restart_text);
  if (!restart || *restart > UINT32_MAX) throw ToolError("MLSCHED_RESTART_COUNT is not set: run the training under `mlsched run`");
  const int64_t now = time(nullptr);
  const std::string why = mark_checkpoint_complete(dir, static_cast<uint32_t>(*restart), path, now, geteuid());
  if (!why.empty()) throw ToolError(why);
  if (auto job_id = parse_uint(env("SLURM_JOB_ID")); job_id && *job_id > 0 && *job_id <= UINT32_MAX)
    report_checkpoint(static_cast<uint32_t>(*job_id), now, reported_name(dir, path));
  return 0;
}

}  // namespace mlsched::tool
