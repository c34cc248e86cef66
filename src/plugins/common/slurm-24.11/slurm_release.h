// Slurm 24.11's internal headers, as every mlsched plugin sees them (through
// plugins/common/slurm_headers.h only), and the types whose shape is 24.11's.
// This directory is on the include path when configure found a 24.11 Slurm.
#pragma once

// src/common/extra_constraints.h (pulled in by slurmctld.h) names a struct member
// `operator`, a C++ keyword. Renaming the token for these headers changes no layout.
#define operator slurm_operator
extern "C" {
#include "config.h"  // Slurm's, from the configured source tree: struct layouts depend on it

// Slurm's own plugins call libslurm's functions by their slurm_* aliases, the only
// names 24.11's public libslurm exports (22.05's exported both): a client linked to
// libslurm (the mlsched tool, anything using the public API) loads select plugins,
// and a lazily bound call to an unaliased name ends it with "undefined symbol".
#include "src/common/slurm_xlator.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/plugin.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/gres.h"
#include "src/interfaces/preempt.h"
#include "src/interfaces/select.h"
#include "src/interfaces/topology.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
}
#undef operator

// 24.11 has only list_t / list_itr_t; the shells keep 22.05's spelling, which
// means the same thing (a pointer to Slurm's list), until 22.05 support ends.
using List = list_t*;
using ListIterator = list_itr_t*;

namespace mlsched::plugin::release {

constexpr const char* kSlurmLine = "24.11";

// What select_p_job_test takes after the preemptee list: the cores (and, from
// 23.11, licenses) reserved away, and what backfill records about a will-run test.
struct JobTestTail {
  resv_exc_t* resv_exc_ptr;
  will_run_data_t* will_run_ptr;
};

// The cached factors slurmctld keeps on a job (job_record_t::prio_factors); sprio's
// list wraps a copy in a priority_factors_object_t.
using JobPriorityFactors = priority_factors_t;

// 24.11 calls priority_p_thread_start() once slurm.conf is read (with the config
// lock held): threads start there, not in init().
constexpr bool kPriorityThreadStartsInInit = false;

}  // namespace mlsched::plugin::release
