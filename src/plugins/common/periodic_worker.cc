#include "plugins/common/periodic_worker.h"

#include <utility>

namespace mlsched::plugin {

void PeriodicWorker::start(std::function<void(PeriodicWorker&)> body) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  poked_ = false;
  thread_ = std::thread([this, body = std::move(body)] { body(*this); });
}

void PeriodicWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // Only fini() (or the owner's destructor) stops the worker, never the worker
  // itself, so joining here cannot deadlock.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void PeriodicWorker::poke() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    poked_ = true;
  }
  wake_.notify_all();
}

bool PeriodicWorker::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

bool PeriodicWorker::sleep_for(std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool early = wake_.wait_for(lock, period, [this] { return stopping_ || poked_; });
  poked_ = false;
  return early;
}

}  // namespace mlsched::plugin
