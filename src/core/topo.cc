// See topo.h. Numbering and naming follow what Slurm's GPU autodetection would do,
// so a node configured from this output behaves like an autodetected one.
#include "core/topo.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "core/cluster.h"
#include "core/text.h"

namespace mlsched {

std::string slurm_gpu_type(std::string_view model) {
  // Slurm lowercases and turns blanks into '_'. Characters that carry meaning in
  // slurm.conf's Gres= syntax (':', ',', brackets of hostlists) are dropped, since
  // AMD model names contain them ("Vega 10 [Radeon Instinct MI25]").
  std::string out;
  for (char c : trim(model)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != '_') out += '_';
    } else if (std::isalnum(u) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(std::tolower(u));
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "gpu" : out;
}

uint64_t nvlink_bandwidth_per_link(std::string_view model) {
  // hwloc's NVML backend reports a pair's bandwidth as links x per-link speed;
  // only the first NVLink generation (Pascal P100) ran at 20 GB/s per link.
  const std::string m = lowercase(model);
  if (m.find("p100") != std::string::npos) return 20000;
  return 25000;
}

namespace {

bool is_nvidia(const DiscoveredGpu& g) {
  return lowercase(g.vendor).find("nvidia") != std::string::npos || g.nvidia_index >= 0;
}

// Links: direct GPU-GPU bandwidth plus, through each NVSwitch, what both GPUs can
// push into it (the smaller of their two links to that switch); then the NVLink
// cliques per GPU type. `order` maps topo.gpus positions to the discovery order that
// nvlink's matrices use.
void add_links_and_cliques(const std::vector<size_t>& order, const NvlinkBandwidths& nvlink,
                           const TopoOptions& options, NodeTopology& topo) {
  const size_t n = topo.gpus.size();
  auto bandwidth = [&](size_t a, size_t b) -> uint64_t {
    uint64_t bw = 0;
    if (a < nvlink.gpu_gpu.size() && b < nvlink.gpu_gpu[a].size()) bw += nvlink.gpu_gpu[a][b];
    if (a < nvlink.gpu_switch.size() && b < nvlink.gpu_switch.size()) {
      const auto& sa = nvlink.gpu_switch[a];
      const auto& sb = nvlink.gpu_switch[b];
      for (size_t s = 0; s < sa.size() && s < sb.size(); ++s) bw += std::min(sa[s], sb[s]);
    }
    return bw;
  };
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) {
        links[i][j] = -1;
        continue;
      }
      const uint64_t bw = bandwidth(order[i], order[j]);
      if (bw == 0) continue;
      const uint64_t unit = options.link_bandwidth_mbps
                                ? options.link_bandwidth_mbps
                                : nvlink_bandwidth_per_link(topo.gpus[i].model);
      // A linked pair is at least one link, even if it runs below nominal speed.
      links[i][j] = static_cast<int>(std::max<uint64_t>(1, (bw + unit / 2) / unit));
    }
    topo.gpus[i].links = links[i];
  }

  // Cliques per type: a job never mixes GPU types, so only same-type links count.
  std::map<std::string, std::vector<int>> positions_by_type;
  for (size_t i = 0; i < n; ++i) positions_by_type[topo.gpus[i].type].push_back(static_cast<int>(i));
  for (const auto& [type, positions] : positions_by_type) {
    std::vector<std::vector<int>> sub(positions.size(), std::vector<int>(positions.size(), 0));
    for (size_t a = 0; a < positions.size(); ++a)
      for (size_t b = 0; b < positions.size(); ++b) sub[a][b] = links[positions[a]][positions[b]];
    auto& out = topo.cliques[type];
    for (const auto& clique : cliques_from_links(sub)) {
      std::vector<int> members;
      for (int k : clique) members.push_back(positions[k]);
      out.push_back(members);
    }
  }
}

}  // namespace

std::string format_ranges(const std::vector<unsigned>& values) {
  std::vector<unsigned> v = values;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

NodeTopology build_node_topology(const std::vector<DiscoveredGpu>& found, const NvlinkBandwidths& nvlink,
                                 const TopoOptions& options) {
  NodeTopology topo;
  topo.node_name = options.node_name;
  topo.nvlink_known = nvlink.present;

  // Slurm's order: NVIDIA GPUs by device minor (what /dev/nvidiaN and CUDA with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID agree on), then the others by PCI address.
  std::vector<size_t> order(found.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const DiscoveredGpu& x = found[a];
    const DiscoveredGpu& y = found[b];
    if (is_nvidia(x) != is_nvidia(y)) return is_nvidia(x);
    if (is_nvidia(x) && x.nvidia_index >= 0 && y.nvidia_index >= 0 && x.nvidia_index != y.nvidia_index)
      return x.nvidia_index < y.nvidia_index;
    return x.pci_busid < y.pci_busid;
  });

  int nvidia_seen = 0;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const DiscoveredGpu& g = found[order[pos]];
    NodeGpu out;
    out.model = g.model;
    out.type = options.gpu_type.empty() ? slurm_gpu_type(g.model) : options.gpu_type;
    out.pci_busid = g.pci_busid;
    out.cores = g.cores;
    out.numa_nodes = g.numa_nodes;
    if (is_nvidia(g)) {
      const int minor = g.nvidia_index >= 0 ? g.nvidia_index : nvidia_seen;
      if (g.nvidia_index < 0)
        topo.notes.push_back("GPU " + g.pci_busid + ": no CUDA/NVML device seen; assumed /dev/nvidia" +
                             std::to_string(minor) + " from PCI order");
      out.file = "/dev/nvidia" + std::to_string(minor);
      ++nvidia_seen;
    } else if (!g.render_node.empty()) {
      out.file = "/dev/dri/" + g.render_node;
    } else {
      // The lowest render node no other GPU has (DRM numbers them from 128).
      int guess = 128;
      while (std::any_of(found.begin(), found.end(), [&](const DiscoveredGpu& o) { return o.render_node == "renderD" + std::to_string(guess); }) ||
             std::any_of(topo.gpus.begin(), topo.gpus.end(), [&](const NodeGpu& o) { return o.file == "/dev/dri/renderD" + std::to_string(guess); }))
        ++guess;
      out.file = "/dev/dri/renderD" + std::to_string(guess);
      topo.notes.push_back("GPU " + g.pci_busid + ": no DRM render node seen; assumed " + out.file +
                           " from PCI order");
    }
    topo.gpus.push_back(std::move(out));
  }

  add_links_and_cliques(order, nvlink, options, topo);
  const size_t n = topo.gpus.size();
  if (!nvlink.present && n > 1)
    topo.notes.push_back("no NVLinkBandwidth matrix in this topology: GPUs are listed as PCIe-only (Links=0)");
  return topo;
}

std::string format_topology(const NodeTopology& topo) {
  std::string out;
  const std::string node = topo.node_name.empty() ? "localhost" : topo.node_name;
  if (topo.gpus.empty()) {
    out += "# mlsched topo: no GPU found on " + node + "\n";
    return out;
  }
  out += "# gres.conf for " + node + " (mlsched topo)\n";
  for (const auto& g : topo.gpus) {
    std::string line = "NodeName=" + node + " Name=gpu Type=" + g.type + " File=" + g.file;
    if (!g.cores.empty()) line += " Cores=" + format_ranges(g.cores);
    std::vector<std::string> links;
    for (int l : g.links) links.push_back(std::to_string(l));
    line += " Links=" + join(links, ",");
    out += line + "\n";
  }
  out += "#\n# mlsched topology of " + node + " (read by mlsched from the Links= above):\n";
  for (const auto& [type, cliques] : topo.cliques) {
    std::vector<std::string> groups, sizes;
    uint32_t count = 0;
    for (const auto& c : cliques) {
      std::vector<unsigned> members(c.begin(), c.end());
      groups.push_back("[" + format_ranges(members) + "]");
      sizes.push_back(std::to_string(c.size()));
      count += static_cast<uint32_t>(c.size());
    }
    out += "#   " + type + ": " + std::to_string(count) + " GPUs, NVLink cliques " + join(groups, " ") +
           " (clique sizes " + join(sizes, ",") + ")\n";
  }
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    const auto& g = topo.gpus[i];
    out += "#   GPU " + std::to_string(i) + ": " + g.model + " at " + g.pci_busid;
    if (!g.numa_nodes.empty()) out += ", NUMA " + format_ranges(g.numa_nodes);
    out += "\n";
  }
  for (const auto& note : topo.notes) out += "# note: " + note + "\n";
  return out;
}

}  // namespace mlsched
