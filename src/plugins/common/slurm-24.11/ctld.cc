// 24.11: the switch table lives inside the topology/tree plugin (since 24.05), where
// dlsym(RTLD_DEFAULT) cannot see it; the topology interface hands out a copy of
// names and levels (TOPO_DATA_TOPOLOGY_PTR) and each switch's node bitmap by name.
#include <cstdlib>

#include "plugins/common/ctld.h"
#include "plugins/common/release.h"

namespace mlsched::plugin::release {

namespace {

// The topology interface calls through an ops table that is empty until slurmctld
// initialises the topology plugin, early in reading slurm.conf; a call before that
// jumps to address 0 (seen: preempt/mlsched's snapshot thread, at startup). The node
// table is built after that initialisation, so nodes in it mean the API is ready.
bool topology_ready() { return ctld::in_slurmctld() && ctld::node_count() > 0; }

// The data behind TOPO_DATA_TOPOLOGY_PTR when topology/tree is active: a count and
// an array of the public topo_info_t (topology_tree.c keeps the struct private).
struct TreeTopology {
  uint32_t record_count;
  topo_info_t* topo_array;
};

}  // namespace

int switch_count() {
  int count = 0;
  if (!topology_ready()) return 0;
  if (topology_g_get(TOPO_DATA_REC_CNT, &count) != SLURM_SUCCESS) return 0;
  return count;
}

std::vector<SwitchView> switches() {
  std::vector<SwitchView> out;
  dynamic_plugin_data_t* topology = nullptr;
  if (!topology_ready()) return out;
  if (topology_g_get(TOPO_DATA_TOPOLOGY_PTR, &topology) != SLURM_SUCCESS || !topology) return out;
  // Other topology plugins (block, 3d_torus, default) have no switch levels.
  if (topology->plugin_id == TOPOLOGY_PLUGIN_TREE && topology->data) {
    const auto* tree = static_cast<const TreeTopology*>(topology->data);
    for (uint32_t i = 0; i < tree->record_count; i++) {
      topo_info_t& sw = tree->topo_array[i];
      // The node bitmap covers every node below the switch (Nodes= names only direct ones).
      out.push_back({sw.name ? sw.name : "", static_cast<int>(sw.level), topology_g_get_bitmap(sw.name)});
    }
  }
  topology_g_topology_free(topology);
  return out;
}

// `scontrol reconfigure` starts a new slurmctld with SLURMCTLD_RECONF set in its
// environment (src/slurmctld/controller.c); if it fails, the old one resumes.
bool started_by_reconfigure() { return std::getenv("SLURMCTLD_RECONF") != nullptr; }

}  // namespace mlsched::plugin::release
