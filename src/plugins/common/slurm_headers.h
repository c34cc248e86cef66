// Slurm's internal headers, made usable from C++. They have no __cplusplus guards
// of their own, so every plugin includes them through this file only. Which headers
// (and where they live) depends on the release line: slurm_release.h comes from
// src/plugins/common/slurm-X.Y, the directory configure picked (the version seam).
#pragma once

#include "slurm_release.h"

// Symbols the Slurm plugin loader resolves; everything else stays hidden
// (-fvisibility=hidden and the linker version script).
#define MLSCHED_EXPORT extern "C" __attribute__((visibility("default")))
