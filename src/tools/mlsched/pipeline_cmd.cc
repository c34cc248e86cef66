// `mlsched pipeline submit|status|cancel`: reads and checks a pipeline file
// (core/pipeline), submits its stages with sbatch (argv, no shell) held until all
// are in, reads a pipeline's jobs back from slurmctld for status, cancels them.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/job_record.h"
#include "core/pipeline.h"
#include "core/safe_file.h"
#include "core/text.h"
#include "tools/mlsched/cli.h"

#include "slurm_public.h"

namespace mlsched::tool {

namespace {

const char* const kPipelineHelp =
    "usage: mlsched pipeline submit FILE [--json]\n"
    "       mlsched pipeline status ID [--json]\n"
    "       mlsched pipeline cancel ID\n"
    "\n"
    "submit: checks the pipeline file (JSON: \"pipeline\" and \"stages\", each stage a\n"
    "name, a batch script relative to the file, \"after\" and \"retries\"; README,\n"
    "\"Pipelines\"), then submits every stage with sbatch, in order, with Slurm\n"
    "dependencies, as jobs named <pipeline>/<stage>, and prints the pipeline's id and\n"
    "the job ids. Nothing is submitted when the file or a script has a problem.\n"
    "status: each stage's job, state, start and end (or ETA: ~), and why it waits.\n"
    "cancel: cancels the pipeline's jobs that have not ended, downstream first.\n"
    "ID is the pipeline id submit printed, or the job id of any of its stages.\n";

// Output of a child beyond this is dropped (sbatch prints an id and a few notes).
constexpr size_t kMaxChildOutput = 64 * 1024;

struct ChildResult {
  int status = -1;  // exit code; -1: did not run or was killed
  std::string out, err;
};

// Runs `argv` (looked up on PATH, never through a shell) with `input` on its stdin.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& input) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw ToolError(std::string("pipe: ") + strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw ToolError(std::string("pipe: ") + strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw ToolError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Write the script and read both outputs together: neither side can block the other.
  signal(SIGPIPE, SIG_IGN);
  ChildResult r;
  size_t written = 0;
  int to_child = in[1];
  if (input.empty()) {
    close(to_child);
    to_child = -1;
  }
  bool out_open = true, err_open = true;
  while (out_open || err_open || to_child >= 0) {
    struct pollfd fds[3];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (to_child >= 0) fds[n++] = {to_child, POLLOUT, 0};
    if (poll(fds, n, 60000) <= 0) break;  // a minute without progress: give up on it
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == to_child) {
        const ssize_t w = write(to_child, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) {
          close(to_child);
          to_child = -1;
        }
        continue;
      }
      char buf[4096];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      std::string& sink = fds[i].fd == out[0] ? r.out : r.err;
      if (got <= 0) {
        (fds[i].fd == out[0] ? out_open : err_open) = false;
        continue;
      }
      if (sink.size() < kMaxChildOutput) sink.append(buf, std::min<size_t>(got, kMaxChildOutput - sink.size()));
    }
  }
  if (to_child >= 0) close(to_child);
  close(out[0]);
  close(err[0]);
  int status = 0;
  if (out_open || err_open) kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string random_hex(size_t bytes) {
  unsigned char buf[8] = {};
  bytes = std::min(bytes, sizeof buf);
  if (getrandom(buf, bytes, 0) != static_cast<ssize_t>(bytes)) throw ToolError("cannot read random bytes for the pipeline id");
  std::string s;
  char two[3];
  for (size_t i = 0; i < bytes; ++i) {
    snprintf(two, sizeof two, "%02x", buf[i]);
    s += two;
  }
  return s;
}

// Each line of a child's stderr, for the user, prefixed and with control bytes escaped.
std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  for (const auto& line : split(trim(text), '\n'))
    if (!trim(line).empty()) out += prefix + escape_controls(line) + "\n";
  return out;
}

struct Submitted {
  const StageSpec* stage;
  std::vector<uint32_t> ids;  // attempt order
};

void cancel_jobs(const std::vector<uint32_t>& ids) {
  // Downstream (later ids) first: an `any` stage must not start because its
  // upstream was cancelled under it.
  std::vector<uint32_t> order = ids;
  std::sort(order.rbegin(), order.rend());
  for (uint32_t id : order) slurm_kill_job(id, SIGKILL, 0);
}

int pipeline_submit(Args& args) {
  const bool json = args.flag("--json");
  const std::string file = args.positional();
  args.expect_no_more("pipeline submit");
  if (file.empty()) throw UsageError("which pipeline file? mlsched pipeline submit FILE");

  // The file and every script are read through one checked directory descriptor,
  // with O_NOFOLLOW, as regular files of the user who submits, up to a bound.
  const uid_t uid = getuid();
  const size_t slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  OwnedDir d = open_owned_dir(dir, uid, false);
  if (!d.error.empty()) throw ToolError(file + ": " + d.error);
  const SmallFile text = read_small_file_at(d.fd.get(), base, uid, kMaxPipelineFileBytes);
  if (text.missing) throw ToolError(file + ": no such file");
  if (!text.text) throw ToolError(file + ": " + text.error);
  const PipelineParse parsed = parse_pipeline(*text.text);
  std::vector<std::string> problems;
  for (const auto& e : parsed.errors) problems.push_back(file + ": " + e);
  if (parsed.errors_dropped) problems.push_back(file + ": ... and " + std::to_string(parsed.errors_dropped) + " more");
  std::map<std::string, std::string> scripts;
  if (parsed.spec) {
    for (const auto& st : parsed.spec->stages) {
      const std::string shown_path = dir + "/" + st.script;
      if (auto e = check_entry_at(d.fd.get(), st.script, uid); !e.empty()) {
        problems.push_back("stage " + st.name + ": script " + shown(shown_path, 200) + ": " + e);
        continue;
      }
      const SmallFile s = read_small_file_at(d.fd.get(), st.script, uid, kMaxStageScriptBytes);
      if (s.missing) problems.push_back("stage " + st.name + ": script " + shown(shown_path, 200) + " does not exist");
      else if (!s.text) problems.push_back("stage " + st.name + ": script " + shown(shown_path, 200) + ": " + s.error);
      else if (!starts_with(*s.text, "#!"))
        problems.push_back("stage " + st.name + ": script " + shown(shown_path, 200) +
                           " does not start with #! (sbatch takes batch scripts only)");
      else scripts[st.name] = *s.text;
    }
  }
  if (!problems.empty()) throw ToolError("the pipeline was not submitted (no job was):\n  " + join(problems, "\n  "));

  const PipelineSpec& spec = *parsed.spec;
  slurm_init(nullptr);
  const std::string id = spec.name + "-" + random_hex(3);
  std::map<std::string, std::vector<uint32_t>> ids;
  std::vector<Submitted> done;
  std::vector<uint32_t> all;
  std::string notes;
  // Every job is held until all are in: a stage never starts (or fails) before its
  // downstream stages exist, and a refused stage leaves nothing running.
  for (const StageSpec* st : submission_order(spec)) {
    Submitted s{st, {}};
    for (uint32_t attempt = 1; attempt <= st->retries + 1; ++attempt) {
      std::vector<std::string> argv = {"sbatch", "--parsable", "--hold", "--kill-on-invalid-dep=yes",
                                       "--job-name=" + spec.name + "/" + st->name,
                                       "--comment=" + std::string(kStoredPrefix) + " " +
                                           pipeline_words(membership_of(id, *st, attempt))};
      const std::string dep = stage_dependency(spec, *st, attempt, ids);
      if (!dep.empty()) argv.push_back("--dependency=" + dep);
      const ChildResult r = run_child(argv, scripts[st->name]);
      const std::string first = trim(r.out.substr(0, r.out.find('\n')));
      const auto job = parse_uint(first.substr(0, first.find(';')));
      if (r.status != 0 || !job || *job == 0 || *job > UINT32_MAX) {
        cancel_jobs(all);
        throw ToolError("stage " + st->name + ": sbatch refused it" +
                        (all.empty() ? std::string() : "; the " + std::to_string(all.size()) +
                                                           " job(s) already submitted were cancelled") +
                        ", nothing of pipeline " + id + " runs:\n" +
                        indented(r.err.empty() ? r.out : r.err, "  "));
      }
      s.ids.push_back(static_cast<uint32_t>(*job));
      all.push_back(static_cast<uint32_t>(*job));
      ids[st->name].push_back(static_cast<uint32_t>(*job));
      notes += indented(r.err, "  stage " + st->name + ": ");
    }
    done.push_back(s);
  }
  std::vector<std::string> id_texts;
  for (uint32_t j : all) id_texts.push_back(std::to_string(j));
  const ChildResult rel = run_child({"scontrol", "release", join(id_texts, ",")}, "");
  if (rel.status != 0) {
    cancel_jobs(all);
    throw ToolError("releasing the held stages failed, so pipeline " + id + " was cancelled:\n" +
                    indented(rel.err, "  "));
  }
  if (json) {
    json_object* root = json_object_new_object();
    json_object_object_add(root, "pipeline", json_object_new_string(id.c_str()));
    json_object_object_add(root, "name", json_object_new_string(spec.name.c_str()));
    json_object* stages = json_object_new_array();
    for (const auto& s : done) {
      json_object* o = json_object_new_object();
      json_object_object_add(o, "stage", json_object_new_string(s.stage->name.c_str()));
      json_object_object_add(o, "job_name", json_object_new_string((spec.name + "/" + s.stage->name).c_str()));
      json_object* arr = json_object_new_array();
      for (uint32_t j : s.ids) json_object_array_add(arr, json_object_new_int64(j));
      json_object_object_add(o, "job_ids", arr);
      json_object_array_add(stages, o);
    }
    json_object_object_add(root, "stages", stages);
    print_json(root);
  } else {
    printf("pipeline %s submitted: %zu stage%s, %zu job%s\n", id.c_str(), done.size(), done.size() == 1 ? "" : "s",
           all.size(), all.size() == 1 ? "" : "s");
    size_t width = 0;
    for (const auto& s : done) width = std::max(width, s.stage->name.size());
    for (const auto& s : done) {
      printf("  %-*s  %u", static_cast<int>(width), s.stage->name.c_str(), s.ids[0]);
      if (s.ids.size() > 1) {
        std::vector<std::string> retries;
        for (size_t k = 1; k < s.ids.size(); ++k) retries.push_back(std::to_string(s.ids[k]));
        printf("  (retries, each if the one before fails: %s)", join(retries, ", ").c_str());
      }
      printf("\n");
    }
    fputs(notes.c_str(), stdout);
    printf("see it with: mlsched pipeline status %s\n", id.c_str());
  }
  return 0;
}

// The pipeline's jobs in slurmctld's table.
std::vector<const slurm_job_info_t*> jobs_of(const job_info_msg_t* all, const std::string& id) {
  std::vector<const slurm_job_info_t*> out;
  for (uint32_t i = 0; all && i < all->record_count; ++i) {
    const slurm_job_info_t& j = all->job_array[i];
    const JobRecord r = decode_job_record(str(j.admin_comment));
    if (r.pipeline && r.pipeline->id == id) out.push_back(&j);
  }
  return out;
}

// ID as given: a pipeline id, or the job id of one of its stages.
std::string resolve_id(const std::string& given, const job_info_msg_t* all) {
  if (auto job = parse_uint(given)) {
    for (uint32_t i = 0; all && i < all->record_count; ++i) {
      const slurm_job_info_t& j = all->job_array[i];
      if (j.job_id != *job) continue;
      const JobRecord r = decode_job_record(str(j.admin_comment));
      if (!r.pipeline) throw ToolError("job " + given + " is not a stage of a pipeline");
      return r.pipeline->id;
    }
    throw ToolError("job " + given + " is not known to slurmctld (or has left its memory)");
  }
  return given;
}

StageJob stage_job(const slurm_job_info_t& j) {
  StageJob s;
  s.job_id = j.job_id;
  s.membership = *decode_job_record(str(j.admin_comment)).pipeline;
  s.name = str(j.name);
  s.state = state_name(j);
  if ((j.job_state & JOB_STATE_BASE) == JOB_PENDING || j.state_reason == WAIT_DEP_INVALID)
    s.reason = j.state_reason == WAIT_NO_REASON
                   ? "None"
                   : str(release::job_reason_text(static_cast<job_state_reason>(j.state_reason)));
  s.submit = j.submit_time;
  s.start = j.start_time;
  s.end = j.end_time;
  s.allocated = j.nodes && *j.nodes;
  s.time_limit_s = j.time_limit == INFINITE || j.time_limit == NO_VAL ? 0 : j.time_limit * 60;
  s.exit_code = WIFEXITED(j.exit_code) ? WEXITSTATUS(j.exit_code) : 0;
  return s;
}

PipelineStatus load_status(const std::string& id, const job_info_msg_t* all, bool with_etas,
                           std::vector<std::string>& notes, time_t now) {
  const auto jobs = jobs_of(all, id);
  std::vector<StageJob> stage_jobs;
  std::vector<const slurm_job_info_t*> pending;
  for (const auto* j : jobs) {
    stage_jobs.push_back(stage_job(*j));
    if ((j->job_state & JOB_STATE_BASE) == JOB_PENDING) pending.push_back(j);
  }
  if (with_etas) {
    const auto etas = model_etas(all, pending, notes);
    for (auto& s : stage_jobs)
      if (auto it = etas.find(s.job_id); it != etas.end()) s.model_eta = it->second;
  }
  return pipeline_status(id, stage_jobs, now);
}

json_object* jtime(time_t t) { return t ? json_object_new_int64(t) : nullptr; }

json_object* status_json(const PipelineStatus& st) {
  json_object* root = json_object_new_object();
  json_object_object_add(root, "pipeline", json_object_new_string(st.id.c_str()));
  json_object_object_add(root, "name", json_object_new_string(st.name.c_str()));
  json_object_object_add(root, "state", json_object_new_string(st.state.c_str()));
  json_object* stages = json_object_new_array();
  for (const auto& s : st.stages) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "stage", json_object_new_string(s.stage.c_str()));
    json_object_object_add(o, "state", json_object_new_string(s.state.c_str()));
    json_object_object_add(o, "detail", json_object_new_string(s.detail.c_str()));
    json_object_object_add(o, "job_id", s.current ? json_object_new_int64(s.current->job_id) : nullptr);
    json_object* after = json_object_new_array();
    for (const auto& e : s.after) {
      json_object* a = json_object_new_object();
      json_object_object_add(a, "stage", json_object_new_string(e.stage.c_str()));
      json_object_object_add(a, "kind", json_object_new_string(to_string(e.kind).c_str()));
      json_object_array_add(after, a);
    }
    json_object_object_add(o, "after", after);
    json_object_object_add(o, "start", jtime(s.start));
    json_object_object_add(o, "end", jtime(s.end));
    json_object_object_add(o, "eta", jtime(s.eta));
    json_object_object_add(o, "expected_end", jtime(s.expected_end));
    json_object* attempts = json_object_new_array();
    for (const auto& j : s.attempts) {
      json_object* a = json_object_new_object();
      json_object_object_add(a, "job_id", json_object_new_int64(j.job_id));
      json_object_object_add(a, "attempt", json_object_new_int64(j.membership.attempt));
      json_object_object_add(a, "name", json_object_new_string(j.name.c_str()));
      json_object_object_add(a, "slurm_state", json_object_new_string(j.state.c_str()));
      json_object_object_add(a, "slurm_reason", j.reason.empty() ? nullptr : json_object_new_string(j.reason.c_str()));
      json_object_object_add(a, "exit_code", json_object_new_int(j.exit_code));
      json_object_array_add(attempts, a);
    }
    json_object_object_add(o, "attempts", attempts);
    json_object_array_add(stages, o);
  }
  json_object_object_add(root, "stages", stages);
  return root;
}

// `pipeline status|cancel ID|JOBID`: slurmctld's job list and the pipeline id it names.
std::string load_named_pipeline(const std::string& given, JobsMsg& all) {
  if (given.empty()) throw UsageError("which pipeline? give its id or a stage's job id");
  slurm_init(nullptr);
  if (slurm_load_jobs(0, &all.msg, SHOW_DETAIL | SHOW_ALL) != SLURM_SUCCESS)
    throw ToolError(slurm_error("cannot read the job list from slurmctld"));
  return resolve_id(given, all.msg);
}

int pipeline_status_cmd(Args& args) {
  const bool json = args.flag("--json");
  const std::string given = args.positional();
  args.expect_no_more("pipeline status");
  JobsMsg all;
  const std::string id = load_named_pipeline(given, all);
  std::vector<std::string> notes;
  const time_t now = time(nullptr);
  const PipelineStatus st = load_status(id, all.msg, true, notes, now);
  if (st.stages.empty())
    throw ToolError("no job of pipeline " + shown(id) + " is known to slurmctld (a finished job leaves it MinJobAge "
                    "after it ends; `mlsched history JOBID` still shows it)");
  if (json) {
    print_json(status_json(st));
  } else {
    fputs(format_pipeline_status(st, now).c_str(), stdout);
    for (const auto& n : notes) printf("note: %s\n", n.c_str());
  }
  return 0;
}

int pipeline_cancel(Args& args) {
  const std::string given = args.positional();
  args.expect_no_more("pipeline cancel");
  JobsMsg all;
  const std::string id = load_named_pipeline(given, all);
  const auto jobs = jobs_of(all.msg, id);
  if (jobs.empty()) throw ToolError("no job of pipeline " + shown(id) + " is known to slurmctld");
  std::vector<uint32_t> live;
  for (const auto* j : jobs) {
    const uint32_t base = j->job_state & JOB_STATE_BASE;
    if (base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED) live.push_back(j->job_id);
  }
  std::sort(live.rbegin(), live.rend());
  std::vector<std::string> cancelled, failed;
  for (uint32_t job : live) {
    if (slurm_kill_job(job, SIGKILL, 0) == SLURM_SUCCESS) cancelled.push_back(std::to_string(job));
    else failed.push_back(std::to_string(job) + " (" + slurm_strerror(errno) + ")");
  }
  if (live.empty()) printf("pipeline %s: every job has already ended; nothing to cancel\n", id.c_str());
  else if (!cancelled.empty()) printf("pipeline %s: cancelled %s\n", id.c_str(), join(cancelled, ", ").c_str());
  if (!failed.empty()) throw ToolError("could not cancel " + join(failed, ", "));
  return 0;
}

}  // namespace

std::string pipeline_note(const slurm_job_info_t& j, const job_info_msg_t* all, time_t now) {
  const JobRecord r = decode_job_record(str(j.admin_comment));
  if (!r.pipeline) return "";
  std::vector<std::string> notes;
  const PipelineStatus st = load_status(r.pipeline->id, all, false, notes, now);
  std::string out = pipeline_chain_text(st, r.pipeline->stage);
  if (r.pipeline->attempts > 1)
    out += ". This job is attempt " + std::to_string(r.pipeline->attempt) + " of " +
           std::to_string(r.pipeline->attempts) + " of the stage";
  return out + ". `mlsched pipeline status " + r.pipeline->id + "` shows every stage";
}

int cmd_pipeline(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kPipelineHelp, stdout);
    return 0;
  }
  const std::string sub = args.positional();
  if (sub == "submit") return pipeline_submit(args);
  if (sub == "status") return pipeline_status_cmd(args);
  if (sub == "cancel") return pipeline_cancel(args);
  if (sub.empty()) throw UsageError("submit, status or cancel?");
  throw UsageError("unknown subcommand '" + sub + "' (submit, status, cancel)");
}

}  // namespace mlsched::tool
