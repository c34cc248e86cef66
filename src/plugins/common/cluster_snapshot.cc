// Copies what the core needs out of node_record_t / switch_record_t.
#include "plugins/common/cluster_snapshot.h"

#include <ctime>
#include <stdexcept>

#include "core/text.h"
#include "plugins/common/ctld.h"
#include "plugins/common/release.h"
#include "plugins/common/slurm_headers.h"

namespace mlsched::plugin {

namespace {

// NVLink cliques of a node from the Links= matrix slurmd reported for its GPUs.
std::vector<std::vector<int>> gpu_cliques(node_record_t* node_ptr) {
  if (!node_ptr->gres_list) return {};
  std::vector<std::vector<int>> cliques;
  ListIterator it = list_iterator_create(node_ptr->gres_list);
  gres_state_t* gres_state;
  while ((gres_state = static_cast<gres_state_t*>(list_next(it)))) {
    if (!gres_state->gres_name || std::string(gres_state->gres_name) != "gpu") continue;
    auto* ns = static_cast<gres_node_state_t*>(gres_state->gres_data);
    if (!ns || !ns->links_cnt || ns->link_len <= 0) continue;
    std::vector<std::vector<int>> links(ns->link_len, std::vector<int>(ns->link_len, 0));
    for (int a = 0; a < ns->link_len; a++)
      for (int b = 0; b < ns->link_len; b++) links[a][b] = ns->links_cnt[a] ? ns->links_cnt[a][b] : 0;
    cliques = cliques_from_links(links);
  }
  list_iterator_destroy(it);
  return cliques;
}

std::shared_ptr<const ClusterModel> build(const Config& config, const char* log_prefix) {
  auto model = std::make_shared<ClusterModel>();
  Cluster* cluster = &model->cluster;
  node_record_t** table = ctld::node_table();
  const int count = ctld::node_count();
  std::vector<NodeFacts> facts;
  for (int i = 0; table && i < count; i++) {
    node_record_t* node_ptr = table[i];
    if (!node_ptr) continue;
    facts.push_back({node_ptr->name, node_ptr->features ? node_ptr->features : "", node_ptr->gres ? node_ptr->gres : "",
                     gpu_cliques(node_ptr)});
    model->slurm_index.push_back(node_ptr->index);
  }
  std::vector<SwitchSpec> switches;
  for (const release::SwitchView& sw : release::switches()) {
    SwitchSpec spec;
    spec.name = sw.name;
    spec.level = sw.level;
    if (sw.nodes) {
      for (int n = 0; table && n < count && n < bit_size(sw.nodes); n++)
        if (bit_test(sw.nodes, n) && table[n]) spec.nodes.push_back(table[n]->name);
    }
    switches.push_back(std::move(spec));
  }
  const ModelProblems problems =
      build_cluster_model(*cluster, std::move(facts), config.nvlink_domains, std::move(switches));
  for (const auto& p : problems.nodes) error("%s: %s", log_prefix, p.c_str());
  for (const auto& p : problems.mixed_gpu_types) debug("%s: %s", log_prefix, p.c_str());
  // Plugins load (and preempt/mlsched's snapshot thread starts) before slurmctld
  // reads slurm.conf: an empty node table then is "not loaded yet", and every node
  // of every NvlinkDomain would look unknown. get() rebuilds as soon as the node
  // count changes, and that build reports the real problems.
  const bool nodes_loaded = table && count > 0;
  for (const auto& p : problems.nvlink_domains)
    if (nodes_loaded) error("%s: %s", log_prefix, p.c_str());
  for (size_t k = 0; k < model->slurm_index.size(); ++k) {
    const uint32_t i = model->slurm_index[k];
    if (model->model_index.size() <= i) model->model_index.resize(i + 1, -1);
    model->model_index[i] = static_cast<int>(k);
  }
  model->index = GpuNodeIndex::of(*cluster);
  return model;
}

}  // namespace

std::shared_ptr<const ClusterModel> ClusterSnapshot::get(const Config& config, unsigned config_generation,
                                                    const char* log_prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  // last_node_update moves with every allocation, while the model (GPU types and
  // counts, cliques, domains, switches) changes only with the configuration or a
  // node's (re)registration. Rebuilding on every allocation made each scheduling
  // pass rebuild it; so a changed node table is picked up at most every
  // kRefresh, and a changed node count, switch table or mlsched.conf at once.
  constexpr time_t kRefresh = 30;
  const long long node_update = static_cast<long long>(ctld::last_node_update());
  const time_t now = time(nullptr);
  const bool structure_changed = !cluster_ || config_generation_ != config_generation ||
                                 switch_count_ != release::switch_count() || node_count_ != ctld::node_count();
  const bool nodes_changed = node_update_ != node_update && now - built_at_ >= kRefresh;
  if (structure_changed || nodes_changed) {
    cluster_ = build(config, log_prefix);
    node_update_ = node_update;
    config_generation_ = config_generation;
    switch_count_ = release::switch_count();
    node_count_ = ctld::node_count();
    built_at_ = now;
  }
  return cluster_;
}

NodeCondition node_condition(const node_record_t* node_ptr) {
  NodeCondition c;
  c.down = IS_NODE_DOWN(node_ptr);
  c.drained = IS_NODE_DRAIN(node_ptr);
  c.failing = IS_NODE_FAIL(node_ptr);
  c.not_responding = IS_NODE_NO_RESPOND(node_ptr);
  c.not_yet_up = IS_NODE_FUTURE(node_ptr) || IS_NODE_UNKNOWN(node_ptr);
  return c;
}

std::vector<std::vector<std::string>> partitions_of_nodes(const Config& config) {
  std::vector<std::vector<std::string>> out;
  List parts = ctld::partition_list();
  if (config.pool_quota_kinds.empty() || !parts) return out;
  const int count = ctld::node_count();
  out.resize(count > 0 ? count : 0);
  ListIterator it = list_iterator_create(parts);
  while (auto* part_ptr = static_cast<part_record_t*>(list_next(it))) {
    if (!part_ptr->node_bitmap || !part_ptr->name) continue;
    const int bits = bit_size(part_ptr->node_bitmap);
    for (int i = 0; i < count && i < bits; i++)
      if (bit_test(part_ptr->node_bitmap, i)) out[i].push_back(part_ptr->name);
  }
  list_iterator_destroy(it);
  return out;
}

}  // namespace mlsched::plugin
