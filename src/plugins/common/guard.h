// The one way mlsched plugin entry points call C++: nothing thrown may cross into
// slurmctld, so every exception becomes a logged error and the caller's fallback.
#pragma once

#include <exception>
#include <utility>

#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

template <class Result, class Body>
Result guarded(const char* plugin, const char* what, Result on_error, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const std::exception& e) {
    error("%s: %s failed: %s", plugin, what, e.what());
  } catch (...) {
    error("%s: %s failed", plugin, what);
  }
  return on_error;
}

}  // namespace mlsched::plugin
