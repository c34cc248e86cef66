// Replacing a small file so that a crash leaves either the old content or the new,
// never a mix: mlsched's saved usage and checkpoint records rely on it.
#pragma once

#include <string>
#include <sys/types.h>

namespace mlsched {

// Writes `text` to a temporary file beside `path`, fsyncs it and renames it over
// `path`. Returns an empty string, or what went wrong (the temporary is removed).
std::string write_file_atomically(const std::string& path, const std::string& text, mode_t mode);

}  // namespace mlsched
