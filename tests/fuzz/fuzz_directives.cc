// Fuzz target: a user's batch script (and --comment) through job_submit's whole
// decision, and the stored form of directives and marks in the admin comment.
// Besides not crashing: the user's message stays bounded and free of raw control
// bytes, and a mark written is read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../unit/fixtures.h"
#include "core/directives.h"
#include "core/submit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlsched;
  static const Cluster cluster = fixture_cluster();
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first line is the --comment, the rest the script.
  const size_t nl = text.find('\n');
  JobRequest req;
  req.comment = nl == std::string::npos ? text : text.substr(0, nl);
  req.script = nl == std::string::npos ? std::string() : text.substr(nl + 1);
  req.tres_per_node = "gres:gpu:2";
  req.min_nodes = 2;
  const SubmitPlan plan = plan_submit(req, Config{}, cluster);
  const std::string msg = plan.user_message();
  if (msg.size() > (SubmitPlan::kMaxProblemsShown + 2) * (SubmitPlan::kMaxLineBytes + 64)) abort();
  for (char c : msg)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) abort();
  if (plan.accepted() && plan.has_directives && !parse_stored_directives(plan.stored)) abort();

  parse_stored_directives(text);
  const std::string marked = with_stored_token(text, "borrowing", std::string("yes"));
  if (stored_token(marked, "borrowing") != std::optional<std::string>("yes")) abort();
  with_stored_token(marked, "borrowing", std::nullopt);
  return 0;
}
