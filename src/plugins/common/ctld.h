// slurmctld's own tables, reached without linking against them.
//
// The select and priority plugins are also loaded by client programs (sinfo, sprio,
// and anything linked to the public libslurm, which loads every select plugin in
// PluginDir). The node and switch tables exist only in slurmctld and libslurmfull:
// a direct reference to them is an undefined data symbol that makes such a client
// fail to load the plugin. So they are looked up at run time, and only used where
// in_slurmctld() is true.
#pragma once

#include <ctime>

extern "C" {
#include "src/common/node_conf.h"
#include "src/common/slurm_topology.h"
}

namespace mlsched::plugin::ctld {

// True inside slurmctld (the controller defines lock_slurmctld for its plugins).
bool in_slurmctld();

node_record_t** node_table();  // node_record_table_ptr; may contain NULL holes
int node_count();              // size of node_table()
time_t last_node_update();     // changes whenever a node record changes
switch_record_t* switch_table();
int switch_count();

}  // namespace mlsched::plugin::ctld
