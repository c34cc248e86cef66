// The typed cluster model every mlsched policy works on: GPU nodes, their GPU type
// and NVLink cliques, multi-node NVLink domains, switches, and teams. Plugins fill
// it from Slurm's tables; the core never sees a Slurm struct.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/tres.h"  // parse_node_gres
#include "core/types.h"

namespace mlsched {

struct GpuNode {
  std::string name;
  std::string gpu_type;                        // empty when the node has no GPUs
  uint32_t gpus = 0;
  std::vector<std::vector<int>> nvlink_cliques;  // GPU indices linked by NVLink
  std::string nvlink_domain;                   // empty: not in a multi-node domain
  std::string leaf_switch;                     // empty: no switch topology known
  std::vector<std::string> features;
};

struct SwitchSpec {
  std::string name;
  int level = 0;                    // 0 = leaf
  std::vector<std::string> nodes;   // every node below this switch
};

// A GPU pool: a Slurm partition, by name, and its nodes. A job names the pools it
// accepts (-p h100,a100).
struct Pool {
  std::string name;
  std::vector<std::string> nodes;
};

struct Team {
  std::string name;                       // a Slurm account
  uint32_t fairshare = 1;
  std::map<std::string, uint32_t> gpu_quota;  // gpu_type -> guaranteed GPUs
};

// What Slurm says of a node's condition, as a shell (node_record_t) or the tool
// (node_info_t) reads it.
struct NodeCondition {
  bool down = false;
  bool drained = false;         // DRAIN flag, draining or drained
  bool failing = false;         // FAIL flag
  bool not_responding = false;  // NO_RESPOND flag
  bool not_yet_up = false;      // FUTURE or UNKNOWN: never registered since slurmctld started
};
// The one definition of a node mlsched may place a job on, count free GPUs on, or
// preempt for: select, preempt and `mlsched why`/`top` all use it.
bool usable_node(const NodeCondition& c);

// A node's live state at one moment (a snapshot taken under slurmctld's locks, or
// read by the tool from slurm_load_node). Kept parallel to Cluster::nodes().
struct NodeState {
  bool usable = true;             // up and schedulable (not down, drained, or failing)
  std::vector<bool> gpu_busy;     // by GPU index; size = the node's GPU count
  uint32_t recent_failures = 0;   // node failures within the admin's window

  uint32_t free_gpus() const {
    uint32_t n = 0;
    for (bool busy : gpu_busy) n += busy ? 0 : 1;
    return usable ? n : 0;
  }
};
using ClusterState = std::vector<NodeState>;

// Groups GPUs into NVLink cliques from a gres.conf-style link matrix
// (links[i][j] > 0: GPUs i and j are linked; the diagonal is ignored). Cliques are
// connected components, in order of their lowest GPU index.
std::vector<std::vector<int>> cliques_from_links(const std::vector<std::vector<int>>& links);

// What slurmctld (node_record_t) or libslurm (node_info_t) says of one node, before
// it is a model node. The plugins and the tool fill this and nothing else, so both
// build their model with build_cluster_model() and see the same cluster.
struct NodeFacts {
  std::string name;
  std::string features;                         // "h100,ib" as slurm.conf gives them
  std::string gres;                             // the configured Gres= ("gpu:h100:8(S:0-1)")
  std::vector<std::vector<int>> nvlink_cliques; // from the Links= matrix (slurmd's, or gres.conf's)
};

// What build_cluster_model() found wrong, by how the caller reports it.
struct ModelProblems {
  std::vector<std::string> nodes;           // a node's Gres= that cannot be read (its GPUs are left out)
  std::vector<std::string> mixed_gpu_types; // a node with several GPU types (the first is used)
  std::vector<std::string> nvlink_domains;  // an NvlinkDomain naming a node Slurm does not know
};

class Cluster;
// The one builder of the cluster model: nodes (GPU type and count from Gres=,
// features, NVLink cliques), then the NVLink domains of mlsched.conf, then the
// switches (every level; leaf switches also set each node's leaf_switch).
ModelProblems build_cluster_model(Cluster& out, std::vector<NodeFacts> nodes,
                                  const std::vector<NvlinkDomainSpec>& nvlink_domains,
                                  std::vector<SwitchSpec> switches);

// A job's gang: `nodes` nodes; per node `gpus_per_node` GPUs when that is what it
// asked for, else `total_gpus` spread over them.
struct GangShape {
  uint32_t nodes = 1;
  uint32_t gpus_per_node = 0;
  uint32_t total_gpus = 0;
};

// How well a gang could fit into the best single unit of a scope on an *empty*
// cluster: used to reject requests that can never run as asked.
struct ScopeFit {
  bool fits = false;
  std::string unit;        // the largest unit ("nvl2", "gpu05", "sw1", "cluster")
  uint32_t unit_gpus = 0;  // GPUs of the requested type in that unit
  uint32_t unit_nodes = 0; // nodes of the requested type in that unit
};

// The cluster's topology grouped for placement: for each scope (and each switch
// level), its units and their member nodes. Derived from the nodes, domains and
// switches, so it is built once and reused by every placement decision.
struct TopologyUnit {
  std::string name;
  int context = -1;              // index of the enclosing unit one scope wider, for tie-breaks
  std::vector<size_t> members;   // indices into Cluster::nodes()
};
struct TopologyLevel {
  Locality scope = Locality::any;
  std::vector<TopologyUnit> units;
};

class Cluster {
 public:
  Cluster() = default;
  Cluster(Cluster&& other) noexcept { *this = std::move(other); }
  Cluster& operator=(Cluster&& other) noexcept;

  void add_node(GpuNode node);
  // Assigns nodes to NVLink domains. Returns problems (unknown node names).
  std::vector<std::string> apply_nvlink_domains(const std::vector<NvlinkDomainSpec>& domains);
  // Leaf switches set each node's leaf_switch; upper levels are kept for placement.
  void set_switches(std::vector<SwitchSpec> switches);
  void set_teams(std::vector<Team> teams) { teams_ = std::move(teams); }

  const std::vector<GpuNode>& nodes() const { return nodes_; }
  const std::vector<SwitchSpec>& switches() const { return switches_; }
  const std::vector<Team>& teams() const { return teams_; }
  const GpuNode* find_node(std::string_view name) const;

  // GPU types present, as spelled in Slurm's configuration, sorted.
  std::vector<std::string> gpu_types() const;
  // The cluster's spelling of a type, matched case-insensitively.
  std::optional<std::string> canonical_gpu_type(std::string_view type) const;
  bool has_nvlink_domains() const;
  bool has_switches() const;
  // The units of `scope` a node belongs to, narrowest first: its name, its NVLink
  // domain, every switch above it (leaf first, then each upper level), "cluster".
  // The one definition job_submit (best_fit), why and placement's scopes agree on.
  std::vector<std::string> units_of(const GpuNode& n, Locality scope) const;
  uint32_t total_gpus(std::string_view gpu_type) const;

  // Best single unit of `scope` for a gang of one GPU type.
  ScopeFit best_fit(Locality scope, std::string_view gpu_type, const GangShape& gang) const;

  // Every topology level, narrowest first: nodes, NVLink domains, each switch level,
  // the whole cluster. Built on first use after a change; safe to call from several
  // threads; the result stays valid after later changes.
  std::shared_ptr<const std::vector<TopologyLevel>> topology() const;

 private:
  void topology_changed();

  std::vector<GpuNode> nodes_;
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<SwitchSpec> switches_;
  std::vector<Team> teams_;
  mutable std::unique_ptr<std::mutex> topology_mutex_ = std::make_unique<std::mutex>();
  mutable std::shared_ptr<const std::vector<TopologyLevel>> topology_;
};

}  // namespace mlsched
