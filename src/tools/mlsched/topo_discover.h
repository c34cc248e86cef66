// hwloc -> the core's view of a node's GPUs (`mlsched topo`): which OS devices are
// compute GPUs, their PCI bus ids, CPU and NUMA affinity, and NVLink bandwidths.
// Apart from the command so that the same code reads fuzzed XML (tests/fuzz).
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "core/topo.h"

namespace mlsched::tool {

struct HwlocTopology {
  hwloc_topology_t topo = nullptr;
  HwlocTopology() = default;
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  ~HwlocTopology() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

struct Discovery {
  std::vector<DiscoveredGpu> gpus;
  std::vector<hwloc_obj_t> pci;   // parallel to gpus
  NvlinkBandwidths nvlink;
};

Discovery discover(hwloc_topology_t topo);

// Whether hwloc can load this XML (a file, or a buffer when `path` is null),
// tried in a child process first: hwloc 2.9 dereferences NULL in
// hwloc_topology_load on some malformed files (lstopo crashes on them too), and a
// bad file must give the user a message, not a crash. "" or what went wrong.
std::string check_xml_loads(const char* path, const std::string& buffer);

}  // namespace mlsched::tool
