#!/bin/bash
# Stage 1: CPU only. Prepares this run's data.
#SBATCH -N 1 -n 1 -c 2 -t 10
echo "data-prep on $(hostname): writing shards"
sleep "${PIPELINE_EXAMPLE_SLEEP:-5}"
