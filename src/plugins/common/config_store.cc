// See config_store.h. Logging goes through Slurm's log so admins find it in
// slurmctld's log with the plugin's prefix.
#include "plugins/common/config_store.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "plugins/common/release.h"
#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

namespace {
constexpr auto kWatchInterval = std::chrono::seconds(2);

// The last mlsched.conf that loaded, beside slurmctld's own state.
std::string saved_copy_path() {
  const char* dir = slurm_conf.state_save_location;
  return std::string(dir && *dir ? dir : ".") + "/mlsched.conf.last-loaded";
}
}  // namespace

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
  if (!load(default_path(slurm_conf_path), log_prefix) &&
      !(release::started_by_reconfigure() && load_saved_copy()))
    return false;
  start_watching();
  return true;
}

// Reads the copy save_copy_if_new() made; the file at path_ stays watched, so a
// fixed mlsched.conf is picked up as usual.
bool ConfigStore::load_saved_copy() {
  const std::string copy = saved_copy_path();
  ConfigResult result = load_config_file(copy);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!result.config) {
    error("%s: no previous configuration to keep (%s)", log_prefix_.c_str(),
          result.errors.empty() ? copy.c_str() : result.errors.front().c_str());
    return false;
  }
  config_ = std::make_shared<const Config>(std::move(*result.config));
  ++generation_;
  saved_generation_ = generation_;
  error("%s: keeping the previous configuration (the last %s that loaded, kept in %s) until the file is fixed",
        log_prefix_.c_str(), path_.c_str(), copy.c_str());
  return true;
}

// After a successful load, copies the file that loaded (same stamp before and after
// the copy, so a file being rewritten is not saved half-way). Runs on the watcher
// thread: never under slurmctld's locks. Several plugins save the same text; each
// writes its own temporary file and renames it into place.
void ConfigStore::save_copy_if_new() {
  std::string path, prefix;
  FileStamp loaded;
  unsigned generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (saved_generation_ == generation_ || !config_) return;
    path = path_;
    prefix = log_prefix_;
    loaded = stamp_;
    generation = generation_;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  struct stat st {};
  if (!in || stat(path.c_str(), &st) != 0 ||
      static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec != loaded.mtime_ns ||
      static_cast<long long>(st.st_size) != loaded.size)
    return;  // changed since it loaded: the next reload decides
  const std::string copy = saved_copy_path();
  std::string writer = prefix;  // "select/mlsched" -> "select_mlsched"
  for (char& c : writer)
    if (c == '/') c = '_';
  const std::string tmp = copy + ".tmp-" + writer;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text.str();
    if (!out.flush()) {
      error("%s: cannot write %s", prefix.c_str(), tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), copy.c_str()) != 0) {
    error("%s: cannot replace %s", prefix.c_str(), copy.c_str());
    std::remove(tmp.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation_ == generation) saved_generation_ = generation;
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
    // First thing, so the copy exists soon after slurmctld started, before any reconfigure.
    try {
      save_copy_if_new();
    } catch (const std::exception& e) {
      error("%s: saving a copy of the configuration failed: %s", log_prefix_.c_str(), e.what());
    }
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
