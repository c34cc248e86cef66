// Fuzz target: a pipeline file through its one parser, and the status of a
// pipeline whose jobs carry the membership words the input makes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const mlsched::PipelineParse p = mlsched::parse_pipeline(text);
  if (p.spec) {
    std::map<std::string, std::vector<uint32_t>> ids;
    uint32_t next = 1;
    std::vector<mlsched::StageJob> jobs;
    for (const auto* st : mlsched::submission_order(*p.spec)) {
      for (uint32_t a = 1; a <= st->retries + 1; ++a) {
        mlsched::stage_dependency(*p.spec, *st, a, ids);
        ids[st->name].push_back(next);
        mlsched::StageJob j;
        j.job_id = next++;
        j.membership = mlsched::membership_of(p.spec->name + "-0", *st, a);
        // The words must read back as they were written.
        std::vector<std::string> words;
        std::string w = mlsched::pipeline_words(j.membership), cur;
        for (char c : w + " ") {
          if (c == ' ') { words.push_back(cur); cur.clear(); } else cur += c;
        }
        if (!mlsched::pipeline_membership_of(words)) __builtin_trap();
        j.state = (j.job_id % 3) ? "PENDING" : "COMPLETED";
        j.reason = "Dependency";
        jobs.push_back(j);
      }
    }
    mlsched::format_pipeline_status(mlsched::pipeline_status(p.spec->name + "-0", jobs, 1000), 1000);
  }
  return 0;
}
