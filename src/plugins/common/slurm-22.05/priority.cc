// 22.05's priority entry points that differ from later releases: sprio's request
// (job ids, users, partitions) is filtered here, and slurmctld calls without locks.
// The pass thread starts in init() (release::kPriorityThreadStartsInInit).
#include <ctime>
#include <exception>

#include "core/text.h"
#include "plugins/common/release.h"

// slurmctld's job table; weak so sprio and sshare, which load this plugin too, can.
#pragma weak job_list

namespace {

constexpr const char* kLog = "priority/mlsched";

bool listed(List ids, uint32_t id) {
  if (!ids || !list_count(ids)) return true;
  bool found = false;
  ListIterator it = list_iterator_create(ids);
  while (auto* p = static_cast<uint32_t*>(list_next(it))) found = found || *p == id;
  list_iterator_destroy(it);
  return found;
}

bool requested(const job_record_t* job_ptr, const priority_factors_request_msg_t* req) {
  if (!req) return true;
  if (!listed(req->job_id_list, job_ptr->job_id) || !listed(req->uid_list, job_ptr->user_id)) return false;
  if (!req->partitions || !*req->partitions) return true;
  if (!job_ptr->part_ptr || !job_ptr->part_ptr->name) return false;
  for (const auto& p : mlsched::split(req->partitions, ','))
    if (p == job_ptr->part_ptr->name) return true;
  return false;
}

}  // namespace

MLSCHED_EXPORT List priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid) {
  List out = nullptr;
  slurmctld_lock_t job_read = {NO_LOCK, READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK};
  lock_slurmctld(job_read);
  try {
    out = list_create(slurm_destroy_priority_factors_object);
    if (job_list) {
      const time_t now = time(nullptr);
      ListIterator it = list_iterator_create(job_list);
      while (auto* job_ptr = static_cast<job_record_t*>(list_next(it))) {
        if (!mlsched::plugin::shell::sprio_shows(job_ptr, now, uid) || !requested(job_ptr, req_msg)) continue;
        auto* o = static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
        slurm_copy_priority_factors_object(o, job_ptr->prio_factors);
        o->job_id = job_ptr->job_id;
        o->user_id = job_ptr->user_id;
        o->partition = job_ptr->part_ptr ? xstrdup(job_ptr->part_ptr->name) : nullptr;
        if (job_ptr->direct_set_prio) o->direct_prio = job_ptr->priority;
        list_append(out, o);
      }
      list_iterator_destroy(it);
    }
    if (!list_count(out)) FREE_NULL_LIST(out);
  } catch (const std::exception& e) {
    error("%s: sprio request failed: %s", kLog, e.what());
    FREE_NULL_LIST(out);
  } catch (...) {
    error("%s: sprio request failed with a non-standard exception", kLog);
    FREE_NULL_LIST(out);
  }
  unlock_slurmctld(job_read);
  return out;
}
