// `mlsched topo`: reads this machine (or an hwloc XML file) with hwloc and hands
// what it finds to the core, which turns it into gres.conf lines.
#include <hwloc.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/text.h"
#include "core/topo.h"
#include "tools/mlsched/cli.h"

namespace mlsched::tool {

namespace {

const char* const kTopoHelp =
    "usage: mlsched topo [--input FILE.xml] [--node NAME] [--type TYPE]\n"
    "                    [--link-bandwidth MBPS] [--json]\n"
    "\n"
    "Finds the GPUs of this node with hwloc (or of an hwloc XML export given with\n"
    "--input, e.g. from `lstopo --of xml`), their NVLink connectivity and CPU\n"
    "affinity, and prints gres.conf lines (File=, Cores=, Links=) plus the node's\n"
    "NVLink cliques as mlsched will see them.\n"
    "\n"
    "  --input FILE     read an hwloc XML file instead of this machine\n"
    "  --node NAME      NodeName= to print (default: this host's name)\n"
    "  --type TYPE      Type= for every GPU (default: from the model, as Slurm's\n"
    "                   AutoDetect=nvml spells it, e.g. tesla_p100-sxm2-16gb)\n"
    "  --link-bandwidth MBPS\n"
    "                   bandwidth of one NVLink in MB/s, to count links from\n"
    "                   hwloc's bandwidths (default: 20000 for P100, else 25000)\n"
    "  --json           machine-readable output\n";

struct HwlocTopology {
  hwloc_topology_t topo = nullptr;
  ~HwlocTopology() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

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

struct Discovery {
  std::vector<DiscoveredGpu> gpus;
  std::vector<hwloc_obj_t> pci;   // parallel to gpus
  NvlinkBandwidths nvlink;
};

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

json_object* topology_json(const NodeTopology& t) {
  json_object* root = json_object_new_object();
  json_object_object_add(root, "node", json_object_new_string(t.node_name.c_str()));
  json_object_object_add(root, "nvlink_known", json_object_new_boolean(t.nvlink_known));
  json_object* gpus = json_object_new_array();
  for (const auto& g : t.gpus) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(g.type.c_str()));
    json_object_object_add(o, "model", json_object_new_string(g.model.c_str()));
    json_object_object_add(o, "file", json_object_new_string(g.file.c_str()));
    json_object_object_add(o, "pci_busid", json_object_new_string(g.pci_busid.c_str()));
    json_object* links = json_object_new_array();
    for (int l : g.links) json_object_array_add(links, json_object_new_int(l));
    json_object_object_add(o, "links", links);
    json_object_object_add(o, "cores", json_object_new_string(format_ranges(g.cores).c_str()));
    json_object_object_add(o, "numa_nodes", json_object_new_string(format_ranges(g.numa_nodes).c_str()));
    json_object_array_add(gpus, o);
  }
  json_object_object_add(root, "gpus", gpus);
  json_object* cliques = json_object_new_object();
  for (const auto& [type, groups] : t.cliques) {
    json_object* arr = json_object_new_array();
    for (const auto& c : groups) {
      json_object* members = json_object_new_array();
      for (int m : c) json_object_array_add(members, json_object_new_int(m));
      json_object_array_add(arr, members);
    }
    json_object_object_add(cliques, type.c_str(), arr);
  }
  json_object_object_add(root, "nvlink_cliques", cliques);
  json_object* notes = json_object_new_array();
  for (const auto& n : t.notes) json_object_array_add(notes, json_object_new_string(n.c_str()));
  json_object_object_add(root, "notes", notes);
  json_object* gres = json_object_new_array();
  for (const auto& line : split(format_topology(t), '\n'))
    if (!line.empty() && line[0] != '#') json_object_array_add(gres, json_object_new_string(line.c_str()));
  json_object_object_add(root, "gres_conf", gres);
  return root;
}

}  // namespace

int cmd_topo(Args& args) {
  if (args.flag("--help") || args.flag("-h")) {
    fputs(kTopoHelp, stdout);
    return 0;
  }
  const std::string input = args.value("--input");
  TopoOptions options;
  options.node_name = args.value("--node");
  options.gpu_type = args.value("--type");
  if (std::string bw = args.value("--link-bandwidth"); !bw.empty()) {
    auto v = parse_uint(bw);
    if (!v || *v == 0) throw UsageError("--link-bandwidth wants a positive number of MB/s, not '" + bw + "'");
    options.link_bandwidth_mbps = *v;
  }
  const bool json = args.flag("--json");
  args.expect_no_more("topo");

  HwlocTopology h;
  if (hwloc_topology_init(&h.topo) != 0) throw ToolError("hwloc could not start (hwloc_topology_init failed)");
  // Keep every PCI device and OS device: NVSwitches and DRM render nodes are not
  // "important" to hwloc's default filter, but they are to us.
  hwloc_topology_set_io_types_filter(h.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!input.empty()) {
    if (access(input.c_str(), R_OK) != 0)
      throw ToolError("cannot read " + input + ": " + strerror(errno));
    if (hwloc_topology_set_xml(h.topo, input.c_str()) != 0)
      throw ToolError(input + " is not an hwloc XML topology (hwloc refused it)");
  }
  if (hwloc_topology_load(h.topo) != 0)
    throw ToolError(input.empty() ? std::string("hwloc could not read this machine's topology")
                                  : input + " is not an hwloc XML topology (hwloc could not load it)");
  if (options.node_name.empty()) {
    hwloc_obj_t root = hwloc_get_root_obj(h.topo);
    const char* host = input.empty() ? nullptr : hwloc_obj_get_info_by_name(root, "HostName");
    char buf[256] = "";
    if (!host && gethostname(buf, sizeof buf - 1) == 0) host = buf;
    options.node_name = host ? split(host, '.')[0] : "localhost";
  }
  Discovery d = discover(h.topo);
  NodeTopology topo = build_node_topology(d.gpus, d.nvlink, options);
  if (json) print_json(topology_json(topo));
  else fputs(format_topology(topo).c_str(), stdout);
  return 0;
}

}  // namespace mlsched::tool
