// Checkpoint-aware preemption (preempt/mlsched): which running jobs a pending job
// may take GPUs from, and which set of them loses the least work. Slurm-free; the
// plugin copies jobs and nodes in and `now` is passed in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/job_record.h"
#include "core/priority.h"
#include "core/types.h"

namespace mlsched {

// A running job that might be preempted.
struct PreemptCandidate {
  uint32_t job_id = 0;
  std::string team;
  std::string gpu_type;                        // "" when its GPUs have no single type
  std::map<std::string, uint32_t> gpus_on_node;  // node name -> GPUs it holds there
  int64_t start_time = 0;                      // of its current run (after a requeue: the new start)
  bool preemptible = true;                     // its directive (or its type's default)
  bool borrowing = false;                      // beyond its team's guarantee (mark_borrowing)
  uint32_t times_preempted = 0;                // by preempt/mlsched: its `preempted=` mark (PreemptMaxPerJob)
  uint32_t restarts = 0;                       // Slurm's restart count: every requeue (preemption,
                                               // time limit, node failure); its max-restarts caps it
  uint32_t max_restarts = 0;                   // its directive; 0 with no directives = no own cap
  bool has_directives = false;
  uint32_t checkpoint_interval = 0;            // declared seconds between checkpoints; 0 = none
  std::optional<int64_t> last_checkpoint;      // last *completed* checkpoint as the job reported it
                                               // (checkpoint_report(); unchecked, see lost_work)
  std::string partition;                       // for AttainedService=partition:<name>
  double attained_gpu_seconds = 0;             // of its earlier runs (its attained-gpu-seconds mark)
  std::string quota_kind;                      // its GPUs' kind for quotas (quota_kind(), priority.h);
                                               // "" = gpu_type

  uint32_t gpus() const;
  // The kind its GPUs count against in its team's guarantee.
  const std::string& kind() const { return quota_kind.empty() ? gpu_type : quota_kind; }
};

// What preemption reads of a job from its mlsched record and Slurm's restart count:
// whether it gives GPUs back (a job without directives never offered to), its
// checkpoint interval, how often preempt/mlsched preempted it, its max-restarts, its
// attained service. The plugins add where it runs; `mlsched why` as well.
PreemptCandidate preemption_view(uint32_t job_id, const JobRecord& record, uint32_t restarts);

// ==== reservations for large gangs (ReserveForGangGpus) ==========================
// A large gang that has waited long enough reserves the unit where backfill plans to
// start it. select/mlsched keeps every job that could not give the GPUs back off
// those nodes; preemptible jobs may run there on lent GPUs, and preempt/mlsched lets
// the gang take them back as soon as the unit holds nothing else. So the gang's
// GPUs neither sit idle while it waits nor go to work that would make it wait longer.
// The reservation lives on the gang's record (reserved-nodes, reserved-since), where
// the three of them and `mlsched why` read it.
struct GangReservation {
  uint32_t job_id = 0;             // the gang
  std::vector<std::string> nodes;  // the unit it will run in
  int64_t since = 0;               // when it took them (UTC epoch seconds)
};
// May a pending gang of `gpus` GPUs, eligible since `eligible_since` (0: unknown),
// take a reservation now? ReserveForGangGpus set and reached, ReserveForGangWait
// waited.
bool may_reserve_for_gang(uint32_t gpus, int64_t eligible_since, const Config& config, int64_t now);
// The reservation a job's marks hold; nullopt when there is none (or it is unreadable).
std::optional<GangReservation> reservation_of(uint32_t job_id, const JobMarks& marks);
// The admin comment with the reservation recorded (nullopt: its marks removed).
// Pure string work: the plugin calls it under slurmctld's job write lock.
std::string with_reservation_recorded(std::string_view admin_comment, const std::optional<GangReservation>& r);
// A job the unit may be lent to: one that gives GPUs back on request. Preemptible,
// not yet preempted PreemptMaxPerJob times, with requeues left (its max-restarts).
// Fields read: preemptible, has_directives, times_preempted, restarts, max_restarts.
bool may_borrow_reserved_gpus(const PreemptCandidate& job, const Config& config);
// Running on GPUs lent from the reservation: (re)started after it was taken, on one
// of its nodes, and a job it may be lent to.
bool lent_reserved_gpus(const GangReservation& r, const PreemptCandidate& job, const Config& config);
// A job holding GPUs on a reserved unit, as the unit's ready time sees it.
struct UnitHolder {
  uint32_t gpus = 0;       // GPUs it holds on the unit's nodes
  int64_t start_time = 0;  // of its current run
  int64_t end_time = 0;    // when its time limit ends; 0 = no end known
  bool lent = false;       // lent_reserved_gpus: the gang takes them back when it starts
};
// The earliest the unit can hold the gang if every job that held GPUs there when the
// gang reserved it (at `since`), and keeps them, runs to its time limit: the first
// time those jobs' GPUs leave `gang_gpus` of the unit's `unit_gpus` usable GPUs free.
// Which GPUs inside the nodes the gang needs can only make it later, so a job whose
// time limit ends by then does not delay the gang past it: the promise stock backfill
// makes to the job it reserves for. Jobs that started there later (lent GPUs, or let
// in by this rule) are not waited for: time limits are often several times the run
// time, and if each job let in moved the time on, the next shorter one would be let in
// after it, and the gang would wait on that chain rather than on the jobs it found
// there. `now` (nothing fits before it) when the gang could start at once, when a job
// it must wait for has no end, and when the unit has too few usable GPUs for the gang
// (a node is down).
int64_t reserved_unit_ready(uint32_t gang_gpus, uint32_t unit_gpus, int64_t since, std::vector<UnitHolder> holders,
                            int64_t now);
// A job that cannot give GPUs back may still run on the unit when it starts at `start`
// and its time limit (`time_limit` seconds; 0 = none) ends by the unit's `ready` time.
bool ends_before_unit_ready(int64_t start, uint64_t time_limit, int64_t ready);
// ==== end reservations for large gangs ==========================================

// The pending job that wants GPUs.
struct Preemptor {
  uint32_t job_id = 0;
  std::string team;
  std::string gpu_type;   // "" = any type (a job that names none)
  uint32_t gpus = 0;      // the whole gang's GPUs
  bool borrowing = false; // starting it would take its team beyond its guarantee
  Locality locality = Locality::any;  // node / nvlink-domain: its GPUs must be in one such unit
  int64_t eligible_since = 0;  // when it last became eligible to start (Slurm's begin time); 0 = unknown
  std::string partition;       // for AttainedService=partition:<name>
  double attained_gpu_seconds = 0;  // of its earlier runs (a requeued job); 0 for a fresh one
  int64_t queued_since = 0;    // when it last became pending (for promotion); 0 = unknown, no promotion
  bool preemptible = true;     // its directive (or its type's default); a job without directives: no
  std::optional<GangReservation> reservation;  // the unit it reserved (a large gang); lent jobs there yield
};

// GPUs of a type ("" = all types) a team holds beyond its guarantee now; negative
// when it is inside it. The plugin builds it from its snapshot (GPUs in use) and
// Quotas::guaranteed.
using BeyondGuaranteeOf = std::function<int64_t(const std::string& team, const std::string& gpu_type)>;

// ==== attained-service preemption (PreemptForAttainedService) ====================
// A running job's level counts this run's GPU-seconds too; a waiting job's is the
// priority term's level (attained_service_level, promoted after a long wait). -1
// where attained service does not apply to the job.
int running_attained_level(const PreemptCandidate& victim, const Config& config, int64_t now);
int waiting_attained_level(const Preemptor& preemptor, const Config& config, int64_t now);
// ==== end attained-service preemption ===========================================

// A large gang that has waited too long: at least PreemptForLargeGangGpus GPUs and
// eligible for PreemptForLargeGangWait seconds or more. It may reclaim other teams'
// borrowed GPUs even when it would itself borrow (see may_preempt).
bool starving_large_gang(const Preemptor& preemptor, const Config& config, int64_t now);

// Why a pair is refused; each has a sentence for the log and for `mlsched why`.
enum class PreemptVerdict {
  allowed,
  victim_not_preemptible,   // preemptible=no (directive or job type default)
  victim_within_quota,      // the victim's team is inside its guarantee: nothing to reclaim
  preemptor_borrowing,      // an over-quota (borrowing) job never preempts
  same_team,                // teams share within themselves through priority (and, with
                            // PreemptForAttainedService, attained-service levels)
  victim_not_higher_level,  // same team, but the victim's attained-service level is not above the preemptor's
  victim_too_young,         // ran less than PreemptMinRunTime since it (re)started
  victim_preempted_too_often,  // preempt/mlsched preempted it PreemptMaxPerJob times already
  victim_out_of_restarts,   // it was requeued (for any reason) as often as its max-restarts allows
  victim_team_not_further_beyond,  // PreemptForNonPreemptible: after the swap the victim's team
                                   // would hold fewer GPUs beyond its guarantee than the preemptor's
  no_useful_gpus,           // holds no GPUs of the type the preemptor needs
  same_job,
};
const char* verdict_name(PreemptVerdict v);

// Who may preempt whom. Rules, in the order they are checked: a job never preempts
// itself; only preemptible victims; within a team only by attained service
// (PreemptForAttainedService: the victim's level above the preemptor's, the team's
// GPUs staying its own); across teams a borrowing preemptor preempts nothing,
// unless it is a starving large gang (starving_large_gang), and only other teams'
// borrowing jobs; not before PreemptMinRunTime; not a job preempt/mlsched already preempted
// PreemptMaxPerJob times (its `preempted=` mark: time-limit and node-failure
// requeues do not count), nor one whose requeues of any kind reached its own
// max-restarts (the directive caps the job's restarts in all); only jobs holding
// GPUs the preemptor can use.
// A job running on GPUs lent from the preemptor's reservation (lent_reserved_gpus)
// gives them back whatever its team's standing and run time.
// PreemptForNonPreemptible widens two rules for a preemptor that is not itself
// preemptible: within its team it may take any preemptible job's GPUs; across
// teams, when it would borrow, it may still take a borrowing victim's GPUs if
// after the swap the victim's team holds at least as many GPUs of the victim's type
// beyond its guarantee as the preemptor's team then does (`beyond`; without it, no).
PreemptVerdict may_preempt(const Preemptor& preemptor, const PreemptCandidate& victim, const Config& config,
                           int64_t now, const BeyondGuaranteeOf& beyond = {});

// The fair-share test of PreemptForNonPreemptible alone (see may_preempt).
bool swap_keeps_fair_share(const Preemptor& preemptor, const PreemptCandidate& victim, const BeyondGuaranteeOf& beyond);

// Marks which running jobs are borrowing, by borrowing_in_start_order()
// (priority.h, the one definition). `guaranteed(team, gpu_type)` gives the
// guarantee (Quotas::guaranteed in the plugin).
void mark_borrowing(std::vector<PreemptCandidate>& running, const GuaranteeOf& guaranteed);

// Whether a running job is borrowing, and who said so. priority/mlsched marks every
// running job (`borrowing=yes|no` in its admin comment) from the team standing it
// prices with; when that plugin is loaded its mark is the one source of truth, and a
// job it has not marked yet (started in the last second) is left alone. Under any
// other priority plugin nobody marks jobs (a leftover mark is stale): preempt/mlsched
// estimates borrowing itself (mark_borrowing).
enum class BorrowingSource { mark, not_marked_yet, estimate };
struct BorrowingDecision {
  bool borrowing = false;
  BorrowingSource source = BorrowingSource::estimate;
};
BorrowingDecision decide_borrowing(const std::optional<std::string>& mark, bool priority_plugin_marks,
                                   bool estimate);
const char* borrowing_source_name(BorrowingSource s);

// ==== preemption history, kept on the victim ====================================
// preempt/mlsched records each preemption in the victim's admin comment (mlsched's
// part, which users cannot change), beside its directives:
//   preempted=<times> preempted-at=<local time, as scontrol prints times>
//   preempted-by=<preemptor job id> lost-gpu-seconds=<estimated, summed over times>
// so that `scontrol show job` and `mlsched why` show it and it survives requeues
// and controller restarts with the job.
// PreemptionHistory (job_record.h) is read by the one codec of the record.
PreemptionHistory preemption_history(std::string_view admin_comment);
// The admin comment with one more preemption recorded. Pure string work, no I/O:
// the plugin calls it under slurmctld's job write lock.
std::string with_preemption_recorded(std::string_view admin_comment, uint32_t preemptor_job_id, int64_t at,
                                     double lost_gpu_seconds);
// ==== end preemption history ====================================================

// GPU-seconds a victim would lose if stopped now: its GPUs times the time since its
// last completed checkpoint of this run (trusted_checkpoint_time() in checkpoint.h:
// a report before its start is ignored, one after `now` counts as now), else since
// its start; bounded, reported or not, by its declared checkpoint interval. So a
// report never makes a job look more expensive to preempt than it would without it.
double lost_work(const PreemptCandidate& victim, int64_t now);

// A GPU node as preemption sees it.
struct PreemptNode {
  std::string name;
  std::string gpu_type;
  std::string nvlink_domain;  // "" = none
  uint32_t free_gpus = 0;     // idle and usable now
};

struct VictimChoice {
  bool found = false;
  std::vector<uint32_t> victims;  // job ids, least lost work first
  double lost_gpu_seconds = 0;
  std::string unit;               // node, NVLink domain or "cluster" where the preemptor fits
  std::string reason;             // when !found: why no set works
};

// Among sets of allowed candidates that free enough GPUs in one place where the
// preemptor can run (its GPU type; one node or one NVLink domain when its locality
// asks for that), the one with the least lost work, then the fewest jobs, then
// the lowest job ids. Free GPUs count first: no job is preempted when they
// suffice (then found is true with no victims). Candidates must already be allowed
// by may_preempt().
VictimChoice choose_victims(const Preemptor& preemptor, const std::vector<PreemptCandidate>& allowed,
                            const std::vector<PreemptNode>& nodes, int64_t now);

// The order in which the plugin offers candidates to Slurm's select plugin, which
// removes them one by one until the preemptor fits: the chosen set first (least
// lost work first), then the others by lost work. Returns job id -> rank (0 first).
std::map<uint32_t, uint32_t> preemption_order(const VictimChoice& choice, const std::vector<PreemptCandidate>& allowed,
                                              int64_t now);

}  // namespace mlsched
