# Shared by bench/sched_cycle and bench/sched_cost (sourced, not run).
# submit_stream MODE DIR: reads bench/lib/job_stream.py lines on stdin and submits
# each as its user to the cluster in DIR. Stock Slurm cannot read the #MLSCHED
# directives, so a stock job names its GPU type in --gres when it has exactly one,
# and when it accepts several it asks for them as a user of stock Slurm would, with
# the matching-OR constraint -C "[h100|a100]" (all its nodes of one type: a gang
# mixing types runs at its slowest GPU's speed). job_submit/mlsched turns the same
# list into that constraint. Both get the same nodes, GPUs, time limit and account.
# BENCH_SUBMITTERS (default 2) sbatch calls run at once. BENCH_SUBMIT_HELD=1 submits
# every job held (sbatch -H), for a caller that releases them all at once.
submit_stream() {
  local mode=$1 dir=$2
  SUBMIT_MODE=$mode SUBMIT_DIR=$dir SUBMIT_HOLD=${BENCH_SUBMIT_HELD:+-H} xargs -P "${BENCH_SUBMITTERS:-2}" -L 1 bash -c '
    user=$0 team=$1 nodes=$2 gpus=$3 typ=$4 loc=$5 secs=$6
    gres="--gres=gpu:$gpus"
    constraint=
    if [ "$SUBMIT_MODE" = stock ]; then
      if [ "${typ#*,}" = "$typ" ]; then gres="--gres=gpu:$typ:$gpus"
      else constraint="--constraint=[${typ//,/|}]"; fi
    fi
    printf "#!/bin/bash\n#MLSCHED gpu-type=%s locality=%s\nsleep %s\n" "$typ" "$loc" "$secs" |
      runuser -u "$user" -- env SLURM_CONF="$SUBMIT_DIR/etc/slurm.conf" sbatch -Q $SUBMIT_HOLD -A "$team" -N "$nodes" $gres ${constraint:+"$constraint"} \
        -t 5 -D "$SUBMIT_DIR/work/$user" -o /dev/null >/dev/null'
}
