// Fuzz target: host lists (mlsched.conf Nodes=, Slurm node lists). Expansion is
// bounded; a list that expands compresses to one that expands to the same hosts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto hosts = mlsched::expand_hostlist(text);
    if (hosts.size() > 100000) abort();
    mlsched::compress_hostlist(hosts);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
