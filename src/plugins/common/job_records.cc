// One cache of decoded job records per plugin (see job_records.h).
#include "plugins/common/job_records.h"

namespace mlsched::plugin {

std::shared_ptr<const JobRecord> job_record_of(const job_record_t* job_ptr) {
  // Bounded (least recently used jobs are dropped), so it does not grow with
  // slurmctld's job table.
  static JobRecordCache cache;
  const char* text = job_ptr->admin_comment;
  return cache.get(job_ptr->job_id, text ? std::string_view(text) : std::string_view());
}

}  // namespace mlsched::plugin
