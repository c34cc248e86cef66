// 22.05's job_modify has no message channel: the reason reaches slurmctld's log only.
#include "plugins/common/release.h"

MLSCHED_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid) {
  return mlsched::plugin::shell::job_modify(job_desc, job_ptr, submit_uid, nullptr);
}
