// The version seam: everything that talks to slurmctld differently in the Slurm
// release lines mlsched supports goes through these declarations. Each line has one
// directory, src/plugins/common/slurm-X.Y, with slurm_release.h (headers and types)
// and the .cc files below; configure picks one from SLURM_VERSION_NUMBER. The shells
// (src/plugins/*/mlsched) call `release::`, and implement `shell::` for the release
// files that own the entry points whose signature or timing changed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin::release {

// ---- ctld.cc (every plugin) --------------------------------------------------------

// One switch of a tree topology (topology.conf), read from slurmctld.
struct SwitchView {
  std::string name;
  int level = 0;
  bitstr_t* nodes = nullptr;  // every node below it; owned by slurmctld (read only)
};
// Number of switches (0 without a tree topology). Cheap: asked on every snapshot.
int switch_count();
// The switches now. Only inside slurmctld, with the config or node read lock held.
std::vector<SwitchView> switches();

// True in a slurmctld that a reconfigure started to replace a running one (24.11
// re-executes itself; 22.05 reconfigures in place, so never there).
bool started_by_reconfigure();

// ---- select.cc (select/mlsched) ----------------------------------------------------

// Loads select/cons_tres with this release's symbol list; false (logged) if that fails.
bool load_cons_tres(const char* log_prefix);
int unload_cons_tres();
int cons_tres_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                       uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                       const JobTestTail& tail);
int cons_tres_job_fini(job_record_t* job_ptr);
// A job that begins a run is past any preemption grace of an earlier run. 24.11 flags
// a job when a preemption with a grace time starts (GRACE_PREEMPT) and clears the flag
// only when the run ends through job completion; a requeue (the preemption's own, or
// a node failure's) leaves it set, and when the requeued job later ends normally
// slurmctld reads the stale flag as "ended by preemption" and requeues it again, so a
// checkpointing job preempted once never completes. Cleared at each start. 22.05 has
// no such flag: nothing to do there.
void clear_stale_preempt_grace(job_record_t* job_ptr);

}  // namespace mlsched::plugin::release

namespace mlsched::plugin::shell {

// ---- select/mlsched ----------------------------------------------------------------
int select_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                    uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                    const release::JobTestTail& tail);
// A job begins a run (after cons_tres's allocation, before its own job_begin).
void select_job_begin(const job_record_t* job_ptr) noexcept;
int select_job_fini(job_record_t* job_ptr);

// ---- priority/mlsched --------------------------------------------------------------
// Starts the pass thread (once): from init() or priority_p_thread_start(),
// whichever the release calls after it can take slurmctld's locks. Never blocks.
void priority_thread_start();
// True if sprio shows `job_ptr` to `uid` (pending, eligible, priced, visible).
// Caller holds the job read lock.
bool sprio_shows(const job_record_t* job_ptr, time_t now, uid_t uid);

// ---- job_submit/mlsched ------------------------------------------------------------
// The update rules; `err_msg` (null where the release has none) gets the reason.
int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid, char** err_msg);

}  // namespace mlsched::plugin::shell
