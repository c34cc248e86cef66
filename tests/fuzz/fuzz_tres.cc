// Fuzz target: the GRES/TRES strings Slurm hands the plugins and the tool
// (node Gres=, tres_per_node, TRES alloc strings, GRES detail with IDX, gres.conf).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cluster.h"
#include "core/fairshare.h"
#include "core/submit.h"
#include "core/why.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlsched;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    parse_node_gres(text);
  } catch (const std::invalid_argument&) {
  }
  gpu_counts_from_tres(text);
  gpu_indices_from_gres(text);
  nvlink_cliques_from_gres_conf(text);
  JobRequest req;
  req.tres_per_node = text;
  req.tres_per_job = text;
  req.tres_per_task = text;
  try {
    read_gpu_request(req);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
