// Loads each built plugin the way Slurm 22.05's loader does and resolves every
// symbol it asks for, so a missing or misspelled symbol fails here, not inside a
// controller. libslurmfull (what slurmctld links) is loaded first to provide the
// Slurm functions and data the plugin uses.
#include <check.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct PluginSpec {
  const char* type;                  // "job_submit"
  std::vector<const char*> symbols;  // the loader's syms[] for that plugin type
};

// The symbol lists of the 22.05 loaders (src/slurmctld/job_submit.c,
// src/common/slurm_priority.c, src/slurmctld/preempt.c). A plugin type is added
// here when mlsched builds a plugin of that type.
const PluginSpec kPlugins[] = {
    {"job_submit", {"job_submit", "job_modify"}},
    {"priority", {"priority_p_set", "priority_p_reconfig", "priority_p_set_assoc_usage", "priority_p_calc_fs_factor",
                  "priority_p_get_priority_factors_list", "priority_p_job_end"}},
    // node_select_syms[] of src/plugins/select/other/other_select.c
    {"select",
     {"plugin_id", "select_p_state_save", "select_p_state_restore", "select_p_job_init", "select_p_node_init",
      "select_p_job_test", "select_p_job_begin", "select_p_job_ready", "select_p_job_expand", "select_p_job_resized",
      "select_p_job_signal", "select_p_job_fini", "select_p_job_suspend", "select_p_job_resume",
      "select_p_step_pick_nodes", "select_p_step_start", "select_p_step_finish", "select_p_select_nodeinfo_pack",
      "select_p_select_nodeinfo_unpack", "select_p_select_nodeinfo_alloc", "select_p_select_nodeinfo_free",
      "select_p_select_nodeinfo_set_all", "select_p_select_nodeinfo_set", "select_p_select_nodeinfo_get",
      "select_p_select_jobinfo_alloc", "select_p_select_jobinfo_free", "select_p_select_jobinfo_set",
      "select_p_select_jobinfo_get", "select_p_select_jobinfo_copy", "select_p_select_jobinfo_pack",
      "select_p_select_jobinfo_unpack", "select_p_select_jobinfo_sprint", "select_p_select_jobinfo_xstrdup",
      "select_p_get_info_from_plugin", "select_p_update_node_config", "select_p_reconfigure",
      "select_p_resv_test"}},
    {"preempt", {"preempt_p_job_preempt_check", "preempt_p_preemptable", "preempt_p_get_data"}},
};

std::string plugin_path(const char* type) {
  return std::string(PLUGIN_BUILD_DIR) + "/" + type + "/mlsched/.libs/" + type + "_mlsched.so";
}

void* load_slurm() {
  void* h = dlopen(SLURMFULL_LIB, RTLD_NOW | RTLD_GLOBAL);
  ck_assert_msg(h != nullptr, "cannot load %s: %s", SLURMFULL_LIB, dlerror());
  return h;
}

}  // namespace

START_TEST(plugin_resolves_loader_symbols) {
  load_slurm();
  const PluginSpec& spec = kPlugins[_i];
  const std::string path = plugin_path(spec.type);
  // RTLD_LAZY: functions that only slurmctld defines bind at first call, as in the daemon.
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  ck_assert_msg(h != nullptr, "cannot load %s: %s", path.c_str(), dlerror());

  const auto* version = static_cast<const uint32_t*>(dlsym(h, "plugin_version"));
  ck_assert_msg(version != nullptr, "%s: no plugin_version", path.c_str());
  // The loader compares major.minor.micro (mask 0xffffff) with the daemon's.
  ck_assert_msg((*version & 0xffffff) == (EXPECTED_SLURM_VERSION & 0xffffff),
                "%s: plugin_version 0x%x, Slurm is 0x%x", path.c_str(), *version, EXPECTED_SLURM_VERSION);

  const char* type = static_cast<const char*>(dlsym(h, "plugin_type"));
  ck_assert_msg(type != nullptr, "%s: no plugin_type", path.c_str());
  const std::string want_type = std::string(spec.type) + "/mlsched";
  ck_assert_msg(want_type == type, "%s: plugin_type is %s, want %s", path.c_str(), type, want_type.c_str());
  const char* name = static_cast<const char*>(dlsym(h, "plugin_name"));
  ck_assert_msg(name != nullptr && std::strlen(name) > 0, "%s: no plugin_name", path.c_str());

  for (const char* sym : spec.symbols)
    ck_assert_msg(dlsym(h, sym) != nullptr, "%s: loader symbol %s is missing", path.c_str(), sym);
  ck_assert_msg(dlsym(h, "init") != nullptr && dlsym(h, "fini") != nullptr, "%s: init/fini missing", path.c_str());
  dlclose(h);
}
END_TEST

// Select plugins are loaded by every program using the public libslurm (it loads
// all select plugins in PluginDir), priority plugins by sprio/sshare: such a
// program has none of slurmctld's tables, so the plugin must load without them.
START_TEST(plugin_loads_in_a_client) {
  const PluginSpec& spec = kPlugins[_i];
  if (std::string(spec.type) == "job_submit" || std::string(spec.type) == "preempt") return;  // slurmctld only
  void* lib = dlopen(SLURM_PUBLIC_LIB, RTLD_NOW | RTLD_GLOBAL);
  ck_assert_msg(lib != nullptr, "cannot load %s: %s", SLURM_PUBLIC_LIB, dlerror());
  const std::string path = plugin_path(spec.type);
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  ck_assert_msg(h != nullptr, "a client linked to %s cannot load %s: %s", SLURM_PUBLIC_LIB, path.c_str(), dlerror());
  dlclose(h);
}
END_TEST

int main() {
  Suite* s = suite_create("plugin_load");
  TCase* tc = tcase_create("dlopen");
  const int plugins = static_cast<int>(sizeof(kPlugins) / sizeof(kPlugins[0]));
  tcase_add_loop_test(tc, plugin_resolves_loader_symbols, 0, plugins);
  tcase_add_loop_test(tc, plugin_loads_in_a_client, 0, plugins);
  suite_add_tcase(s, tc);
  SRunner* r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
