// Fuzz target: mlsched.conf text through the one config parser.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mlsched::parse_config(text, "fuzz.conf");
  return 0;
}
