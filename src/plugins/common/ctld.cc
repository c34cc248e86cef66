// See ctld.h. dlsym(RTLD_DEFAULT) finds the symbols in the daemon that loaded us.
#include "plugins/common/ctld.h"

#include <dlfcn.h>

namespace mlsched::plugin::ctld {

namespace {

template <class T>
T* lookup(const char* name) {
  return static_cast<T*>(dlsym(RTLD_DEFAULT, name));
}

template <class T>
T value_of(const char* name, T fallback) {
  T* p = lookup<T>(name);
  return p ? *p : fallback;
}

}  // namespace

bool in_slurmctld() {
  static const bool inside = dlsym(RTLD_DEFAULT, "lock_slurmctld") != nullptr;
  return inside;
}

node_record_t** node_table() { return value_of<node_record_t**>("node_record_table_ptr", nullptr); }
int node_count() { return value_of<int>("node_record_count", 0); }
time_t last_node_update() { return value_of<time_t>("last_node_update", 0); }
switch_record_t* switch_table() { return value_of<switch_record_t*>("switch_record_table", nullptr); }
int switch_count() { return value_of<int>("switch_record_cnt", 0); }

}  // namespace mlsched::plugin::ctld
