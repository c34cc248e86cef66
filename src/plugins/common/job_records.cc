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

PreemptCandidate preemption_view(const job_record_t* job_ptr) {
  PreemptCandidate c;
  c.job_id = job_ptr->job_id;
  const auto record = job_record_of(job_ptr);
  // PreemptMaxPerJob counts our own `preempted=` mark; Slurm's restart count also
  // holds time-limit and node-failure requeues, which only max-restarts counts.
  c.times_preempted = record->preemptions.times;
  c.restarts = job_ptr->restart_cnt;
  c.attained_gpu_seconds = record->marks.attained_gpu_seconds;
  if (const auto& d = record->directives) {
    c.has_directives = true;
    c.preemptible = d->preemptible;
    c.max_restarts = d->max_restarts;
    c.checkpoint_interval = d->checkpoint_interval;
  } else {
    c.preemptible = false;
  }
  return c;
}

}  // namespace mlsched::plugin
