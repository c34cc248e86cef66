// String helpers: parsing of user-typed values with strict, predictable rules.
#include "core/text.h"

#include <cstdio>
#include <ctime>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <limits>

namespace mlsched {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    size_t b = i;
    while (i < s.size() && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    if (i > b) out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::optional<uint64_t> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  const std::string v = lowercase(s);
  if (v == "yes" || v == "true" || v == "on" || v == "1") return true;
  if (v == "no" || v == "false" || v == "off" || v == "0") return false;
  return std::nullopt;
}

namespace {
struct SignalName {
  const char* name;
  int number;
};
// Signals a training process can catch to save a checkpoint. KILL/STOP cannot be
// caught, so they are not offered.
const SignalName kSignals[] = {
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
    {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"CONT", SIGCONT}, {"URG", SIGURG},
    {"ALRM", SIGALRM}, {"PWR", SIGPWR},   {"WINCH", SIGWINCH},
};
}  // namespace

std::optional<int> parse_signal(std::string_view s) {
  std::string v = trim(s);
  for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (starts_with(v, "SIG")) v = v.substr(3);
  if (auto n = parse_uint(v)) {
    for (const auto& sig : kSignals)
      if (static_cast<uint64_t>(sig.number) == *n) return sig.number;
    return std::nullopt;
  }
  for (const auto& sig : kSignals)
    if (v == sig.name) return sig.number;
  return std::nullopt;
}

std::string signal_name(int signo) {
  for (const auto& sig : kSignals)
    if (sig.number == signo) return sig.name;
  return std::to_string(signo);
}

namespace {
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  const std::string w = lowercase(word);
  // A third of the word's length (at least 2 edits) separates typos from other words.
  const size_t limit = std::max<size_t>(2, w.size() / 3);
  size_t best = std::numeric_limits<size_t>::max();
  std::optional<std::string> best_name;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: a candidate that cannot be
    // within the limit is skipped, so a user's 4 KB word costs a comparison per key,
    // not 4 KB x key length (job_submit runs this for every unknown key it reports).
    const size_t longer = std::max(w.size(), c.size()), shorter = std::min(w.size(), c.size());
    if (longer - shorter > limit) continue;
    size_t d = edit_distance(w, lowercase(c));
    if (d < best) {
      best = d;
      best_name = c;
    }
  }
  if (best_name && best <= limit) return best_name;
  return std::nullopt;
}

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      if (c == '\t') {
        out += c;  // harmless and common in names
        continue;
      }
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      continue;
    }
    // C1 controls in UTF-8: C2 80..C2 9F.
    if (c == 0xc2 && i + 1 < text.size()) {
      const auto d = static_cast<unsigned char>(text[i + 1]);
      if (d >= 0x80 && d <= 0x9f) {
        char buf[16];
        snprintf(buf, sizeof buf, "\\u{%04x}", d);
        out += buf;
        ++i;
        continue;
      }
    }
    // Bidirectional embeddings/overrides/isolates: E2 80 AA..AE and E2 81 A6..A9.
    if (c == 0xe2 && i + 2 < text.size()) {
      const auto d = static_cast<unsigned char>(text[i + 1]), e = static_cast<unsigned char>(text[i + 2]);
      if ((d == 0x80 && e >= 0xaa && e <= 0xae) || (d == 0x81 && e >= 0xa6 && e <= 0xa9)) {
        const unsigned cp = 0x2000u + ((d & 0x3fu) << 6) + (e & 0x3fu);
        char buf[16];
        snprintf(buf, sizeof buf, "\\u{%04x}", cp);
        out += buf;
        i += 2;
        continue;
      }
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string shown(std::string_view user_text, size_t max_bytes) {
  if (user_text.size() <= max_bytes) return escape_controls(user_text);
  // Cut on a UTF-8 character boundary.
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(user_text[cut]) & 0xc0) == 0x80) --cut;
  return escape_controls(user_text.substr(0, cut)) + "...(" + std::to_string(user_text.size() - cut) + " more bytes)";
}

std::string local_clock(int64_t t, const char* format) {
  if (t <= 0) return "unknown";
  const time_t tt = static_cast<time_t>(t);
  struct tm tmv;
  if (!localtime_r(&tt, &tmv)) return std::to_string(t);
  char buf[32];
  if (strftime(buf, sizeof buf, format, &tmv) == 0) return std::to_string(t);
  return buf;
}

std::string format_duration(long long s) {
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string((s + 30) / 60) + " min";
  if (s < 86400) {
    const long long m = (s + 30) / 60;
    char buf[32];
    snprintf(buf, sizeof buf, "%lld h %02lld min", m / 60, m % 60);
    return buf;
  }
  const long long h = (s + 1800) / 3600;
  return std::to_string(h / 24) + " d " + std::to_string(h % 24) + " h";
}

}  // namespace mlsched
