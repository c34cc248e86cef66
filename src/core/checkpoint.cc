// Checkpoint records and fencing; see checkpoint.h. Every read-modify-write of the
// directory's files holds an exclusive flock on <dir>/.mlsched-lock, so a stale run
// cannot check the fence, lose the CPU to a newer run, and then write anyway.
#include "core/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/text.h"

namespace mlsched {

namespace {

std::string errno_text() { return std::strerror(errno); }

class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    fd_ = open((dir + "/.mlsched-lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~DirLock() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string write_atomically(const std::string& path, const std::string& text) {
  return write_file_atomically(path, text, 0644);
}

std::optional<uint32_t> read_fence(const std::string& dir) {
  auto text = read_file(fence_file(dir));
  if (!text) return std::nullopt;
  auto v = parse_uint(trim(*text));
  if (!v || *v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::string resolve(const std::string& dir, const std::string& path) {
  return (!path.empty() && path[0] == '/') ? path : dir + "/" + path;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// mkdir -p: every prefix ending before a '/', then the whole path.
std::string make_dirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return "cannot create " + prefix + ": " + errno_text();
    if (slash == std::string::npos) return "";
  }
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

std::string latest_file(const std::string& dir) { return dir + "/LATEST"; }
std::string fence_file(const std::string& dir) { return dir + "/.mlsched-fence"; }

RunStart begin_run(const std::string& dir, uint32_t restart) {
  RunStart out;
  if (dir.empty()) {
    out.error = "no checkpoint directory";
    return out;
  }
  if (auto e = make_dirs(dir); !e.empty()) {
    out.error = e;
    return out;
  }
  DirLock lock(dir);
  if (!lock.ok()) {
    out.error = "cannot lock " + dir + "/.mlsched-lock: " + errno_text();
    return out;
  }
  if (auto fence = read_fence(dir); fence && *fence > restart) {
    out.error = "a newer run of this job (restart " + std::to_string(*fence) + ") owns " + dir + "; this copy (restart " +
                std::to_string(restart) + ") is stale and must not train";
    return out;
  }
  if (auto e = write_atomically(fence_file(dir), std::to_string(restart) + "\n"); !e.empty()) {
    out.error = e;
    return out;
  }
  if (auto text = read_file(latest_file(dir))) {
    auto record = parse_checkpoint_record(*text);
    if (!record) {
      out.note = "ignoring unreadable " + latest_file(dir) + "; starting from scratch";
    } else if (!exists(resolve(dir, record->path))) {
      out.note = "recorded checkpoint " + record->path + " is gone; starting from scratch";
    } else {
      out.resume_from = resolve(dir, record->path);
    }
  }
  out.ok = true;
  return out;
}

std::string mark_checkpoint_complete(const std::string& dir, uint32_t restart, const std::string& path, int64_t now) {
  if (dir.empty()) return "no checkpoint directory (run the job under `mlsched run`)";
  if (path.empty()) return "no checkpoint path given";
  DirLock lock(dir);
  if (!lock.ok()) return "cannot lock " + dir + "/.mlsched-lock: " + errno_text();
  if (auto fence = read_fence(dir); fence && *fence > restart)
    return "refused: a newer run of this job (restart " + std::to_string(*fence) + ") owns " + dir +
           "; this copy (restart " + std::to_string(restart) + ") is stale";
  if (!exists(resolve(dir, path))) return "refused: " + resolve(dir, path) + " does not exist";
  if (auto text = read_file(latest_file(dir)))
    if (auto old = parse_checkpoint_record(*text); old && old->restart > restart)
      return "refused: the latest checkpoint comes from a newer run (restart " + std::to_string(old->restart) + ")";
  CheckpointRecord r;
  r.restart = restart;
  r.time = now;
  r.path = path;
  return write_atomically(latest_file(dir), r.to_string());
}

const char* const kCheckpointReportKey = "mlsched-checkpoint";

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// [begin, end) of each whitespace-separated word that is a report.
std::vector<std::pair<size_t, size_t>> report_words(std::string_view text) {
  const std::string head = std::string(kCheckpointReportKey) + "=";
  std::vector<std::pair<size_t, size_t>> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > begin && text.substr(begin, head.size()) == head) words.emplace_back(begin, i);
  }
  return words;
}

}  // namespace

std::string without_checkpoint_report(std::string_view comment) {
  std::string out;
  size_t from = 0;
  for (auto [begin, end] : report_words(comment)) {
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

std::string with_checkpoint_report(std::string_view comment, int64_t time) {
  std::string out = without_checkpoint_report(comment);
  // Always one space before the word, so that without_checkpoint_report() gives the
  // user's text back exactly.
  if (!out.empty()) out += ' ';
  return out + kCheckpointReportKey + "=" + std::to_string(time);
}

std::optional<int64_t> checkpoint_report(std::string_view comment) {
  const auto words = report_words(comment);
  if (words.empty()) return std::nullopt;
  const auto [begin, end] = words.back();
  const size_t value_at = begin + std::string(kCheckpointReportKey).size() + 1;
  auto v = parse_uint(comment.substr(value_at, end - value_at));
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<int64_t> trusted_checkpoint_time(std::optional<int64_t> reported, int64_t start_time, int64_t now) {
  if (!reported || start_time <= 0 || *reported < start_time) return std::nullopt;
  return std::min(*reported, std::max(now, start_time));
}

}  // namespace mlsched
