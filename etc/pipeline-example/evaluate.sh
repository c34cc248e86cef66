#!/bin/bash
# Stage 3: one GPU, after training succeeded.
#SBATCH -N 1 --gres=gpu:1 -t 10
#MLSCHED type=inference
echo "evaluate on $(hostname)"
sleep "${PIPELINE_EXAMPLE_SLEEP:-5}"
