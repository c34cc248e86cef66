// Slurm's internal headers, made usable from C++. They have no __cplusplus guards
// of their own, so every plugin includes them through this file only.
#pragma once

extern "C" {
#include "config.h"  // Slurm's, from the configured source tree: struct layouts depend on it

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/plugin.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
#include "src/common/list.h"
#include "src/common/select.h"
#include "src/slurmctld/slurmctld.h"
}

// Symbols the Slurm plugin loader resolves; everything else stays hidden
// (-fvisibility=hidden and the linker version script).
#define MLSCHED_EXPORT extern "C" __attribute__((visibility("default")))
