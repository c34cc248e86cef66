#!/bin/bash
# Stage 2: 2 nodes x 8 GPUs in one NVLink domain; retried once if it fails.
#SBATCH -N 2 --gres=gpu:8 -t 30
#MLSCHED type=training gpu-type=h100 locality=nvlink-domain
echo "train on $SLURM_JOB_NODELIST"
sleep "${PIPELINE_EXAMPLE_SLEEP:-5}"
