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

}  // namespace mlsched
