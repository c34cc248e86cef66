"""Faults on the real cluster: the accounting database goes away for a minute while
jobs run. Scheduling must go on, and usage (sshare, mlsched's saved usage) and sacct
must catch up once it is back, asserted on what an operator and a user see."""
import os
import re
import signal
import time

import pytest

from conftest import wait_for
from test_priority import charging, decayed_through, sacct_gpu_seconds, saved_state

CAROL = "ml-carol"   # team research
OUTAGE_SECONDS = 60


def pid_of(cluster, daemon):
    return int((cluster.dir / "run" / f"{daemon}.pid").read_text().split()[0])


def test_scheduling_goes_on_while_accounting_is_stopped(cluster, mlsched_conf):
    # Passes every second, so mlsched's saved usage shows the jobs soon after they end.
    mlsched_conf.append("PriorityCalcPeriod=1", plugin="priority/mlsched", tag="test_faults")
    applied = time.time()
    wait_for(lambda: decayed_through(cluster) > applied + 1, "a priority pass under the test's settings")
    wait_for(lambda: not charging(cluster, "research"), "research's earlier jobs to be settled")
    charged_before = saved_state(cluster).get("research", (0.0, 0.0))[1]
    # SIGSTOP rather than a kill: the daemons hang as a dead database host would,
    # and SIGCONT brings the same processes back (nothing to restart or re-create).
    pids = {d: pid_of(cluster, d) for d in ("slurmdbd", "mariadbd")}
    jobs = []
    stopped_at = time.time()
    for pid in pids.values():
        os.kill(pid, signal.SIGSTOP)
    try:
        for gpus in (8, 4):
            res, _ = cluster.sbatch(CAROL, "#!/bin/bash\n#MLSCHED type=training\nsleep 5\n", "-A", "research",
                                    f"--gres=gpu:a100:{gpus}", "-t", "5")
            jobs.append(cluster.job_id(res))
        # Jobs start and finish without accounting.
        for job in jobs:
            cluster.wait_state(job, {"COMPLETED"}, timeout=OUTAGE_SECONDS - 10)
        assert time.time() - stopped_at < OUTAGE_SECONDS
        # Scheduling answers: a new job is accepted (and refused ones still get their message).
        bad, _ = cluster.sbatch(CAROL, "#!/bin/bash\n#MLSCHED gpu-type=nope\nsleep 1\n", "-A", "research",
                                "--gres=gpu:1")
        assert bad.rc != 0 and "this cluster has no nope GPUs" in bad.err, bad
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.time() - stopped_at)))
    finally:
        for pid in pids.values():
            os.kill(pid, signal.SIGCONT)
    # sacct catches up with both runs, with their GPUs.
    def in_sacct():
        res = cluster.run(["sacct", "-X", "-n", "-P", "-j", ",".join(jobs), "-o", "JobID,State,AllocTRES"])
        rows = [line.split("|") for line in res.out.strip().splitlines()] if res.rc == 0 else []
        done = {r[0]: r for r in rows if r[1] == "COMPLETED"}
        return done if set(done) == set(jobs) else None
    rows = wait_for(in_sacct, "sacct to record both jobs after the outage", timeout=120, interval=2)
    gpus = sorted(int(re.search(r"gres/gpu=(\d+)", rows[j][2]).group(1)) for j in jobs)
    assert gpus == [4, 8], rows
    # mlsched charged research for the runs as sacct counts them, outage or not.
    acct = wait_for(lambda: sacct_gpu_seconds(cluster, jobs), "sacct's elapsed times")
    wait_for(lambda: not charging(cluster, "research"), "the two jobs to be settled in the saved usage")
    charged = saved_state(cluster)["research"][1] - charged_before
    assert charged == pytest.approx(sum(acct.values()), rel=0.01), (charged, acct)
