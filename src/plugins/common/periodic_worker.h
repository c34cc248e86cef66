// A plugin's background thread: started from init() inside slurmctld, woken early by
// poke() (reconfigure, a changed mlsched.conf), stopped and joined by fini(). Work that
// takes slurmctld's locks or touches files runs here, so no plugin entry point that
// slurmctld calls under its locks has to wait for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace mlsched::plugin {

class PeriodicWorker {
 public:
  PeriodicWorker() = default;
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;
  ~PeriodicWorker() { stop(); }

  // Runs `body` on a new thread; `body` loops until stopping() and sleeps with
  // sleep_for(). A second start() while running does nothing.
  void start(std::function<void(PeriodicWorker&)> body);

  // Asks the body to end, wakes it and waits for it. Safe to call twice.
  void stop();

  // Ends the current sleep_for() early (the next one, when none is in progress).
  void poke();

  bool stopping() const;

  // Sleeps up to `period`. True when it ended early because of poke() or stop();
  // a poke is consumed by the sleep it ends.
  bool sleep_for(std::chrono::milliseconds period);

 private:
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stopping_ = false;
  bool poked_ = false;
};

}  // namespace mlsched::plugin
