// The running configuration of an mlsched plugin inside slurmctld: loaded once at
// plugin init, then re-read by a watcher thread when mlsched.conf changes (e.g.
// before `scontrol reconfigure`), never under the controller's locks. A bad file
// keeps the previous configuration and logs why. Where a reconfigure starts a new
// slurmctld (24.11), "previous" is the copy the watcher saves next to slurmctld's
// state after each successful load.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/config.h"
#include "plugins/common/periodic_worker.h"

namespace mlsched::plugin {

class ConfigStore {
 public:
  // Path of mlsched.conf: $MLSCHED_CONF, else next to slurm.conf.
  static std::string default_path(const char* slurm_conf_path);

  // Loads synchronously. On failure logs every problem and returns false.
  bool load(const std::string& path, const char* log_prefix);
  // What every plugin's init() does inside slurmctld: load mlsched.conf from its
  // default place and watch it. False (logged) when the file is missing or broken,
  // which stops slurmctld as a broken slurm.conf does, except in a slurmctld that a
  // reconfigure started (release::started_by_reconfigure()): that one keeps the
  // configuration the previous process ran with, as the watcher does.
  bool start(const char* slurm_conf_path, const char* log_prefix);
  // The current configuration; never null after a successful load().
  std::shared_ptr<const Config> get() const;
  // Number of successful loads, so callers can rebuild what derives from it.
  unsigned generation() const;

  void start_watching();
  void stop_watching();
  ~ConfigStore() { stop_watching(); }

 private:
  bool reload_if_changed();
  bool load_saved_copy();
  void save_copy_if_new();
  void watch_loop(PeriodicWorker& worker);

  std::string path_;
  std::string log_prefix_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Config> config_;
  unsigned generation_ = 0;
  unsigned saved_generation_ = 0;  // the generation whose file the watcher copied
  struct FileStamp {
    long long mtime_ns = 0, ctime_ns = 0, size = -1, inode = 0;
    bool operator==(const FileStamp& o) const {
      return mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && size == o.size && inode == o.inode;
    }
  } stamp_;
  PeriodicWorker watcher_;
};

}  // namespace mlsched::plugin
