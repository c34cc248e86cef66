// Placement policy. The pipeline for one job: for each acceptable GPU type (the
// user's order), for each scope from the narrowest that can hold the gang, group
// eligible nodes into units, pick the best-fit nodes inside each unit, and rank
// units by how little free capacity they leave (packing keeps whole nodes, domains
// and switches free for the large gangs that need them).
#include "core/placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <tuple>

#include "core/text.h"

namespace mlsched {

namespace {

// `types` fastest first by `speeds`; ties (and no speeds) keep their order.
std::vector<std::string> types_by_speed(std::vector<std::string> types, const std::map<std::string, double>& speeds) {
  if (speeds.empty()) return types;
  std::stable_sort(types.begin(), types.end(), [&](const std::string& a, const std::string& b) {
    return gpu_type_speed(speeds, a) > gpu_type_speed(speeds, b);
  });
  return types;
}

struct Fit {
  bool ok = false;
  std::vector<size_t> chosen;
  std::vector<size_t> eligible;
  uint32_t unit_free = 0;   // free GPUs of the type in the unit
  uint32_t room_nodes = 0;  // nodes that could take their share
  bool flaky = false;
  uint32_t split = 0;       // extra cliques spanned, summed over the chosen nodes
};

// Cliques that choose_gpus() would spread `count` GPUs over, given `free`.
uint32_t cliques_spanned(const std::vector<std::vector<int>>& cliques, const std::vector<bool>& free,
                         uint32_t count) {
  const std::vector<int> gpus = choose_gpus(cliques, free, count);
  if (gpus.empty()) return 0;
  if (cliques.empty()) return 1;
  uint32_t spanned = 0;
  for (const auto& clique : cliques)
    if (std::any_of(clique.begin(), clique.end(),
                    [&](int g) { return std::binary_search(gpus.begin(), gpus.end(), g); }))
      ++spanned;
  return spanned;
}

// For each node, how many more NVLink cliques a share of `per_node` GPUs would span
// there now than on the same node idle: 0 when its free GPUs hold the share as
// tightly as its links allow. Only nodes with several cliques can split a share.
std::vector<uint32_t> split_cliques(const Cluster& cluster, const ClusterState& state,
                                    const std::vector<uint32_t>& free_of, uint32_t per_node) {
  const auto& nodes = cluster.nodes();
  std::vector<uint32_t> split(nodes.size(), 0);
  if (per_node < 2) return split;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GpuNode& n = nodes[i];
    if (n.nvlink_cliques.size() < 2 || free_of[i] < per_node || per_node >= n.gpus) continue;
    std::vector<bool> free(n.gpus, false), idle(n.gpus, true);
    for (size_t g = 0; g < n.gpus && g < state[i].gpu_busy.size(); ++g) free[g] = !state[i].gpu_busy[g];
    const uint32_t now = cliques_spanned(n.nvlink_cliques, free, per_node);
    const uint32_t best = cliques_spanned(n.nvlink_cliques, idle, per_node);
    split[i] = now > best ? now - best : 0;
  }
  return split;
}

// Best-fit choice of nodes inside one unit, or why it does not fit. `free_of[i]` is
// state[i].free_gpus(), counted once per plan: the sorts below compare it often.
// `split_of[i]`: NVLink cliques the job's share on node i would span beyond the
// fewest its size allows (see split_cliques).
Fit fit_unit(const Cluster& cluster, const ClusterState& state, const std::vector<uint32_t>& free_of,
             const std::vector<uint32_t>& split_of, const std::vector<bool>& eligible, const TopologyUnit& unit,
             const std::string& type, const GangShape& gang, bool allow_flaky) {
  const auto& nodes = cluster.nodes();
  Fit fit;
  std::vector<size_t> room;
  for (size_t i : unit.members) {
    const GpuNode& n = nodes[i];
    if (n.gpus == 0 || n.gpu_type != type || !eligible[i]) continue;
    const uint32_t free = free_of[i];
    fit.unit_free += free;
    if (!allow_flaky && state[i].recent_failures > 0) continue;
    fit.eligible.push_back(i);
    const uint32_t need = gang.gpus_per_node > 0 ? gang.gpus_per_node : 1;
    if (free >= need) room.push_back(i);
  }
  fit.room_nodes = static_cast<uint32_t>(room.size());
  if (gang.gpus_per_node > 0) {
    if (room.size() < gang.nodes) return fit;
    // Nodes where the share stays inside as few NVLink cliques as it can first (a
    // 4-GPU job on a node with a whole free 4-GPU clique, not on one whose 4 free
    // GPUs are scattered), then the fullest: a job takes the tightest spot, leaving
    // idle nodes idle.
    std::stable_sort(room.begin(), room.end(), [&](size_t a, size_t b) {
      return std::make_tuple(split_of[a], free_of[a], state[a].recent_failures) <
             std::make_tuple(split_of[b], free_of[b], state[b].recent_failures);
    });
    fit.chosen.assign(room.begin(), room.begin() + gang.nodes);
  } else {
    // A GPU total (--gpus=N): fewest nodes, most free first.
    std::stable_sort(room.begin(), room.end(),
                     [&](size_t a, size_t b) { return free_of[a] > free_of[b]; });
    uint32_t got = 0;
    for (size_t i : room) {
      if (got >= gang.total_gpus && fit.chosen.size() >= gang.nodes) break;
      fit.chosen.push_back(i);
      got += free_of[i];
    }
    if (got < gang.total_gpus || fit.chosen.size() < gang.nodes) {
      fit.chosen.clear();
      return fit;
    }
  }
  std::sort(fit.chosen.begin(), fit.chosen.end());
  for (size_t i : fit.chosen) {
    fit.flaky = fit.flaky || state[i].recent_failures > 0;
    fit.split += split_of[i];
  }
  fit.ok = true;
  return fit;
}

uint32_t gang_gpus(const GangShape& g) { return g.gpus_per_node > 0 ? g.gpus_per_node * g.nodes : g.total_gpus; }

std::string gang_phrase(const GangShape& g, const std::string& type) {
  std::string s = std::to_string(gang_gpus(g)) + (type.empty() ? "" : " " + type) + " GPUs";
  if (g.gpus_per_node > 0 && g.nodes > 1)
    s += " (" + std::to_string(g.nodes) + " nodes x " + std::to_string(g.gpus_per_node) + ")";
  return s;
}

}  // namespace

std::vector<Locality> scopes_to_try(const PlacementRequest& request) {
  std::vector<Locality> scopes;
  const Locality order[] = {Locality::node, Locality::nvlink_domain, Locality::switch_scope, Locality::any};
  const bool strict = request.mode == LocalityMode::strict && request.locality != Locality::any;
  for (Locality l : order) {
    if (l == Locality::node && request.gang.nodes > 1) continue;
    scopes.push_back(l);
    if (strict && l == request.locality) break;
  }
  return scopes;
}

namespace {

// Nothing fits now: says, per type, how far the best unit of the asked scope is, in the
// plan's shortfalls and its one-line reason.
void explain_no_fit(const Cluster& cluster, const ClusterState& state, const std::vector<bool>& eligible,
                    const PlacementRequest& request, const std::vector<uint32_t>& free_of,
                    const std::vector<uint32_t>& split_of, const std::vector<std::vector<std::string>>& type_groups,
                    const std::vector<Locality>& scopes, PlacementPlan& plan) {
  const auto& nodes = cluster.nodes();
  const auto levels = cluster.topology();
  const Locality asked = request.locality == Locality::any ? Locality::any : request.locality;
  std::vector<std::string> parts;
  for (const auto& group : type_groups) {
    for (const auto& type : group) {
      PlacementShortfall s;
      s.gpu_type = type;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].gpu_type != type || !eligible[i]) continue;
        const uint32_t free = free_of[i];
        s.free_gpus += free;
        const uint32_t need = request.gang.gpus_per_node > 0 ? request.gang.gpus_per_node : 1;
        if (free >= need) ++s.nodes_with_room;
      }
      for (const auto& level : *levels) {
        if (level.scope != asked) continue;
        for (const auto& u : level.units) {
          Fit fit = fit_unit(cluster, state, free_of, split_of, eligible, u, type, request.gang, true);
          if (fit.unit_free > s.best_unit_free_gpus || s.best_unit.empty()) {
            s.best_unit = u.name;
            s.best_unit_free_gpus = fit.unit_free;
            s.best_unit_nodes = fit.room_nodes;
          }
        }
        break;  // the narrowest level of the asked scope
      }
      std::string p = type + ": " + std::to_string(s.free_gpus) + " free on " + std::to_string(s.nodes_with_room) +
                      " node" + (s.nodes_with_room == 1 ? "" : "s") + " with room";
      if (asked != Locality::any && !s.best_unit.empty())
        p += ", at most " + std::to_string(s.best_unit_free_gpus) + " in " + scope_phrase(asked) + " (" +
             s.best_unit + ")";
      parts.push_back(p);
      plan.shortfalls.push_back(s);
    }
  }
  const std::string type_word = request.gpu_types.size() == 1 ? request.gpu_types[0] : "";
  plan.reason = "needs " + gang_phrase(request.gang, type_word) + " in " + scope_phrase(scopes.back()) +
                "; free now: " + join(parts, "; ");
}

}  // namespace

PlacementPlan plan_placement(const Cluster& cluster, const ClusterState& state, const std::vector<bool>& eligible,
                             const PlacementRequest& request, const PlacementPolicy& policy) {
  PlacementPlan plan;
  const auto& nodes = cluster.nodes();
  if (state.size() != nodes.size() || eligible.size() != nodes.size() || gang_gpus(request.gang) == 0) return plan;

  // Types in the user's order; an untyped job still never mixes types, and tries
  // every type the cluster has, tightest fit first. With speeds, the fastest type
  // first (an untyped job's too).
  std::vector<std::vector<std::string>> type_groups;
  if (request.gpu_types.empty() && policy.type_speed.empty()) type_groups.push_back(cluster.gpu_types());
  else
    for (const auto& t : types_by_speed(request.gpu_types.empty() ? cluster.gpu_types() : request.gpu_types,
                                        policy.type_speed))
      type_groups.push_back({t});

  std::vector<uint32_t> free_of(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) free_of[i] = state[i].free_gpus();
  const std::vector<uint32_t> split_of = split_cliques(cluster, state, free_of, request.gang.gpus_per_node);

  const bool large = request.gang.nodes >= policy.large_gang_nodes;
  const std::vector<Locality> scopes = scopes_to_try(request);
  const auto levels = cluster.topology();
  for (const auto& group : type_groups) {
    for (Locality scope : scopes) {
      for (size_t l = 0; l < levels->size(); ++l) {
        const TopologyLevel& level = (*levels)[l];
        if (level.scope != scope) continue;
        // Free GPUs of each enclosing unit, so ties go to the fuller domain/switch.
        std::vector<uint32_t> context_free;
        if (l + 1 < levels->size()) {
          for (const auto& outer : (*levels)[l + 1].units) {
            uint32_t free = 0;
            for (size_t i : outer.members) free += free_of[i];
            context_free.push_back(free);
          }
        }
        auto context_of = [&](const TopologyUnit& u) {
          return u.context >= 0 && static_cast<size_t>(u.context) < context_free.size() ? context_free[u.context] : 0u;
        };
        std::vector<std::tuple<bool, uint32_t, uint32_t, uint32_t, std::string, PlacementCandidate>> found;
        for (const auto& type : group) {
          for (const auto& u : level.units) {
            // Large gangs first try without nodes that failed recently.
            Fit fit = fit_unit(cluster, state, free_of, split_of, eligible, u, type, request.gang, !large);
            if (!fit.ok && large) fit = fit_unit(cluster, state, free_of, split_of, eligible, u, type, request.gang, true);
            if (!fit.ok) continue;
            PlacementCandidate c;
            c.gpu_type = type;
            c.scope = scope;
            c.unit = u.name;
            c.nodes = std::move(fit.chosen);
            c.unit_nodes = std::move(fit.eligible);
            c.leftover_gpus = fit.unit_free - std::min(fit.unit_free, gang_gpus(request.gang));
            c.uses_flaky_nodes = fit.flaky;
            c.split_cliques = fit.split;
            found.emplace_back(c.uses_flaky_nodes, c.split_cliques, c.leftover_gpus, context_of(u), u.name,
                               std::move(c));
          }
        }
        std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
          return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a), std::get<4>(a)) <
                 std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b), std::get<4>(b));
        });
        for (size_t k = 0; k < found.size() && k < policy.max_candidates_per_scope; ++k)
          plan.candidates.push_back(std::move(std::get<5>(found[k])));
      }
    }
  }
  if (!plan.candidates.empty()) return plan;

  explain_no_fit(cluster, state, eligible, request, free_of, split_of, type_groups, scopes, plan);
  return plan;
}

std::vector<int> choose_gpus(const std::vector<std::vector<int>>& cliques_in, const std::vector<bool>& free,
                             uint32_t count) {
  std::vector<std::vector<int>> cliques = cliques_in;
  if (cliques.empty()) {
    cliques.emplace_back(free.size());
    std::iota(cliques[0].begin(), cliques[0].end(), 0);
  }
  std::vector<std::vector<int>> free_in(cliques.size());
  uint32_t total_free = 0;
  for (size_t c = 0; c < cliques.size(); ++c)
    for (int g : cliques[c])
      if (g >= 0 && static_cast<size_t>(g) < free.size() && free[g]) free_in[c].push_back(g);
  for (const auto& f : free_in) total_free += static_cast<uint32_t>(f.size());
  if (count == 0 || total_free < count) return {};

  // One clique can hold it: take the fullest such clique.
  int best = -1;
  for (size_t c = 0; c < cliques.size(); ++c)
    if (free_in[c].size() >= count && (best < 0 || free_in[c].size() < free_in[best].size())) best = static_cast<int>(c);
  std::vector<int> out;
  if (best >= 0) {
    out.assign(free_in[best].begin(), free_in[best].begin() + count);
    return out;
  }
  // Otherwise span the fewest cliques: the freest ones first.
  std::vector<size_t> order(cliques.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return free_in[a].size() > free_in[b].size(); });
  for (size_t c : order)
    for (int g : free_in[c])
      if (out.size() < count) out.push_back(g);
  std::sort(out.begin(), out.end());
  return out;
}

Fragmentation measure_fragmentation(const Cluster& cluster, const ClusterState& state) {
  Fragmentation f;
  const auto& nodes = cluster.nodes();
  std::map<std::string, std::pair<bool, uint32_t>> domains;  // idle?, free GPUs
  for (size_t i = 0; i < nodes.size() && i < state.size(); ++i) {
    if (nodes[i].gpus == 0 || !state[i].usable) continue;
    const uint32_t free = state[i].free_gpus();
    const bool idle = free == nodes[i].gpus;
    f.free_gpus += free;
    if (idle) {
      f.free_gpus_on_idle_nodes += free;
      ++f.idle_nodes;
    }
    if (!nodes[i].nvlink_domain.empty()) {
      auto& d = domains.emplace(nodes[i].nvlink_domain, std::make_pair(true, 0u)).first->second;
      d.first = d.first && idle;
      d.second += free;
    }
  }
  uint32_t free_in_idle_domains = 0;
  for (const auto& [name, d] : domains)
    if (d.first) {
      ++f.idle_domains;
      free_in_idle_domains += d.second;
    }
  if (f.free_gpus > 0) {
    f.node_index = 1.0 - static_cast<double>(f.free_gpus_on_idle_nodes) / f.free_gpus;
    f.domain_index = domains.empty() ? f.node_index : 1.0 - static_cast<double>(free_in_idle_domains) / f.free_gpus;
  }
  return f;
}

std::string select_reason_of(std::string_view system_comment) {
  const std::string_view prefix = kSelectReasonPrefix;
  if (system_comment.substr(0, prefix.size()) != prefix) return "";
  return std::string(system_comment.substr(prefix.size()));
}

// ---- attempts ----------------------------------------------------------------------

GpuNodeIndex GpuNodeIndex::of(const Cluster& cluster) {
  GpuNodeIndex index;
  index.gpu_types = cluster.gpu_types();
  for (size_t k = 0; k < cluster.nodes().size(); ++k) {
    const GpuNode& n = cluster.nodes()[k];
    if (n.gpus == 0) continue;
    index.gpu_nodes.push_back(k);
    index.by_type[n.gpu_type].push_back(k);
  }
  return index;
}

std::vector<size_t> GpuNodeIndex::of_types(const std::vector<std::string>& types) const {
  if (types.empty()) return gpu_nodes;
  if (types.size() == 1) {
    auto it = by_type.find(types[0]);
    return it == by_type.end() ? std::vector<size_t>() : it->second;
  }
  std::vector<size_t> out;
  for (const auto& t : types)
    if (auto it = by_type.find(t); it != by_type.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  std::sort(out.begin(), out.end());  // model order, as cons_tres sees the bitmap
  return out;
}

const char* attempt_step_name(AttemptStep step) {
  switch (step) {
    case AttemptStep::ever_fits: return "ever-fits";
    case AttemptStep::will_run_unit: return "will-run-unit";
    case AttemptStep::will_run_type: return "will-run-type";
    case AttemptStep::best_fit_nodes: return "best-fit-nodes";
    case AttemptStep::whole_unit: return "whole-unit";
    case AttemptStep::any_of_type: return "any-of-type";
    case AttemptStep::unit_to_preempt: return "unit-to-preempt";
  }
  return "?";
}

namespace {
bool is_strict(const PlacementRequest& request) {
  return request.mode == LocalityMode::strict && request.locality != Locality::any;
}
ClusterState all_idle(ClusterState state) {
  for (auto& n : state) n.gpu_busy.assign(n.gpu_busy.size(), false);
  return state;
}
}  // namespace

const std::vector<std::string>& acceptable_types(const GpuNodeIndex& index, const PlacementRequest& request) {
  return request.gpu_types.empty() ? index.gpu_types : request.gpu_types;
}

AttemptPlan ever_fits_attempts(const GpuNodeIndex& index, const PlacementRequest& request, bool federated) {
  AttemptPlan plan;
  std::vector<size_t> nodes = index.of_types(request.gpu_types);
  if (nodes.empty() && federated) nodes = index.of_types({});
  plan.attempts.push_back({AttemptStep::ever_fits, std::move(nodes), "", false, false});
  return plan;
}

AttemptPlan will_run_attempts(const Cluster& cluster, const GpuNodeIndex& index, const ClusterState& now,
                              const std::vector<bool>& eligible, const PlacementRequest& request,
                              const PlacementPolicy& policy, const AttemptLimits& limits) {
  AttemptPlan plan;
  if (!is_strict(request)) {
    // Any other job may widen at run-now: one question per acceptable type is
    // enough and keeps backfill cheap.
    for (const auto& type : types_by_speed(acceptable_types(index, request), policy.type_speed))
      plan.attempts.push_back({AttemptStep::will_run_type, index.of_types({type}), type, false, false});
    return plan;
  }
  // A strict job must start inside one unit: every unit it fits in when idle,
  // those with the most free GPUs now first (they are likely to free up soonest).
  auto units = plan_placement(cluster, all_idle(now), eligible, request, policy).candidates;
  auto free_now = [&](const PlacementCandidate& c) {
    uint32_t free = 0;
    for (size_t k : c.unit_nodes) free += now[k].free_gpus();
    return free;
  };
  std::stable_sort(units.begin(), units.end(), [&](const auto& a, const auto& b) { return free_now(a) > free_now(b); });
  for (const auto& u : units) {
    if (plan.attempts.size() >= limits.will_run_units) break;
    plan.attempts.push_back({AttemptStep::will_run_unit, u.unit_nodes, u.gpu_type, false, false});
  }
  return plan;
}

AttemptPlan run_now_attempts(const Cluster& cluster, const GpuNodeIndex& index, const ClusterState& now,
                             const std::vector<bool>& eligible, const PlacementRequest& request,
                             const PlacementPolicy& policy, bool may_preempt, const AttemptLimits& limits) {
  AttemptPlan out;
  const PlacementPlan plan = plan_placement(cluster, now, eligible, request, policy);
  out.reason = plan.reason.empty() ? "no placement in the allowed topology scope" : plan.reason;
  // 1. The plan's candidates: the exact best-fit nodes first; cons_tres may still
  //    refuse them for CPUs or memory, so then the whole unit.
  for (size_t i = 0; i < plan.candidates.size() && i < limits.run_now_candidates; ++i) {
    const PlacementCandidate& cand = plan.candidates[i];
    out.attempts.push_back({AttemptStep::best_fit_nodes, cand.nodes, cand.gpu_type, true, true});
    if (cand.unit_nodes != cand.nodes)
      out.attempts.push_back({AttemptStep::whole_unit, cand.unit_nodes, cand.gpu_type, true, true});
  }
  // Nothing has room now by the GPU view, which is exact (the nodes' GPU bitmaps):
  // without preemption cons_tres cannot do better, so it is not asked.
  if (plan.candidates.empty() && !may_preempt) return out;
  // 2. Not strict: anywhere on one GPU type is better than waiting (the
  //    candidates above already offered the tighter places).
  if (!is_strict(request))
    for (const auto& type : types_by_speed(acceptable_types(index, request), policy.type_speed))
      out.attempts.push_back({AttemptStep::any_of_type, index.of_types({type}), type, false, true});
  // 3. Preemption may free room the "free now" view cannot see: each unit of the
  //    allowed scopes, narrowest first, as if the cluster were idle.
  if (plan.candidates.empty() && may_preempt) {
    size_t units = 0;
    for (const auto& cand : plan_placement(cluster, all_idle(now), eligible, request, policy).candidates) {
      if (++units > limits.preempt_units) break;
      out.attempts.push_back({AttemptStep::unit_to_preempt, cand.unit_nodes, cand.gpu_type, false, false});
    }
  }
  return out;
}

// ==== Speed-aware GPU type choice ==================================================

namespace {
// The reason's fixed words: is_faster_type_wait() recognizes them.
constexpr std::string_view kFasterTypeWait = "waits for ";
constexpr std::string_view kFasterTypeWaitKey = " (GpuTypeSpeed ";
}  // namespace

double gpu_type_speed(const std::map<std::string, double>& speeds, const std::string& type) {
  const auto it = speeds.find(lowercase(type));
  return it == speeds.end() || !(it->second > 0) ? 1.0 : it->second;
}

uint64_t expected_runtime(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                          const std::string& type, uint64_t time_limit) {
  if (time_limit == 0) return 0;
  double slowest = gpu_type_speed(speeds, type);
  for (const auto& t : acceptable) slowest = std::min(slowest, gpu_type_speed(speeds, t));
  const double runtime = static_cast<double>(time_limit) * slowest / gpu_type_speed(speeds, type);
  return static_cast<uint64_t>(std::ceil(runtime));
}

time_t expected_finish(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                       const std::string& type, time_t start, uint64_t time_limit) {
  if (speeds.empty() || type.empty()) return start;
  return start + static_cast<time_t>(expected_runtime(speeds, acceptable, type, time_limit));
}

std::string faster_type_to_ask(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                               const AttemptPlan& run_now) {
  if (speeds.empty() || acceptable.size() < 2) return "";
  const std::string fastest = types_by_speed(acceptable, speeds).front();
  bool fastest_has_room = false, slower_has_room = false;
  for (const auto& a : run_now.attempts) {
    if (a.step != AttemptStep::best_fit_nodes) continue;  // the plan's "room now" offers
    if (a.gpu_type == fastest) fastest_has_room = true;
    else if (gpu_type_speed(speeds, a.gpu_type) < gpu_type_speed(speeds, fastest)) slower_has_room = true;
  }
  return !fastest_has_room && slower_has_room ? fastest : "";
}

std::string faster_type_not_asked(const std::map<std::string, double>& speeds,
                                  const std::vector<std::string>& acceptable, const std::vector<std::string>& asked,
                                  const std::string& best_type) {
  if (speeds.empty() || acceptable.size() < 2 || best_type.empty()) return "";
  const std::string fastest = types_by_speed(acceptable, speeds).front();
  if (!(gpu_type_speed(speeds, best_type) < gpu_type_speed(speeds, fastest))) return "";
  return std::find(asked.begin(), asked.end(), fastest) == asked.end() ? fastest : "";
}

FasterTypeWait weigh_faster_type(const std::map<std::string, double>& speeds, const std::vector<std::string>& acceptable,
                                 const std::string& faster_type, time_t faster_start, const std::string& now_type,
                                 uint64_t time_limit, time_t now) {
  FasterTypeWait w;
  w.faster_type = faster_type;
  w.now_type = now_type;
  w.faster_start = faster_start;
  if (faster_type.empty() || now_type.empty() || faster_start <= 0 || time_limit == 0) return w;
  w.finish_faster = std::max(faster_start, now) +
                    static_cast<time_t>(expected_runtime(speeds, acceptable, faster_type, time_limit));
  w.finish_now = now + static_cast<time_t>(expected_runtime(speeds, acceptable, now_type, time_limit));
  w.wait = w.finish_faster < w.finish_now;
  if (!w.wait) return w;
  char speed_text[64];
  snprintf(speed_text, sizeof speed_text, "%g vs %g", gpu_type_speed(speeds, faster_type),
           gpu_type_speed(speeds, now_type));
  w.reason = std::string(kFasterTypeWait) + faster_type + std::string(kFasterTypeWaitKey) + speed_text +
             "): expected to start there in " +
             format_duration(std::max<time_t>(0, faster_start - now)) + " and, by its time limit, to finish " +
             format_duration(w.finish_now - w.finish_faster) + " sooner than if started on " + now_type + " now";
  return w;
}

std::string faster_type_waited_for(std::string_view select_reason) {
  if (select_reason.substr(0, kFasterTypeWait.size()) != kFasterTypeWait) return "";
  const size_t key = select_reason.find(kFasterTypeWaitKey);
  if (key == std::string_view::npos || key <= kFasterTypeWait.size()) return "";
  return std::string(select_reason.substr(kFasterTypeWait.size(), key - kFasterTypeWait.size()));
}

bool is_faster_type_wait(std::string_view select_reason) { return !faster_type_waited_for(select_reason).empty(); }

void hold_for_faster_type(AttemptPlan& plan, const FasterTypeWait& wait) {
  if (!wait.wait) return;
  // The faster type has no free room (that is why it was asked about), so any offer
  // left could only start the job there by preempting others while a slower type
  // has free GPUs: nothing is offered; the job starts when the faster type frees.
  plan.attempts.clear();
  plan.reason = wait.reason;
}
// ==== end speed-aware GPU type choice ================================================

}  // namespace mlsched
