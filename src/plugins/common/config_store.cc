// See config_store.h. Logging goes through Slurm's log so admins find it in
// slurmctld's log with the plugin's prefix.
#include "plugins/common/config_store.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>

#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

namespace {
constexpr auto kWatchInterval = std::chrono::seconds(2);
}

std::string ConfigStore::default_path(const char* slurm_conf_path) {
  if (const char* env = std::getenv("MLSCHED_CONF"); env && *env) return env;
  std::string dir = "/etc/slurm";
  if (slurm_conf_path && *slurm_conf_path) {
    std::string p = slurm_conf_path;
    const size_t slash = p.rfind('/');
    dir = slash == std::string::npos ? "." : p.substr(0, slash);
  }
  return dir + "/mlsched.conf";
}

bool ConfigStore::load(const std::string& path, const char* log_prefix) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    path_ = path;
    log_prefix_ = log_prefix;
  }
  return reload_if_changed() && get() != nullptr;
}

bool ConfigStore::start(const char* slurm_conf_path, const char* log_prefix) {
  if (!load(default_path(slurm_conf_path), log_prefix)) return false;
  start_watching();
  return true;
}

std::shared_ptr<const Config> ConfigStore::get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_;
}

unsigned ConfigStore::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

bool ConfigStore::reload_if_changed() {
  std::string path, prefix;
  FileStamp old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    path = path_;
    prefix = log_prefix_;
    old = stamp_;
  }
  struct stat st {};
  FileStamp now;
  if (stat(path.c_str(), &st) == 0) {
    now.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    now.ctime_ns = static_cast<long long>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
    now.size = static_cast<long long>(st.st_size);
    now.inode = static_cast<long long>(st.st_ino);
  }
  if (now == old && get()) return true;
  ConfigResult result = load_config_file(path);
  std::lock_guard<std::mutex> lock(mutex_);
  stamp_ = now;  // report a bad file once, not every interval
  if (!result.config) {
    error("%s: %s has %zu problem(s)%s", prefix.c_str(), path.c_str(), result.errors.size(),
          config_ ? "; keeping the previous configuration" : "");
    for (const auto& e : result.errors) error("%s: %s", prefix.c_str(), e.c_str());
    return false;
  }
  config_ = std::make_shared<const Config>(std::move(*result.config));
  ++generation_;
  info("%s: loaded %s (%zu NVLink domains)", prefix.c_str(), path.c_str(), config_->nvlink_domains.size());
  return true;
}

void ConfigStore::watch_loop(PeriodicWorker& worker) {
  for (;;) {
    worker.sleep_for(kWatchInterval);
    if (worker.stopping()) return;
    try {
      reload_if_changed();
    } catch (const std::exception& e) {
      error("%s: reloading the configuration failed: %s", log_prefix_.c_str(), e.what());
    }
  }
}

void ConfigStore::start_watching() { watcher_.start([this](PeriodicWorker& worker) { watch_loop(worker); }); }

void ConfigStore::stop_watching() { watcher_.stop(); }

}  // namespace mlsched::plugin
