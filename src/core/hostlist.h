// Slurm-style host lists ("gpu[01-04,07],login1"), expanded and compressed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlsched {

// Throws std::invalid_argument with a message naming the bad part.
std::vector<std::string> expand_hostlist(std::string_view list);
// Inverse of expand_hostlist for names sharing a prefix and zero-padded numbers.
std::string compress_hostlist(const std::vector<std::string>& hosts);

}  // namespace mlsched
