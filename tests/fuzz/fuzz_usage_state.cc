// Fuzz target: priority/mlsched's saved usage (StateSaveLocation). A state that
// parses must serialize to a text that parses to the same text again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/fairshare.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  auto ledger = mlsched::UsageLedger::parse(text, 3600, &why, 1900000000);
  if (!ledger) return 0;
  const std::string again = ledger->serialize();
  auto back = mlsched::UsageLedger::parse(again, 3600, &why, 1900000000);
  if (!back || back->serialize() != again) abort();
  return 0;
}
