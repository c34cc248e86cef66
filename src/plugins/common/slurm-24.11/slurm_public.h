// libslurm's public names that differ between release lines, for the mlsched tool
// (a client: public API only). Slurm 24.11.
#pragma once

#include <slurm/slurm.h>

#include <string>
#include <vector>

// Exported by libslurm 24.11 but declared in none of its public headers.
extern "C" const char* slurm_job_state_reason_string(enum job_state_reason inx);

namespace mlsched::tool::release {

// The text squeue shows for a pending job's reason.
inline const char* job_reason_text(enum job_state_reason reason) { return slurm_job_state_reason_string(reason); }

// Whether accounting keeps each run's Comment (AccountingStoreFlags=job_comment).
inline bool stores_job_comment(const slurm_conf_t& conf) { return conf.conf_flags & CONF_FLAG_SJC; }

// One switch of the tree topology as `slurm_load_topo` returns it.
struct SwitchText {
  std::string name;
  int level = 0;
  std::string nodes;  // hostlist of the nodes directly below it
};

// From 23.11 the answer is the topology plugin's own data (topo_info, unpacked by
// the client's topology plugin); for topology/tree that is a count and an array of
// the public topo_info_t (the struct itself is private to topology_tree.c).
inline std::vector<SwitchText> switches_of(const topo_info_response_msg_t& msg) {
  struct TreeTopology {
    uint32_t record_count;
    topo_info_t* topo_array;
  };
  const topo_info_t* records = msg.topo_array;
  uint32_t count = msg.record_count;
  if (msg.topo_info && msg.topo_info->plugin_id == TOPOLOGY_PLUGIN_TREE && msg.topo_info->data) {
    const auto* tree = static_cast<const TreeTopology*>(msg.topo_info->data);
    records = tree->topo_array;
    count = tree->record_count;
  }
  std::vector<SwitchText> out;
  for (uint32_t i = 0; records && i < count; ++i)
    out.push_back({records[i].name ? records[i].name : "", records[i].level, records[i].nodes ? records[i].nodes : ""});
  return out;
}

}  // namespace mlsched::tool::release
