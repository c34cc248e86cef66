// Builds the core's Cluster model from slurmctld's node and switch tables.
// Call with at least the node read lock held (job_submit and select calls have it).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <mutex>
#include <vector>

#include "core/cluster.h"
#include "core/config.h"
#include "core/placement.h"

struct node_record;  // slurmctld's node_record_t

namespace mlsched::plugin {

// A node record's state flags, for core's usable_node(). Caller holds the node read lock.
NodeCondition node_condition(const struct node_record* node_ptr);

// The partitions each node is in, indexed like slurmctld's node table (core's
// NodeGpus.pools). Empty unless a TeamQuota names a pool: only then do partitions
// change what a team's GPUs count as (core quota_kind), and the walk over
// partitions x nodes is skipped otherwise. Caller holds the node and partition read locks.
std::vector<std::vector<std::string>> partitions_of_nodes(const Config& config);

// The static model plus, for each of its nodes, the index of that node in
// slurmctld's node_record_table_ptr (which may have holes).
struct ClusterModel {
  Cluster cluster;
  std::vector<uint32_t> slurm_index;
  // Derived once per build, because select asks for them for every job it tests:
  // model index of each slurmctld node index (-1: not in the model),
  std::vector<int> model_index;
  // and the GPU nodes of each type (core/placement GpuNodeIndex).
  GpuNodeIndex index;
};

class ClusterSnapshot {
 public:
  // Rebuilt only when Slurm's node table or the configuration changed.
  std::shared_ptr<const ClusterModel> get(const Config& config, unsigned config_generation, const char* log_prefix);

 private:
  std::mutex mutex_;
  std::shared_ptr<const ClusterModel> cluster_;
  long long node_update_ = -1;
  unsigned config_generation_ = 0;
  int switch_count_ = -1;
  int node_count_ = -1;
  long long built_at_ = 0;
};

}  // namespace mlsched::plugin
