// ML directives: `#MLSCHED key=value` lines in a batch script and
// `--comment "mlsched: key=value ..."` for srun/salloc. Reading, validation and the
// canonical form stored with the job for the other plugins.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/types.h"

namespace mlsched {

// Every key a user may write, in documentation order.
const std::vector<std::string>& directive_keys();

// Where a value came from, so messages can point at it.
struct DirectiveOrigin {
  enum class Kind { script, comment } kind = Kind::script;
  int line = 0;  // script line number (1-based)
  std::string describe() const;  // "line 4" or "--comment"
};

struct GivenValue {
  std::string value;
  DirectiveOrigin origin;
};

// How many problems (and notes) one submission keeps to tell its user; the rest
// are only counted. One script of 300,000 bad lines must not become 300,000
// messages in slurmctld's memory, its log and the user's terminal.
constexpr size_t kMaxProblemsKept = 20;

struct RawDirectives {
  std::map<std::string, GivenValue> values;
  // A pipeline stage's membership words (job_record.h pipeline_keys), which
  // `mlsched pipeline submit` passes in --comment; not directives: a job with only
  // these keeps Slurm's behaviour and gets no directive defaults.
  std::map<std::string, GivenValue> pipeline;
  std::vector<std::string> errors;  // each already names its origin; at most kMaxProblemsKept
  std::vector<std::string> notes;   // harmless but worth telling the user; at most kMaxProblemsKept
  size_t errors_dropped = 0, notes_dropped = 0;  // beyond the kept ones
  bool any() const { return !values.empty() || !errors.empty(); }
  void error(std::string msg);
  void note(std::string msg);
};

// Reads directives from both places. Like sbatch with #SBATCH, #MLSCHED lines count
// only before the script's first command; later ones produce a note.
// In a heterogeneous job, as sbatch does with #SBATCH, the `#SBATCH hetjob` lines
// split the script, and component k (its het_job_offset) takes the #MLSCHED lines
// of part k only. Slurm 22.05 already hands each component its own part (no
// separator left): then all its lines count. nullopt: not a hetjob.
RawDirectives read_directives(std::string_view script, std::string_view comment,
                              std::optional<uint32_t> het_component = std::nullopt);

// A job's directives with the admin's defaults for its type filled in.
struct JobDirectives {
  JobType type = JobType::training;
  std::vector<std::string> gpu_types;  // ordered preference; empty = any type
  Locality locality = Locality::any;
  LocalityMode locality_mode = LocalityMode::prefer;
  int checkpoint_signal = 0;
  uint32_t checkpoint_grace = 0;
  uint32_t checkpoint_interval = 0;
  bool preemptible = true;
  uint32_t max_restarts = 0;

  // Which keys the user wrote (the rest came from defaults).
  std::map<std::string, bool> given;
  bool was_given(const std::string& key) const { return given.count(key) > 0; }

  // Canonical one-line form, every key present: "type=training gpu-type=h100,a100 ...".
  std::string to_string() const;
};

struct ResolvedDirectives {
  std::optional<JobDirectives> directives;
  std::vector<std::string> errors;
  std::vector<std::string> notes;
  size_t errors_dropped = 0, notes_dropped = 0;  // as in RawDirectives
};

// Whether `name` can be a GPU type (a GRES type name: letters, digits, '_', '-',
// '.'). Checked before the cluster is asked, so that every problem is reported
// in one go ("gpu-type=h100;rm" is not a type name, whatever else is wrong).
bool is_gpu_type_name(std::string_view name);

// Validates values and applies the admin config (type defaults, caps, policies).
ResolvedDirectives resolve_directives(const RawDirectives& raw, const Config& config);

// The prefix that marks mlsched's part of a job's admin comment.
extern const char* const kStoredPrefix;
// Reads the canonical form back (from the job's admin comment). Returns nullopt when
// the text holds no mlsched directives.
std::optional<JobDirectives> parse_stored_directives(std::string_view admin_comment);
// The directives of mlsched's stored words (JobRecord::words): nullopt when a word
// is not key=value, a directive's value does not parse, or no directive key is
// there. Keys it does not know are skipped. Used by decode_job_record().
std::optional<JobDirectives> directives_from_stored_words(const std::vector<std::string>& words);

// ==== marks the plugins keep beside the directives (priority/mlsched) ===========
// Token views of the one codec (job_record.h: decode_job_record, JobRecord::set).
// A plugin's own `key=value` token in mlsched's part of the admin comment (e.g.
// `borrowing=yes`, read by a preempt plugin). parse_stored_directives() skips such
// keys, and a part holding only such tokens ("mlsched: borrowing=no") carries no
// directives. `key` must not be a directive key.
// Sets or replaces the token; a comment without an mlsched part gets one in front
// ("mlsched: borrowing=yes; <admin note>"). nullopt removes the token, and the
// mlsched part with it when nothing else is left there.
std::string with_stored_token(std::string_view admin_comment, std::string_view key,
                              const std::optional<std::string>& value);
// The token's value, if the comment's mlsched part has it.
std::optional<std::string> stored_token(std::string_view admin_comment, std::string_view key);
// ==== end marks ==================================================================

}  // namespace mlsched
