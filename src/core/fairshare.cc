// See fairshare.h. Decay is applied in whole steps at each accounting pass: a
// pass at t decays everything by 2^-(t - last)/half_life, then adds the GPU-seconds
// run since the last pass undecayed. Passes are seconds apart and half-lives days,
// so the difference to continuous decay is negligible; what matters is that no
// second is charged twice and none is lost.
#include "core/fairshare.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/text.h"

namespace mlsched {

double GpuWeights::of(std::string_view gpu_type) const {
  auto it = by_type.find(lowercase(gpu_type));
  return it == by_type.end() ? 1.0 : it->second;
}

double GpuWeights::weighted(const GpuCounts& gpus) const {
  double w = gpus.untyped;
  for (const auto& [type, count] : gpus.by_type) w += count * of(type);
  return w;
}

void UsageLedger::decay_to(int64_t now) {
  if (decayed_through_ == 0 || now <= decayed_through_) {
    if (decayed_through_ == 0) decayed_through_ = now;
    return;
  }
  if (half_life_ > 0) {
    const double factor = std::exp2(-static_cast<double>(now - decayed_through_) / half_life_);
    for (auto& [name, usage] : teams_) usage.decayed *= factor;
    for (auto& [id, job] : jobs_) job.decayed *= factor;
  }
  decayed_through_ = now;
}

void UsageLedger::charge(uint32_t job_id, const ChargedJob& job, int64_t until) {
  JobCharge& c = jobs_[job_id];
  if (c.team.empty()) c.team = job.team;
  const int64_t from = std::max(job.start_time, c.charged_through);
  if (until > from) {
    const double seconds = static_cast<double>(until - from);
    const double weighted = seconds * job.weighted_gpus;
    const double raw = seconds * job.gpus;
    TeamUsage& t = teams_[c.team];
    t.decayed += weighted;
    t.charged_gpu_seconds += raw;
    c.decayed += weighted;
    c.gpu_seconds += raw;
  }
  c.charged_through = std::max(c.charged_through, until);
}

void UsageLedger::account(int64_t now, const std::vector<ChargedJob>& running) {
  decay_to(now);
  for (const auto& job : running) charge(job.job_id, job, now);
}

double UsageLedger::settle_run(const ChargedJob& job, int64_t end_time, int64_t kept_until) {
  decay_to(std::max(end_time, decayed_through_));
  kept_until = std::min(kept_until, end_time);
  const bool seen = jobs_.count(job.job_id) > 0;
  if (kept_until > job.start_time || seen) charge(job.job_id, job, std::max(kept_until, job.start_time));
  double run_gpu_seconds = 0;
  if (auto it = jobs_.find(job.job_id); it != jobs_.end()) {
    JobCharge& c = it->second;
    run_gpu_seconds = c.gpu_seconds;
    const int64_t kept_from = std::max(kept_until, job.start_time);
    if (c.charged_through > kept_from) {
      // Charged in passes after kept_from, so decayed at least since charged_through:
      // taking back that much (never more than the run's own share) is exact for a
      // whole run and at most one pass's decay off for a part of one.
      const double seconds = static_cast<double>(c.charged_through - kept_from);
      const double factor =
          half_life_ > 0 ? std::exp2(-static_cast<double>(decayed_through_ - c.charged_through) / half_life_) : 1.0;
      const double decayed = std::min(c.decayed, seconds * job.weighted_gpus * factor);
      const double raw = std::min(c.gpu_seconds, seconds * job.gpus);
      TeamUsage& t = teams_[c.team];
      t.decayed = std::max(0.0, t.decayed - decayed);
      t.charged_gpu_seconds = std::max(0.0, t.charged_gpu_seconds - raw);
    }
  }
  jobs_.erase(job.job_id);
  return run_gpu_seconds;
}

std::vector<uint32_t> UsageLedger::tracked_job_ids() const {
  std::vector<uint32_t> ids;
  ids.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

double UsageLedger::decayed(const std::string& team) const {
  auto it = teams_.find(team);
  return it == teams_.end() ? 0.0 : it->second.decayed;
}

std::optional<int64_t> UsageLedger::charged_through(uint32_t job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.charged_through;
}

namespace {
constexpr const char* kStateHeader = "mlsched-priority-state 1";
}

std::string UsageLedger::serialize() const {
  std::ostringstream out;
  out.precision(std::numeric_limits<double>::max_digits10);
  out << kStateHeader << "\n";
  out << "decayed_through " << decayed_through_ << "\n";
  for (const auto& [name, usage] : teams_)
    out << "team " << name << " " << usage.decayed << " " << usage.charged_gpu_seconds << "\n";
  for (const auto& [id, job] : jobs_)
    out << "job " << id << " " << job.team << " " << job.charged_through << " " << job.decayed << " "
        << job.gpu_seconds << "\n";
  // A truncated file (a crash mid-write on a filesystem without atomic rename) lacks this.
  out << "end\n";
  return out.str();
}

std::optional<UsageLedger> UsageLedger::parse(std::string_view text, uint32_t half_life, std::string* error,
                                              int64_t not_after) {
  UsageLedger ledger(half_life);
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  bool ended = false;
  auto fail = [&](const std::string& why) -> std::optional<UsageLedger> {
    if (error) *error = "line " + std::to_string(number) + ": " + why;
    return std::nullopt;
  };
  auto finite_non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      if (line != kStateHeader) return fail("not an mlsched priority state file (header '" + line + "')");
      continue;
    }
    if (ended) return fail("text after 'end'");
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "end") {
      ended = true;
    } else if (kind == "decayed_through") {
      if (!(words >> ledger.decayed_through_) || ledger.decayed_through_ < 0) return fail("bad decayed_through");
      if (ledger.decayed_through_ > not_after)
        return fail("decayed_through " + std::to_string(ledger.decayed_through_) +
                    " is in the future (now is about " + std::to_string(not_after - kMaxStateClockSkew) + ")");
    } else if (kind == "team") {
      std::string name;
      TeamUsage u;
      if (!(words >> name >> u.decayed >> u.charged_gpu_seconds) || !finite_non_negative(u.decayed) ||
          !finite_non_negative(u.charged_gpu_seconds))
        return fail("bad team line");
      if (!ledger.teams_.emplace(name, u).second) return fail("team " + name + " twice");
    } else if (kind == "job") {
      uint32_t id = 0;
      JobCharge c;
      if (!(words >> id >> c.team >> c.charged_through >> c.decayed >> c.gpu_seconds) || c.charged_through < 0 ||
          !finite_non_negative(c.decayed) || !finite_non_negative(c.gpu_seconds))
        return fail("bad job line");
      if (c.charged_through > not_after)
        return fail("job " + std::to_string(id) + " charged through " + std::to_string(c.charged_through) +
                    ", in the future");
      if (!ledger.jobs_.emplace(id, c).second) return fail("job " + std::to_string(id) + " twice");
    } else {
      return fail("unknown record '" + kind + "'");
    }
    std::string extra;
    if (words >> extra) return fail("unexpected '" + extra + "'");
  }
  if (number == 0) return fail("empty file");
  if (!ended) return fail("truncated (no 'end' line)");
  return ledger;
}

std::map<std::string, TeamStanding> team_standing(const std::vector<TeamShares>& teams,
                                                 const UsageLedger& ledger) {
  double all_shares = 0, all_usage = 0;
  for (const auto& t : teams) {
    all_shares += t.shares;
    all_usage += ledger.decayed(t.team);
  }
  std::map<std::string, TeamStanding> out;
  for (const auto& t : teams) {
    TeamStanding s;
    s.shares_norm = all_shares > 0 ? t.shares / all_shares : 0;
    s.usage_norm = all_usage > 0 ? ledger.decayed(t.team) / all_usage : 0;
    if (s.shares_norm <= 0) {
      s.fairshare = 0;
      s.level = 0;
    } else {
      s.fairshare = std::exp2(-s.usage_norm / s.shares_norm);
      s.level = s.usage_norm > 0 ? s.shares_norm / s.usage_norm : std::numeric_limits<double>::infinity();
    }
    out[t.team] = s;
  }
  return out;
}

}  // namespace mlsched
