// Placement decision time of select/mlsched's core for one large gang on a large
// cluster: 2,048 nodes x 8 GPUs, 4 levels (node, NVLink domain of 8 nodes, leaf
// switch of 32 nodes, spine of 256 nodes, one core switch), two GPU types, about 60 %
// of GPUs busy in a random pattern. A 256-GPU gang (32 nodes x 8) with
// locality=nvlink-domain prefer has to widen to a leaf switch, the common hard case.
// Not part of `make check`: `make bench` builds it; run bench/placement_bench.
// Usage: placement_bench [iterations] [nodes]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/placement.h"

int main(int argc, char** argv) {
  using namespace mlsched;
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  const int node_count = argc > 2 ? std::atoi(argv[2]) : 2048;
  Cluster cluster;
  std::vector<SwitchSpec> switches;
  for (int i = 0; i < node_count; ++i) {
    GpuNode n;
    n.name = "n" + std::to_string(i);
    n.gpu_type = i < node_count / 2 ? "h100" : "a100";
    n.gpus = 8;
    n.nvlink_cliques = {{0, 1, 2, 3, 4, 5, 6, 7}};
    n.nvlink_domain = "nvl" + std::to_string(i / 8);
    cluster.add_node(n);
  }
  auto add_level = [&](int level, int span, const char* prefix) {
    for (int first = 0; first < node_count; first += span) {
      SwitchSpec s;
      s.name = prefix + std::to_string(first / span);
      s.level = level;
      for (int i = first; i < std::min(node_count, first + span); ++i) s.nodes.push_back("n" + std::to_string(i));
      switches.push_back(std::move(s));
    }
  };
  add_level(0, 32, "leaf");
  add_level(1, 256, "spine");
  add_level(2, node_count, "core");
  std::vector<NvlinkDomainSpec> domains;
  for (int d = 0; d < node_count / 8; ++d) {
    NvlinkDomainSpec spec;
    spec.name = "nvl" + std::to_string(d);
    for (int i = d * 8; i < d * 8 + 8; ++i) spec.nodes.push_back("n" + std::to_string(i));
    domains.push_back(spec);
  }
  cluster.apply_nvlink_domains(domains);
  cluster.set_switches(switches);

  std::mt19937 rng(7);
  ClusterState state(node_count);
  for (auto& s : state) {
    s.gpu_busy.assign(8, false);
    // 40 % of nodes idle, the rest partly or fully busy.
    if (rng() % 10 < 6)
      for (int g = 0, busy = 1 + static_cast<int>(rng() % 8); g < busy; ++g) s.gpu_busy[g] = true;
  }
  const std::vector<bool> eligible(node_count, true);
  PlacementRequest request;
  request.gang = GangShape{32, 8, 0};
  request.gpu_types = {"h100", "a100"};
  request.locality = Locality::nvlink_domain;
  request.mode = LocalityMode::prefer;

  std::vector<double> micros;
  size_t candidates = 0;
  for (int it = 0; it < iterations; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    PlacementPlan plan = plan_placement(cluster, state, eligible, request);
    const auto t1 = std::chrono::steady_clock::now();
    candidates = plan.candidates.size();
    micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(micros.begin(), micros.end());
  auto pct = [&](double p) { return micros[std::min(micros.size() - 1, static_cast<size_t>(p * micros.size()))]; };
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("nodes=%d gang=32x8 candidates=%zu iterations=%d: p50 %.0f us, p99 %.0f us, max %.0f us, max RSS %ld MiB\n",
              node_count, candidates, iterations, pct(0.50), pct(0.99), micros.back(), ru.ru_maxrss / 1024);
  return 0;
}
