// Cluster model queries that do not depend on live allocation state.
#include "core/cluster.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>

#include "core/text.h"

namespace mlsched {

ModelProblems build_cluster_model(Cluster& out, std::vector<NodeFacts> nodes,
                                  const std::vector<NvlinkDomainSpec>& nvlink_domains,
                                  std::vector<SwitchSpec> switches) {
  ModelProblems problems;
  for (auto& facts : nodes) {
    GpuNode node;
    node.name = std::move(facts.name);
    if (!facts.features.empty()) node.features = split(facts.features, ',');
    try {
      for (const auto& g : parse_node_gres(facts.gres)) {
        if (g.name != "gpu") continue;
        if (node.gpu_type.empty()) node.gpu_type = g.type;
        else if (g.type != node.gpu_type)
          problems.mixed_gpu_types.push_back("node " + node.name + " has several GPU types; using " + node.gpu_type);
        node.gpus += static_cast<uint32_t>(std::min<uint64_t>(g.count, kMaxGpusPerNode));
      }
    } catch (const std::invalid_argument& e) {
      problems.nodes.push_back("node " + node.name + ": " + e.what());
      node.gpu_type.clear();
      node.gpus = 0;
    }
    node.nvlink_cliques = std::move(facts.nvlink_cliques);
    out.add_node(std::move(node));
  }
  problems.nvlink_domains = out.apply_nvlink_domains(nvlink_domains);
  out.set_switches(std::move(switches));
  return problems;
}

std::vector<std::vector<int>> cliques_from_links(const std::vector<std::vector<int>>& links) {
  const int n = static_cast<int>(links.size());
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> root = [&](int x) { return parent[x] == x ? x : parent[x] = root(parent[x]); };
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n && j < static_cast<int>(links[i].size()); ++j)
      if (i != j && links[i][j] > 0) parent[root(i)] = root(j);
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < n; ++i) groups[root(i)].push_back(i);
  std::vector<std::vector<int>> out;
  for (auto& [r, members] : groups) out.push_back(members);
  std::sort(out.begin(), out.end());
  return out;
}

Cluster& Cluster::operator=(Cluster&& other) noexcept {
  nodes_ = std::move(other.nodes_);
  index_ = std::move(other.index_);
  switches_ = std::move(other.switches_);
  teams_ = std::move(other.teams_);
  topology_ = std::move(other.topology_);
  if (!topology_mutex_) topology_mutex_ = std::make_unique<std::mutex>();
  return *this;
}

void Cluster::topology_changed() {
  std::lock_guard<std::mutex> lock(*topology_mutex_);
  topology_.reset();
}

void Cluster::add_node(GpuNode node) {
  index_[node.name] = nodes_.size();
  nodes_.push_back(std::move(node));
  topology_changed();
}

std::shared_ptr<const std::vector<TopologyLevel>> Cluster::topology() const {
  {
    std::lock_guard<std::mutex> lock(*topology_mutex_);
    if (!topology_) {
      auto built = std::make_shared<std::vector<TopologyLevel>>();
      // Units keyed by name, in name order so results do not depend on node order.
      auto group = [&](Locality l, auto key_of) {
        std::map<std::string, std::vector<size_t>> by_name;
        for (size_t i = 0; i < nodes_.size(); ++i) {
          const std::string key = key_of(nodes_[i]);
          if (!key.empty()) by_name[key].push_back(i);
        }
        TopologyLevel level;
        level.scope = l;
        for (auto& [name, members] : by_name) level.units.push_back({name, -1, std::move(members)});
        return level;
      };
      built->push_back(group(Locality::node, [](const GpuNode& n) { return n.name; }));
      built->push_back(group(Locality::nvlink_domain, [](const GpuNode& n) { return n.nvlink_domain; }));
      int max_level = -1;
      for (const auto& s : switches_) max_level = std::max(max_level, s.level);
      for (int lvl = 0; lvl <= max_level; ++lvl) {
        TopologyLevel level;
        level.scope = Locality::switch_scope;
        for (const auto& s : switches_) {
          if (s.level != lvl) continue;
          TopologyUnit u;
          u.name = s.name;
          for (const auto& n : s.nodes) {
            auto it = index_.find(n);
            if (it != index_.end()) u.members.push_back(it->second);
          }
          std::sort(u.members.begin(), u.members.end());
          if (!u.members.empty()) level.units.push_back(std::move(u));
        }
        // A single switch spanning everything adds nothing over the whole cluster.
        if (!level.units.empty() && !(level.units.size() == 1 && level.units[0].members.size() == nodes_.size()))
          built->push_back(std::move(level));
      }
      TopologyLevel all;
      all.scope = Locality::any;
      TopologyUnit everything{"cluster", -1, {}};
      everything.members.resize(nodes_.size());
      std::iota(everything.members.begin(), everything.members.end(), 0);
      all.units.push_back(std::move(everything));
      built->push_back(std::move(all));
      // Context of each unit: the unit of the next level that holds its first node.
      for (size_t l = 0; l + 1 < built->size(); ++l) {
        std::vector<int> owner(nodes_.size(), -1);
        for (size_t u = 0; u < (*built)[l + 1].units.size(); ++u)
          for (size_t i : (*built)[l + 1].units[u].members) owner[i] = static_cast<int>(u);
        for (auto& unit : (*built)[l].units) unit.context = unit.members.empty() ? -1 : owner[unit.members[0]];
      }
      topology_ = built;
    }
    return topology_;
  }
}

const GpuNode* Cluster::find_node(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

std::vector<std::string> Cluster::apply_nvlink_domains(const std::vector<NvlinkDomainSpec>& domains) {
  std::vector<std::string> problems;
  for (const auto& d : domains) {
    for (const auto& name : d.nodes) {
      auto it = index_.find(name);
      if (it == index_.end()) {
        problems.push_back("NvlinkDomain=" + d.name + " names node " + name + ", which Slurm does not know");
        continue;
      }
      nodes_[it->second].nvlink_domain = d.name;
    }
  }
  topology_changed();
  return problems;
}

void Cluster::set_switches(std::vector<SwitchSpec> switches) {
  switches_ = std::move(switches);
  for (const auto& s : switches_) {
    if (s.level != 0) continue;
    for (const auto& name : s.nodes) {
      auto it = index_.find(name);
      if (it != index_.end()) nodes_[it->second].leaf_switch = s.name;
    }
  }
  topology_changed();
}

std::vector<std::string> Cluster::gpu_types() const {
  std::set<std::string> types;
  for (const auto& n : nodes_)
    if (!n.gpu_type.empty() && n.gpus > 0) types.insert(n.gpu_type);
  return {types.begin(), types.end()};
}

std::optional<std::string> Cluster::canonical_gpu_type(std::string_view type) const {
  const std::string want = lowercase(type);
  for (const auto& t : gpu_types())
    if (lowercase(t) == want) return t;
  return std::nullopt;
}

bool Cluster::has_nvlink_domains() const {
  return std::any_of(nodes_.begin(), nodes_.end(), [](const GpuNode& n) { return !n.nvlink_domain.empty(); });
}

bool usable_node(const NodeCondition& c) {
  return !(c.down || c.drained || c.failing || c.not_responding || c.not_yet_up);
}

bool Cluster::has_switches() const {
  // A switch of any level with a known node counts: a gang may fit under a spine
  // whose leaves topology.conf leaves out.
  for (const auto& s : switches_)
    for (const auto& name : s.nodes)
      if (index_.count(name)) return true;
  return false;
}

std::vector<std::string> Cluster::units_of(const GpuNode& n, Locality scope) const {
  switch (scope) {
    case Locality::node: return {n.name};
    case Locality::nvlink_domain:
      if (n.nvlink_domain.empty()) return {};
      return {n.nvlink_domain};
    case Locality::switch_scope: {
      std::vector<const SwitchSpec*> above;
      for (const auto& s : switches_)
        if (std::find(s.nodes.begin(), s.nodes.end(), n.name) != s.nodes.end()) above.push_back(&s);
      std::stable_sort(above.begin(), above.end(),
                       [](const SwitchSpec* a, const SwitchSpec* b) { return a->level < b->level; });
      std::vector<std::string> out;
      for (const SwitchSpec* s : above) out.push_back(s->name);
      return out;
    }
    case Locality::any: return {"cluster"};
  }
  return {};
}

uint32_t Cluster::total_gpus(std::string_view gpu_type) const {
  uint32_t total = 0;
  for (const auto& n : nodes_)
    if (gpu_type.empty() || n.gpu_type == gpu_type) total += n.gpus;
  return total;
}

ScopeFit Cluster::best_fit(Locality scope, std::string_view gpu_type, const GangShape& gang) const {
  // Nodes outside any unit of the scope cannot host a gang that asked for it; a
  // node under a leaf and a spine counts for both.
  struct Tally {
    uint32_t gpus = 0;        // GPUs of the type on nodes that can take their share
    uint32_t nodes = 0;       // such nodes
  };
  std::map<std::string, Tally> units;
  for (const auto& n : nodes_) {
    if (n.gpus == 0 || (!gpu_type.empty() && n.gpu_type != gpu_type)) continue;
    if (gang.gpus_per_node > 0 && n.gpus < gang.gpus_per_node) continue;
    for (const std::string& unit : units_of(n, scope)) {
      Tally& t = units[unit];
      t.gpus += n.gpus;
      t.nodes += 1;
    }
  }
  const uint32_t need_gpus = gang.gpus_per_node > 0 ? gang.gpus_per_node * gang.nodes : gang.total_gpus;
  // A one-node scope holds one node whatever the gang asks for.
  const uint32_t need_nodes = scope == Locality::node ? 1 : gang.nodes;
  ScopeFit best;
  for (const auto& [name, t] : units) {
    const bool fits = t.nodes >= need_nodes && t.gpus >= need_gpus && (scope != Locality::node || gang.nodes <= 1);
    if ((fits && !best.fits) || (fits == best.fits && t.gpus > best.unit_gpus)) {
      best.fits = fits;
      best.unit = name;
      best.unit_gpus = t.gpus;
      best.unit_nodes = t.nodes;
    }
  }
  return best;
}

}  // namespace mlsched
