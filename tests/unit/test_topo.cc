// gres.conf generation from hwloc findings: naming, numbering, Links= counts
// (direct and through NVSwitches), cliques, and what is reported when data is missing.
#include "core/topo.h"
#include "suites.h"

using namespace mlsched;

namespace {

DiscoveredGpu nvidia(int index, const std::string& bus, const std::string& model = "NVIDIA H100 80GB HBM3") {
  DiscoveredGpu g;
  g.vendor = "NVIDIA Corporation";
  g.model = model;
  g.nvidia_index = index;
  g.pci_busid = bus;
  g.cores = {static_cast<unsigned>(index * 2), static_cast<unsigned>(index * 2 + 1)};
  return g;
}

}  // namespace

START_TEST(type_names_follow_slurm_autodetect) {
  ck_assert_string_eq(slurm_gpu_type("Tesla P100-SXM2-16GB"), "tesla_p100-sxm2-16gb");
  ck_assert_string_eq(slurm_gpu_type("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3");
  // Characters with a meaning in slurm.conf's Gres= are dropped.
  ck_assert_string_eq(slurm_gpu_type("Vega 10 [Radeon Instinct MI25]"), "vega_10_radeon_instinct_mi25");
  ck_assert_string_eq(slurm_gpu_type("  "), "gpu");
}
END_TEST

START_TEST(link_bandwidth_by_generation) {
  ck_assert_int_eq(nvlink_bandwidth_per_link("Tesla P100-SXM2-16GB"), 20000);
  ck_assert_int_eq(nvlink_bandwidth_per_link("NVIDIA A100-SXM4-40GB"), 25000);
}
END_TEST

START_TEST(ranges) {
  ck_assert_string_eq(format_ranges({3, 0, 1, 2, 8, 10, 11}), "0-3,8,10-11");
  ck_assert_string_eq(format_ranges({}), "");
  ck_assert_string_eq(format_ranges({5, 5}), "5");
}
END_TEST

START_TEST(nvswitch_node_is_one_clique) {
  // 4 GPUs, 3 NVSwitches, 6 links to each (150 GB/s): every pair gets 18 links.
  std::vector<DiscoveredGpu> gpus;
  for (int i = 0; i < 4; ++i) gpus.push_back(nvidia(i, "0000:0" + std::to_string(i) + ":00.0"));
  NvlinkBandwidths bw;
  bw.present = true;
  bw.gpu_gpu.assign(4, std::vector<uint64_t>(4, 0));
  bw.gpu_switch.assign(4, std::vector<uint64_t>(3, 150000));
  TopoOptions opt;
  opt.node_name = "n1";
  NodeTopology t = build_node_topology(gpus, bw, opt);
  ck_assert_int_eq(t.gpus.size(), 4);
  ck_assert_int_eq(t.gpus[0].links[0], -1);
  ck_assert_int_eq(t.gpus[0].links[3], 18);
  ck_assert_int_eq(t.cliques["nvidia_h100_80gb_hbm3"].size(), 1);
  const std::string out = format_topology(t);
  ck_assert_contains(out, "NodeName=n1 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-1 Links=-1,18,18,18\n");
  ck_assert_contains(out, "NVLink cliques [0-3] (clique sizes 4)");
}
END_TEST

START_TEST(direct_links_make_two_cliques_in_device_order) {
  // Discovered out of order: Slurm's order is the device minor.
  std::vector<DiscoveredGpu> gpus = {nvidia(3, "0000:40:00.0", "Tesla P100-SXM2-16GB"),
                                     nvidia(0, "0000:10:00.0", "Tesla P100-SXM2-16GB"),
                                     nvidia(2, "0000:30:00.0", "Tesla P100-SXM2-16GB"),
                                     nvidia(1, "0000:20:00.0", "Tesla P100-SXM2-16GB")};
  NvlinkBandwidths bw;
  bw.present = true;
  bw.gpu_gpu.assign(4, std::vector<uint64_t>(4, 0));
  // Discovery indexes: minor0 = 1, minor1 = 3, minor2 = 2, minor3 = 0. Link 0-1 and 2-3.
  bw.gpu_gpu[1][3] = bw.gpu_gpu[3][1] = 40000;
  bw.gpu_gpu[2][0] = bw.gpu_gpu[0][2] = 40000;
  NodeTopology t = build_node_topology(gpus, bw, {});
  ck_assert_string_eq(t.gpus[0].file, "/dev/nvidia0");
  ck_assert_string_eq(t.gpus[3].file, "/dev/nvidia3");
  ck_assert_int_eq(t.gpus[0].links[1], 2);  // 40 GB/s of NVLink 1 = 2 links
  ck_assert_int_eq(t.gpus[0].links[2], 0);
  ck_assert_int_eq(t.gpus[2].links[3], 2);
  auto cliques = t.cliques["tesla_p100-sxm2-16gb"];
  ck_assert_int_eq(cliques.size(), 2);
  ck_assert_int_eq(cliques[1][0], 2);
  // An admin's own per-link bandwidth and type name win.
  TopoOptions opt;
  opt.link_bandwidth_mbps = 40000;
  opt.gpu_type = "p100";
  NodeTopology t2 = build_node_topology(gpus, bw, opt);
  ck_assert_int_eq(t2.gpus[0].links[1], 1);
  ck_assert_string_eq(t2.gpus[0].type, "p100");
}
END_TEST

START_TEST(missing_data_is_reported) {
  DiscoveredGpu amd;
  amd.vendor = "Advanced Micro Devices, Inc.";
  amd.model = "MI25";
  amd.pci_busid = "0000:13:00.0";
  amd.render_node = "renderD129";
  DiscoveredGpu amd2 = amd;
  amd2.pci_busid = "0000:23:00.0";
  amd2.render_node = "";
  DiscoveredGpu nv = nvidia(-1, "0000:50:00.0");
  NodeTopology t = build_node_topology({amd2, nv, amd}, NvlinkBandwidths{}, {});
  // NVIDIA first, then the others by PCI address.
  ck_assert_string_eq(t.gpus[0].file, "/dev/nvidia0");
  ck_assert_string_eq(t.gpus[1].file, "/dev/dri/renderD129");
  ck_assert_string_eq(t.gpus[2].file, "/dev/dri/renderD128");  // guessed: the lowest one left
  const std::string out = format_topology(t);
  ck_assert_contains(out, "no CUDA/NVML device seen");
  ck_assert_contains(out, "no DRM render node seen");
  ck_assert_contains(out, "no NVLinkBandwidth matrix");
  ck_assert_contains(out, "Links=0,-1,0");
  ck_assert_contains(format_topology(build_node_topology({}, {}, {})), "no GPU found");
}
END_TEST

Suite* topo_suite() {
  Suite* s = suite_create("topo");
  TCase* tc = tcase_create("topo");
  tcase_add_test(tc, type_names_follow_slurm_autodetect);
  tcase_add_test(tc, link_bandwidth_by_generation);
  tcase_add_test(tc, ranges);
  tcase_add_test(tc, nvswitch_node_is_one_clique);
  tcase_add_test(tc, direct_links_make_two_cliques_in_device_order);
  tcase_add_test(tc, missing_data_is_reported);
  suite_add_tcase(s, tc);
  return s;
}
