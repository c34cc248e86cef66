// Loads each built plugin the way the Slurm it was built against loads it and
// resolves every symbol that release's loader asks for, so a missing or misspelled
// symbol fails here, not inside a controller. The lists are read from the loaders
// in the configured Slurm source tree (SLURM_SOURCE_DIR), so each build is checked
// against its own release. libslurmfull (what slurmctld links) is loaded first to
// provide the Slurm functions and data the plugin uses.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <check.h>  // after <fstream>: Check defines a macro named `fail`

namespace {

struct PluginSpec {
  const char* type;                  // "job_submit"
  std::vector<const char*> loaders;  // the file holding the loader's syms[], by release line
};

// Where each loader keeps its symbol list: 22.05's path first, then 23.02's and later
// (src/interfaces). A plugin type is added here when mlsched builds a plugin of it.
const PluginSpec kPlugins[] = {
    {"job_submit", {"src/slurmctld/job_submit.c", "src/interfaces/job_submit.c"}},
    {"priority", {"src/common/slurm_priority.c", "src/interfaces/priority.c"}},
    {"select", {"src/common/select.c", "src/interfaces/select.c"}},
    {"preempt", {"src/slurmctld/preempt.c", "src/interfaces/preempt.c"}},
};

// The quoted names of the first `...syms[] = { ... };` array in the loader's source.
std::vector<std::string> loader_symbols(const PluginSpec& spec) {
  for (const char* rel : spec.loaders) {
    std::ifstream in(std::string(SLURM_SOURCE_DIR) + "/" + rel);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const std::string src = text.str();
    const size_t start = src.find("syms[] = {");
    if (start == std::string::npos) continue;
    const size_t end = src.find("};", start);
    std::vector<std::string> names;
    for (size_t q = src.find('"', start); q != std::string::npos && q < end; q = src.find('"', q + 1)) {
      const size_t close = src.find('"', q + 1);
      names.push_back(src.substr(q + 1, close - q - 1));
      q = close;
    }
    return names;
  }
  return {};
}

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

  const std::vector<std::string> symbols = loader_symbols(spec);
  // Fewer than two would mean the parse above found the wrong array.
  ck_assert_msg(symbols.size() >= 2, "no %s loader symbol list found under %s", spec.type, SLURM_SOURCE_DIR);
  for (const std::string& sym : symbols)
    ck_assert_msg(dlsym(h, sym.c_str()) != nullptr, "%s: loader symbol %s (Slurm 0x%x) is missing", path.c_str(),
                  sym.c_str(), EXPECTED_SLURM_VERSION);
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
