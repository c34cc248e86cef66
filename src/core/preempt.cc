// Who may preempt whom, and the victim set that loses the least work.
#include "core/preempt.h"

#include <cmath>
#include <ctime>

#include "core/checkpoint.h"
#include "core/directives.h"
#include "core/hostlist.h"
#include "core/job_record.h"
#include "core/text.h"

namespace mlsched {

uint32_t PreemptCandidate::gpus() const {
  uint32_t n = 0;
  for (const auto& [node, count] : gpus_on_node) n += count;
  return n;
}

const char* verdict_name(PreemptVerdict v) {
  switch (v) {
    case PreemptVerdict::allowed: return "Allowed";
    case PreemptVerdict::victim_not_preemptible: return "VictimNotPreemptible";
    case PreemptVerdict::victim_within_quota: return "VictimWithinQuota";
    case PreemptVerdict::preemptor_borrowing: return "PreemptorBorrowing";
    case PreemptVerdict::same_team: return "SameTeam";
    case PreemptVerdict::victim_not_higher_level: return "VictimNotHigherAttainedLevel";
    case PreemptVerdict::victim_too_young: return "VictimTooYoung";
    case PreemptVerdict::victim_preempted_too_often: return "VictimPreemptedTooOften";
    case PreemptVerdict::victim_out_of_restarts: return "VictimOutOfRestarts";
    case PreemptVerdict::victim_team_not_further_beyond: return "VictimTeamNotFurtherBeyondGuarantee";
    case PreemptVerdict::no_useful_gpus: return "NoUsefulGpus";
    case PreemptVerdict::same_job: return "SameJob";
  }
  return "Unknown";
}

PreemptVerdict may_preempt(const Preemptor& preemptor, const PreemptCandidate& victim, const Config& config,
                           int64_t now, const BeyondGuaranteeOf& beyond) {
  if (preemptor.job_id == victim.job_id) return PreemptVerdict::same_job;
  if (!victim.preemptible) return PreemptVerdict::victim_not_preemptible;
  // GPUs lent from the gang's reservation go back to it: the lent job knew they were
  // only lent, so neither its team's standing nor PreemptMinRunTime keeps them.
  if (preemptor.reservation && lent_reserved_gpus(*preemptor.reservation, victim, config))
    return PreemptVerdict::allowed;
  // PreemptForNonPreemptible: a preemptible job is best effort next to one that is not.
  const bool best_effort_yields = config.preempt_for_non_preemptible && !preemptor.preemptible;
  if (preemptor.team == victim.team) {
    // Inside a team, least attained service first: the GPUs change hands within the
    // team, so its standing against other teams (and whether it borrows) is as it was.
    // For the same reason a team's non-preemptible job may displace its best effort.
    if (!best_effort_yields) {
      if (!config.preempt_for_attained_service) return PreemptVerdict::same_team;
      const int theirs = running_attained_level(victim, config, now);
      const int mine = waiting_attained_level(preemptor, config, now);
      if (theirs < 0 || mine < 0) return PreemptVerdict::same_team;
      if (theirs <= mine) return PreemptVerdict::victim_not_higher_level;
    }
  } else {
    // Reclaiming is for guarantees: a job that would itself run on borrowed GPUs has
    // no claim on anyone's, except a large gang that has waited too long: small
    // borrowing jobs filling every GPU as it frees up would otherwise starve it, and
    // (PreemptForNonPreemptible) a non-preemptible job against the best effort of a
    // team that stays at least as far beyond its guarantee.
    if (preemptor.borrowing && !starving_large_gang(preemptor, config, now)) {
      if (!best_effort_yields) return PreemptVerdict::preemptor_borrowing;
      if (victim.borrowing && !swap_keeps_fair_share(preemptor, victim, beyond))
        return PreemptVerdict::victim_team_not_further_beyond;
    }
    if (!victim.borrowing) return PreemptVerdict::victim_within_quota;
  }
  if (now - victim.start_time < static_cast<int64_t>(config.preempt_min_run_time))
    return PreemptVerdict::victim_too_young;
  // The admin's cap counts preemptions only; the job's own max-restarts counts every
  // requeue, since a preemption requeues it once more than it asked for.
  if (victim.times_preempted >= config.preempt_max_per_job) return PreemptVerdict::victim_preempted_too_often;
  if (victim.has_directives && victim.restarts >= victim.max_restarts) return PreemptVerdict::victim_out_of_restarts;
  if (!preemptor.gpu_type.empty() && !victim.gpu_type.empty() &&
      lowercase(preemptor.gpu_type) != lowercase(victim.gpu_type))
    return PreemptVerdict::no_useful_gpus;
  if (victim.gpus() == 0) return PreemptVerdict::no_useful_gpus;
  return PreemptVerdict::allowed;
}

bool swap_keeps_fair_share(const Preemptor& preemptor, const PreemptCandidate& victim, const BeyondGuaranteeOf& beyond) {
  if (!beyond) return false;
  // Counted on the victim's type, where the GPUs change hands: the preemptor's whole
  // gang is added to its team, the victim's GPUs taken from its team.
  const int64_t theirs_after = beyond(victim.team, victim.kind()) - static_cast<int64_t>(victim.gpus());
  const int64_t mine_after = beyond(preemptor.team, victim.kind()) + static_cast<int64_t>(preemptor.gpus);
  return mine_after <= theirs_after;
}

int running_attained_level(const PreemptCandidate& victim, const Config& config, int64_t now) {
  const double this_run = static_cast<double>(victim.gpus()) * static_cast<double>(std::max<int64_t>(0, now - victim.start_time));
  return attained_service_level_of(config, victim.team, victim.partition, victim.attained_gpu_seconds + this_run, 0);
}

int waiting_attained_level(const Preemptor& preemptor, const Config& config, int64_t now) {
  const int64_t waited = preemptor.queued_since > 0 ? std::max<int64_t>(0, now - preemptor.queued_since) : 0;
  return attained_service_level_of(config, preemptor.team, preemptor.partition, preemptor.attained_gpu_seconds, waited);
}

bool starving_large_gang(const Preemptor& preemptor, const Config& config, int64_t now) {
  if (config.preempt_for_large_gang_gpus == 0 || preemptor.gpus < config.preempt_for_large_gang_gpus) return false;
  if (preemptor.eligible_since <= 0 || preemptor.eligible_since > now) return false;
  return now - preemptor.eligible_since >= static_cast<int64_t>(config.preempt_for_large_gang_wait);
}

void mark_borrowing(std::vector<PreemptCandidate>& running, const GuaranteeOf& guaranteed) {
  // A candidate knows one type or none ("": several, or untyped), so its GPUs are
  // counted against that type's guarantee, or against the sum over types.
  std::vector<GpuHolding> held;
  held.reserve(running.size());
  for (const auto& j : running) {
    GpuHolding h{j.job_id, j.team, j.start_time, {}};
    if (j.gpu_type.empty()) h.gpus.untyped = j.gpus();
    else h.gpus.by_type[j.kind()] = j.gpus();
    held.push_back(std::move(h));
  }
  const std::vector<bool> borrowing = borrowing_in_start_order(held, guaranteed);
  for (size_t i = 0; i < running.size(); ++i) running[i].borrowing = borrowing[i];
}

BorrowingDecision decide_borrowing(const std::optional<std::string>& mark, bool priority_plugin_marks,
                                   bool estimate) {
  if (!priority_plugin_marks) return {estimate, BorrowingSource::estimate};
  if (mark && (*mark == "yes" || *mark == "no")) return {*mark == "yes", BorrowingSource::mark};
  return {false, BorrowingSource::not_marked_yet};
}

const char* borrowing_source_name(BorrowingSource s) {
  switch (s) {
    case BorrowingSource::mark: return "priority/mlsched's mark";
    case BorrowingSource::not_marked_yet: return "not marked yet";
    case BorrowingSource::estimate: return "preempt/mlsched's estimate";
  }
  return "unknown";
}

namespace {
constexpr std::string_view kTimesKey = mark_key::preempted;
constexpr std::string_view kAtKey = mark_key::preempted_at;
constexpr std::string_view kByKey = mark_key::preempted_by;
constexpr std::string_view kLostKey = mark_key::lost_gpu_seconds;
}  // namespace

PreemptionHistory preemption_history(std::string_view admin_comment) {
  return decode_job_record(admin_comment).preemptions;
}

std::string with_preemption_recorded(std::string_view admin_comment, uint32_t preemptor_job_id, int64_t at,
                                     double lost_gpu_seconds) {
  JobRecord r = decode_job_record(admin_comment);
  const PreemptionHistory& h = r.preemptions;
  const double lost = h.lost_gpu_seconds + std::max(0.0, lost_gpu_seconds);
  r.set(kTimesKey, std::to_string(h.times + 1));
  r.set(kAtKey, local_clock(at, "%Y-%m-%dT%H:%M:%S"));
  r.set(kByKey, preemptor_job_id ? std::optional<std::string>(std::to_string(preemptor_job_id)) : std::nullopt);
  r.set(kLostKey, std::to_string(std::llround(lost)));
  r.set(mark_key::preempted_at_utc, std::to_string(at));
  return r.encode();
}

PreemptCandidate preemption_view(uint32_t job_id, const JobRecord& record, uint32_t restarts) {
  PreemptCandidate c;
  c.job_id = job_id;
  // PreemptMaxPerJob counts our own `preempted=` mark; Slurm's restart count also
  // holds time-limit and node-failure requeues, which only max-restarts counts.
  c.times_preempted = record.preemptions.times;
  c.restarts = restarts;
  c.attained_gpu_seconds = record.marks.attained_gpu_seconds;
  c.preemptible = false;
  if (const auto& d = record.directives) {
    c.has_directives = true;
    c.preemptible = d->preemptible;
    c.max_restarts = d->max_restarts;
    c.checkpoint_interval = d->checkpoint_interval;
  }
  return c;
}

bool may_reserve_for_gang(uint32_t gpus, int64_t eligible_since, const Config& config, int64_t now) {
  if (config.reserve_for_gang_gpus == 0 || gpus < config.reserve_for_gang_gpus) return false;
  return eligible_since > 0 && now - eligible_since >= static_cast<int64_t>(config.reserve_for_gang_wait);
}

std::optional<GangReservation> reservation_of(uint32_t job_id, const JobMarks& marks) {
  if (marks.reserved_nodes.empty() || marks.reserved_since <= 0) return std::nullopt;
  GangReservation r;
  r.job_id = job_id;
  r.nodes = expand_hostlist(marks.reserved_nodes);
  r.since = marks.reserved_since;
  if (r.nodes.empty()) return std::nullopt;
  return r;
}

std::string with_reservation_recorded(std::string_view admin_comment, const std::optional<GangReservation>& r) {
  JobRecord record = decode_job_record(admin_comment);
  record.set(mark_key::reserved_nodes, r ? std::optional<std::string>(compress_hostlist(r->nodes)) : std::nullopt);
  record.set(mark_key::reserved_since, r ? std::optional<std::string>(std::to_string(r->since)) : std::nullopt);
  return record.encode();
}

bool may_borrow_reserved_gpus(const PreemptCandidate& job, const Config& config) {
  if (!job.preemptible) return false;
  // It must be able to give the GPUs back: preempt/mlsched's cap and the job's own
  // max-restarts would otherwise leave the gang waiting for it to end.
  if (job.times_preempted >= config.preempt_max_per_job) return false;
  return !(job.has_directives && job.restarts >= job.max_restarts);
}

bool lent_reserved_gpus(const GangReservation& r, const PreemptCandidate& job, const Config& config) {
  if (job.job_id == r.job_id || job.start_time < r.since || !may_borrow_reserved_gpus(job, config)) return false;
  for (const auto& node : r.nodes) {
    auto it = job.gpus_on_node.find(node);
    if (it != job.gpus_on_node.end() && it->second > 0) return true;
  }
  return false;
}

int64_t reserved_unit_ready(uint32_t gang_gpus, uint32_t unit_gpus, int64_t since, std::vector<UnitHolder> holders,
                            int64_t now) {
  if (unit_gpus < gang_gpus) return now;
  // Lent GPUs count as free (the gang preempts their jobs once nothing else is left),
  // and so do those of jobs that started after the reservation (see preempt.h).
  holders.erase(std::remove_if(holders.begin(), holders.end(),
                               [&](const UnitHolder& h) { return h.lent || h.gpus == 0 || h.start_time >= since; }),
                holders.end());
  uint64_t held = 0;
  for (const auto& h : holders) held += h.gpus;
  // The jobs in the order their time limits end (no end: last); each end frees its GPUs.
  std::sort(holders.begin(), holders.end(), [](const UnitHolder& a, const UnitHolder& b) {
    const bool a_ends = a.end_time > 0, b_ends = b.end_time > 0;
    return a_ends != b_ends ? a_ends : a.end_time < b.end_time;
  });
  int64_t ready = now;
  for (const auto& h : holders) {
    if (unit_gpus >= held + gang_gpus) break;
    if (h.end_time <= 0) return now;
    ready = std::max(ready, h.end_time);
    held -= h.gpus;
  }
  return ready;
}

bool ends_before_unit_ready(int64_t start, uint64_t time_limit, int64_t ready) {
  return time_limit > 0 && start + static_cast<int64_t>(time_limit) <= ready;
}

double lost_work(const PreemptCandidate& victim, int64_t now) {
  const int64_t since = work_at_risk_since(victim.start_time, victim.last_checkpoint, victim.checkpoint_interval, now);
  return static_cast<double>(victim.gpus()) * static_cast<double>(std::max<int64_t>(0, now - since));
}

namespace {

// A partial victim set in the cover search.
struct Cover {
  int64_t lost = 0;  // whole GPU-seconds, so comparisons are exact
  std::vector<uint32_t> ids;  // sorted ascending
  bool better_than(const Cover& o) const {
    if (lost != o.lost) return lost < o.lost;
    if (ids.size() != o.ids.size()) return ids.size() < o.ids.size();
    return ids < o.ids;
  }
};

struct Unit {
  std::string name;
  std::string gpu_type;
  std::vector<const PreemptNode*> nodes;
};

std::vector<Unit> units_for(const Preemptor& preemptor, const std::vector<PreemptNode>& nodes) {
  std::map<std::pair<std::string, std::string>, Unit> units;  // (type, name)
  const std::string want = lowercase(preemptor.gpu_type);
  for (const auto& n : nodes) {
    const std::string type = lowercase(n.gpu_type);
    if (type.empty() || (!want.empty() && type != want)) continue;
    std::string name;
    if (preemptor.locality == Locality::node) name = n.name;
    // A node outside every multi-node domain is an NVLink unit of its own.
    else if (preemptor.locality == Locality::nvlink_domain) name = n.nvlink_domain.empty() ? n.name : n.nvlink_domain;
    // Wider localities are the select plugin's business; one GPU type is ours.
    else name = "cluster";
    Unit& u = units[{type, name}];
    u.name = name;
    u.gpu_type = type;
    u.nodes.push_back(&n);
  }
  std::vector<Unit> out;
  for (auto& [key, u] : units) out.push_back(std::move(u));
  return out;
}

// Least-lost-work cover of `need` GPUs by the candidates' GPUs in `unit`: a 0/1
// knapsack over GPU counts capped at `need`, exact for the handful of jobs a
// unit holds.
std::optional<Cover> best_cover(const Unit& unit, uint32_t need, const std::vector<PreemptCandidate>& allowed,
                                int64_t now) {
  std::vector<std::optional<Cover>> best(need + 1);
  best[0] = Cover{};
  for (const auto& c : allowed) {
    uint32_t here = 0;
    for (const auto* n : unit.nodes) {
      auto it = c.gpus_on_node.find(n->name);
      if (it != c.gpus_on_node.end()) here += it->second;
    }
    if (here == 0) continue;
    const int64_t lost = std::llround(lost_work(c, now));
    for (int64_t freed = static_cast<int64_t>(need) - 1; freed >= 0; --freed) {
      if (!best[freed]) continue;
      const uint32_t to = std::min<uint32_t>(need, static_cast<uint32_t>(freed) + here);
      Cover next = *best[freed];
      next.lost += lost;
      next.ids.insert(std::upper_bound(next.ids.begin(), next.ids.end(), c.job_id), c.job_id);
      if (!best[to] || next.better_than(*best[to])) best[to] = std::move(next);
    }
  }
  return best[need];
}

}  // namespace

VictimChoice choose_victims(const Preemptor& preemptor, const std::vector<PreemptCandidate>& allowed,
                            const std::vector<PreemptNode>& nodes, int64_t now) {
  VictimChoice choice;
  std::optional<Cover> best;
  std::string best_unit;
  uint32_t most_reachable = 0;
  for (const auto& unit : units_for(preemptor, nodes)) {
    uint32_t free = 0, held = 0;
    for (const auto* n : unit.nodes) free += n->free_gpus;
    for (const auto& c : allowed)
      for (const auto* n : unit.nodes) {
        auto it = c.gpus_on_node.find(n->name);
        if (it != c.gpus_on_node.end()) held += it->second;
      }
    most_reachable = std::max(most_reachable, free + held);
    const uint32_t need = preemptor.gpus > free ? preemptor.gpus - free : 0;
    auto cover = best_cover(unit, need, allowed, now);
    if (!cover) continue;
    if (!best || cover->better_than(*best)) {
      best = std::move(cover);
      best_unit = unit.name;
    }
  }
  if (!best) {
    choice.reason = "no " + (preemptor.gpu_type.empty() ? std::string("GPU") : preemptor.gpu_type) +
                    " unit can free " + std::to_string(preemptor.gpus) + " GPUs (at most " +
                    std::to_string(most_reachable) + " free or held by preemptible jobs in one " +
                    (preemptor.locality == Locality::node            ? "node"
                     : preemptor.locality == Locality::nvlink_domain ? "NVLink domain"
                                                                     : "GPU type") +
                    ")";
    return choice;
  }
  choice.found = true;
  choice.unit = best_unit;
  choice.lost_gpu_seconds = static_cast<double>(best->lost);
  std::vector<const PreemptCandidate*> chosen;
  for (const auto& c : allowed)
    if (std::binary_search(best->ids.begin(), best->ids.end(), c.job_id)) chosen.push_back(&c);
  std::stable_sort(chosen.begin(), chosen.end(), [now](const PreemptCandidate* a, const PreemptCandidate* b) {
    const double la = lost_work(*a, now), lb = lost_work(*b, now);
    return la != lb ? la < lb : a->job_id < b->job_id;
  });
  for (const auto* c : chosen) choice.victims.push_back(c->job_id);
  return choice;
}

std::map<uint32_t, uint32_t> preemption_order(const VictimChoice& choice, const std::vector<PreemptCandidate>& allowed,
                                              int64_t now) {
  std::map<uint32_t, uint32_t> rank;
  for (uint32_t id : choice.victims) rank.emplace(id, static_cast<uint32_t>(rank.size()));
  std::vector<const PreemptCandidate*> rest;
  for (const auto& c : allowed)
    if (!rank.count(c.job_id)) rest.push_back(&c);
  std::stable_sort(rest.begin(), rest.end(), [now](const PreemptCandidate* a, const PreemptCandidate* b) {
    const double la = lost_work(*a, now), lb = lost_work(*b, now);
    return la != lb ? la < lb : a->job_id < b->job_id;
  });
  for (const auto* c : rest) rank.emplace(c->job_id, static_cast<uint32_t>(rank.size()));
  return rank;
}

}  // namespace mlsched
