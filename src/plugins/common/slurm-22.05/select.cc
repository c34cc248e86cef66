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

}  // namespace mlsched::plugin::release

using mlsched::plugin::release::inner;

MLSCHED_EXPORT int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                     uint32_t req_nodes, uint16_t mode, List preemptee_candidates,
                                     List* preemptee_job_list, bitstr_t* exc_core_bitmap) {
  return mlsched::plugin::shell::select_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode,
                                                 preemptee_candidates, preemptee_job_list, {exc_core_bitmap});
}

MLSCHED_EXPORT int select_p_job_fini(job_record_t* job_ptr) { return mlsched::plugin::shell::select_job_fini(job_ptr); }


MLSCHED_EXPORT int select_p_state_save(char* dir_name) { return (*(inner.state_save))(dir_name); }
MLSCHED_EXPORT int select_p_state_restore(char* dir_name) { return (*(inner.state_restore))(dir_name); }
MLSCHED_EXPORT int select_p_job_init(List job_list) { return (*(inner.job_init))(job_list); }
MLSCHED_EXPORT int select_p_node_init(void) { return (*(inner.node_init))(); }
MLSCHED_EXPORT int select_p_job_begin(job_record_t* job_ptr) { return (*(inner.job_begin))(job_ptr); }
MLSCHED_EXPORT int select_p_job_ready(job_record_t* job_ptr) { return (*(inner.job_ready))(job_ptr); }
MLSCHED_EXPORT int select_p_job_expand(job_record_t* from_job_ptr, job_record_t* to_job_ptr) {
  return (*(inner.job_expand))(from_job_ptr, to_job_ptr);
}
MLSCHED_EXPORT int select_p_job_resized(job_record_t* job_ptr, node_record_t* node_ptr) {
  return (*(inner.job_resized))(job_ptr, node_ptr);
}
MLSCHED_EXPORT int select_p_job_signal(job_record_t* job_ptr, int signal) {
  return (*(inner.job_signal))(job_ptr, signal);
}
MLSCHED_EXPORT int select_p_job_suspend(job_record_t* job_ptr, bool indf_susp) {
  return (*(inner.job_suspend))(job_ptr, indf_susp);
}
MLSCHED_EXPORT int select_p_job_resume(job_record_t* job_ptr, bool indf_susp) {
  return (*(inner.job_resume))(job_ptr, indf_susp);
}
MLSCHED_EXPORT bitstr_t* select_p_step_pick_nodes(job_record_t* job_ptr, select_jobinfo_t* jobinfo,
                                                  uint32_t node_count, bitstr_t** avail_nodes) {
  return (*(inner.step_pick_nodes))(job_ptr, jobinfo, node_count, avail_nodes);
}
MLSCHED_EXPORT int select_p_step_start(step_record_t* step_ptr) { return (*(inner.step_start))(step_ptr); }
MLSCHED_EXPORT int select_p_step_finish(step_record_t* step_ptr, bool killing_step) {
  return (*(inner.step_finish))(step_ptr, killing_step);
}
MLSCHED_EXPORT int select_p_select_nodeinfo_pack(select_nodeinfo_t* nodeinfo, buf_t* buffer, uint16_t protocol_version) {
  return (*(inner.nodeinfo_pack))(nodeinfo, buffer, protocol_version);
}
MLSCHED_EXPORT int select_p_select_nodeinfo_unpack(select_nodeinfo_t** nodeinfo, buf_t* buffer,
                                                   uint16_t protocol_version) {
  return (*(inner.nodeinfo_unpack))(nodeinfo, buffer, protocol_version);
}
MLSCHED_EXPORT select_nodeinfo_t* select_p_select_nodeinfo_alloc(void) { return (*(inner.nodeinfo_alloc))(); }
MLSCHED_EXPORT int select_p_select_nodeinfo_free(select_nodeinfo_t* nodeinfo) {
  return (*(inner.nodeinfo_free))(nodeinfo);
}
MLSCHED_EXPORT int select_p_select_nodeinfo_set_all(void) { return (*(inner.nodeinfo_set_all))(); }
MLSCHED_EXPORT int select_p_select_nodeinfo_set(job_record_t* job_ptr) { return (*(inner.nodeinfo_set))(job_ptr); }
MLSCHED_EXPORT int select_p_select_nodeinfo_get(select_nodeinfo_t* nodeinfo, enum select_nodedata_type dinfo,
                                                enum node_states state, void* data) {
  return (*(inner.nodeinfo_get))(nodeinfo, dinfo, state, data);
}
MLSCHED_EXPORT select_jobinfo_t* select_p_select_jobinfo_alloc(void) { return (*(inner.jobinfo_alloc))(); }
MLSCHED_EXPORT int select_p_select_jobinfo_free(select_jobinfo_t* jobinfo) { return (*(inner.jobinfo_free))(jobinfo); }
MLSCHED_EXPORT int select_p_select_jobinfo_set(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type,
                                               void* data) {
  return (*(inner.jobinfo_set))(jobinfo, data_type, data);
}
MLSCHED_EXPORT int select_p_select_jobinfo_get(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type,
                                               void* data) {
  return (*(inner.jobinfo_get))(jobinfo, data_type, data);
}
MLSCHED_EXPORT select_jobinfo_t* select_p_select_jobinfo_copy(select_jobinfo_t* jobinfo) {
  return (*(inner.jobinfo_copy))(jobinfo);
}
MLSCHED_EXPORT int select_p_select_jobinfo_pack(select_jobinfo_t* jobinfo, buf_t* buffer, uint16_t protocol_version) {
  return (*(inner.jobinfo_pack))(jobinfo, buffer, protocol_version);
}
MLSCHED_EXPORT int select_p_select_jobinfo_unpack(select_jobinfo_t** jobinfo_pptr, buf_t* buffer,
                                                  uint16_t protocol_version) {
  return (*(inner.jobinfo_unpack))(jobinfo_pptr, buffer, protocol_version);
}
MLSCHED_EXPORT char* select_p_select_jobinfo_sprint(select_jobinfo_t* jobinfo, char* buf, size_t size, int mode) {
  return (*(inner.jobinfo_sprint))(jobinfo, buf, size, mode);
}
MLSCHED_EXPORT char* select_p_select_jobinfo_xstrdup(select_jobinfo_t* jobinfo, int mode) {
  return (*(inner.jobinfo_xstrdup))(jobinfo, mode);
}
// Gres code asks which select type runs (SELECT_CR_PLUGIN) and treats GPUs the
// cons_tres way only if the answer is cons_tres's: forwarding keeps that true.
MLSCHED_EXPORT int select_p_get_info_from_plugin(enum select_plugindata_info dinfo, job_record_t* job_ptr, void* data) {
  return (*(inner.get_info_from_plugin))(dinfo, job_ptr, data);
}
MLSCHED_EXPORT int select_p_update_node_config(int index) { return (*(inner.update_node_config))(index); }
MLSCHED_EXPORT int select_p_reconfigure(void) { return (*(inner.reconfigure))(); }
MLSCHED_EXPORT bitstr_t* select_p_resv_test(resv_desc_msg_t* resv_desc_ptr, uint32_t node_cnt, bitstr_t* avail_bitmap,
                                            bitstr_t** core_bitmap) {
  return (*(inner.resv_test))(resv_desc_ptr, node_cnt, avail_bitmap, core_bitmap);
}
