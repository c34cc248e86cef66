// Fuzz target: `mlsched topo --input FILE.xml`: hwloc XML through hwloc, our
// discovery of GPUs and NVLinks, and the core's gres.conf lines.
#include <hwloc.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/topo.h"
#include "tools/mlsched/topo_discover.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlsched;
  const std::string xml(reinterpret_cast<const char*>(data), size);
  // As `mlsched topo` does: what hwloc itself cannot load (or crashes on) is refused
  // before our code sees it; the fuzzing is of what follows.
  if (!tool::check_xml_loads(nullptr, xml).empty()) return 0;
  tool::HwlocTopology h;
  if (hwloc_topology_init(&h.topo) != 0) return 0;
  hwloc_topology_set_io_types_filter(h.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_set_xmlbuffer(h.topo, xml.c_str(), static_cast<int>(xml.size()) + 1) != 0) return 0;
  if (hwloc_topology_load(h.topo) != 0) return 0;
  const tool::Discovery d = tool::discover(h.topo);
  TopoOptions options;
  options.node_name = "fuzz";
  format_topology(build_node_topology(d.gpus, d.nvlink, options));
  return 0;
}
