// One cache of decoded job records per plugin (see job_records.h).
#include "plugins/common/job_records.h"

#include "core/checkpoint.h"
#include "core/hostlist.h"
#include "core/priority.h"
#include "core/tres.h"

namespace mlsched::plugin {

namespace {
std::string str(const char* s) { return s ? std::string(s) : std::string(); }
}  // namespace

std::shared_ptr<const JobRecord> job_record_of(const job_record_t* job_ptr) {
  // Bounded (least recently used jobs are dropped), so it does not grow with
  // slurmctld's job table.
  static JobRecordCache cache;
  const char* text = job_ptr->admin_comment;
  return cache.get(job_ptr->job_id, text ? std::string_view(text) : std::string_view());
}

PreemptCandidate preemption_view(const job_record_t* job_ptr) {
  return mlsched::preemption_view(job_ptr->job_id, *job_record_of(job_ptr), job_ptr->restart_cnt);
}

// Slurm records GPUs per job, not per node, in the TRES string: a multi-node job's
// GPUs are taken as spread evenly over its nodes, which is what --gres=gpu:N per
// node gives.
PreemptCandidate running_view(const job_record_t* job_ptr, const Config& config) {
  PreemptCandidate c = preemption_view(job_ptr);
  c.team = str(job_ptr->account);
  const auto gpus = gpu_counts_from_tres(str(job_ptr->tres_fmt_alloc_str));
  c.gpu_type = gpus.single_type();
  const auto nodes = expand_hostlist(str(job_ptr->nodes));
  if (!nodes.empty()) {
    const uint32_t total = gpus.total();
    const uint32_t per = total / nodes.size(), extra = total % nodes.size();
    for (size_t i = 0; i < nodes.size(); ++i) c.gpus_on_node[nodes[i]] = per + (i < extra ? 1 : 0);
  }
  c.start_time = job_ptr->start_time;
  if (job_ptr->part_ptr) c.partition = str(job_ptr->part_ptr->name);
  c.quota_kind = quota_kind(config, c.gpu_type, c.partition);
  // What `mlsched ckpt done` reported in the job's Comment: string parsing only
  // (callers hold the job lock). lost_work() clamps it to this run, so a false
  // report can only make this job the cheaper victim.
  c.last_checkpoint = checkpoint_report(str(job_ptr->comment));
  return c;
}

}  // namespace mlsched::plugin
