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
#include <functional>
#include <optional>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/job_record.h"
#include "core/pipeline.h"
#include "core/safe_file.h"
#include "core/text.h"
#include "core/why.h"  // format_duration
#include "tools/mlsched/cli.h"

#include "slurm_public.h"

namespace mlsched::tool {

namespace {

const char* const kPipelineHelp =
    "usage: mlsched pipeline submit FILE [--json]\n"
    "       mlsched pipeline status ID|NAME [--json]\n"
    "       mlsched pipeline cancel ID\n"
    "       mlsched pipeline unschedule NAME\n"
    "       mlsched pipeline fire --name NAME FILE   (what a recurring pipeline's scrontab entry runs)\n"
    "\n"
    "submit: checks the pipeline file (JSON: \"pipeline\" and \"stages\", each stage a\n"
    "name, a batch script relative to the file, \"after\" and \"retries\"; README,\n"
    "\"Pipelines\"), then submits every stage with sbatch, in order, with Slurm\n"
    "dependencies, as jobs named <pipeline>/<stage>, and prints the pipeline's id and\n"
    "the job ids. Nothing is submitted when the file or a script has a problem.\n"
    "A file with \"schedule\" (cron) is not submitted now: submit installs it in your\n"
    "scrontab, which runs it at each time (\"concurrency\": forbid skips a time while\n"
    "the previous run is still going, allow starts it anyway).\n"
    "status: each stage's job, state, start and end (or ETA: ~), and why it waits;\n"
    "for a recurring pipeline's NAME: its schedule, next and last time, and its runs.\n"
    "cancel: cancels the pipeline's jobs that have not ended, downstream first.\n"
    "unschedule: removes a recurring pipeline from your scrontab (runs go on).\n"
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

// The directory part of a path as given ("." for a bare name).
std::string directory_part(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
}

// A checked pipeline file with its scripts, read as the user who runs the tool.
struct LoadedPipeline {
  PipelineSpec spec;
  std::map<std::string, std::string> scripts;  // by stage
  std::string dir;                             // the file's directory, as given
  std::string absolute;                        // the file's absolute path ("" if unknown)
};

LoadedPipeline load_pipeline_file(const std::string& file) {
  // The file and every script are read through one checked directory descriptor,
  // with O_NOFOLLOW, as regular files of the user who submits, up to a bound.
  const uid_t uid = getuid();
  const std::string dir = directory_part(file);
  const std::string base = file.substr(file.rfind('/') + 1);  // npos + 1 == 0: the whole name
  OwnedDir d = open_owned_dir(dir, uid, false);
  if (!d.error.empty()) throw ToolError(file + ": " + d.error);
  const SmallFile text = read_small_file_at(d.fd.get(), base, uid, kMaxPipelineFileBytes);
  if (text.missing) throw ToolError(file + ": no such file");
  if (!text.text) throw ToolError(file + ": " + text.error);
  const PipelineParse parsed = parse_pipeline(*text.text);
  std::vector<std::string> problems;
  for (const auto& e : parsed.errors) problems.push_back(file + ": " + e);
  if (parsed.errors_dropped) problems.push_back(file + ": ... and " + std::to_string(parsed.errors_dropped) + " more");
  LoadedPipeline out;
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
      else out.scripts[st.name] = *s.text;
    }
  }
  if (!problems.empty()) throw ToolError("the pipeline was not submitted (no job was):\n  " + join(problems, "\n  "));
  out.spec = *parsed.spec;
  out.dir = dir;
  // The directory as the kernel resolved the descriptor we read through.
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(d.fd.get());
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0) out.absolute = std::string(buf, static_cast<size_t>(n)) + "/" + base;
  return out;
}

struct SubmittedRun {
  std::string id;
  std::vector<Submitted> done;
  std::vector<uint32_t> all;
  std::string notes;  // sbatch's own notes, per stage
};

// Submits every stage (held until all are in, then released): one run of the pipeline.
SubmittedRun submit_run(const LoadedPipeline& p) {
  const PipelineSpec& spec = p.spec;
  slurm_init(nullptr);
  SubmittedRun run;
  run.id = spec.name + "-" + random_hex(3);
  std::map<std::string, std::vector<uint32_t>> ids;
  // Every job is held until all are in: a stage never starts (or fails) before its
  // downstream stages exist, and a refused stage leaves nothing running.
  for (const StageSpec* st : submission_order(spec)) {
    Submitted s{st, {}};
    for (uint32_t attempt = 1; attempt <= st->retries + 1; ++attempt) {
      std::vector<std::string> argv = {"sbatch", "--parsable", "--hold", "--kill-on-invalid-dep=yes",
                                       "--job-name=" + spec.name + "/" + st->name,
                                       "--comment=" + std::string(kStoredPrefix) + " " +
                                           pipeline_words(membership_of(run.id, *st, attempt))};
      const std::string dep = stage_dependency(spec, *st, attempt, ids);
      if (!dep.empty()) argv.push_back("--dependency=" + dep);
      const ChildResult r = run_child(argv, p.scripts.at(st->name));
      const std::string first = trim(r.out.substr(0, r.out.find('\n')));
      const auto job = parse_uint(first.substr(0, first.find(';')));
      if (r.status != 0 || !job || *job == 0 || *job > UINT32_MAX) {
        cancel_jobs(run.all);
        throw ToolError("stage " + st->name + ": sbatch refused it" +
                        (run.all.empty() ? std::string() : "; the " + std::to_string(run.all.size()) +
                                                               " job(s) already submitted were cancelled") +
                        ", nothing of pipeline " + run.id + " runs:\n" +
                        indented(r.err.empty() ? r.out : r.err, "  "));
      }
      s.ids.push_back(static_cast<uint32_t>(*job));
      run.all.push_back(static_cast<uint32_t>(*job));
      ids[st->name].push_back(static_cast<uint32_t>(*job));
      run.notes += indented(r.err, "  stage " + st->name + ": ");
    }
    run.done.push_back(s);
  }
  std::vector<std::string> id_texts;
  for (uint32_t j : run.all) id_texts.push_back(std::to_string(j));
  const ChildResult rel = run_child({"scontrol", "release", join(id_texts, ",")}, "");
  if (rel.status != 0) {
    cancel_jobs(run.all);
    throw ToolError("releasing the held stages failed, so pipeline " + run.id + " was cancelled:\n" +
                    indented(rel.err, "  "));
  }
  return run;
}

void print_run(const SubmittedRun& run) {
  printf("pipeline %s submitted: %zu stage%s, %zu job%s\n", run.id.c_str(), run.done.size(),
         run.done.size() == 1 ? "" : "s", run.all.size(), run.all.size() == 1 ? "" : "s");
  size_t width = 0;
  for (const auto& s : run.done) width = std::max(width, s.stage->name.size());
  for (const auto& s : run.done) {
    printf("  %-*s  %u", static_cast<int>(width), s.stage->name.c_str(), s.ids[0]);
    if (s.ids.size() > 1) {
      std::vector<std::string> retries;
      for (size_t k = 1; k < s.ids.size(); ++k) retries.push_back(std::to_string(s.ids[k]));
      printf("  (retries, each if the one before fails: %s)", join(retries, ", ").c_str());
    }
    printf("\n");
  }
  fputs(run.notes.c_str(), stdout);
}

// ==== recurring pipelines ===========================================================

std::string directory_of(const std::string& program);

// The note of recurring pipeline `name` beside its file in `dir` (nullopt: none or unreadable).
std::optional<ScheduleNote> read_schedule_note(int dir_fd, const std::string& name, uid_t owner) {
  const SmallFile f = read_small_file_at(dir_fd, schedule_state_file(name), owner, 4096);
  if (!f.text) return std::nullopt;
  return decode_schedule_note(*f.text);
}

// Updates the note beside the pipeline file with what this time did, as the user.
// Returns "" or what went wrong (the time's line in the log says what it did anyway).
std::string write_schedule_note(const std::string& dir, const std::string& name,
                                const std::function<void(ScheduleNote&)>& change) {
  OwnedDir d = open_owned_dir(dir, getuid(), false);
  if (!d.error.empty()) return d.error;
  ScheduleNote note = read_schedule_note(d.fd.get(), name, getuid()).value_or(ScheduleNote{});
  change(note);
  return write_file_atomically_at(d.fd.get(), schedule_state_file(name), encode_schedule_note(note) + "\n", 0644,
                                  schedule_state_file(name));
}

void record_fire(const std::string& file, const std::string& name, const std::string& outcome, const std::string& run,
                 Concurrency concurrency) {
  const std::string e = write_schedule_note(directory_part(file), name, [&](ScheduleNote& note) {
    note.concurrency = concurrency;
    note.last = time(nullptr);
    note.last_outcome = outcome;
    note.last_run = run;
    (outcome == "submitted" ? note.submitted : outcome == "skipped" ? note.skipped : note.failed)++;
  });
  if (!e.empty()) printf("note: could not keep this in %s: %s\n", schedule_state_file(name).c_str(), e.c_str());
}


// The user's scrontab as `scrontab -l` prints it ("" when there is none).
std::string read_scrontab() {
  if (directory_of("scrontab").empty())
    throw ToolError("recurring pipelines are installed with Slurm's scrontab command, which is not on your PATH "
                    "(Debian 12's slurm-client package does not include it; Slurm built from source does). "
                    "Ask your admin, or submit the file without \"schedule\" from a cron of your own");
  const ChildResult r = run_child({"scrontab", "-l"}, "");
  if (r.status == 0) return r.out;
  if (r.status == 1 && starts_with(r.out, "no crontab for")) return "";
  const std::string said = trim(r.err.empty() ? r.out : r.err);
  if (said.find("scrontab is disabled") != std::string::npos)
    throw ToolError("recurring pipelines run from scrontab, which this cluster has disabled (an admin enables it "
                    "with ScronParameters=enable in slurm.conf)");
  throw ToolError("cannot read your scrontab (scrontab -l):\n" + indented(said, "  "));
}

void write_scrontab(const std::string& text) {
  const ChildResult r = run_child({"scrontab", "-"}, text);
  if (r.status != 0)
    throw ToolError("scrontab refused the new crontab, nothing changed:\n" +
                    indented(r.err.empty() ? r.out : r.err + "\n" + r.out, "  "));
}

// The first directory on PATH that holds an executable `program`.
std::string directory_of(const std::string& program) {
  const char* path = getenv("PATH");
  for (const auto& d : split(path ? path : "", ':'))
    if (!d.empty() && d[0] == '/' && access((d + "/" + program).c_str(), X_OK) == 0) return d;
  return "";
}

// The cron job of recurring pipeline `name` (of `uid`; any user's when uid is 0).
const slurm_job_info_t* schedule_job(const job_info_msg_t* all, const std::string& name, uid_t uid) {
  const slurm_job_info_t* found = nullptr;
  for (uint32_t i = 0; all && i < all->record_count; ++i) {
    const slurm_job_info_t& j = all->job_array[i];
    if (!(j.bitflags & CRON_JOB) || str(j.name) != schedule_job_name(name)) continue;
    if (uid != 0 && j.user_id != uid) continue;
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    if (base != JOB_PENDING && base != JOB_RUNNING) continue;  // an entry scancel'ed or removed
    if (!found || j.job_id > found->job_id) found = &j;
  }
  return found;
}

std::string checked_path(const std::string& what, const std::string& path) {
  if (!crontab_safe_path(path))
    throw ToolError("the " + what + " " + shown(path, 200) +
                    " goes on a scrontab command line, which takes only absolute paths of letters, digits and "
                    "/ . _ - + , @ : (move or rename it)");
  return path;
}

int install_schedule(const LoadedPipeline& p, bool json) {
  const PipelineSpec& spec = p.spec;
  ScheduleEntry e;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw ToolError("cannot find where this mlsched is installed (/proc/self/exe)");
  e.tool = checked_path("mlsched program", std::string(exe, static_cast<size_t>(n)));
  if (p.absolute.empty()) throw ToolError("cannot find the pipeline file's absolute path");
  e.file = checked_path("pipeline file", p.absolute);
  e.log = checked_path("run log", p.absolute.substr(0, p.absolute.rfind('/')) + "/" + schedule_log_file(spec.name));
  // The cron job runs with its user's login environment: name where sbatch is and
  // which slurm.conf, as they are now.
  const std::string sbatch_dir = directory_of("sbatch");
  if (sbatch_dir.empty()) throw ToolError("sbatch is not on your PATH");
  e.path_env = checked_path("sbatch directory", sbatch_dir) + ":/usr/local/bin:/usr/bin:/bin";
  if (const char* conf = getenv("SLURM_CONF"); conf && *conf) e.slurm_conf = checked_path("SLURM_CONF", conf);

  bool replaced = false;
  const std::string kept = crontab_without(read_scrontab(), spec.name, &replaced);
  // The note starts (or goes on, counts kept) with this concurrency.
  if (const std::string err = write_schedule_note(p.dir, spec.name, [&](ScheduleNote& n) { n.concurrency = spec.concurrency; });
      !err.empty())
    throw ToolError("cannot write " + schedule_state_file(spec.name) + " beside the pipeline file: " + err);
  write_scrontab(kept + (kept.empty() || kept.back() == '\n' ? "" : "\n") + schedule_block(spec, e));

  slurm_init(nullptr);
  JobsMsg all;
  const slurm_job_info_t* cron = nullptr;
  if (slurm_load_jobs(0, &all.msg, SHOW_ALL) == SLURM_SUCCESS) cron = schedule_job(all.msg, spec.name, getuid());
  if (json) {
    json_object* root = json_object_new_object();
    json_object_object_add(root, "pipeline", json_object_new_string(spec.name.c_str()));
    json_object_object_add(root, "schedule", json_object_new_string(spec.schedule.c_str()));
    json_object_object_add(root, "concurrency", json_object_new_string(to_string(spec.concurrency).c_str()));
    json_object_object_add(root, "replaced", json_object_new_boolean(replaced));
    json_object_object_add(root, "cron_job_id", cron ? json_object_new_int64(cron->job_id) : nullptr);
    json_object_object_add(root, "next_run", cron && cron->eligible_time ? json_object_new_int64(cron->eligible_time) : nullptr);
    json_object_object_add(root, "log", json_object_new_string(e.log.c_str()));
    print_json(root);
    return 0;
  }
  printf("pipeline %s %s in your scrontab: schedule \"%s\", concurrency %s (%s)\n", spec.name.c_str(),
         replaced ? "replaced" : "installed", spec.schedule.c_str(), to_string(spec.concurrency).c_str(),
         spec.concurrency == Concurrency::forbid ? "a time is skipped while the previous run is still going"
                                                 : "a run starts at every time, even while earlier ones go on");
  if (cron)
    printf("  scrontab job %u; next run %s\n", cron->job_id, cron->eligible_time ? local_clock(cron->eligible_time).c_str() : "?");
  printf("  each run reads %s again; what each time did goes to %s\n", e.file.c_str(), e.log.c_str());
  printf("see it with: mlsched pipeline status %s; remove it with: mlsched pipeline unschedule %s\n", spec.name.c_str(),
         spec.name.c_str());
  return 0;
}

int pipeline_submit(Args& args) {
  const bool json = args.flag("--json");
  const std::string file = args.positional();
  args.expect_no_more("pipeline submit");
  if (file.empty()) throw UsageError("which pipeline file? mlsched pipeline submit FILE");
  const LoadedPipeline p = load_pipeline_file(file);
  if (!p.spec.schedule.empty()) return install_schedule(p, json);
  const SubmittedRun run = submit_run(p);
  if (json) {
    json_object* root = json_object_new_object();
    json_object_object_add(root, "pipeline", json_object_new_string(run.id.c_str()));
    json_object_object_add(root, "name", json_object_new_string(p.spec.name.c_str()));
    json_object* stages = json_object_new_array();
    for (const auto& s : run.done) {
      json_object* o = json_object_new_object();
      json_object_object_add(o, "stage", json_object_new_string(s.stage->name.c_str()));
      json_object_object_add(o, "job_name", json_object_new_string((p.spec.name + "/" + s.stage->name).c_str()));
      json_object* arr = json_object_new_array();
      for (uint32_t j : s.ids) json_object_array_add(arr, json_object_new_int64(j));
      json_object_object_add(o, "job_ids", arr);
      json_object_array_add(stages, o);
    }
    json_object_object_add(root, "stages", stages);
    print_json(root);
  } else {
    print_run(run);
    printf("see it with: mlsched pipeline status %s\n", run.id.c_str());
  }
  return 0;
}

// Pipeline runs of `name` by `uid` that have not ended, newest first.
std::vector<std::pair<std::string, std::vector<uint32_t>>> live_runs(const job_info_msg_t* all, const std::string& name,
                                                                     uid_t uid) {
  std::map<std::string, std::vector<uint32_t>> by_run;
  for (uint32_t i = 0; all && i < all->record_count; ++i) {
    const slurm_job_info_t& j = all->job_array[i];
    if (j.user_id != uid) continue;
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    if (base != JOB_PENDING && base != JOB_RUNNING && base != JOB_SUSPENDED) continue;
    const JobRecord r = decode_job_record(str(j.admin_comment));
    if (r.pipeline && is_run_of(r.pipeline->id, name)) by_run[r.pipeline->id].push_back(j.job_id);
  }
  std::vector<std::pair<std::string, std::vector<uint32_t>>> out(by_run.begin(), by_run.end());
  for (auto& r : out) std::sort(r.second.begin(), r.second.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second.back() > b.second.back(); });
  return out;
}

// What a recurring pipeline's scrontab entry runs at each time: reads the file again,
// then submits a run, or skips it (concurrency forbid) while the last is still going.
int pipeline_fire(Args& args) {
  const std::string name = args.value("--name");
  const std::string file = args.positional();
  args.expect_no_more("pipeline fire");
  if (file.empty() || !is_pipeline_name(name))
    throw UsageError("which pipeline? mlsched pipeline fire --name NAME FILE");
  const std::string at = local_clock(time(nullptr));
  slurm_init(nullptr);
  LoadedPipeline p;
  try {
    p = load_pipeline_file(file);
    if (p.spec.schedule.empty())
      throw ToolError(file + " has no \"schedule\" any more; `mlsched pipeline unschedule " + name +
                      "` removes this entry");
    if (p.spec.name != name)
      throw ToolError(file + " now names its pipeline " + p.spec.name + ", not " + name +
                      "; submit it again to schedule it under the new name, and unschedule " + name);
  } catch (const ToolError& e) {
    printf("%s: not run: %s\n", at.c_str(), e.what());
    fflush(stdout);
    record_fire(file, name, "failed", "", Concurrency::forbid);
    throw;
  }
  JobsMsg all;
  if (slurm_load_jobs(0, &all.msg, SHOW_ALL) != SLURM_SUCCESS) {
    printf("%s: not run: %s\n", at.c_str(), slurm_error("cannot read the job list").c_str());
    record_fire(file, name, "failed", "", p.spec.concurrency);
    throw ToolError(slurm_error("cannot read the job list from slurmctld"));
  }
  const auto live = live_runs(all.msg, p.spec.name, getuid());
  if (p.spec.concurrency == Concurrency::forbid && !live.empty()) {
    std::vector<std::string> ids;
    for (uint32_t j : live.front().second) ids.push_back(std::to_string(j));
    printf("%s: skipped: run %s (job%s %s) is still going (concurrency forbid)\n", at.c_str(),
           live.front().first.c_str(), ids.size() == 1 ? "" : "s", join(ids, ", ").c_str());
    record_fire(file, name, "skipped", live.front().first, p.spec.concurrency);
    return 0;
  }
  SubmittedRun run;
  try {
    run = submit_run(p);
  } catch (const ToolError& e) {
    printf("%s: not run: %s\n", at.c_str(), e.what());
    fflush(stdout);
    record_fire(file, name, "failed", "", p.spec.concurrency);
    throw;
  }
  printf("%s: ", at.c_str());
  print_run(run);
  if (!live.empty()) printf("  (concurrency allow: run %s is still going beside it)\n", live.front().first.c_str());
  record_fire(file, name, "submitted", run.id, p.spec.concurrency);
  return 0;
}

int pipeline_unschedule(Args& args) {
  const std::string name = args.positional();
  args.expect_no_more("pipeline unschedule");
  if (name.empty()) throw UsageError("which pipeline? mlsched pipeline unschedule NAME");
  if (!is_pipeline_name(name)) throw UsageError(shown(name) + " is not a pipeline name");
  bool found = false;
  const std::string kept = crontab_without(read_scrontab(), name, &found);
  if (!found) throw ToolError("your scrontab has no recurring pipeline " + name + " (scrontab -l shows what it has)");
  if (trim(kept).empty()) {
    const ChildResult r = run_child({"scrontab", "-r"}, "");
    if (r.status != 0) throw ToolError("scrontab -r failed:\n" + indented(r.err, "  "));
  } else {
    write_scrontab(kept);
  }
  printf("pipeline %s removed from your scrontab: it is not run again (runs already submitted go on; "
         "`mlsched pipeline cancel ID` stops one)\n", name.c_str());
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

// `pipeline status NAME` of a recurring pipeline: its scrontab job (schedule, next
// time, what the last time did) and the runs of it slurmctld still knows.
int schedule_status(const std::string& name, const slurm_job_info_t& cron, const job_info_msg_t* all, bool json,
                    time_t now) {
  // The note beside the pipeline file: the directory of the cron job's log (its
  // StdOut), read as a file of the job's user whoever asks (root included).
  std::optional<ScheduleNote> note;
  const std::string log = str(cron.std_out);
  if (starts_with(log, "/") && log.size() > schedule_log_file(name).size() &&
      log.compare(log.size() - schedule_log_file(name).size(), std::string::npos, schedule_log_file(name)) == 0) {
    OwnedDir d = open_owned_dir(directory_part(log), cron.user_id, false);
    if (d.error.empty()) note = read_schedule_note(d.fd.get(), name, cron.user_id);
  }
  const std::string schedule = trim(str(cron.cronspec));
  const bool running = (cron.job_state & JOB_STATE_BASE) == JOB_RUNNING;
  // Every run of it known to slurmctld, newest first, with its state.
  std::map<std::string, std::vector<StageJob>> runs;
  for (uint32_t i = 0; all && i < all->record_count; ++i) {
    const slurm_job_info_t& j = all->job_array[i];
    if (j.user_id != cron.user_id) continue;
    const JobRecord r = decode_job_record(str(j.admin_comment));
    if (r.pipeline && is_run_of(r.pipeline->id, name)) runs[r.pipeline->id].push_back(stage_job(j));
  }
  std::vector<PipelineStatus> statuses;
  for (auto& [id, jobs] : runs) statuses.push_back(pipeline_status(id, jobs, now));
  auto newest = [&](const PipelineStatus& p) {
    uint32_t m = 0;
    for (const auto& s : p.stages)
      for (const auto& a : s.attempts) m = std::max(m, a.job_id);
    return m;
  };
  std::sort(statuses.begin(), statuses.end(), [&](const auto& a, const auto& b) { return newest(a) > newest(b); });
  if (json) {
    json_object* root = json_object_new_object();
    json_object_object_add(root, "pipeline", json_object_new_string(name.c_str()));
    json_object_object_add(root, "schedule", json_object_new_string(schedule.c_str()));
    json_object_object_add(root, "concurrency", note ? json_object_new_string(to_string(note->concurrency).c_str()) : nullptr);
    json_object_object_add(root, "cron_job_id", json_object_new_int64(cron.job_id));
    json_object_object_add(root, "firing", json_object_new_boolean(running));
    json_object_object_add(root, "next_run", !running && cron.eligible_time ? json_object_new_int64(cron.eligible_time) : nullptr);
    json_object* last = nullptr;
    if (note) {
      last = json_object_new_object();
      json_object_object_add(last, "time", note->last ? json_object_new_int64(note->last) : nullptr);
      json_object_object_add(last, "outcome", note->last_outcome.empty() ? nullptr : json_object_new_string(note->last_outcome.c_str()));
      json_object_object_add(last, "run", note->last_run.empty() ? nullptr : json_object_new_string(note->last_run.c_str()));
      json_object_object_add(last, "submitted", json_object_new_int64(note->submitted));
      json_object_object_add(last, "skipped", json_object_new_int64(note->skipped));
      json_object_object_add(last, "failed", json_object_new_int64(note->failed));
    }
    json_object_object_add(root, "last", last);
    json_object* arr = json_object_new_array();
    for (const auto& st : statuses) {
      json_object* o = json_object_new_object();
      json_object_object_add(o, "pipeline", json_object_new_string(st.id.c_str()));
      json_object_object_add(o, "state", json_object_new_string(st.state.c_str()));
      json_object_array_add(arr, o);
    }
    json_object_object_add(root, "runs", arr);
    print_json(root);
    return 0;
  }
  printf("pipeline %s: recurring, schedule \"%s\", concurrency %s (scrontab job %u)\n", name.c_str(), schedule.c_str(),
         note ? to_string(note->concurrency).c_str() : "unknown", cron.job_id);
  if (running) printf("  now: its scrontab job is running (submitting a run, or deciding to skip one)\n");
  else printf("  next run: %s (%s)\n", local_clock(cron.eligible_time).c_str(),
              cron.eligible_time > now ? ("in " + format_duration(cron.eligible_time - now)).c_str() : "now");
  if (note) printf("  %s\n", format_schedule_note(*note, now).c_str());
  else printf("  what it did last is unknown (%s beside the pipeline file is missing or unreadable)\n",
              schedule_state_file(name).c_str());
  if (statuses.empty()) {
    printf("  no run of it is known to slurmctld (a finished job leaves it MinJobAge after it ends)\n");
  } else {
    printf("  runs slurmctld knows, newest first:\n");
    for (const auto& st : statuses) printf("    %-*s  %s\n", static_cast<int>(name.size() + 7), st.id.c_str(), st.state.c_str());
  }
  printf("a run's stages: mlsched pipeline status RUN; stop it: mlsched pipeline unschedule %s\n", name.c_str());
  return 0;
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
  if (st.stages.empty() && !parse_uint(given) && is_pipeline_name(given)) {
    if (const slurm_job_info_t* cron = schedule_job(all.msg, given, getuid()))
      return schedule_status(given, *cron, all.msg, json, now);
  }
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
  if (sub == "unschedule") return pipeline_unschedule(args);
  if (sub == "fire") return pipeline_fire(args);
  if (sub.empty()) throw UsageError("submit, status, cancel or unschedule?");
  throw UsageError("unknown subcommand '" + sub + "' (submit, status, cancel, unschedule, fire)");
}

}  // namespace mlsched::tool
