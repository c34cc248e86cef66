// What mlsched stores on a job, after "mlsched:" in its AdminComment: the
// directives (directives.h owns their keys and canonical form) and the marks the
// plugins set while it runs. This header is the one table of mark keys and the one
// codec of that text: every plugin and the tool read and write it through
// decode_job_record() / JobRecord::encode() (or the token helpers of directives.h,
// which are built on them), never with their own string work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/directives.h"

namespace mlsched {

namespace mark_key {
// priority/mlsched: "yes" on a running job whose GPUs are borrowed beyond its
// team's guarantee (preempt/mlsched may reclaim them), "no" on one inside it.
inline constexpr std::string_view borrowing = "borrowing";
// priority/mlsched: GPU-seconds of earlier runs of a requeued job.
inline constexpr std::string_view attained_gpu_seconds = "attained-gpu-seconds";
// priority/mlsched: first submit time (UTC epoch seconds) of a requeued job.
inline constexpr std::string_view first_submit = "first-submit";
// preempt/mlsched (preempt.h: preemption_history): how often, when, by whom, work lost.
inline constexpr std::string_view preempted = "preempted";
// preempted-at is local time text for people reading `scontrol show job`;
// readers take preempted-at-utc (epoch seconds), which means the same on slurmctld
// and on a login node in another time zone, and fall back to the text only for
// marks written before it existed.
inline constexpr std::string_view preempted_at = "preempted-at";
inline constexpr std::string_view preempted_at_utc = "preempted-at-utc";
inline constexpr std::string_view preempted_by = "preempted-by";
inline constexpr std::string_view lost_gpu_seconds = "lost-gpu-seconds";
// select/mlsched (preempt.h: gang reservations): on a pending large gang that holds
// a reservation, the nodes of the unit it will run in (a hostlist) and when it took
// them (UTC epoch seconds). preempt/mlsched and `mlsched why` read them from there.
inline constexpr std::string_view reserved_nodes = "reserved-nodes";
inline constexpr std::string_view reserved_since = "reserved-since";
// The format version of the record (see kJobRecordVersion).
inline constexpr std::string_view record_version = "record";
}  // namespace mark_key

// Every mark key, in the order above (record_version included).
const std::vector<std::string_view>& mark_keys();

// A pipeline stage's membership, written once at submission: `mlsched pipeline
// submit` passes these words in --comment ("mlsched: pipeline=... stage=..."),
// job_submit/mlsched checks them (check_pipeline_words) and stores them here, where
// users cannot change them. `pipeline status`, `why` and priority/mlsched read them.
namespace pipeline_key {
inline constexpr std::string_view pipeline = "pipeline";  // the pipeline's id ("nightly-3f9a2c")
inline constexpr std::string_view stage = "stage";        // the stage's name in the pipeline file
inline constexpr std::string_view attempt = "attempt";    // "2/3": attempt 2 of 3 (retries=2)
inline constexpr std::string_view after = "after";        // "data-prep:ok,check:any"; absent: none
}  // namespace pipeline_key
const std::vector<std::string_view>& pipeline_keys();

// How a stage waits for another (the pipeline file's `after` entries).
enum class AfterKind { ok, any, notok };
std::string to_string(AfterKind kind);
std::optional<AfterKind> parse_after_kind(std::string_view text);
struct AfterEdge {
  std::string stage;
  AfterKind kind = AfterKind::ok;
};

// Bounds on what one pipeline may hold (checked at submission and in the file).
inline constexpr size_t kMaxPipelineStages = 64;
inline constexpr size_t kMaxPipelineNameBytes = 32;  // pipeline and stage names alike
inline constexpr size_t kMaxPipelineIdBytes = kMaxPipelineNameBytes + 8;
inline constexpr uint32_t kMaxStageRetries = 5;

// Letters, digits, '-' and '_', starting with a letter or digit, at most
// kMaxPipelineNameBytes: safe in a job name, a record word and a terminal.
bool is_pipeline_name(std::string_view name);

struct PipelineMembership {
  std::string id, stage;
  uint32_t attempt = 1, attempts = 1;  // 1-based
  std::vector<AfterEdge> after;
};
// The membership of a record's words; nullopt when it has none. `error` (when
// given) is set to what is wrong with words that are there but do not read.
std::optional<PipelineMembership> pipeline_membership_of(const std::vector<std::string>& words,
                                                         std::string* error = nullptr);
// The words to store ("pipeline=... stage=... attempt=1/3 after=..."), in key order.
std::string pipeline_words(const PipelineMembership& m);

// Version of the record this code writes. Version 1 is the format every mlsched
// release so far has written, and it is written *without* a `record=` token: a
// record without one is version 1, so the text users see in `scontrol show job`
// and jobs already in slurmctld's state stay as they are. A later format that
// cannot be read as version 1 writes `record=<n>`. The rule that keeps old readers
// safe: a key never changes its meaning; a new meaning takes a new key, which an
// older reader keeps without interpreting (unknown keys are preserved).
inline constexpr uint32_t kJobRecordVersion = 1;

// The priority plugin's marks, typed (absent: 0 / nullopt). Times are UTC epoch
// seconds.
struct JobMarks {
  std::optional<std::string> borrowing;
  double attained_gpu_seconds = 0;
  int64_t first_submit = 0;
  std::string reserved_nodes;  // select/mlsched's reservation for a large gang ("": none)
  int64_t reserved_since = 0;
};

// preempt/mlsched's history of a job (the `preempted*` and lost-gpu-seconds marks).
struct PreemptionHistory {
  uint32_t times = 0;            // 0: never preempted by preempt/mlsched
  int64_t last_at = 0;           // UTC epoch seconds; 0 when unknown
  uint32_t last_by = 0;          // job id of the last preemptor; 0 when unknown
  double lost_gpu_seconds = 0;   // lost_work() estimates at each preemption, summed
};

// One job's record, decoded. The typed fields are read from `words` at decode
// time; writers change words with set() and encode() again, so that what they do
// not touch (an admin's note, keys of a later version, the order tokens were
// added in) is kept as it was.
struct JobRecord {
  uint32_t version = kJobRecordVersion;       // `record=`; 1 when absent
  std::optional<JobDirectives> directives;    // nullopt: none, or not readable
  JobMarks marks;
  PreemptionHistory preemptions;
  std::optional<PipelineMembership> pipeline;  // a pipeline stage's (nullopt: none)

  // The text itself: mlsched's words ("key=value", in order) and what is around
  // them (an admin's note before "mlsched:" or after the ';' that ends its part).
  bool has_part = false;                      // the comment has an "mlsched:" part
  std::vector<std::string> words;
  std::string before, after;                  // after: "" or "; <note>"
  std::string original;                       // the comment as decoded

  // A token's value, if mlsched's part has it.
  std::optional<std::string> get(std::string_view key) const;
  // Sets or replaces (at its first place) a token; nullopt removes it. The typed
  // fields are not re-read: decode the encoded text for that.
  void set(std::string_view key, const std::optional<std::string>& value);
  // Keys in mlsched's part that are neither directive nor mark keys: kept on
  // every write (a later version's, or a site's own).
  std::vector<std::string> unknown_keys() const;
  // The admin comment text. A comment without an mlsched part gets one in front
  // ("mlsched: borrowing=yes; <admin note>"); a part left empty is removed, and
  // the admin's note given back as it was.
  std::string encode() const;
};

JobRecord decode_job_record(std::string_view admin_comment);

JobMarks read_marks(std::string_view admin_comment);

// How a run ended, as a shell reads Slurm's job state.
struct RunEndState {
  bool requeue_flag = false;  // JOB_REQUEUE*: being requeued
  bool pending = false;       // already pending again (requeued)
  bool preempted = false;     // JOB_PREEMPTED
  bool node_failed = false;   // JOB_NODE_FAIL (requeued after a node failure)
};
// The one definition of "this job will run again" (a new run of the same job
// follows): its attained service and first submit time must then be kept.
bool runs_again(const RunEndState& s);
// The admin comment after a run that will be followed by another: the run's
// GPU-seconds added to attained-gpu-seconds (when at least half a second), and
// first-submit set to `submit_time` unless an earlier run set it. Pure string work
// (callers hold the job write lock).
std::string with_run_end_recorded(std::string_view admin_comment, double run_gpu_seconds, int64_t submit_time);

// Decoded records by job, so that the plugins parse a job's comment once per
// change instead of on every select_p_job_test or preemptable() call. An entry is
// keyed by job id and checked against the comment text: a changed comment is
// decoded again. Bounded: beyond `capacity` jobs the least recently used entry is
// dropped (slurmctld may hold hundreds of thousands of jobs; a cache must not grow
// with them). Thread-safe; the record handed out stays valid after eviction.
class JobRecordCache {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  explicit JobRecordCache(size_t capacity = kDefaultCapacity);
  std::shared_ptr<const JobRecord> get(uint32_t job_id, std::string_view admin_comment);
  void forget(uint32_t job_id);
  size_t size() const;
  size_t capacity() const { return capacity_; }
  uint64_t hits() const;
  uint64_t decodes() const;

 private:
  struct Entry {
    std::string comment;
    std::shared_ptr<const JobRecord> record;
    std::list<uint32_t>::iterator lru;  // position in lru_ (front: most recent)
  };
  size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, Entry> entries_;
  std::list<uint32_t> lru_;
  uint64_t hits_ = 0, decodes_ = 0;
};

}  // namespace mlsched
