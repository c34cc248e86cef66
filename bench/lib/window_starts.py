#!/usr/bin/env python3
"""What a scheduling window achieved, from accounting (bench/sched_cycle): jobs and
GPUs started inside [T0, T1], by job shape, and the share of the cluster's GPUs in
use over the window. sdiag counts starts but not their size, and a scheduler that
starts fewer jobs may be starting larger ones; this says which. It also counts the
gangs that started on nodes of more than one GPU type (a data-parallel job runs at
its slowest GPU's pace, so a scheduler that mixes types gains starts users would not
want; select/mlsched never does).

    window_starts.py SACCT_FILE T0 T1 TOTAL_GPUS

SACCT_FILE: `sacct -a -X -n -P -o JobID,Start,End,NNodes,AllocTRES` output
(times as epoch seconds: SLURM_TIME_FORMAT=%s). Prints `key value` lines.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sacct import gpus_of, time_of  # noqa: E402


def shape(nodes, gpus):
    if nodes > 1:
        return "gang"
    return "full-node" if gpus >= 8 else "1-4gpu"


def main():
    path, t0, t1, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    started = {"1-4gpu": 0, "full-node": 0, "gang": 0}
    gpus_started = 0
    mixed, mixed_gpus = 0, 0
    gpu_seconds = 0
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("|")
            if len(fields) < 5:
                continue
            start, end = time_of(fields[1]), time_of(fields[2])
            nodes = int(fields[3] or 0)
            gpus, types = gpus_of(fields[4])
            if start is None:
                continue
            if t0 <= start <= t1:
                started[shape(nodes, gpus)] += 1
                gpus_started += gpus
                if len(types) > 1:
                    mixed += 1
                    mixed_gpus += gpus
            lo, hi = max(start, t0), min(end if end is not None else t1, t1)
            if hi > lo:
                gpu_seconds += (hi - lo) * gpus
    minutes = (t1 - t0) / 60.0
    print("jobs_started", sum(started.values()))
    print("jobs_started_per_min", "%.1f" % (sum(started.values()) / minutes))
    for k, v in started.items():
        print("started_" + k, v)
    print("started_gang_mixed_gpu_types", mixed)
    print("gpus_started_mixed_gpu_types", mixed_gpus)
    print("gpus_started", gpus_started)
    print("gpus_started_per_min", "%.1f" % (gpus_started / minutes))
    print("gpu_busy_pct", "%.1f" % (100.0 * gpu_seconds / (total * (t1 - t0))))


if __name__ == "__main__":
    main()
