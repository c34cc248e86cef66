// See topo_discover.h.
#include "tools/mlsched/topo_discover.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/text.h"

namespace mlsched::tool {

namespace {

// What an OS device is, from its subtype (hwloc 2) or, in XML written by hwloc 1,
// its Backend info or name.
std::string osdev_kind(hwloc_obj_t obj) {
  std::string kind = obj->subtype ? obj->subtype : "";
  if (kind.empty()) {
    const char* backend = hwloc_obj_get_info_by_name(obj, "Backend");
    if (backend) kind = backend;
  }
  const std::string name = obj->name ? obj->name : "";
  if (kind.empty()) {
    if (starts_with(name, "cuda")) kind = "CUDA";
    else if (starts_with(name, "nvml")) kind = "NVML";
    else if (starts_with(name, "opencl")) kind = "OpenCL";
    else if (starts_with(name, "rsmi")) kind = "RSMI";
    else if (starts_with(name, "card") || starts_with(name, "renderD") || starts_with(name, "controlD"))
      kind = "DRM";
  }
  return kind;
}

// True for an OS device that means "this PCI device is a compute GPU". DRM nodes
// alone do not: a BMC's VGA chip has them too.
bool is_compute_gpu(hwloc_obj_t obj) {
  const std::string kind = osdev_kind(obj);
  if (kind == "CUDA" || kind == "NVML" || kind == "RSMI" || kind == "LevelZero") return true;
  if (kind == "OpenCL") {
    const char* type = hwloc_obj_get_info_by_name(obj, "OpenCLDeviceType");
    return !type || std::string(type) == "GPU";
  }
  return false;
}

hwloc_obj_t pci_parent(hwloc_obj_t obj) {
  for (hwloc_obj_t p = obj; p; p = p->parent)
    if (p->type == HWLOC_OBJ_PCI_DEVICE) return p;
  return nullptr;
}

std::string busid(hwloc_obj_t pci) {
  char buf[32];
  snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
           pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

int trailing_number(const std::string& s) {
  size_t i = s.size();
  while (i > 0 && isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i == s.size()) return -1;
  return std::stoi(s.substr(i));
}

}  // namespace

// A little over 80 lines: one walk of hwloc's tree (GPUs, their PCI parents, the
// NVLink bandwidth matrix), kept together because each step uses the objects the
// previous one found.
Discovery discover(hwloc_topology_t topo) {
  Discovery d;
  std::map<hwloc_obj_t, size_t> by_pci;
  // Pass 1: PCI devices that carry a compute GPU OS device.
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
    if (!is_compute_gpu(os)) continue;
    hwloc_obj_t pci = pci_parent(os);
    if (!pci || by_pci.count(pci)) continue;
    by_pci[pci] = d.gpus.size();
    d.pci.push_back(pci);
    d.gpus.emplace_back();
    DiscoveredGpu& g = d.gpus.back();
    g.pci_busid = busid(pci);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, pci);
    if (anc && anc->cpuset) {
      const int depth = hwloc_get_type_depth(topo, HWLOC_OBJ_CORE);
      for (hwloc_obj_t core = nullptr;
           (core = hwloc_get_next_obj_inside_cpuset_by_depth(topo, anc->cpuset, depth, core));)
        g.cores.push_back(core->logical_index);
    }
    if (anc && anc->nodeset) {
      for (int i = hwloc_bitmap_first(anc->nodeset); i >= 0; i = hwloc_bitmap_next(anc->nodeset, i))
        g.numa_nodes.push_back(static_cast<unsigned>(i));
    }
  }
  // Pass 2: every OS device of those PCI devices adds names and indexes.
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
    hwloc_obj_t pci = pci_parent(os);
    auto it = pci ? by_pci.find(pci) : by_pci.end();
    if (it == by_pci.end()) continue;
    DiscoveredGpu& g = d.gpus[it->second];
    const std::string kind = osdev_kind(os);
    const std::string name = os->name ? os->name : "";
    if (const char* v = hwloc_obj_get_info_by_name(os, "GPUVendor"); v && g.vendor.empty()) g.vendor = v;
    if (const char* m = hwloc_obj_get_info_by_name(os, "GPUModel"); m && g.model.empty()) g.model = m;
    // NVML numbering is the /dev/nvidiaN minor; CUDA's matches it only in PCI
    // order, so NVML wins when both are there.
    if (kind == "NVML") g.nvidia_index = trailing_number(name);
    else if (kind == "CUDA" && g.nvidia_index < 0) g.nvidia_index = trailing_number(name);
    if (starts_with(name, "renderD")) g.render_node = name;
  }
  for (size_t i = 0; i < d.gpus.size(); ++i) {
    auto& g = d.gpus[i];
    if (g.vendor.empty() && d.pci[i]->attr->pcidev.vendor_id == 0x10de) g.vendor = "NVIDIA Corporation";
    if (g.model.empty()) g.model = "gpu";
  }

  // NVLink matrix: objects are GPU OS devices (or their PCI device), CPU packages
  // (POWER's NVLink to the CPU, not useful to Slurm) and NVSwitch ports.
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &dist, 0) == 0 && nr >= 1 && dist) {
    const size_t n = d.gpus.size();
    d.nvlink.present = true;
    d.nvlink.gpu_gpu.assign(n, std::vector<uint64_t>(n, 0));
    std::vector<long> gpu_of(dist->nbobjs, -1), switch_of(dist->nbobjs, -1);
    std::map<hwloc_obj_t, long> switch_ids;
    for (unsigned k = 0; k < dist->nbobjs; ++k) {
      hwloc_obj_t obj = dist->objs[k];
      if (!obj) continue;
      hwloc_obj_t pci = pci_parent(obj);
      if (pci && by_pci.count(pci)) {
        gpu_of[k] = static_cast<long>(by_pci[pci]);
      } else if (obj->type == HWLOC_OBJ_PCI_DEVICE || obj->type == HWLOC_OBJ_BRIDGE) {
        auto [it, added] = switch_ids.emplace(obj, static_cast<long>(switch_ids.size()));
        switch_of[k] = it->second;
      }
    }
    d.nvlink.gpu_switch.assign(n, std::vector<uint64_t>(switch_ids.size(), 0));
    for (unsigned a = 0; a < dist->nbobjs; ++a) {
      if (gpu_of[a] < 0) continue;
      for (unsigned b = 0; b < dist->nbobjs; ++b) {
        if (a == b) continue;
        const uint64_t v = dist->values[a * dist->nbobjs + b];
        if (gpu_of[b] >= 0) d.nvlink.gpu_gpu[gpu_of[a]][gpu_of[b]] = v;
        else if (switch_of[b] >= 0) d.nvlink.gpu_switch[gpu_of[a]][switch_of[b]] = v;
      }
    }
    hwloc_distances_release(topo, dist);
  }
  return d;
}


std::string check_xml_loads(const char* path, const std::string& buffer) {
  constexpr int kLoadRefused = 3;  // the child's exit code when hwloc refused the file
  fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return std::string("cannot fork to check the XML: ") + strerror(errno);
  if (child == 0) {
    HwlocTopology h;
    bool ok = hwloc_topology_init(&h.topo) == 0;
    if (ok) hwloc_topology_set_io_types_filter(h.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (ok) {
      ok = path ? hwloc_topology_set_xml(h.topo, path) == 0
                : hwloc_topology_set_xmlbuffer(h.topo, buffer.c_str(), static_cast<int>(buffer.size()) + 1) == 0;
    }
    ok = ok && hwloc_topology_load(h.topo) == 0;
    _exit(ok ? 0 : kLoadRefused);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kLoadRefused)
    return "it is not an hwloc XML topology (hwloc could not load it)";
  // A signal, or (in a sanitizer build) the sanitizer's exit code after one.
  return "hwloc crashed reading it (" +
         (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status))) +
         "): the XML is malformed (`lstopo --input` fails on it too)";
}

}  // namespace mlsched::tool
