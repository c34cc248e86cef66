// Copies what the core needs out of node_record_t / switch_record_t.
#include "plugins/common/cluster_snapshot.h"

#include <stdexcept>

#include "core/text.h"
#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

namespace {

std::shared_ptr<const Cluster> build(const Config& config, const char* log_prefix) {
  auto cluster = std::make_shared<Cluster>();
  node_record_t* node_ptr;
  for (int i = 0; (node_ptr = next_node(&i)); i++) {
    GpuNode node;
    node.name = node_ptr->name;
    if (node_ptr->features) node.features = split(node_ptr->features, ',');
    try {
      for (const auto& g : parse_node_gres(node_ptr->gres ? node_ptr->gres : "")) {
        if (g.name != "gpu") continue;
        if (node.gpu_type.empty()) node.gpu_type = g.type;
        else if (g.type != node.gpu_type)
          debug("%s: node %s has several GPU types; using %s", log_prefix, node_ptr->name, node.gpu_type.c_str());
        node.gpus += static_cast<uint32_t>(g.count);
      }
    } catch (const std::invalid_argument& e) {
      error("%s: node %s: %s", log_prefix, node_ptr->name, e.what());
    }
    cluster->add_node(std::move(node));
  }
  for (const auto& problem : cluster->apply_nvlink_domains(config.nvlink_domains))
    error("%s: %s", log_prefix, problem.c_str());
  std::vector<SwitchSpec> switches;
  for (int i = 0; i < switch_record_cnt; i++) {
    const switch_record_t& sw = switch_record_table[i];
    SwitchSpec spec;
    spec.name = sw.name ? sw.name : "";
    spec.level = sw.level;
    // node_bitmap covers every node below the switch (nodes= lists only direct ones).
    if (sw.node_bitmap) {
      for (int n = 0; n < node_record_count; n++)
        if (bit_test(sw.node_bitmap, n) && node_record_table_ptr[n])
          spec.nodes.push_back(node_record_table_ptr[n]->name);
    }
    switches.push_back(std::move(spec));
  }
  cluster->set_switches(std::move(switches));
  return cluster;
}

}  // namespace

std::shared_ptr<const Cluster> ClusterSnapshot::get(const Config& config, unsigned config_generation,
                                                    const char* log_prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cluster_ || node_update_ != static_cast<long long>(last_node_update) ||
      config_generation_ != config_generation || switch_count_ != switch_record_cnt) {
    cluster_ = build(config, log_prefix);
    node_update_ = static_cast<long long>(last_node_update);
    config_generation_ = config_generation;
    switch_count_ = switch_record_cnt;
  }
  return cluster_;
}

}  // namespace mlsched::plugin
