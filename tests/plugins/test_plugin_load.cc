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

int main() {
  Suite* s = suite_create("plugin_load");
  TCase* tc = tcase_create("dlopen");
  tcase_add_loop_test(tc, plugin_resolves_loader_symbols, 0, static_cast<int>(sizeof(kPlugins) / sizeof(kPlugins[0])));
  suite_add_tcase(s, tc);
  SRunner* r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
