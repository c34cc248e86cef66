// libslurm's public names that differ between release lines, for the mlsched tool
// (a client: public API only). Slurm 24.11.
#pragma once

#include <slurm/slurm.h>

// Exported by libslurm 24.11 but declared in none of its public headers.
extern "C" const char* slurm_job_state_reason_string(enum job_state_reason inx);

namespace mlsched::tool::release {

// The text squeue shows for a pending job's reason.
inline const char* job_reason_text(enum job_state_reason reason) { return slurm_job_state_reason_string(reason); }

}  // namespace mlsched::tool::release
