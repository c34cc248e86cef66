// libslurm's public names that differ between release lines, for the mlsched tool
// (a client: public API only). Slurm 22.05.
#pragma once

#include <slurm/slurm.h>

#include <string>
#include <vector>

// Exported by libslurm 22.05 but declared in none of its public headers.
extern "C" const char* slurm_job_reason_string(enum job_state_reason inx);

namespace mlsched::tool::release {

// The text squeue shows for a pending job's reason.
inline const char* job_reason_text(enum job_state_reason reason) { return slurm_job_reason_string(reason); }

// Whether accounting keeps each run's Comment (AccountingStoreFlags=job_comment).
inline bool stores_job_comment(const slurm_conf_t& conf) { return conf.conf_flags & CTL_CONF_SJC; }

// One switch of the tree topology as `slurm_load_topo` returns it.
struct SwitchText {
  std::string name;
  int level = 0;
  std::string nodes;  // hostlist of the nodes directly below it
};

// 22.05 answers with the switch records themselves.
inline std::vector<SwitchText> switches_of(const topo_info_response_msg_t& msg) {
  std::vector<SwitchText> out;
  for (uint32_t i = 0; i < msg.record_count; ++i) {
    const topo_info_t& t = msg.topo_array[i];
    out.push_back({t.name ? t.name : "", t.level, t.nodes ? t.nodes : ""});
  }
  return out;
}

}  // namespace mlsched::tool::release
