// 22.05: the switch table is slurmctld's global (src/common/node_conf.c), found
// through dlsym like the node table, so clients that load a plugin never bind it.
#include <dlfcn.h>

#include "plugins/common/release.h"

namespace mlsched::plugin::release {

namespace {

switch_record_t* table() {
  static switch_record_t** const p = static_cast<switch_record_t**>(dlsym(RTLD_DEFAULT, "switch_record_table"));
  return p ? *p : nullptr;
}

}  // namespace

int switch_count() {
  static int* const p = static_cast<int*>(dlsym(RTLD_DEFAULT, "switch_record_cnt"));
  return p ? *p : 0;
}

std::vector<SwitchView> switches() {
  std::vector<SwitchView> out;
  switch_record_t* records = table();
  for (int i = 0; records && i < switch_count(); i++) {
    // node_bitmap covers every node below the switch (Nodes= names only direct ones).
    out.push_back({records[i].name ? records[i].name : "", records[i].level, records[i].node_bitmap});
  }
  return out;
}

// `scontrol reconfigure` re-reads the configuration inside the running slurmctld.
bool started_by_reconfigure() { return false; }

}  // namespace mlsched::plugin::release
