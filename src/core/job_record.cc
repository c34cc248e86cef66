// The one codec of what mlsched stores on a job (see job_record.h).
#include "core/job_record.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/text.h"

namespace mlsched {

const std::vector<std::string_view>& mark_keys() {
  static const std::vector<std::string_view> keys = {
      mark_key::borrowing,    mark_key::attained_gpu_seconds, mark_key::first_submit,
      mark_key::preempted,    mark_key::preempted_at,         mark_key::preempted_by,
      mark_key::lost_gpu_seconds, mark_key::preempted_at_utc, mark_key::record_version};
  return keys;
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

  r.marks.borrowing = r.get(mark_key::borrowing);
  if (auto v = r.get(mark_key::attained_gpu_seconds))
    if (auto n = parse_uint(*v)) r.marks.attained_gpu_seconds = static_cast<double>(*n);
  if (auto v = r.get(mark_key::first_submit))
    if (auto n = parse_uint(*v)) r.marks.first_submit = static_cast<int64_t>(*n);

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
