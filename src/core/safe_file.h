// Files mlsched touches on behalf of a user who may not be the one who controls
// them: `mlsched run` inside a job that starts in a shared work directory,
// `mlsched why` run by root on a user's checkpoint directory, slurmctld replacing
// its saved usage. Every path is treated as hostile: directories are opened once,
// checked (owner, mode, no symlink) and then used only through their descriptor;
// files inside are opened relative to it with O_NOFOLLOW, must be regular files of
// the expected owner, and are read up to a small bound; new files are created
// with O_EXCL, so a planted name is never written through.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <sys/types.h>

namespace mlsched {

// An open file descriptor, closed when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// A directory checked to belong to `owner`: opened without following a symlink
// at its last component, owned by `owner`, not writable by group or others. Its
// parent must be owned by `owner` or root and, when others may write it, be
// sticky: otherwise another user could rename the directory away and put one of
// their own in its place. `error` says what is wrong in words a user can act on.
struct OwnedDir {
  Fd fd;
  std::string path;
  std::string error;    // "" when fd is usable
  bool missing = false;  // error: the directory does not exist
};
// `create`: make the missing directories of `path` (mode 0700) first.
OwnedDir open_owned_dir(const std::string& path, uid_t owner, bool create);

// A small file in a checked directory: `missing` when there is none; otherwise
// `text`, or `error` when it is not a regular file of `owner` (a symlink, a FIFO,
// a device, someone else's file) or longer than `max_bytes`. Never blocks on a
// FIFO and never reads more than max_bytes + 1 bytes.
struct SmallFile {
  bool missing = false;
  std::optional<std::string> text;
  std::string error;
};
SmallFile read_small_file_at(int dir_fd, const std::string& name, uid_t owner, size_t max_bytes);
// The same for a path: its directory is opened following symlinks (for files of
// slurmctld's own, in directories its admin chose), the file itself is not.
SmallFile read_small_file(const std::string& path, uid_t owner, size_t max_bytes);

// Writes `text` to a new temporary file in the directory (O_EXCL|O_NOFOLLOW, a
// name nobody can predict), fsyncs it and renames it over `name`, so a reader sees
// the old content or the new, never a mix. Returns "" or what went wrong (the
// temporary is removed). `shown` names the file in messages.
std::string write_file_atomically_at(int dir_fd, const std::string& name, const std::string& text, mode_t mode,
                                     const std::string& shown);
// The same for a path: its directory is opened (following symlinks: this is for
// files of slurmctld's own, in directories its admin chose).
std::string write_file_atomically(const std::string& path, const std::string& text, mode_t mode);

// `rel` split into components when it stays inside the directory it is relative
// to: no "..", not absolute, not empty. nullopt otherwise.
std::optional<std::string> path_inside(const std::string& rel);

// Whether `rel` (checked with path_inside) names an entry under the directory that
// is reached without a symlink at any component and belongs to `owner`. "" or why not.
std::string check_entry_at(int dir_fd, const std::string& rel, uid_t owner);

}  // namespace mlsched
