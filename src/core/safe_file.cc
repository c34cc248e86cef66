// See safe_file.h.
#include "core/safe_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "core/text.h"

namespace mlsched {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string owner_text(uid_t uid) { return "uid " + std::to_string(uid); }

// Why a directory of `owner` may not be trusted, or "".
std::string dir_problem(const struct stat& st, uid_t owner, const std::string& path) {
  if (!S_ISDIR(st.st_mode)) return path + " is not a directory";
  if (st.st_uid != owner)
    return path + " belongs to " + owner_text(st.st_uid) + ", not to " + owner_text(owner) +
           " who runs the job: refusing to use a directory another user controls";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return path + " is writable by other users (mode " + std::to_string((st.st_mode >> 6) & 7) +
           std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
           "): refusing to use it; `chmod go-w` it or choose another directory";
  return "";
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string strip_trailing_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// mkdir -p with mode 0700 for what is missing; existing directories are left alone
// (and checked afterwards by the caller).
std::string make_dirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create " + prefix + ": " + errno_text(errno);
    if (slash == std::string::npos) return "";
  }
}

std::string random_suffix() {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
    r = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(time(nullptr));
  char buf[32];
  snprintf(buf, sizeof buf, "%016" PRIx64, r);
  return buf;
}

std::string write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno_text(errno) : "short write";
    done += static_cast<size_t>(n);
  }
  return "";
}

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

int Fd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

OwnedDir open_owned_dir(const std::string& path_in, uid_t owner, bool create) {
  OwnedDir out;
  out.path = strip_trailing_slashes(path_in);
  if (out.path.empty()) {
    out.error = "no directory given";
    return out;
  }
  if (create) {
    if (auto e = make_dirs(out.path); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  Fd fd(open(out.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) {
    const int err = errno;
    out.missing = err == ENOENT;
    out.error = err == ELOOP || err == ENOTDIR ? out.path + " is a symlink or not a directory: refusing to use it"
                                               : "cannot open " + out.path + ": " + errno_text(err);
    return out;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    out.error = "cannot stat " + out.path + ": " + errno_text(errno);
    return out;
  }
  if (auto e = dir_problem(st, owner, out.path); !e.empty()) {
    out.error = e;
    return out;
  }
  // The parent, as reached now: whoever may rename entries in it could swap the
  // directory for theirs between two runs of the job.
  const std::string parent = parent_of(out.path);
  struct stat pst;
  if (stat(parent.c_str(), &pst) != 0) {
    out.error = "cannot stat " + parent + ": " + errno_text(errno);
    return out;
  }
  if (pst.st_uid != owner && pst.st_uid != 0) {
    out.error = parent + " belongs to " + owner_text(pst.st_uid) + ", not to " + owner_text(owner) +
                ": another user could replace " + out.path + "; refusing to use it";
    return out;
  }
  if ((pst.st_mode & (S_IWGRP | S_IWOTH)) && !(pst.st_mode & S_ISVTX)) {
    out.error = parent + " is writable by other users and not sticky: another user could replace " + out.path +
                "; refusing to use it";
    return out;
  }
  out.fd = std::move(fd);
  return out;
}

SmallFile read_small_file_at(int dir_fd, const std::string& name, uid_t owner, size_t max_bytes) {
  SmallFile out;
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
  Fd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.ok()) {
    const int err = errno;
    if (err == ENOENT) out.missing = true;
    else if (err == ELOOP) out.error = name + " is a symlink: not followed";
    else out.error = "cannot open " + name + ": " + errno_text(err);
    return out;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    out.error = "cannot stat " + name + ": " + errno_text(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.error = name + " is not a regular file: not read";
    return out;
  }
  if (st.st_uid != owner) {
    out.error = name + " belongs to " + owner_text(st.st_uid) + ", not to " + owner_text(owner) + ": not read";
    return out;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    out.error = name + " is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                " expected: not read";
    return out;
  }
  std::string text(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd.get(), &text[got], text.size() - got);
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0) {
      out.error = "cannot read " + name + ": " + errno_text(errno);
      return out;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) {  // grew after fstat
    out.error = name + " is longer than the " + std::to_string(max_bytes) + " bytes expected: not read";
    return out;
  }
  text.resize(got);
  out.text = std::move(text);
  return out;
}

std::string write_file_atomically_at(int dir_fd, const std::string& name, const std::string& text, mode_t mode,
                                     const std::string& shown) {
  std::string tmp;
  Fd fd;
  // A fresh, unpredictable name, created exclusively: a name planted in advance
  // (a symlink to someone's file) makes open fail instead of being written through.
  for (int attempt = 0; attempt < 8 && !fd.ok(); ++attempt) {
    tmp = "." + name + ".tmp." + std::to_string(getpid()) + "." + random_suffix();
    fd = Fd(openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.ok() && errno != EEXIST) break;
  }
  if (!fd.ok()) return "cannot write " + shown + ": " + errno_text(errno);
  std::string why = write_all(fd.get(), text);
  if (why.empty() && fsync(fd.get()) != 0) why = errno_text(errno);
  if (close(fd.release()) != 0 && why.empty()) why = errno_text(errno);
  if (why.empty() && renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) why = errno_text(errno);
  if (!why.empty()) {
    unlinkat(dir_fd, tmp.c_str(), 0);
    return "cannot write " + shown + ": " + why;
  }
  fsync(dir_fd);  // the rename itself survives a crash
  return "";
}

std::string write_file_atomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string dir = parent_of(path);
  const size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  Fd dfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd.ok()) return "cannot open " + dir + ": " + errno_text(errno);
  return write_file_atomically_at(dfd.get(), name, text, mode, path);
}

SmallFile read_small_file(const std::string& path, uid_t owner, size_t max_bytes) {
  const size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  Fd dfd(open(parent_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd.ok()) {
    SmallFile out;
    const int err = errno;
    if (err == ENOENT) out.missing = true;
    else out.error = "cannot open the directory of " + path + ": " + errno_text(err);
    return out;
  }
  SmallFile out = read_small_file_at(dfd.get(), name, owner, max_bytes);
  // Messages name the whole path: an admin reads them in slurmctld's log.
  if (!out.error.empty() && out.error.rfind(name, 0) == 0) out.error = path + out.error.substr(name.size());
  return out;
}

std::optional<std::string> path_inside(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& p : split(rel, '/')) {
    if (p.empty() || p == ".") continue;
    if (p == "..") return std::nullopt;
    parts.push_back(p);
  }
  if (parts.empty()) return std::nullopt;
  return join(parts, "/");
}

std::string check_entry_at(int dir_fd, const std::string& rel, uid_t owner) {
  const auto clean = path_inside(rel);
  if (!clean) return rel + " is not a path inside the checkpoint directory";
  const auto parts = split(*clean, '/');
  Fd held;
  int at = dir_fd;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(openat(at, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) {
      const int err = errno;
      if (err == ENOENT) return rel + " does not exist";
      return rel + ": " + parts[i] + (err == ENOTDIR || err == ELOOP ? " is a symlink or not a directory" : ": " + errno_text(err));
    }
    held = std::move(next);
    at = held.get();
  }
  struct stat st;
  if (fstatat(at, parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? rel + " does not exist" : "cannot stat " + rel + ": " + errno_text(errno);
  if (S_ISLNK(st.st_mode)) return rel + " is a symlink: not followed";
  if (st.st_uid != owner) return rel + " belongs to " + owner_text(st.st_uid) + ", not to " + owner_text(owner);
  return "";
}

}  // namespace mlsched
