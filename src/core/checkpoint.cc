// Checkpoint records and fencing; see checkpoint.h. Every read-modify-write of the
// directory's files holds an exclusive flock on <dir>/.mlsched-lock, so a stale run
// cannot check the fence, lose the CPU to a newer run, and then write anyway.
#include "core/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safe_file.h"
#include "core/text.h"

namespace mlsched {

namespace {

std::string errno_text() { return std::strerror(errno); }

// LATEST holds one line with a path; the fence one number.
constexpr size_t kMaxRecordBytes = 8192;
constexpr size_t kMaxFenceBytes = 64;
const char* const kLatestName = "LATEST";
const char* const kFenceName = ".mlsched-fence";
const char* const kLockName = ".mlsched-lock";

// An exclusive flock on the directory's lock file, opened through the checked
// directory's descriptor and never through a symlink.
class DirLock {
 public:
  DirLock(int dir_fd, uid_t owner) {
    fd_ = Fd(openat(dir_fd, kLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
    if (!fd_.ok()) {
      error_ = std::string("cannot open ") + kLockName + ": " + errno_text();
      return;
    }
    struct stat st;
    if (fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) {
      error_ = std::string(kLockName) + " is not a regular file of the job's user";
      fd_ = Fd();
      return;
    }
    while (flock(fd_.get(), LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  const std::string& error() const { return error_; }

 private:
  Fd fd_;
  std::string error_;
};

std::optional<uint32_t> read_fence(int dir_fd, uid_t owner) {
  const SmallFile f = read_small_file_at(dir_fd, kFenceName, owner, kMaxFenceBytes);
  if (!f.text) return std::nullopt;
  auto v = parse_uint(trim(*f.text));
  if (!v || *v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// `path` as the record keeps it: relative to the directory. An absolute path is
// taken when it lies inside `dir`; anything reaching outside is nullopt.
std::optional<std::string> relative_to(const std::string& dir, const std::string& path) {
  if (!path.empty() && path[0] == '/') {
    const std::string head = dir + "/";
    if (path.compare(0, head.size(), head) != 0) return std::nullopt;
    return path_inside(path.substr(head.size()));
  }
  return path_inside(path);
}

struct OpenedLatest {
  std::optional<CheckpointRecord> record;  // parsed and inside the directory
  std::string rel;                         // its path relative to the directory
  std::string problem;                     // hostile or foreign content: do not resume, say why
  std::string note;                        // unreadable record: start from scratch
};

OpenedLatest open_latest(int dir_fd, const std::string& dir, uid_t owner) {
  OpenedLatest out;
  const SmallFile f = read_small_file_at(dir_fd, kLatestName, owner, kMaxRecordBytes);
  if (f.missing) return out;
  if (!f.text) {
    out.problem = dir + "/" + f.error;
    return out;
  }
  auto record = parse_checkpoint_record(*f.text);
  if (!record) {
    out.note = "ignoring unreadable " + latest_file(dir) + "; starting from scratch";
    return out;
  }
  auto rel = relative_to(dir, record->path);
  if (!rel) {
    out.problem = latest_file(dir) + " names " + record->path + ", which is not inside " + dir;
    return out;
  }
  out.record = std::move(record);
  out.rel = *rel;
  return out;
}

}  // namespace

std::string CheckpointRecord::to_string() const {
  return "mlsched-checkpoint restart=" + std::to_string(restart) + " time=" + std::to_string(time) + " path=" + path +
         "\n";
}

std::optional<CheckpointRecord> parse_checkpoint_record(std::string_view text) {
  const std::string line = trim(text);
  const std::string head = "mlsched-checkpoint ";
  if (line.rfind(head, 0) != 0 || line.find('\n') != std::string::npos) return std::nullopt;
  CheckpointRecord r;
  std::string rest = line.substr(head.size());
  // path= comes last and may contain spaces.
  const size_t path_at = rest.find(" path=");
  if (path_at == std::string::npos) return std::nullopt;
  r.path = rest.substr(path_at + 6);
  if (r.path.empty()) return std::nullopt;
  bool have_restart = false, have_time = false;
  for (const auto& word : split(rest.substr(0, path_at), ' ')) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    auto v = parse_uint(word.substr(eq + 1));
    if (!v) return std::nullopt;
    if (word.compare(0, eq, "restart") == 0 && *v <= UINT32_MAX) {
      r.restart = static_cast<uint32_t>(*v);
      have_restart = true;
    } else if (word.compare(0, eq, "time") == 0) {
      r.time = static_cast<int64_t>(*v);
      have_time = true;
    } else {
      return std::nullopt;
    }
  }
  if (!have_restart || !have_time) return std::nullopt;
  return r;
}

std::string latest_file(const std::string& dir) { return dir + "/" + kLatestName; }
std::string fence_file(const std::string& dir) { return dir + "/" + kFenceName; }

RunStart begin_run(const std::string& dir_in, uint32_t restart, uid_t owner) {
  RunStart out;
  if (dir_in.empty()) {
    out.error = "no checkpoint directory";
    return out;
  }
  const OwnedDir dir = open_owned_dir(dir_in, owner, true);
  if (!dir.error.empty()) {
    out.error = dir.error;
    return out;
  }
  DirLock lock(dir.fd.get(), owner);
  if (!lock.error().empty()) {
    out.error = dir.path + "/" + lock.error();
    return out;
  }
  if (auto fence = read_fence(dir.fd.get(), owner); fence && *fence > restart) {
    out.error = "a newer run of this job (restart " + std::to_string(*fence) + ") owns " + dir.path +
                "; this copy (restart " + std::to_string(restart) + ") is stale and must not train";
    return out;
  }
  if (auto e = write_file_atomically_at(dir.fd.get(), kFenceName, std::to_string(restart) + "\n", 0644,
                                        fence_file(dir.path));
      !e.empty()) {
    out.error = e;
    return out;
  }
  const OpenedLatest latest = open_latest(dir.fd.get(), dir.path, owner);
  if (!latest.problem.empty()) {
    out.error = "refusing to resume: " + latest.problem;
    return out;
  }
  out.note = latest.note;
  if (latest.record) {
    const std::string why = check_entry_at(dir.fd.get(), latest.rel, owner);
    if (why.empty()) {
      out.resume_from = dir.path + "/" + latest.rel;
    } else if (why.find("does not exist") != std::string::npos) {
      out.note = "recorded checkpoint " + latest.record->path + " is gone; starting from scratch";
    } else {
      out.error = "refusing to resume from " + dir.path + ": " + why;
      return out;
    }
  }
  out.ok = true;
  return out;
}

std::string mark_checkpoint_complete(const std::string& dir_in, uint32_t restart, const std::string& path,
                                     int64_t now, uid_t owner) {
  if (dir_in.empty()) return "no checkpoint directory (run the job under `mlsched run`)";
  if (path.empty()) return "no checkpoint path given";
  const OwnedDir dir = open_owned_dir(dir_in, owner, false);
  if (!dir.error.empty()) return "refused: " + dir.error;
  const auto rel = relative_to(dir.path, path);
  if (!rel) return "refused: " + path + " is not inside the checkpoint directory " + dir.path;
  DirLock lock(dir.fd.get(), owner);
  if (!lock.error().empty()) return "refused: " + dir.path + "/" + lock.error();
  if (auto fence = read_fence(dir.fd.get(), owner); fence && *fence > restart)
    return "refused: a newer run of this job (restart " + std::to_string(*fence) + ") owns " + dir.path +
           "; this copy (restart " + std::to_string(restart) + ") is stale";
  if (auto why = check_entry_at(dir.fd.get(), *rel, owner); !why.empty())
    return "refused: " + (why.find("does not exist") != std::string::npos ? dir.path + "/" + *rel + " does not exist"
                                                                            : why);
  const OpenedLatest old = open_latest(dir.fd.get(), dir.path, owner);
  if (old.record && old.record->restart > restart)
    return "refused: the latest checkpoint comes from a newer run (restart " + std::to_string(old.record->restart) +
           ")";
  CheckpointRecord r;
  r.restart = restart;
  r.time = now;
  r.path = *rel;
  return write_file_atomically_at(dir.fd.get(), kLatestName, r.to_string(), 0644, latest_file(dir.path));
}

LatestCheckpoint read_latest_checkpoint(const std::string& dir_in, uid_t owner) {
  LatestCheckpoint out;
  const OwnedDir dir = open_owned_dir(dir_in, owner, false);
  if (!dir.error.empty()) {
    out.missing = dir.missing;
    out.problem = dir.error;
    return out;
  }
  const OpenedLatest latest = open_latest(dir.fd.get(), dir.path, owner);
  if (!latest.problem.empty()) {
    out.problem = latest.problem;
  } else if (!latest.note.empty()) {
    out.problem = "unreadable record in " + latest_file(dir.path);
  } else if (!latest.record) {
    out.missing = true;
  } else {
    out.record = latest.record;
    out.path = dir.path + "/" + latest.rel;
  }
  return out;
}

const char* const kCheckpointReportKey = "mlsched-checkpoint";

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// [begin, end) of each whitespace-separated word that starts with one of `keys`=.
std::vector<std::pair<size_t, size_t>> words_of(std::string_view text, std::initializer_list<const char*> keys) {
  std::vector<std::pair<size_t, size_t>> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i == begin) continue;
    for (const char* key : keys) {
      const std::string head = std::string(key) + "=";
      if (text.substr(begin, head.size()) == head) {
        words.emplace_back(begin, i);
        break;
      }
    }
  }
  return words;
}

std::string without_words(std::string_view comment, std::initializer_list<const char*> keys) {
  std::string out;
  size_t from = 0;
  for (auto [begin, end] : words_of(comment, keys)) {
    // Take one separating space with the word: the one before it, else the one after.
    size_t cut_begin = begin, cut_end = end;
    if (cut_begin > from && is_space(comment[cut_begin - 1])) --cut_begin;
    else if (cut_end < comment.size() && is_space(comment[cut_end])) ++cut_end;
    out.append(comment.substr(from, cut_begin - from));
    from = cut_end;
  }
  out.append(comment.substr(std::min(from, comment.size())));
  return out;
}

// A checkpoint name that may go into a report: short, and nothing a terminal, a
// shell or Slurm's comment parsing could take for something else.
bool reportable_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxReportedName) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' || c == '+' || c == '-'))
      return false;
  return true;
}

// The comment with one word `key=<time>[,<name>]` replacing every earlier `key=` word.
std::string with_word(std::string_view comment, const char* key, int64_t time, std::string_view name) {
  std::string out = without_words(comment, {key});
  // Always one space before the word, so that removing it gives the user's text back exactly.
  if (!out.empty()) out += ' ';
  out += std::string(key) + "=" + std::to_string(time);
  if (reportable_name(name)) out += "," + std::string(name);
  return out;
}

std::optional<CheckpointReport> word_of(std::string_view comment, const char* key) {
  const auto words = words_of(comment, {key});
  if (words.empty()) return std::nullopt;
  const auto [begin, end] = words.back();
  const size_t value_at = begin + std::string(key).size() + 1;
  const std::string_view value = comment.substr(value_at, end - value_at);
  const size_t comma = value.find(',');
  auto v = parse_uint(value.substr(0, comma));
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  CheckpointReport r;
  r.time = static_cast<int64_t>(*v);
  if (comma != std::string_view::npos && reportable_name(value.substr(comma + 1)))
    r.name = std::string(value.substr(comma + 1));
  return r;
}

}  // namespace

const char* const kResumeReportKey = "mlsched-resumed";

std::string without_checkpoint_report(std::string_view comment) {
  return without_words(comment, {kCheckpointReportKey, kResumeReportKey});
}

std::string with_checkpoint_report(std::string_view comment, int64_t time, std::string_view name) {
  return with_word(comment, kCheckpointReportKey, time, name);
}

std::string with_resume_report(std::string_view comment, int64_t time, std::string_view name) {
  return with_word(comment, kResumeReportKey, time, name);
}

std::optional<CheckpointReport> checkpoint_report_of(std::string_view comment) {
  return word_of(comment, kCheckpointReportKey);
}

std::optional<CheckpointReport> resume_report_of(std::string_view comment) {
  return word_of(comment, kResumeReportKey);
}

std::optional<int64_t> checkpoint_report(std::string_view comment) {
  const auto r = checkpoint_report_of(comment);
  if (!r) return std::nullopt;
  return r->time;
}

std::optional<int64_t> trusted_checkpoint_time(std::optional<int64_t> reported, int64_t start_time, int64_t now) {
  if (!reported || start_time <= 0 || *reported < start_time) return std::nullopt;
  return std::min(*reported, std::max(now, start_time));
}

int64_t work_at_risk_since(int64_t start_time, std::optional<int64_t> reported, uint32_t checkpoint_interval,
                           int64_t now) {
  const auto checkpoint = trusted_checkpoint_time(reported, start_time, now);
  int64_t since = checkpoint ? *checkpoint : start_time;
  // A job that declared an interval has checkpointed at least that recently; the
  // bound holds for a report too, so reporting an old checkpoint cannot make a job
  // look dearer to stop than staying silent.
  if (checkpoint_interval > 0) since = std::max<int64_t>(since, now - checkpoint_interval);
  return std::min(since, now);
}

}  // namespace mlsched
