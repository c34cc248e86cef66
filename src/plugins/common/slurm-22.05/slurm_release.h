// Slurm 22.05's internal headers, as every mlsched plugin sees them (through
// plugins/common/slurm_headers.h only), and the types whose shape is 22.05's.
// This directory is on the include path when configure found a 22.05 Slurm.
#pragma once

extern "C" {
#include "config.h"  // Slurm's, from the configured source tree: struct layouts depend on it

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/plugin.h"
#include "src/common/run_in_daemon.h"
#include "src/common/select.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/slurmctld.h"
}

namespace mlsched::plugin::release {

constexpr const char* kSlurmLine = "22.05";

// What select_p_job_test takes after the preemptee list: the cores reserved away.
struct JobTestTail {
  bitstr_t* exc_core_bitmap;
};

// The cached factors slurmctld keeps on a job (job_record_t::prio_factors).
using JobPriorityFactors = priority_factors_object_t;

// 22.05 loads priority plugins with no separate start hook: init() starts threads.
constexpr bool kPriorityThreadStartsInInit = true;

}  // namespace mlsched::plugin::release
