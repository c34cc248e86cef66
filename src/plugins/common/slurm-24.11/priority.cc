// 24.11's priority entry points: sprio's request is filtered by sprio itself and
// slurmctld already holds the job, node and partition read locks (and assoc_mgr's
// QOS read lock) when it asks for the list; priority_p_recover and
// priority_p_thread_start are new (src/interfaces/priority.c).
#include <ctime>
#include <exception>

#include "plugins/common/release.h"

#pragma weak job_list

namespace {

constexpr const char* kLog = "priority/mlsched";

}  // namespace

// Called with the config write lock held, once slurm.conf is read: start the pass
// thread, which takes the locks itself, and return.
MLSCHED_EXPORT void priority_p_thread_start(void) { mlsched::plugin::shell::priority_thread_start(); }

// After job state is recovered, basic priorities are raised by `prio_boost` so they
// do not run down to zero; mlsched's priorities are absolute (the next pass prices
// every pending job), so there is nothing to shift: 0 says so.
MLSCHED_EXPORT uint32_t priority_p_recover(uint32_t prio_boost) { return 0; }

MLSCHED_EXPORT list_t* priority_p_get_priority_factors_list(uid_t uid) {
  list_t* out = nullptr;
  try {
    out = list_create(slurm_destroy_priority_factors_object);
    const time_t now = time(nullptr);
    list_itr_t* it = job_list ? list_iterator_create(job_list) : nullptr;
    while (auto* job_ptr = it ? static_cast<job_record_t*>(list_next(it)) : nullptr) {
      if (!mlsched::plugin::shell::sprio_shows(job_ptr, now, uid)) continue;
      auto* o = static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
      o->job_id = job_ptr->job_id;
      o->user_id = job_ptr->user_id;
      o->account = xstrdup(job_ptr->account);
      o->partition = job_ptr->part_ptr ? xstrdup(job_ptr->part_ptr->name) : nullptr;
      o->qos = job_ptr->qos_ptr ? xstrdup(job_ptr->qos_ptr->name) : nullptr;
      // A priority an admin set replaces the factors (sprio shows it alone).
      if (job_ptr->direct_set_prio) {
        o->direct_prio = job_ptr->priority;
      } else {
        o->prio_factors = static_cast<priority_factors_t*>(xmalloc(sizeof(priority_factors_t)));
        slurm_copy_priority_factors(o->prio_factors, job_ptr->prio_factors);
      }
      list_append(out, o);
    }
    if (it) list_iterator_destroy(it);
    if (!list_count(out)) FREE_NULL_LIST(out);
  } catch (const std::exception& e) {
    error("%s: sprio request failed: %s", kLog, e.what());
    FREE_NULL_LIST(out);
  } catch (...) {
    error("%s: sprio request failed with a non-standard exception", kLog);
    FREE_NULL_LIST(out);
  }
  return out;
}
