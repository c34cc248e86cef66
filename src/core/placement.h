// Gang placement: which nodes a GPU job may use, in order of preference, so that
// a gang lands in the smallest topology scope that fits, on one GPU type, packed
// onto partly used nodes and domains so whole ones stay free for large jobs.
// Slurm-free: the select plugin copies Slurm's tables into Cluster/ClusterState,
// calls plan_placement(), and lets cons_tres allocate inside each candidate in turn.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/types.h"

namespace mlsched {

struct PlacementRequest {
  GangShape gang;
  std::vector<std::string> gpu_types;  // ordered preference; empty = any single type
  Locality locality = Locality::any;
  LocalityMode mode = LocalityMode::prefer;
};

struct PlacementPolicy {
  // Gangs of at least this many nodes avoid nodes that failed recently while
  // healthy nodes can hold them.
  uint32_t large_gang_nodes = 2;
  // Candidates kept per scope and type: enough for cons_tres to find one that also
  // satisfies CPUs/memory, few enough to keep a scheduling pass cheap.
  uint32_t max_candidates_per_scope = 8;
  // Config::gpu_type_speed. Set, a job that accepts several types gets its
  // candidates fastest type first (ties keep the user's order; an untyped job's
  // types are then tried one at a time instead of tightest fit across types).
  std::map<std::string, double> type_speed;
};

// One place the job could run now.
struct PlacementCandidate {
  std::string gpu_type;
  Locality scope = Locality::any;   // the scope of `unit`
  std::string unit;                 // "nvl1", "sw0", "gpu05", "cluster"
  std::vector<size_t> nodes;        // best-fit choice inside the unit (indices into Cluster::nodes())
  std::vector<size_t> unit_nodes;   // every eligible node of the unit, for a second try
  uint32_t leftover_gpus = 0;       // free GPUs the unit keeps after placement (lower = tighter fit)
  bool uses_flaky_nodes = false;
  // NVLink cliques the job's GPUs would span beyond the fewest its size allows,
  // summed over `nodes`: candidates that keep shares inside whole cliques come first.
  uint32_t split_cliques = 0;
};

// Why nothing fits now, per GPU type: what the job needs vs what is free.
struct PlacementShortfall {
  std::string gpu_type;
  uint32_t free_gpus = 0;            // free GPUs of this type on eligible nodes
  uint32_t nodes_with_room = 0;      // eligible nodes that could take their share
  std::string best_unit;             // the unit of the requested scope closest to fitting
  uint32_t best_unit_free_gpus = 0;
  uint32_t best_unit_nodes = 0;
};

// select/mlsched records PlacementPlan::reason on a job it cannot place as the
// job's SystemComment, after this prefix; `mlsched why` reads it back from there.
inline constexpr const char* kSelectReasonPrefix = "mlsched: ";
// The reason select recorded, from a SystemComment ("" when it holds none:
// empty, or an admin's own comment).
std::string select_reason_of(std::string_view system_comment);

struct PlacementPlan {
  std::vector<PlacementCandidate> candidates;  // in order of preference
  std::vector<PlacementShortfall> shortfalls;  // filled when `candidates` is empty
  std::string reason;                          // one line for users when nothing fits
};

// `eligible[i]`: node i may be used at all (Slurm's bitmap for this job: partition,
// state, features, exclusions). State is the free/busy GPUs now.
PlacementPlan plan_placement(const Cluster& cluster, const ClusterState& state, const std::vector<bool>& eligible,
                             const PlacementRequest& request, const PlacementPolicy& policy = {});

// The scopes a request may use, narrowest first: a strict request never goes wider
// than asked; a prefer/any request widens up to the whole cluster.
std::vector<Locality> scopes_to_try(const PlacementRequest& request);

// ==== The node sets select/mlsched offers cons_tres, in order ======================
// cons_tres decides CPUs, memory and the rest inside a node set; mlsched decides
// which node sets it is offered and in which order. select/mlsched walks these
// lists, narrowing Slurm's bitmap to each set in turn, and keeps the first (run
// now) or the earliest (will-run) answer. Each offer is a full cons_tres
// evaluation, so every list is bounded by a named limit.

// The nodes with GPUs, and those of each type, in model order: derived once per
// model, because select asks for them for every job it tests.
struct GpuNodeIndex {
  std::vector<std::string> gpu_types;  // Cluster::gpu_types()
  std::vector<size_t> gpu_nodes;
  std::map<std::string, std::vector<size_t>> by_type;
  static GpuNodeIndex of(const Cluster& cluster);
  // Nodes of any of `types` (every GPU node when empty).
  std::vector<size_t> of_types(const std::vector<std::string>& types) const;
};

struct AttemptLimits {
  // Will-run (backfill) of a strict job: one offer per unit it fits in, those with
  // the most free GPUs now first, at most this many; backfill runs it for every
  // pending job, so a large cluster must not cost one simulation per unit.
  size_t will_run_units = 4;
  // Run now: the plan's candidates offered (each its best-fit nodes, then its
  // whole unit when that differs), at most this many.
  size_t run_now_candidates = 4;
  // Preemption with no free room now: units of the allowed scopes as if idle, at
  // most this many.
  size_t preempt_units = 16;
};

enum class AttemptStep {
  ever_fits,        // test-only: any node of an acceptable type ("could it ever run")
  will_run_unit,    // will-run, strict: one unit it fits in
  will_run_type,    // will-run, not strict: all nodes of one acceptable type
  best_fit_nodes,   // run now: the candidate's best-fit nodes
  whole_unit,       // run now: the candidate's whole unit (cons_tres refused the best fit)
  any_of_type,      // run now, not strict: anywhere on one acceptable type
  unit_to_preempt,  // run now with preemption: a unit that preemption could free
};
const char* attempt_step_name(AttemptStep step);

struct PlacementAttempt {
  AttemptStep step = AttemptStep::ever_fits;
  std::vector<size_t> nodes;  // indices into Cluster::nodes()
  std::string gpu_type;       // the one GPU type of `nodes` ("" for ever_fits: every acceptable type)
  // On success (and when nothing is preempted) the shell moves the job's GPU
  // indices inside NVLink cliques: the plan chose these nodes for that.
  bool align_gpus = false;
  // On success the recorded "cannot be placed" reason is cleared.
  bool clears_reason = false;
};

// What select/mlsched offers for one call, in order.
struct AttemptPlan {
  std::vector<PlacementAttempt> attempts;
  // Recorded when none succeeds (run now only): the plan's reason for users.
  std::string reason;
};
// The GPU types a request accepts: its list, or every type the cluster has.
const std::vector<std::string>& acceptable_types(const GpuNodeIndex& index, const PlacementRequest& request);
// Test-only: "could it ever run" on an acceptable type. A federated job whose GPU
// types this cluster has none of is a copy that Slurm keeps here only to track the
// job (docs/regions.md: its types are in other regions, and this region is not among
// its viable siblings), yet Slurm tests it at submission like any job: it is tested on
// every GPU node, and every other attempt still offers it none of them.
AttemptPlan ever_fits_attempts(const GpuNodeIndex& index, const PlacementRequest& request, bool federated = false);
// Will-run: when could it start (the caller keeps the earliest answer).
AttemptPlan will_run_attempts(const Cluster& cluster, const GpuNodeIndex& index, const ClusterState& now,
                              const std::vector<bool>& eligible, const PlacementRequest& request,
                              const PlacementPolicy& policy, const AttemptLimits& limits = {});
// Run now (`may_preempt`: Slurm passed preemption candidates).
AttemptPlan run_now_attempts(const Cluster& cluster, const GpuNodeIndex& index, const ClusterState& now,
                             const std::vector<bool>& eligible, const PlacementRequest& request,
                             const PlacementPolicy& policy, bool may_preempt, const AttemptLimits& limits = {});

// ==== Speed-aware GPU type choice (GpuTypeSpeed) ====================================
// A job that accepts several GPU types runs its work faster on some. With no runtime
// estimate but the user's time limit, the job is taken to need its time limit on the
// slowest type it accepts, and limit x slowest / speed on a faster one. It is started
// now on a slower type only when it would not finish sooner by waiting for a faster
// one (Gavel's throughput-aware allocation, decided per job at its start).

// Speed of a type (1 when not listed).
double gpu_type_speed(const std::map<std::string, double>& speeds, const std::string& type);

// Seconds the job would run on `type`: `time_limit` (seconds) on the slowest of
// `acceptable`, shorter in proportion on faster types. 0 when time_limit is 0.
uint64_t expected_runtime(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                          const std::string& type, uint64_t time_limit);

// The acceptable type worth asking "when could it start" before starting the job
// now: the fastest acceptable type, when it has no offer in `run_now` while a
// slower type does. "" when there is nothing to weigh (speeds unset, one type, the
// fastest type has room, or nothing has room).
std::string faster_type_to_ask(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                               const AttemptPlan& run_now);

// Will-run: slurmctld tests a gpu-type list one type at a time, so one will-run
// call may see only slower types' nodes. The fastest acceptable type when it is
// faster than `best_type` (this call's answer) and is not in `asked` (the types
// whose nodes this call could offer cons_tres); "" otherwise (then the call's own
// comparison already weighed it).
std::string faster_type_not_asked(const std::map<std::string, double>& speeds,
                                  const std::vector<std::string>& acceptable, const std::vector<std::string>& asked,
                                  const std::string& best_type);

struct FasterTypeWait {
  bool wait = false;
  std::string faster_type;   // the type it waits for
  std::string now_type;      // the type it could start on now
  time_t faster_start = 0;   // when it is expected to start on faster_type
  time_t finish_faster = 0;  // expected end there
  time_t finish_now = 0;     // expected end when started now on now_type
  std::string reason;        // for users (select's reason: scontrol show job, mlsched why)
};

// Decides whether to wait: `faster_start` is when the job could start on
// `faster_type` (0: unknown, so no waiting), `time_limit` its limit in seconds
// (0: none, so no waiting); `now_type` the fastest type with room at `now` (for a
// will-run, `now` is that type's start).
FasterTypeWait weigh_faster_type(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                                 const std::string& faster_type, time_t faster_start, const std::string& now_type,
                                 uint64_t time_limit, time_t now);

// Whether a reason select/mlsched recorded (select_reason_of) is a wait for a
// faster GPU type (weigh_faster_type's reason), so `mlsched why` can name it.
bool is_faster_type_wait(std::string_view select_reason);
// The type such a reason waits for ("h100"); "" when it is not a faster-type wait.
std::string faster_type_waited_for(std::string_view select_reason);

// When the job waits for the faster type: empties the run-now plan (the faster
// type has no free room, so what is left could only start it there by preemption
// while a slower type has free GPUs) and makes the plan's reason say why it waits.
// No change when !wait.wait.
void hold_for_faster_type(AttemptPlan& plan, const FasterTypeWait& wait);

// Will-run: which answer to keep among cons_tres's start times per offer. Without
// speeds the earliest start; with them the earliest expected end.
time_t expected_finish(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                       const std::string& type, time_t start, uint64_t time_limit);
// ==== end speed-aware GPU type choice ===============================================

// GPU indices for `count` GPUs on one node, given its NVLink cliques and which GPUs
// are free: inside one clique when possible (the fullest clique that still fits, so
// whole cliques stay free), otherwise spanning the fewest cliques.
// Returns an empty vector when fewer than `count` GPUs are free.
std::vector<int> choose_gpus(const std::vector<std::vector<int>>& cliques, const std::vector<bool>& free,
                             uint32_t count);

// Fragmentation of free GPUs: the share of free GPUs that are not on fully free
// nodes (0 = every free GPU sits on an idle node; 1 = no node is fully free), and the
// same at NVLink-domain level.
struct Fragmentation {
  uint32_t free_gpus = 0;
  uint32_t free_gpus_on_idle_nodes = 0;
  uint32_t idle_nodes = 0;
  uint32_t idle_domains = 0;
  double node_index = 0.0;
  double domain_index = 0.0;
};
Fragmentation measure_fragmentation(const Cluster& cluster, const ClusterState& state);

}  // namespace mlsched
