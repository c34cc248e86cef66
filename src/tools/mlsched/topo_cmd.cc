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
#include "tools/mlsched/topo_discover.h"

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
    if (const std::string why = check_xml_loads(input.c_str(), ""); !why.empty()) throw ToolError(input + ": " + why);
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
