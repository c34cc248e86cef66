// A hand-written cluster for the core tests: 2 GPU types, 4 NVLink domains, 2 switches.
#pragma once

#include "core/cluster.h"
#include "core/hostlist.h"

inline mlsched::Cluster fixture_cluster(bool with_domains = true, bool with_switches = true) {
  using namespace mlsched;
  Cluster c;
  for (int i = 1; i <= 16; ++i) {
    GpuNode n;
    n.name = (i < 10 ? "gpu0" : "gpu") + std::to_string(i);
    n.gpu_type = i <= 8 ? "h100" : "a100";
    n.gpus = 8;
    n.features = {n.gpu_type};
    c.add_node(n);
  }
  GpuNode cpu;
  cpu.name = "cpu01";
  c.add_node(cpu);
  if (with_domains) {
    c.apply_nvlink_domains({{"nvl0", expand_hostlist("gpu[01-04]"), 1},
                            {"nvl1", expand_hostlist("gpu[05-08]"), 2},
                            {"nvl2", expand_hostlist("gpu[09-12]"), 3},
                            {"nvl3", expand_hostlist("gpu[13-16]"), 4}});
  }
  if (with_switches) {
    c.set_switches({{"sw0", 0, expand_hostlist("gpu[01-08]")},
                    {"sw1", 0, expand_hostlist("gpu[09-16]")},
                    {"top", 1, expand_hostlist("gpu[01-16]")}});
  }
  return c;
}
