// The one codec of what mlsched stores on a job (see job_record.h).
#include "core/job_record.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

#include "core/text.h"

namespace mlsched {

const std::vector<std::string_view>& mark_keys() {
  static const std::vector<std::string_view> keys = {
      mark_key::borrowing,    mark_key::attained_gpu_seconds, mark_key::first_submit,
      mark_key::preempted,    mark_key::preempted_at,         mark_key::preempted_by,
      mark_key::lost_gpu_seconds, mark_key::preempted_at_utc, mark_key::reserved_nodes,
      mark_key::reserved_since,   mark_key::record_version};
  return keys;
}

const std::vector<std::string_view>& pipeline_keys() {
  static const std::vector<std::string_view> keys = {pipeline_key::pipeline, pipeline_key::stage,
                                                     pipeline_key::attempt, pipeline_key::after};
  return keys;
}

std::string to_string(AfterKind kind) {
  switch (kind) {
    case AfterKind::ok: return "ok";
    case AfterKind::any: return "any";
    case AfterKind::notok: return "notok";
  }
  return "ok";
}

std::optional<AfterKind> parse_after_kind(std::string_view text) {
  if (text == "ok") return AfterKind::ok;
  if (text == "any") return AfterKind::any;
  if (text == "notok") return AfterKind::notok;
  return std::nullopt;
}

bool is_pipeline_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxPipelineNameBytes) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

namespace {

std::optional<std::string> word_value(const std::vector<std::string>& words, std::string_view key) {
  for (const auto& w : words)
    if (w.size() > key.size() && w.compare(0, key.size(), key) == 0 && w[key.size()] == '=')
      return w.substr(key.size() + 1);
  return std::nullopt;
}

// A pipeline id: a pipeline name, or one with a "-<suffix>" the tool added; the
// same characters, a little longer.
bool is_pipeline_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxPipelineIdBytes) return false;
  return is_pipeline_name(id.substr(0, std::min(id.size(), kMaxPipelineNameBytes))) &&
         std::all_of(id.begin(), id.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

}  // namespace

std::optional<PipelineMembership> pipeline_membership_of(const std::vector<std::string>& words, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<PipelineMembership> {
    if (error) *error = why;
    return std::nullopt;
  };
  const auto id = word_value(words, pipeline_key::pipeline);
  const auto stage = word_value(words, pipeline_key::stage);
  const auto attempt = word_value(words, pipeline_key::attempt);
  const auto after = word_value(words, pipeline_key::after);
  if (!id && !stage && !attempt && !after) return std::nullopt;
  if (!id || !stage) return fail("pipeline= and stage= go together");
  PipelineMembership m;
  if (!is_pipeline_id(*id)) return fail("pipeline=" + shown(*id) + " is not a pipeline id");
  if (!is_pipeline_name(*stage)) return fail("stage=" + shown(*stage) + " is not a stage name");
  m.id = *id;
  m.stage = *stage;
  if (attempt) {
    const auto parts = split(*attempt, '/');
    const auto n = parts.size() == 2 ? parse_uint(parts[0]) : std::nullopt;
    const auto of = parts.size() == 2 ? parse_uint(parts[1]) : std::nullopt;
    if (!n || !of || *n < 1 || *n > *of || *of > kMaxStageRetries + 1)
      return fail("attempt=" + shown(*attempt) + " is not N/M with 1 <= N <= M <= " +
                  std::to_string(kMaxStageRetries + 1));
    m.attempt = static_cast<uint32_t>(*n);
    m.attempts = static_cast<uint32_t>(*of);
  }
  if (after) {
    const auto items = split(*after, ',');
    if (items.size() > kMaxPipelineStages) return fail("after= lists more than " + std::to_string(kMaxPipelineStages) + " stages");
    for (const auto& item : items) {
      const size_t colon = item.find(':');
      AfterEdge e;
      e.stage = item.substr(0, colon);
      const auto kind = colon == std::string::npos ? std::optional<AfterKind>(AfterKind::ok)
                                                   : parse_after_kind(item.substr(colon + 1));
      if (!is_pipeline_name(e.stage) || !kind) return fail("after=" + shown(*after) + " is not stage:ok|any|notok,...");
      e.kind = *kind;
      m.after.push_back(e);
    }
  }
  return m;
}

std::string pipeline_words(const PipelineMembership& m) {
  std::string s = std::string(pipeline_key::pipeline) + "=" + m.id + " " + std::string(pipeline_key::stage) + "=" +
                  m.stage + " " + std::string(pipeline_key::attempt) + "=" + std::to_string(m.attempt) + "/" +
                  std::to_string(m.attempts);
  if (!m.after.empty()) {
    std::vector<std::string> items;
    for (const auto& e : m.after) items.push_back(e.stage + ":" + to_string(e.kind));
    s += " " + std::string(pipeline_key::after) + "=" + join(items, ",");
  }
  return s;
}

namespace {

// "2026-12-03T17:00:00" in this host's time zone, as preempt/mlsched wrote
// preempted-at before preempted-at-utc existed.
int64_t parse_local_time(const std::string& text) {
  struct tm tmv = {};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tmv);
  if (!end || *end) return 0;
  tmv.tm_isdst = -1;
  const time_t t = mktime(&tmv);
  return t < 0 ? 0 : static_cast<int64_t>(t);
}

uint32_t clamped_u32(uint64_t n) { return static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)); }

void read_typed_fields(JobRecord& r) {
  if (auto v = r.get(mark_key::record_version))
    if (auto n = parse_uint(*v); n && *n > 0) r.version = clamped_u32(*n);
  r.directives = directives_from_stored_words(r.words);
  r.pipeline = pipeline_membership_of(r.words);

  r.marks.borrowing = r.get(mark_key::borrowing);
  if (auto v = r.get(mark_key::attained_gpu_seconds))
    if (auto n = parse_uint(*v)) r.marks.attained_gpu_seconds = static_cast<double>(*n);
  if (auto v = r.get(mark_key::first_submit))
    if (auto n = parse_uint(*v)) r.marks.first_submit = static_cast<int64_t>(*n);
  if (auto v = r.get(mark_key::reserved_nodes)) r.marks.reserved_nodes = *v;
  if (auto v = r.get(mark_key::reserved_since))
    if (auto n = parse_uint(*v)) r.marks.reserved_since = static_cast<int64_t>(*n);

  PreemptionHistory& h = r.preemptions;
  if (auto v = r.get(mark_key::preempted))
    if (auto n = parse_uint(*v)) h.times = clamped_u32(*n);
  if (auto v = r.get(mark_key::preempted_at_utc)) {
    if (auto n = parse_uint(*v)) h.last_at = static_cast<int64_t>(*n);
  } else if (auto t = r.get(mark_key::preempted_at)) {
    h.last_at = parse_local_time(*t);  // written before preempted-at-utc existed
  }
  if (auto v = r.get(mark_key::preempted_by))
    if (auto n = parse_uint(*v)) h.last_by = clamped_u32(*n);
  if (auto v = r.get(mark_key::lost_gpu_seconds))
    if (auto n = parse_uint(*v)) h.lost_gpu_seconds = static_cast<double>(*n);
}

std::string_view key_of(std::string_view word) {
  const size_t eq = word.find('=');
  return eq == std::string_view::npos ? std::string_view() : word.substr(0, eq);
}

}  // namespace

JobRecord decode_job_record(std::string_view admin_comment) {
  JobRecord r;
  r.original = std::string(admin_comment);
  const std::string& text = r.original;
  const size_t prefix = text.find(kStoredPrefix);
  if (prefix == std::string::npos) return r;
  // mlsched's part runs from its prefix to the first ';' (an admin's note may follow).
  const size_t begin = prefix + std::string_view(kStoredPrefix).size();
  size_t end = text.find(';', begin);
  if (end == std::string::npos) end = text.size();
  r.has_part = true;
  r.before = text.substr(0, prefix);
  r.after = text.substr(end);
  r.words = split_words(text.substr(begin, end - begin));
  read_typed_fields(r);
  return r;
}

std::optional<std::string> JobRecord::get(std::string_view key) const {
  for (const auto& word : words)
    if (!key.empty() && key_of(word) == key) return word.substr(key.size() + 1);
  return std::nullopt;
}

void JobRecord::set(std::string_view key, const std::optional<std::string>& value) {
  const std::string token = value ? std::string(key) + "=" + *value : std::string();
  std::vector<std::string> kept;
  bool replaced = false;
  for (auto& word : words) {
    if (key_of(word) == key) {
      if (value && !replaced) kept.push_back(token);
      replaced = true;
      continue;
    }
    kept.push_back(std::move(word));
  }
  if (value && !replaced) kept.push_back(token);
  words = std::move(kept);
}

std::vector<std::string> JobRecord::unknown_keys() const {
  std::vector<std::string> out;
  const auto& directive = directive_keys();
  const auto& marks = mark_keys();
  for (const auto& word : words) {
    const std::string_view key = key_of(word);
    if (key.empty()) continue;
    if (std::find(directive.begin(), directive.end(), key) != directive.end()) continue;
    if (std::find(marks.begin(), marks.end(), key) != marks.end()) continue;
    const auto& pipeline = pipeline_keys();
    if (std::find(pipeline.begin(), pipeline.end(), key) != pipeline.end()) continue;
    out.emplace_back(key);
  }
  return out;
}

std::string JobRecord::encode() const {
  if (!has_part) {
    if (words.empty()) return original;
    const std::string note = trim(original);
    return std::string(kStoredPrefix) + " " + join(words, " ") + (note.empty() ? "" : "; " + note);
  }
  if (words.empty()) {
    // Nothing of ours is left: give the admin their note back as it was.
    const std::string note = after.empty() ? std::string() : trim(after.substr(1));
    return trim(before + note);
  }
  return before + kStoredPrefix + " " + join(words, " ") + after;
}

JobMarks read_marks(std::string_view admin_comment) { return decode_job_record(admin_comment).marks; }

bool runs_again(const RunEndState& s) { return s.requeue_flag || s.pending || s.preempted || s.node_failed; }

std::string with_run_end_recorded(std::string_view admin_comment, double run_gpu_seconds, int64_t submit_time) {
  const JobMarks marks = read_marks(admin_comment);
  std::string text(admin_comment);
  if (run_gpu_seconds >= 0.5)
    text = with_stored_token(text, mark_key::attained_gpu_seconds,
                             std::to_string(std::llround(marks.attained_gpu_seconds + run_gpu_seconds)));
  if (!marks.first_submit && submit_time > 0)
    text = with_stored_token(text, mark_key::first_submit, std::to_string(submit_time));
  return text;
}

// ---- cache -----------------------------------------------------------------------

JobRecordCache::JobRecordCache(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}

std::shared_ptr<const JobRecord> JobRecordCache::get(uint32_t job_id, std::string_view admin_comment) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(job_id);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    if (it->second.comment == admin_comment) {
      ++hits_;
      return it->second.record;
    }
    ++decodes_;
    it->second.comment = std::string(admin_comment);
    it->second.record = std::make_shared<const JobRecord>(decode_job_record(admin_comment));
    return it->second.record;
  }
  if (entries_.size() >= capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  ++decodes_;
  lru_.push_front(job_id);
  Entry e{std::string(admin_comment), std::make_shared<const JobRecord>(decode_job_record(admin_comment)),
          lru_.begin()};
  auto record = e.record;
  entries_.emplace(job_id, std::move(e));
  return record;
}

void JobRecordCache::forget(uint32_t job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(job_id);
  if (it == entries_.end()) return;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

size_t JobRecordCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}
uint64_t JobRecordCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
uint64_t JobRecordCache::decodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decodes_;
}

}  // namespace mlsched
