// Small string helpers shared by the directive, config and GRES parsers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

std::string trim(std::string_view s);
std::string lowercase(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);
// Splits on runs of spaces/tabs; a value may not contain blanks.
std::vector<std::string> split_words(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

// Whole-string unsigned integer, no sign, no trailing junk.
std::optional<uint64_t> parse_uint(std::string_view s);
// yes/no, true/false, on/off, 1/0 (case-insensitive).
std::optional<bool> parse_bool(std::string_view s);

// Signal by name (USR1, SIGUSR1, TERM, ...) or number; only signals a job may
// sensibly use to be told to checkpoint. Returns the number.
std::optional<int> parse_signal(std::string_view s);
// Canonical name without the SIG prefix ("USR1").
std::string signal_name(int signo);

// The candidate closest to `word` by edit distance, if it is close enough to be a
// plausible typo ("did you mean ...?").
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// ==== user text shown to people ==================================================
// Text a user wrote (a directive, a job name, a path) on its way to someone's
// terminal or to slurmctld's log: control bytes (C0, DEL, C1 in UTF-8) and the
// Unicode bidirectional overrides (U+202A..U+202E, U+2066..U+2069), which can make
// a line read as something else, are written as \xNN or \u{NNNN}. Applying it
// twice changes nothing more.
std::string escape_controls(std::string_view text);
// escape_controls(), cut to at most `max_bytes` of the original with
// "...(N more bytes)" after it, so one long value cannot flood a message.
constexpr size_t kMaxShownBytes = 64;
std::string shown(std::string_view user_text, size_t max_bytes = kMaxShownBytes);

// "45 s", "20 min", "3 h 05 min", "2 d 4 h"
std::string format_duration(long long seconds);

// A time as people read it in this machine's zone: "2026-12-04 19:05:00" ("unknown" for <= 0);
// `format` is strftime's, for a form without blanks where one is stored in a record word.
std::string local_clock(int64_t t, const char* format = "%Y-%m-%d %H:%M:%S");
// ==== end user text ==============================================================

}  // namespace mlsched
