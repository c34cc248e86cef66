// See ctld.h. dlsym(RTLD_DEFAULT) finds the symbols in the daemon that loaded us.
#include "plugins/common/ctld.h"

#include <dlfcn.h>

namespace mlsched::plugin::ctld {

namespace {

// The addresses of the daemon's globals never change while it runs, so each caller
// below keeps the address in a static: dlsym(RTLD_DEFAULT) searches every loaded
// object, and select asks several times per job tested in every scheduling pass.
template <class T>
T* lookup(const char* name) {
  return static_cast<T*>(dlsym(RTLD_DEFAULT, name));
}

template <class T>
T value_of(T* p, T fallback) {
  return p ? *p : fallback;
}

}  // namespace

bool in_slurmctld() {
  static const bool inside = dlsym(RTLD_DEFAULT, "lock_slurmctld") != nullptr;
  return inside;
}

node_record_t** node_table() {
  static node_record_t*** const p = lookup<node_record_t**>("node_record_table_ptr");
  return value_of<node_record_t**>(p, nullptr);
}
int node_count() {
  static int* const p = lookup<int>("node_record_count");
  return value_of<int>(p, 0);
}
time_t last_node_update() {
  static time_t* const p = lookup<time_t>("last_node_update");
  return value_of<time_t>(p, 0);
}
List partition_list() {
  static List* const p = lookup<List>("part_list");
  return value_of<List>(p, nullptr);
}
List job_list() {
  static List* const p = lookup<List>("job_list");
  return value_of<List>(p, nullptr);
}
job_record_t* find_job(uint32_t job_id) {
  using Find = job_record_t* (*)(uint32_t);
  static const Find find = reinterpret_cast<Find>(dlsym(RTLD_DEFAULT, "find_job_record"));
  return find ? find(job_id) : nullptr;
}
slurmdb_federation_rec_t* federation() {
  static slurmdb_federation_rec_t** const p = lookup<slurmdb_federation_rec_t*>("fed_mgr_fed_rec");
  return value_of<slurmdb_federation_rec_t*>(p, nullptr);
}
slurmdb_cluster_rec_t* federation_self() {
  static slurmdb_cluster_rec_t** const p = lookup<slurmdb_cluster_rec_t*>("fed_mgr_cluster_rec");
  return value_of<slurmdb_cluster_rec_t*>(p, nullptr);
}
}  // namespace mlsched::plugin::ctld
