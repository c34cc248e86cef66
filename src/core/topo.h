// From what hwloc found on one node (GPUs, NVLink bandwidths, CPU affinity) to the
// gres.conf lines Slurm needs and the node's NVLink cliques as mlsched sees them.
// The tool reads hwloc; everything here is plain values, so it is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

// One GPU as hwloc reports it: a PCI device carrying GPU OS devices (cudaN, nvmlN,
// openclXdY, rsmiN, renderDN ...), before it is numbered and named for Slurm.
struct DiscoveredGpu {
  std::string pci_busid;            // "0002:01:00.0"
  std::string vendor;               // hwloc's GPUVendor, "NVIDIA Corporation"
  std::string model;                // hwloc's GPUModel, "Tesla P100-SXM2-16GB"
  int nvidia_index = -1;            // N of nvmlN / cudaN: the /dev/nvidiaN minor
  std::string render_node;          // "renderD128": how Slurm names AMD/Intel GPUs
  std::vector<unsigned> cores;      // logical indexes of the cores close to the GPU
  std::vector<unsigned> numa_nodes; // OS indexes of the NUMA nodes close to the GPU
};

// hwloc's "NVLinkBandwidth" matrix (MB/s), already split by what sits at each end.
// GPUs behind NVSwitches are linked to the switch, not to each other.
struct NvlinkBandwidths {
  bool present = false;                             // the topology had the matrix
  std::vector<std::vector<uint64_t>> gpu_gpu;       // [gpu][gpu], indexes of DiscoveredGpu
  std::vector<std::vector<uint64_t>> gpu_switch;    // [gpu][switch]
};

struct TopoOptions {
  std::string node_name;            // NodeName= in the output
  std::string gpu_type;             // forces Type= for every GPU; empty: derive from the model
  uint64_t link_bandwidth_mbps = 0; // bandwidth of one NVLink; 0: by GPU generation
};

// A GPU as Slurm will see it, in Slurm's order (the order Links= entries refer to).
struct NodeGpu {
  std::string type;                 // gres.conf Type=
  std::string model;
  std::string file;                 // gres.conf File=
  std::string pci_busid;
  std::vector<int> links;           // gres.conf Links=: -1 self, NVLinks to each GPU
  std::vector<unsigned> cores;
  std::vector<unsigned> numa_nodes;
};

struct NodeTopology {
  std::string node_name;
  std::vector<NodeGpu> gpus;
  bool nvlink_known = false;        // false: no NVLink matrix, every GPU its own clique
  // Per GPU type, groups of GPU positions joined by NVLink (cliques_from_links).
  std::map<std::string, std::vector<std::vector<int>>> cliques;
  std::vector<std::string> notes;   // what the admin should check by hand
};

// Slurm's own spelling of a GPU type from its model name, as AutoDetect=nvml makes
// it, so a hand-written gres.conf agrees with autodetection:
// "Tesla P100-SXM2-16GB" -> "tesla_p100-sxm2-16gb".
std::string slurm_gpu_type(std::string_view model);

// Bandwidth of one NVLink for a GPU model, the unit hwloc's matrix is counted in:
// 20 GB/s for NVLink 1 (P100), 25 GB/s for later generations.
uint64_t nvlink_bandwidth_per_link(std::string_view model);

// Numbers the GPUs as Slurm does (NVIDIA by device minor, then others by PCI
// address), derives types, files, Links= and cliques.
NodeTopology build_node_topology(const std::vector<DiscoveredGpu>& found, const NvlinkBandwidths& nvlink,
                                 const TopoOptions& options);

// "0-3,8,10-11"
std::string format_ranges(const std::vector<unsigned>& values);

// The complete output of `mlsched topo`: gres.conf lines, then mlsched's view of
// the node as comment lines, so the whole text can go into gres.conf.
std::string format_topology(const NodeTopology& topo);

}  // namespace mlsched
