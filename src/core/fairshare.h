// Fair share between teams on GPU-time: each team's usage is GPU-seconds weighted
// by GPU type and decayed with a half-life; its standing compares that usage with
// its entitlement (its fair share of the cluster). Slurm-free; time is passed in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tres.h"  // GpuCounts

namespace mlsched {

// How much one GPU-second of each type counts; types not listed weigh 1.
struct GpuWeights {
  std::map<std::string, double> by_type;  // lowercase gpu_type -> weight
  double of(std::string_view gpu_type) const;
  // Weighted GPUs of a job: sum of count x weight (untyped GPUs weigh 1).
  double weighted(const GpuCounts& gpus) const;
};

// A running job as the ledger charges it. (Named apart from why.h's RunningJob:
// two types of one name in namespace mlsched break the one-definition rule.)
struct ChargedJob {
  uint32_t job_id = 0;
  std::string team;
  double weighted_gpus = 0;   // GpuWeights::weighted of its allocation
  uint32_t gpus = 0;          // raw count, for GPU-seconds comparable with sacct
  int64_t start_time = 0;
  GpuCounts allocation;       // by type, for what the team holds now
};

struct TeamUsage {
  double decayed = 0;              // weighted GPU-seconds, decayed; what fair share compares
  double charged_gpu_seconds = 0;  // raw GPU-seconds charged, never decayed (matches sacct)
};

// Usage per team, charged while jobs run. It remembers up to when each running job
// has been charged, so a restart that reloads it charges every second exactly once.
class UsageLedger {
 public:
  // half_life_seconds == 0: usage never decays (as Slurm's PriorityDecayHalfLife=0).
  explicit UsageLedger(uint32_t half_life_seconds = 7 * 86400) : half_life_(half_life_seconds) {}
  void set_half_life(uint32_t seconds) { half_life_ = seconds; }
  uint32_t half_life() const { return half_life_; }

  // Decays all usage up to `now`, then charges every running job from where it was
  // last charged (or its start) up to `now`. Jobs the ledger tracks that are not in
  // `running` are left alone: job_end() settles them.
  void account(int64_t now, const std::vector<ChargedJob>& running);
  // A job ended at `end_time`: charges its last piece, or, when its work was lost to
  // a node failure, takes back what it was charged (decayed as the rest). Returns
  // the raw GPU-seconds of the run that ended (refunded or not: the job consumed
  // them), which is what attained service adds up across a job's runs.
  double job_end(const ChargedJob& job, int64_t end_time, bool lost_to_node_failure) {
    return settle_run(job, end_time, lost_to_node_failure ? job.start_time : end_time);
  }
  // The same with the part that is kept named: the run is charged up to
  // `kept_until` (its end for a run that ended normally; for one whose node failed,
  // its last checkpoint: checkpoint.h work_at_risk_since), and what it was charged
  // beyond that is taken back. Returns the raw GPU-seconds charged before the take-back.
  double settle_run(const ChargedJob& job, int64_t end_time, int64_t kept_until);

  // Stops tracking a job without charging more (it left Slurm's tables unseen).
  void forget(uint32_t job_id) { jobs_.erase(job_id); }
  std::vector<uint32_t> tracked_job_ids() const;

  const std::map<std::string, TeamUsage>& teams() const { return teams_; }
  double decayed(const std::string& team) const;
  std::optional<int64_t> charged_through(uint32_t job_id) const;
  size_t tracked_jobs() const { return jobs_.size(); }
  int64_t decayed_through() const { return decayed_through_; }

  // Text form for StateSaveLocation; parse() rejects anything malformed with a reason.
  std::string serialize() const;
  // Times after `not_after` (decayed_through, a job's charged_through) are
  // rejected: a clock far ahead would freeze decay, or with a huge value erase
  // every team's usage at the next pass. slurmctld passes now + kMaxStateClockSkew.
  static constexpr int64_t kMaxStateClockSkew = 300;  // seconds
  static std::optional<UsageLedger> parse(std::string_view text, uint32_t half_life, std::string* error,
                                          int64_t not_after = INT64_MAX);

 private:
  struct JobCharge {
    std::string team;
    int64_t charged_through = 0;
    double decayed = 0;              // this job's share of its team's decayed usage
    double gpu_seconds = 0;
  };
  void decay_to(int64_t now);
  void charge(uint32_t job_id, const ChargedJob& job, int64_t until);

  uint32_t half_life_;
  int64_t decayed_through_ = 0;  // 0: nothing charged yet
  std::map<std::string, TeamUsage> teams_;
  std::map<uint32_t, JobCharge> jobs_;
};

// A team's entitlement, from the accounting database (sacctmgr shares).
struct TeamShares {
  std::string team;
  uint32_t shares = 1;
};

// How a team stands against its entitlement; the numbers sshare shows.
struct TeamStanding {
  double shares_norm = 0;   // entitlement: its shares over all teams' shares
  double usage_norm = 0;    // its decayed usage over all teams' decayed usage
  // 2^(-usage_norm/shares_norm): 1 with no usage, 0.5 at exactly its entitlement,
  // towards 0 above it. A team without shares gets 0.
  double fairshare = 0;
  // shares_norm / usage_norm: above 1 = under-served (infinite when unused).
  double level = 0;
};

std::map<std::string, TeamStanding> team_standing(const std::vector<TeamShares>& teams,
                                                 const UsageLedger& ledger);

}  // namespace mlsched
