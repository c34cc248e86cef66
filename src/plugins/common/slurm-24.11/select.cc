// 24.11's select interface (src/interfaces/select.c): select/mlsched forwards every
// select_p_* call to select/cons_tres, loaded as an inner plugin with the same
// symbol list slurmctld resolves, except job_test and job_fini, which the shell
// (src/plugins/select/mlsched) intercepts first. 24.11's loader calls fatal() when a
// plugin lacks a requested symbol, so the list must be this release's, no more.
#include "plugins/common/release.h"

namespace mlsched::plugin::release {

namespace {

// The ops table is private to src/interfaces/select.c from 24.05 on, so it is
// written out here, member for member in the loader's order (the 32 names below).
struct SelectOps {
  uint32_t* plugin_id;
  int (*state_save)(char* dir_name);
  int (*state_restore)(char* dir_name);
  int (*job_init)(list_t* job_list);
  int (*node_init)(void);
  int (*job_test)(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                  uint32_t req_nodes, uint16_t mode, list_t* preemptee_candidates, list_t** preemptee_job_list,
                  resv_exc_t* resv_exc_ptr, will_run_data_t* will_run_ptr);
  int (*job_begin)(job_record_t* job_ptr);
  int (*job_ready)(job_record_t* job_ptr);
  int (*job_expand)(job_record_t* from_job_ptr, job_record_t* to_job_ptr);
  int (*job_resized)(job_record_t* job_ptr, node_record_t* node_ptr);
  int (*job_fini)(job_record_t* job_ptr);
  int (*job_suspend)(job_record_t* job_ptr, bool indf_susp);
  int (*job_resume)(job_record_t* job_ptr, bool indf_susp);
  bitstr_t* (*step_pick_nodes)(job_record_t* job_ptr, select_jobinfo_t* step_jobinfo, uint32_t node_count,
                               bitstr_t** avail_nodes);
  int (*step_start)(step_record_t* step_ptr);
  int (*step_finish)(step_record_t* step_ptr, bool killing_step);
  int (*nodeinfo_pack)(select_nodeinfo_t* nodeinfo, buf_t* buffer, uint16_t protocol_version);
  int (*nodeinfo_unpack)(select_nodeinfo_t** nodeinfo, buf_t* buffer, uint16_t protocol_version);
  select_nodeinfo_t* (*nodeinfo_alloc)(void);
  int (*nodeinfo_free)(select_nodeinfo_t* nodeinfo);
  int (*nodeinfo_set_all)(void);
  int (*nodeinfo_set)(job_record_t* job_ptr);
  int (*nodeinfo_get)(select_nodeinfo_t* nodeinfo, enum select_nodedata_type dinfo, enum node_states state,
                      void* data);
  select_jobinfo_t* (*jobinfo_alloc)(void);
  int (*jobinfo_free)(select_jobinfo_t* jobinfo);
  int (*jobinfo_set)(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data);
  int (*jobinfo_get)(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data);
  select_jobinfo_t* (*jobinfo_copy)(select_jobinfo_t* jobinfo);
  int (*jobinfo_pack)(select_jobinfo_t* jobinfo, buf_t* buffer, uint16_t protocol_version);
  int (*jobinfo_unpack)(select_jobinfo_t** jobinfo_pptr, buf_t* buffer, uint16_t protocol_version);
  int (*get_info_from_plugin)(enum select_plugindata_info dinfo, job_record_t* job_ptr, void* data);
  int (*reconfigure)(void);
};

// Names in SelectOps's member order; tests/plugins checks them against the loader's.
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
    "select_p_get_info_from_plugin",
    "select_p_reconfigure",
};
static_assert(sizeof(kInnerSyms) / sizeof(kInnerSyms[0]) == sizeof(SelectOps) / sizeof(void*),
              "kInnerSyms must name every member of SelectOps");

SelectOps inner;
plugin_handle_t inner_plugin = PLUGIN_INVALID_HANDLE;

}  // namespace

// plugin_context_create is not among the names libslurm exports, so a client that
// loads select/mlsched could not call it. The loader's own entry is exported as
// slurm_plugin_load_and_link (slurm_xlator.h maps the name): it searches PluginDir,
// resolves the list and calls fatal() if a symbol is missing, in slurmctld and
// clients alike.
bool load_cons_tres(const char* log_prefix) {
  inner_plugin = plugin_load_and_link("select/cons_tres", sizeof(kInnerSyms) / sizeof(kInnerSyms[0]), kInnerSyms,
                                      reinterpret_cast<void**>(&inner));
  if (inner_plugin == PLUGIN_INVALID_HANDLE) error("%s: cannot load select/cons_tres, which it builds on", log_prefix);
  return inner_plugin != PLUGIN_INVALID_HANDLE;
}

int unload_cons_tres() {
  if (inner_plugin != PLUGIN_INVALID_HANDLE) plugin_unload(inner_plugin);
  inner_plugin = PLUGIN_INVALID_HANDLE;
  return SLURM_SUCCESS;
}

int cons_tres_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                       uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                       const JobTestTail& tail) {
  return (*(inner.job_test))(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                             preemptee_job_list, tail.resv_exc_ptr, tail.will_run_ptr);
}

int cons_tres_job_fini(job_record_t* job_ptr) { return (*(inner.job_fini))(job_ptr); }
void clear_stale_preempt_grace(job_record_t* job_ptr) { job_ptr->bit_flags &= ~GRACE_PREEMPT; }

}  // namespace mlsched::plugin::release

using mlsched::plugin::release::inner;

MLSCHED_EXPORT int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                     uint32_t req_nodes, uint16_t mode, list_t* preemptee_candidates,
                                     list_t** preemptee_job_list, resv_exc_t* resv_exc_ptr,
                                     will_run_data_t* will_run_ptr) {
  return mlsched::plugin::shell::select_job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode,
                                                 preemptee_candidates, preemptee_job_list,
                                                 {resv_exc_ptr, will_run_ptr});
}

MLSCHED_EXPORT int select_p_job_init(list_t* job_list) { return (*(inner.job_init))(job_list); }

// The forwards every release shares.
#include "plugins/common/select_forwards.inc"
