// A job's mlsched record (core/job_record.h) as the plugins read it: decoded once
// per change of its AdminComment, since select_p_job_test, preemptable() and the
// priority pass ask for the same pending jobs' records over and over.
#pragma once

#include <memory>

#include "core/job_record.h"
#include "core/preempt.h"
#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

// The record of `job_ptr` now. Caller holds the job read (or write) lock; the
// record stays valid after the lock is released.
std::shared_ptr<const JobRecord> job_record_of(const job_record_t* job_ptr);

// What preemption asks of a job, from its record and Slurm's counters: its id,
// whether it gives GPUs back (preemptible; a job without directives never offered
// to), its checkpoint interval, how often preempt/mlsched preempted it, its
// requeues and max-restarts, its attained service. preempt/mlsched adds where it
// runs; select/mlsched asks whether reserved GPUs may be lent to it.
PreemptCandidate preemption_view(const job_record_t* job_ptr);

// A running job as preemption sees it: preemption_view() plus its team, GPU type,
// GPUs on each node, start, partition, quota kind and last reported checkpoint.
// preempt/mlsched weighs it as a victim; select/mlsched asks whether it holds a
// reserved unit's GPUs for good. Caller holds the job read lock.
PreemptCandidate running_view(const job_record_t* job_ptr, const Config& config);

}  // namespace mlsched::plugin
