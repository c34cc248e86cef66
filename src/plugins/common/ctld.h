// slurmctld's own tables, reached without linking against them.
//
// The select and priority plugins are also loaded by client programs (sinfo, sprio,
// and anything linked to the public libslurm, which loads every select plugin in
// PluginDir). The node tables exist only in slurmctld and libslurmfull:
// a direct reference to them is an undefined data symbol that makes such a client
// fail to load the plugin. So they are looked up at run time, and only used where
// in_slurmctld() is true.
#pragma once

#include <cstdint>
#include <ctime>

#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin::ctld {

// True inside slurmctld (the controller defines lock_slurmctld for its plugins).
bool in_slurmctld();

node_record_t** node_table();  // node_record_table_ptr; may contain NULL holes
int node_count();              // size of node_table()
time_t last_node_update();     // changes whenever a node record changes
List partition_list();
// slurmctld's job_list. Walked only where cons_tres's own job tests walk it (a job
// test), never inside preempt_p_preemptable (see preempt_mlsched.cc). Caller holds
// the job read lock.
List job_list();
// slurmctld's find_job_record(): the job by id from its hash table (not job_list),
// NULL when unknown or outside slurmctld. Caller holds the job read lock.
job_record_t* find_job(uint32_t job_id);         // part_list: the partitions (part_record_t); may be NULL
// The federation this cluster is in (fed_mgr_fed_rec) and this cluster's record in it
// (fed_mgr_cluster_rec); NULL when it is in none. Caller holds the federation read lock.
slurmdb_federation_rec_t* federation();
slurmdb_cluster_rec_t* federation_self();
// The switch table moved between releases: release::switches() (release.h).

}  // namespace mlsched::plugin::ctld
