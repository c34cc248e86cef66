// Fuzz target: the checkpoint record in LATEST and the checkpoint report word in a
// job's Comment. A record that parses round-trips; the report replaces only its
// own word, so removing it gives the user's text back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/checkpoint.h"
#include "core/safe_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlsched;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto r = parse_checkpoint_record(text)) {
    auto back = parse_checkpoint_record(r->to_string());
    if (r->path.find('\n') == std::string::npos &&
        (!back || back->path != r->path || back->time != r->time || back->restart != r->restart))
      abort();
  }
  path_inside(text);
  checkpoint_report(text);
  const std::string user = without_checkpoint_report(text);
  if (without_checkpoint_report(with_checkpoint_report(user, 42)) != user) abort();
  if (checkpoint_report(with_checkpoint_report(text, 42)) != std::optional<int64_t>(42)) abort();
  return 0;
}
