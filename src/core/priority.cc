// See priority.h. Every bounded term is a weight times a number in [0, 1]; only the
// size-aware age term is unbounded, and it grows faster for larger jobs. That is
// what keeps a large gang from waiting forever behind a stream of small jobs: once
// its size term passes bounded_priority_ceiling() plus the (small, slowly growing)
// size term of the young stream jobs, it is at the top, and the backfill scheduler
// then reserves its nodes.
#include "core/priority.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

#include "core/text.h"

namespace mlsched {

Quotas::Quotas(const Config& config, const std::map<std::string, TeamStanding>& standing,
               const std::map<std::string, uint32_t>& cluster_gpus_by_type)
    : config_(config), standing_(standing), cluster_gpus_(cluster_gpus_by_type) {}

uint32_t Quotas::guaranteed(const std::string& team, const std::string& gpu_type) const {
  if (gpu_type.empty()) {
    uint32_t sum = 0;
    for (const auto& [type, count] : cluster_gpus_) sum += guaranteed(team, type);
    return sum;
  }
  const std::string type = lowercase(gpu_type);
  auto t = config_.team_quotas.find(team);
  if (t != config_.team_quotas.end()) {
    auto q = t->second.find(type);
    if (q != t->second.end()) return q->second;
  }
  auto s = standing_.find(team);
  auto g = cluster_gpus_.find(type);
  if (s == standing_.end() || g == cluster_gpus_.end()) return 0;
  return static_cast<uint32_t>(std::floor(s->second.shares_norm * g->second + 1e-9));
}

bool Quotas::borrowing(const std::string& team, const std::string& gpu_type, uint32_t gpus,
                       const TeamGpusInUse& in_use) const {
  auto t = in_use.find(team);
  const uint64_t held = t == in_use.end() ? 0 : gpus_of_type(t->second, gpu_type);
  return would_borrow(held, gpus, guaranteed(team, gpu_type));
}

std::string quota_kind(const Config& config, const std::string& gpu_type, const std::string& pool) {
  const std::string type = lowercase(gpu_type);
  if (type.empty() || pool.empty() || config.pool_quota_kinds.empty()) return type;
  const std::string kind = type + "@" + lowercase(pool);
  return config.pool_quota_kinds.count(kind) ? kind : type;
}

std::string pending_pool(const std::string& partitions) { return partitions.substr(0, partitions.find(',')); }

GpuCounts gpus_by_quota_kind(const Config& config, const GpuCounts& gpus, const std::string& pool) {
  if (config.pool_quota_kinds.empty()) return gpus;
  GpuCounts out;
  out.untyped = gpus.untyped;
  for (const auto& [type, count] : gpus.by_type) out.by_type[quota_kind(config, type, pool)] += count;
  return out;
}

std::map<std::string, uint32_t> cluster_gpus_by_quota_kind(const Config& config, const std::vector<NodeGpus>& nodes) {
  std::map<std::string, uint32_t> out;
  for (const auto& n : nodes) {
    for (const auto& [type, count] : n.by_type) {
      std::string kind = lowercase(type);
      for (const auto& pool : n.pools) {
        const std::string k = quota_kind(config, type, pool);
        if (k != kind) {
          kind = k;
          break;
        }
      }
      out[kind] += count;
    }
  }
  return out;
}

std::map<std::string, uint32_t> cluster_gpus_by_quota_kind(const Config& config, const Cluster& cluster,
                                                           const std::vector<Pool>& pools) {
  std::map<std::string, size_t> index;
  std::vector<NodeGpus> nodes;
  for (const auto& n : cluster.nodes()) {
    if (n.gpus == 0) continue;
    index[n.name] = nodes.size();
    NodeGpus g;
    g.by_type[lowercase(n.gpu_type)] = n.gpus;
    nodes.push_back(std::move(g));
  }
  if (!config.pool_quota_kinds.empty())
    for (const auto& pool : pools)
      for (const auto& name : pool.nodes)
        if (auto it = index.find(name); it != index.end()) nodes[it->second].pools.push_back(pool.name);
  return cluster_gpus_by_quota_kind(config, nodes);
}

std::string type_of_quota_kind(const std::string& kind) { return kind.substr(0, kind.find('@')); }

bool would_borrow(uint64_t held, uint64_t gpus, uint64_t guaranteed) { return held + gpus > guaranteed; }

uint64_t gpus_of_type(const std::map<std::string, uint32_t>& by_type, const std::string& gpu_type) {
  uint64_t n = 0;
  for (const auto& [type, count] : by_type)
    if (gpu_type.empty() || lowercase(type) == lowercase(gpu_type)) n += count;
  return n;
}

std::vector<bool> borrowing_in_start_order(const std::vector<GpuHolding>& running, const GuaranteeOf& guaranteed) {
  std::vector<size_t> order(running.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (running[a].start_time != running[b].start_time) return running[a].start_time < running[b].start_time;
    return running[a].job_id < running[b].job_id;
  });
  std::vector<bool> borrowing(running.size(), false);
  // GPUs of each team counted so far, by type; "" sums all types, as an untyped
  // job's guarantee is the sum over types.
  std::map<std::string, std::map<std::string, uint64_t>> counted;
  for (size_t i : order) {
    const GpuHolding& job = running[i];
    auto& team = counted[job.team];
    bool beyond = false;
    for (const auto& [type, count] : job.gpus.by_type) {
      if (!count) continue;
      const std::string t = lowercase(type);
      team[t] += count;
      team[""] += count;
      beyond = beyond || would_borrow(0, team[t], guaranteed(job.team, t));
    }
    if (job.gpus.untyped) {
      team[""] += job.gpus.untyped;
      beyond = beyond || would_borrow(0, team[""], guaranteed(job.team, ""));
    }
    borrowing[i] = beyond;
  }
  return borrowing;
}

namespace {

// The formula, once the job's team standing and whether it borrows are known.
PriorityFactors price(const PricedJob& job, const Config& c, double fairshare, const GuaranteePlace& place,
                      uint32_t cluster_gpus, int64_t now) {
  PriorityFactors f;
  f.fairshare = c.priority_weight_fairshare * fairshare;
  f.borrowing = place.borrowing;
  f.quota = f.borrowing ? 0.0 : static_cast<double>(c.priority_weight_quota);
  // TeamQuotaPartialCredit: the share of its GPUs within the guarantee.
  if (f.borrowing && c.team_quota_partial_credit && job.gpus > 0)
    f.quota = static_cast<double>(c.priority_weight_quota) * std::min(place.within, job.gpus) / job.gpus;

  const double waited = static_cast<double>(std::max<int64_t>(0, now - job.submit_time));
  const double max_age = std::max<uint32_t>(1, c.priority_max_age);
  f.age = c.priority_weight_age * std::min(1.0, waited / max_age);
  // At least one GPU's worth, so CPU-only jobs are not starved either.
  const double size = cluster_gpus > 0 ? std::max<uint32_t>(job.gpus, 1) / static_cast<double>(cluster_gpus) : 0.0;
  f.job_size = c.priority_weight_job_size * size * (waited / max_age);

  f.job_type = c.priority_weight_job_type[static_cast<int>(job.type)];
  f.qos = c.priority_weight_qos * std::clamp(job.qos_norm, 0.0, 1.0);
  f.partition = c.priority_weight_partition * std::clamp(job.partition_norm, 0.0, 1.0);
  f.attained_level = attained_service_level_of(c, job.team, job.partition, job.attained_gpu_seconds,
                                               now - (job.queued_time ? job.queued_time : job.submit_time));
  if (f.attained_level >= 0) f.attained_service = attained_service_term(c, f.attained_level);
  f.non_preemptible = job.preemptible ? 0.0 : static_cast<double>(c.priority_weight_non_preemptible);

  const double sum = f.fairshare + f.quota + f.age + f.job_size + f.job_type + f.qos + f.partition +
                     f.attained_service + f.non_preemptible +
                     static_cast<double>(job.site) - static_cast<double>(job.nice);
  // Slurm's priority is 32 bits; 0 means held, and the top is kept free for admins.
  constexpr double kMax = static_cast<double>(std::numeric_limits<uint32_t>::max() - 1);
  f.total = static_cast<uint32_t>(std::clamp(std::round(sum), 1.0, kMax));
  return f;
}

double fairshare_of(const std::map<std::string, TeamStanding>& standing, const std::string& team) {
  auto s = standing.find(team);
  return s == standing.end() ? 0.0 : s->second.fairshare;
}

// Whether a job is within its team's guarantee, given what the guarantee has left
// (`left`, after running jobs and earlier claims), the guarantee itself and whether
// an earlier job closed it; `closes` says whether the job closes it to later ones.
struct QueueFit {
  bool borrowing = false;
  bool closes = false;
};
QueueFit fit_in_queue(int64_t left, uint32_t gpus, uint64_t guaranteed, bool closed) {
  QueueFit fit;
  if (closed) {
    fit.borrowing = true;
  } else if (static_cast<int64_t>(gpus) > left) {
    fit.borrowing = true;
    fit.closes = gpus <= guaranteed;
  }
  return fit;
}

// The queue-order walk, with what it needs of each team looked up once per team and
// GPU type rather than per job: with 100,000 pending jobs the ordered-map lookups by
// team name and the lowercasing of GPU types were most of the pass. The guarantee
// and the GPUs in use are counted as Quotas::borrowing() counts them.
class GuaranteeWalk {
 public:
  // `after`: a queue already walked (the last pass's), whose claims and closings
  // the jobs taken here come after.
  // `keep_for_gpus`: the smallest job that holds its place (TeamQuotaKeptForGpus).
  GuaranteeWalk(const GuaranteeOf& guaranteed, const TeamGpusInUse& in_use, uint32_t keep_for_gpus,
                const GuaranteeQueue* after = nullptr)
      : guaranteed_(guaranteed), in_use_(in_use), keep_for_gpus_(keep_for_gpus), after_(after) {}

  // The next pending job in queue order; an eligible one takes its place in its
  // team's guarantee (fit_in_queue()).
  GuaranteePlace take(const PricedJob& job) {
    GuaranteePlace place;
    // A job that needs no GPUs borrows nothing.
    if (job.gpus == 0) return place;
    auto [it, inserted] = teams_.try_emplace(job.team);
    Team& team = it->second;
    if (inserted && after_) {
      if (auto q = after_->find(job.team); q != after_->end()) team.claims = q->second;
    }
    Kind& kind = kind_of(team, job);
    QueuedClaims& claims = team.claims;
    const uint64_t claimed = kind.type.empty() ? claims.claimed_all : claims.claimed[kind.type];
    const int64_t left = kind.headroom - static_cast<int64_t>(claimed);
    const QueueFit fit = fit_in_queue(left, job.gpus, kind.guaranteed, kind.closed_by != 0);
    place.borrowing = fit.borrowing;
    place.kept_by = kind.closed_by;
    place.within = !fit.borrowing ? job.gpus
                   : kind.closed_by != 0 ? 0
                                         : static_cast<uint32_t>(std::clamp<int64_t>(left, 0, job.gpus));
    // A smaller job is priced against what the larger ones hold, but holds
    // nothing itself: it neither claims GPUs nor closes the guarantee.
    const bool holds_place = keep_for_gpus_ != 0 && job.gpus >= keep_for_gpus_;
    if (!job.eligible || !holds_place) return place;
    if (!fit.borrowing) {
      claims.claimed_all += job.gpus;
      if (!kind.type.empty()) claims.claimed[kind.type] += job.gpus;
    } else if (fit.closes) {
      // Two spellings of one type ("H100", "h100") share the closing.
      for (auto& k : team.kinds)
        if (k.type == kind.type) k.closed_by = job.job_id;
      claims.closed[kind.type] = job.job_id;
    }
    return place;
  }

  GuaranteeQueue queue() const {
    GuaranteeQueue q;
    for (const auto& [name, team] : teams_)
      if (team.claims.claimed_all || !team.claims.closed.empty()) q[name] = team.claims;
    return q;
  }

 private:
  // One GPU type as jobs name it ("" = no single type).
  struct Kind {
    std::string named;
    std::string type;  // lowercase
    uint64_t guaranteed = 0;
    int64_t headroom = 0;    // guaranteed - GPUs the team holds of that type
    uint32_t closed_by = 0;  // 0: open
  };
  struct Team {
    std::vector<Kind> kinds;
    QueuedClaims claims;
  };
  Kind& kind_of(Team& team, const PricedJob& job) {
    for (auto& k : team.kinds)
      if (k.named == job.gpu_type) return k;
    Kind k;
    k.named = job.gpu_type;
    k.type = lowercase(job.gpu_type);
    k.guaranteed = guaranteed_(job.team, job.gpu_type);
    uint64_t used = 0;
    auto t = in_use_.find(job.team);
    if (t != in_use_.end()) used = gpus_of_type(t->second, job.gpu_type);
    k.headroom = static_cast<int64_t>(k.guaranteed) - static_cast<int64_t>(used);
    if (auto c = team.claims.closed.find(k.type); c != team.claims.closed.end()) k.closed_by = c->second;
    team.kinds.push_back(k);
    return team.kinds.back();
  }

  const GuaranteeOf& guaranteed_;
  const TeamGpusInUse& in_use_;
  const uint32_t keep_for_gpus_;
  const GuaranteeQueue* after_;
  std::unordered_map<std::string, Team> teams_;
};

}  // namespace

std::vector<GuaranteePlace> places_in_guarantee(const std::vector<PricedJob>& pending, const GuaranteeOf& guaranteed,
                                                const TeamGpusInUse& in_use, uint32_t keep_for_gpus,
                                                GuaranteeQueue* queue) {
  std::vector<size_t> order(pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const PricedJob& x = pending[a];
    const PricedJob& y = pending[b];
    return x.submit_time != y.submit_time ? x.submit_time < y.submit_time : x.job_id < y.job_id;
  });
  std::vector<GuaranteePlace> places(pending.size());
  GuaranteeWalk walk(guaranteed, in_use, keep_for_gpus);
  for (size_t i : order) places[i] = walk.take(pending[i]);
  if (queue) *queue = walk.queue();
  return places;
}

PriorityFactors job_priority(const PricedJob& job, const PriorityInputs& in, int64_t now) {
  // The job comes after every job of the last pass's queue: the same walk, one step on.
  const GuaranteeOf guaranteed = [&](const std::string& team, const std::string& type) {
    return in.quotas.guaranteed(team, type);
  };
  const GuaranteePlace place =
      GuaranteeWalk(guaranteed, in.in_use, in.config.team_quota_kept_for_gpus, in.queue).take(job);
  return price(job, in.config, fairshare_of(in.standing, job.team), place, in.cluster_gpus, now);
}

TeamGpusInUse gpus_in_use(const std::vector<ChargedJob>& running) {
  TeamGpusInUse in_use;
  for (const auto& job : running) {
    auto& team = in_use[job.team];
    for (const auto& [type, count] : job.allocation.by_type) team[lowercase(type)] += count;
    if (job.allocation.untyped) team[""] += job.allocation.untyped;
  }
  return in_use;
}

std::vector<bool> running_borrowing(const Quotas& quotas, const std::vector<ChargedJob>& running) {
  std::vector<GpuHolding> held;
  held.reserve(running.size());
  for (const auto& job : running) held.push_back({job.job_id, job.team, job.start_time, job.allocation});
  return borrowing_in_start_order(
      held, [&](const std::string& team, const std::string& type) { return quotas.guaranteed(team, type); });
}

PassResult priority_pass(const Config& config, UsageLedger& ledger, const PassInput& in, int64_t now) {
  PassResult out;
  ledger.account(now, in.running);
  out.standing = team_standing(in.teams, ledger);
  out.in_use = gpus_in_use(in.running);
  uint32_t cluster_gpus = 0;
  for (const auto& [type, count] : in.cluster_gpus_by_type) cluster_gpus += count;
  const Quotas quotas(config, out.standing, in.cluster_gpus_by_type);
  out.running_borrowing = running_borrowing(quotas, in.running);
  const GuaranteeOf guaranteed = [&](const std::string& team, const std::string& type) {
    return quotas.guaranteed(team, type);
  };
  const std::vector<GuaranteePlace> places =
      places_in_guarantee(in.pending, guaranteed, out.in_use, config.team_quota_kept_for_gpus, &out.queue);
  // Fair share looked up once per team, not per job (see GuaranteeWalk).
  std::unordered_map<std::string, double> fairshare;
  out.pending.reserve(in.pending.size());
  for (size_t i = 0; i < in.pending.size(); ++i) {
    const PricedJob& job = in.pending[i];
    auto [f, inserted] = fairshare.try_emplace(job.team, 0.0);
    if (inserted) f->second = fairshare_of(out.standing, job.team);
    out.pending.push_back(price(job, config, f->second, places[i], cluster_gpus, now));
  }
  return out;
}

bool attained_service_applies(const Config& c, const std::string& team, const std::string& partition) {
  const auto& scope = c.attained_service;
  if (scope.all) return true;
  return std::find(scope.teams.begin(), scope.teams.end(), team) != scope.teams.end() ||
         (!partition.empty() &&
          std::find(scope.partitions.begin(), scope.partitions.end(), partition) != scope.partitions.end());
}

int attained_service_level(const Config& c, double attained_gpu_seconds, int64_t waited) {
  if (c.attained_service_promote_after > 0 && waited >= static_cast<int64_t>(c.attained_service_promote_after))
    return 0;
  int level = 0;
  for (uint64_t threshold : c.attained_service_thresholds)
    if (attained_gpu_seconds >= static_cast<double>(threshold)) ++level;
  return level;
}

int attained_service_level_of(const Config& c, const std::string& team, const std::string& partition,
                              double attained_gpu_seconds, int64_t waited) {
  if (!c.attained_service.enabled() || !attained_service_applies(c, team, partition)) return -1;
  return attained_service_level(c, attained_gpu_seconds, waited);
}

// A penalty rather than a bonus: a fresh job, and every job where attained service
// does not apply, keeps the priority it has without it, so turning it on for one
// team reorders that team's jobs without lifting them over other teams', and the
// starvation bound (bounded_priority_ceiling) stays as it is.
double attained_service_term(const Config& c, int level) {
  const size_t levels = c.attained_service_thresholds.size() + 1;
  if (level <= 0 || levels < 2) return 0.0;
  return -static_cast<double>(c.priority_weight_attained_service) * std::min<size_t>(level, levels - 1) /
         static_cast<double>(levels - 1);
}

double bounded_priority_ceiling(const Config& c) {
  const uint32_t top_type = *std::max_element(c.priority_weight_job_type.begin(), c.priority_weight_job_type.end());
  return static_cast<double>(c.priority_weight_fairshare) + c.priority_weight_quota + c.priority_weight_age +
         top_type + c.priority_weight_qos + c.priority_weight_partition + c.priority_weight_non_preemptible;
}

double seconds_to_reach_top(const Config& c, uint32_t gpus, uint32_t cluster_gpus) {
  if (c.priority_weight_job_size == 0 || cluster_gpus == 0) return std::numeric_limits<double>::infinity();
  const double per_second =
      c.priority_weight_job_size * (std::max<uint32_t>(gpus, 1) / static_cast<double>(cluster_gpus)) /
      std::max<uint32_t>(1, c.priority_max_age);
  return bounded_priority_ceiling(c) / per_second;
}

std::map<uint32_t, int64_t> pipeline_age_starts(const std::vector<StageQueueFacts>& jobs, uint32_t max_age,
                                                int64_t now) {
  // Queue wait each stage of each pipeline accrued in the attempts that ran.
  // Keyed by (user, pipeline id) and stage: the membership words are the user's own
  // (`--comment`), so another user's job naming this pipeline's id never counts.
  using Key = std::pair<std::string, std::string>;
  auto pipeline_of = [](const StageQueueFacts& j) { return std::to_string(j.user_id) + "/" + j.membership.id; };
  std::map<Key, int64_t> waited;
  std::map<Key, std::vector<AfterEdge>> after;
  for (const auto& j : jobs) {
    const Key key = std::make_pair(pipeline_of(j), j.membership.stage);
    after[key] = j.membership.after;
    if (!j.pending && j.start > 0 && j.eligible > 0 && j.start >= j.eligible) waited[key] += j.start - j.eligible;
  }
  // Longest upstream chain of waits; memoized, and bounded by the pipeline's size
  // (a cycle, which `mlsched pipeline submit` never makes, stops at the bound).
  std::map<Key, int64_t> inherited;
  std::function<int64_t(const Key&, size_t)> chain = [&](const Key& key, size_t depth) -> int64_t {
    if (depth > kMaxPipelineStages) return 0;
    if (auto it = inherited.find(key); it != inherited.end()) return it->second;
    int64_t best = 0;
    auto a = after.find(key);
    if (a != after.end())
      for (const auto& e : a->second) {
        const auto up = std::make_pair(key.first, e.stage);
        const auto w = waited.find(up);
        best = std::max(best, (w == waited.end() ? 0 : w->second) + chain(up, depth + 1));
      }
    inherited[key] = best;
    return best;
  };
  std::map<uint32_t, int64_t> out;
  for (const auto& j : jobs) {
    if (!j.pending) continue;
    if (j.eligible <= 0) {
      out[j.job_id] = now;  // still waits for its upstream stages: no age yet
      continue;
    }
    const int64_t carried = std::min<int64_t>(chain({pipeline_of(j), j.membership.stage}, 0), max_age);
    out[j.job_id] = j.eligible - carried;
  }
  return out;
}

}  // namespace mlsched
