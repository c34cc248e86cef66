// 24.11's job_modify returns its reason through `err_msg`, which the user sees.
#include "plugins/common/release.h"

MLSCHED_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid, char** err_msg) {
  return mlsched::plugin::shell::job_modify(job_desc, job_ptr, submit_uid, err_msg);
}
