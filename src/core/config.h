// mlsched.conf: the admin's typed configuration. All defaults live in Config's
// member initializers below, and nowhere else.
#pragma once

#include <array>
#include <csignal>
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace mlsched {

// What a job of one type gets when its directives do not say otherwise.
struct JobTypeDefaults {
  PreemptiblePolicy preemptible = PreemptiblePolicy::yes;
  int checkpoint_signal = SIGUSR1;
  uint32_t checkpoint_grace = 120;     // seconds the job needs to write a checkpoint
  uint32_t checkpoint_interval = 0;    // seconds between checkpoints; 0 = not declared
  uint32_t max_restarts = 3;
  Locality locality = Locality::any;
  LocalityMode locality_mode = LocalityMode::prefer;
};

// NVLink domains span nodes (e.g. an NVL72 rack); Slurm has no notion of them.
struct NvlinkDomainSpec {
  std::string name;
  std::vector<std::string> nodes;
  int line = 0;
};

struct Config {
  // Upper bound on checkpoint-grace: a preemptor waits at most this long.
  uint32_t max_checkpoint_grace = 600;
  // Type of a job whose directives name none.
  JobType default_job_type = JobType::training;
  // Upper bound on max-restarts a user may ask for.
  uint32_t max_restarts_limit = 100;
  std::array<JobTypeDefaults, kJobTypeCount> job_types = builtin_job_types();
  std::vector<NvlinkDomainSpec> nvlink_domains;

  // ==== select/mlsched: placement ================================================
  // A node on which a job ended by node failure within this many seconds counts as
  // flaky: large gangs avoid it while healthy nodes can hold them.
  uint32_t node_failure_window = 3600;
  // Gangs of at least this many nodes are "large" for the rule above.
  uint32_t large_gang_nodes = 2;
  // Training throughput of each GPU type relative to the others (lowercase gpu_type
  // -> speed; a type not listed runs at 1). Set, a job that accepts several types is
  // placed on the fastest type with room, and waits for a faster type when, by its
  // time limit, it would still finish sooner there (Gavel's throughput-aware choice).
  // Empty (the default): the user's order of types, as Slurm would take them.
  std::map<std::string, double> gpu_type_speed;
  // ==== end select/mlsched =======================================================

  // ==== preempt/mlsched ===========================================================
  // A running job is safe from preemption for this many seconds after it (re)starts,
  // so it can make progress (and checkpoint) before it is interrupted again.
  uint32_t preempt_min_run_time = 300;
  // A job preempt/mlsched preempted this many times (its `preempted=` mark; other
  // requeues do not count) is not preempted again, so no job thrashes between queue
  // and GPUs. The job's own max-restarts caps its requeues of every kind.
  uint32_t preempt_max_per_job = 5;
  // A gang of at least this many GPUs that has been eligible to start for
  // PreemptForLargeGangWait seconds may reclaim other teams' borrowed GPUs even
  // when its own team is beyond its quota (which otherwise forbids preempting), so
  // a stream of small borrowing jobs cannot starve it. 0 turns the rule off.
  uint32_t preempt_for_large_gang_gpus = 16;
  uint32_t preempt_for_large_gang_wait = 7200;
  // Tiresias' least-attained-service preemption, within a team: a waiting job may
  // checkpoint-preempt a running preemptible job of its own team whose attained
  // GPU-time (earlier runs plus this one) is in a higher AttainedService level than
  // its own. Short jobs then pass long ones without runtime estimates; a team's
  // GPUs stay its own, so no team gains at another's expense. Needs AttainedService
  // (the levels, and where they apply). Off by default.
  bool preempt_for_attained_service = false;
  // Preemptible jobs are best effort: a waiting job that is not preemptible may
  // checkpoint-preempt a preemptible one, as QOS preemption of a scavenger QOS does
  // in stock Slurm, but only where that keeps fair share: of its own team (the GPUs
  // stay the team's), or of another team that, after the swap, still holds at least
  // as many GPUs of that type beyond its guarantee as the preemptor's team does
  // (may_preempt). A team within its guarantee is never preempted this way. Off by
  // default.
  bool preempt_for_non_preemptible = false;
  // Reservations for large gangs (preempt.h, "gang reservations"): a pending gang of
  // at least ReserveForGangGpus GPUs that has been eligible for ReserveForGangWait
  // seconds reserves the nodes where backfill plans to start it (one gang at a time,
  // the first to ask). Until it starts, GPUs freed there go only to preemptible
  // jobs: they run on lent GPUs, and once the gang's nodes hold nothing else, the
  // gang checkpoint-preempts them whatever their team's standing and run time. 0
  // (the default) turns reservations off.
  uint32_t reserve_for_gang_gpus = 0;
  uint32_t reserve_for_gang_wait = 600;  // 10m
  // ==== end preempt/mlsched =======================================================

  // ==== priority/mlsched: fair share, quotas and priority weights ==============
  // How much one GPU-second of a type counts in a team's usage (lowercase gpu_type
  // -> weight). A type not listed weighs 1.
  std::map<std::string, double> gpu_weights;
  // Guaranteed GPUs per team and GPU type (team -> lowercase gpu_type -> GPUs). A
  // team or type without an entry is guaranteed its fair share of that type.
  // A type may be given per pool (partition): `a100@train`. The GPUs of that type in
  // that partition are then a quota kind of their own (quota_kind(), priority.h) for
  // every team, and the type's other GPUs form the rest.
  std::map<std::string, std::map<std::string, uint32_t>> team_quotas;
  std::set<std::string> pool_quota_kinds;  // every "<type>@<pool>" named in a TeamQuota
  // Unset: slurm.conf's PriorityDecayHalfLife and PriorityCalcPeriod.
  std::optional<uint32_t> priority_decay_half_life;
  std::optional<uint32_t> priority_calc_period;
  // Wait at which the age term is full; also the time unit of the size-aware term.
  uint32_t priority_max_age = 86400;
  uint32_t priority_weight_fairshare = 10000;
  uint32_t priority_weight_quota = 10000;
  // A pending job of at least this many GPUs holds its place in its team's guarantee
  // in queue order (priority.h): it claims its GPUs of it, and when it does not fit
  // yet it keeps the rest from the team's later jobs. Smaller jobs take the
  // guarantee as they fit and hold nothing: a job of a few GPUs starts on what any
  // ending job frees, a gang only on its team's headroom at once. 1: every job
  // holds its place; 0: none does.
  uint32_t team_quota_kept_for_gpus = 16;
  // A job only partly within its team's guarantee (the guarantee has fewer GPUs left
  // than it asks, and no earlier job closed it) gets PriorityWeightQuota times the
  // share of its GPUs that are within, instead of nothing. An 8-GPU job of a team 4
  // GPUs short of its guarantee then ranks half-way between its team's jobs within
  // it and those wholly beyond it. Off: the term is all or nothing.
  bool team_quota_partial_credit = false;
  uint32_t priority_weight_age = 1000;
  // Large enough that a quarter-cluster gang passes fresh jobs after 1.04 x
  // PriorityMaxAge with the other defaults (see seconds_to_reach_top()).
  uint32_t priority_weight_job_size = 100000;
  uint32_t priority_weight_qos = 1000;
  // Best effort queues behind: a pending job that may not be preempted (preemptible=no,
  // or no directives) gets this weight; a preemptible one does not. Stock Slurm does
  // the same with a scavenger QOS that a site's normal QOS preempts: preempt/qos sorts
  // every job of the preempting QOS ahead of the scavenger's, whatever their
  // priorities. A preemptible job can start on any free GPU and give it back, so it
  // costs little to start it later; a job that cannot give its GPUs back waits for
  // them instead. At PriorityWeightQuota's value a preemptible job within its team's
  // guarantee ranks with a non-preemptible one that borrows (fair share decides), and
  // above all borrowing preemptible ones. 0 (the default): no such term.
  uint32_t priority_weight_non_preemptible = 0;
  uint32_t priority_weight_partition = 1000;
  // By JobType order: training, inference, sweep, interactive. People waiting at a
  // terminal first, then serving, then training; sweeps fill the gaps.
  std::array<uint32_t, kJobTypeCount> priority_weight_job_type = {1000, 2000, 0, 3000};

  // Attained service (Tiresias' discretized least-attained-service): where it
  // applies, a pending job that has already consumed GPU-time in earlier runs (a
  // requeued job) ranks below its team's fresh jobs, by coarse level, so short jobs
  // finish first on heavy-tailed workloads without any runtime estimate.
  struct AttainedServiceScope {
    bool all = false;
    std::vector<std::string> teams;       // Slurm accounts
    std::vector<std::string> partitions;
    bool enabled() const { return all || !teams.empty() || !partitions.empty(); }
  };
  AttainedServiceScope attained_service;  // default: off
  // Level boundaries in GPU-seconds, ascending: below the first is level 0 (no
  // penalty), at or above the last is the last level (the full weight off).
  std::vector<uint64_t> attained_service_thresholds = {3600, 36000};
  // Priority taken off a job in the last level; each level in between takes its
  // share (weight x level / levels-1). Larger than PriorityWeightAge, so a level
  // outranks age within a team, as Tiresias' queues are strict.
  uint32_t priority_weight_attained_service = 5000;
  // A job that has waited this long since it was (re)queued is promoted to level 0,
  // so a long job is never kept back for good. 0 = never promoted.
  uint32_t attained_service_promote_after = 3600;
  // ==== end priority/mlsched ===================================================

  const JobTypeDefaults& defaults_for(JobType t) const {
    return job_types[static_cast<int>(t)];
  }

 private:
  static std::array<JobTypeDefaults, kJobTypeCount> builtin_job_types();
};

struct ConfigResult {
  std::optional<Config> config;       // set only when there were no errors
  std::vector<std::string> errors;    // "mlsched.conf:12: unknown key 'Foo' ..."
};

// `source` names the file in messages.
ConfigResult parse_config(std::string_view text, std::string_view source);
// Reads and parses a file; a missing file is an error (the admin named it).
ConfigResult load_config_file(const std::string& path);

// Every key mlsched.conf accepts, so that its manual (mlsched.conf(5)) is checked
// against the parser: the keys of a plain line, of a JobType= line and of an
// NvlinkDomain= line.
struct ConfigKeys {
  std::vector<std::string> top, job_type, nvlink_domain;
};
ConfigKeys config_keys();

}  // namespace mlsched
