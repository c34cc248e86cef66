// 22.05's select interface (src/common/select.h): select/mlsched forwards every
// select_p_* call to select/cons_tres, loaded as an inner plugin with the same
// symbol list slurmctld resolves, except job_test and job_fini, which the shell
// (src/plugins/select/mlsched) intercepts first.
#include "plugins/common/release.h"

namespace mlsched::plugin::release {

namespace {

// Names must follow slurm_select_ops_t's member order (src/common/select.h).
const char* kInnerSyms[] = {
    "plugin_id",
    "select_p_state_save",
    "select_p_state_restore",
    "select_p_job_init",
    "select_p_node_init",
    "select_p_job_test",
    "select_p_job_begin",
    "select_p_job_ready",
    "select_p_job_expand",
    "select_p_job_resized",
    "select_p_job_signal",
    "select_p_job_fini",
    "select_p_job_suspend",
    "select_p_job_resume",
    "select_p_step_pick_nodes",
    "select_p_step_start",
    "select_p_step_finish",
    "select_p_select_nodeinfo_pack",
    "select_p_select_nodeinfo_unpack",
    "select_p_select_nodeinfo_alloc",
    "select_p_select_nodeinfo_free",
    "select_p_select_nodeinfo_set_all",
    "select_p_select_nodeinfo_set",
    "select_p_select_nodeinfo_get",
    "select_p_select_jobinfo_alloc",
    "select_p_select_jobinfo_free",
    "select_p_select_jobinfo_set",
    "select_p_select_jobinfo_get",
    "select_p_select_jobinfo_copy",
    "select_p_select_jobinfo_pack",
    "select_p_select_jobinfo_unpack",
    "select_p_select_jobinfo_sprint",
    "select_p_select_jobinfo_xstrdup",
    "select_p_get_info_from_plugin",
    "select_p_update_node_config",
    "select_p_reconfigure",
    "select_p_resv_test",
};
// If Slurm's ops table gains or loses a member, this stops the build instead of
// calling through a shifted table inside slurmctld.
static_assert(sizeof(kInnerSyms) / sizeof(kInnerSyms[0]) == sizeof(slurm_select_ops_t) / sizeof(void*),
              "kInnerSyms must list every member of slurm_select_ops_t");

slurm_select_ops_t inner;
plugin_context_t* inner_context = nullptr;

}  // namespace

bool load_cons_tres(const char* log_prefix) {
  inner_context = plugin_context_create("select", "select/cons_tres", reinterpret_cast<void**>(&inner), kInnerSyms,
                                        sizeof(kInnerSyms));
  if (!inner_context) error("%s: cannot load select/cons_tres, which it builds on", log_prefix);
  return inner_context != nullptr;
}

int unload_cons_tres() {
  int rc = SLURM_SUCCESS;
  if (inner_context) rc = plugin_context_destroy(inner_context);
  inner_context = nullptr;
  return rc;
}

int cons_tres_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                       uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                       const JobTestTail& tail) {
  return (*(inner.job_test))(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                             preemptee_job_list, tail.exc_core_bitmap);
}

int cons_tres_job_fini(job_record_t* job_ptr) { return (*(inner.job_fini))(job_ptr); }
void clear_stale_preempt_grace(job_record_t*) {}

}  // namespace mlsched::plugin::release

using mlsched::plugin::release::inner;

MLSCHED_EXPORT int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                     uint32_t req_nodes, uint16_t mode, List preemptee_candidates,
                                     List* preemptee_job_list, bitstr_t* exc_core_bitmap) {
  return mlsched::plugin::shell::select_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode,
                                                 preemptee_candidates, preemptee_job_list, {exc_core_bitmap});
}

MLSCHED_EXPORT int select_p_job_init(List job_list) { return (*(inner.job_init))(job_list); }

// The forwards every release shares.
#include "plugins/common/select_forwards.inc"

// This release's own.
MLSCHED_EXPORT int select_p_job_signal(job_record_t* job_ptr, int signal) {
  return (*(inner.job_signal))(job_ptr, signal);
}
MLSCHED_EXPORT char* select_p_select_jobinfo_sprint(select_jobinfo_t* jobinfo, char* buf, size_t size, int mode) {
  return (*(inner.jobinfo_sprint))(jobinfo, buf, size, mode);
}
MLSCHED_EXPORT char* select_p_select_jobinfo_xstrdup(select_jobinfo_t* jobinfo, int mode) {
  return (*(inner.jobinfo_xstrdup))(jobinfo, mode);
}
MLSCHED_EXPORT int select_p_update_node_config(int index) { return (*(inner.update_node_config))(index); }
MLSCHED_EXPORT bitstr_t* select_p_resv_test(resv_desc_msg_t* resv_desc_ptr, uint32_t node_cnt, bitstr_t* avail_bitmap,
                                            bitstr_t** core_bitmap) {
  return (*(inner.resv_test))(resv_desc_ptr, node_cnt, avail_bitmap, core_bitmap);
}
