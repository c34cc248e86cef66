"""GPU pools on the real cluster: a second cluster of shape etc/cluster/pools.shape,
started beside the default one with the same plugins and Slurm. Pool h100 is the
partition gpu[01-04] (8 h100 each, NVLink domain nvl0), pool a100 the partition
gpu[05-08] (8 a100 each, two 4-GPU cliques, nvl1). A job names the pools it accepts
with `-p h100,a100`."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CLUSTER_DIR, Cluster, MlschedConf, REPO, TOOL, wait_for

USER, TEAM = "ml-carol", "research"
H100 = [f"gpu0{i}" for i in range(1, 5)]
A100 = [f"gpu0{i}" for i in range(5, 9)]


@pytest.fixture(scope="module")
def pools(cluster):
    """The two-pool cluster, started empty with the plugins and Slurm of the main test
    cluster (its etc/cluster.json), removed afterwards."""
    settings = json.loads((CLUSTER_DIR / "etc" / "cluster.json").read_text())
    directory = os.environ.get("MLSCHED_POOLS_CLUSTER_DIR", "/tmp/mlsched-pools")
    port_base = os.environ.get("MLSCHED_POOLS_PORT_BASE", "26300")
    script = str(REPO / "scripts" / "cluster")
    subprocess.run([script, "down", "--purge", "--dir", directory], capture_output=True, text=True, timeout=300)
    up = [script, "up", "--plugins", "mlsched", "--plugin-dir", settings["plugin_dir"],
          "--slurm", settings["slurm_prefix"], "--shape", str(REPO / "etc" / "cluster" / "pools.shape"),
          "--dir", directory, "--port-base", port_base]
    res = subprocess.run(up, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        pytest.fail(f"the two-pool cluster did not start:\n{res.stderr}")
    yield Cluster(directory)
    subprocess.run([script, "down", "--purge", "--dir", directory], capture_output=True, text=True, timeout=300)


@pytest.fixture
def pools_conf(pools):
    conf = MlschedConf(pools)
    yield conf
    conf.restore()


@pytest.fixture
def clean(pools):
    yield
    pools.run(["scancel", "-u", USER])
    wait_for(lambda: not pools.run(["squeue", "-h", "-u", USER]).out.strip(), "the test's jobs to leave", timeout=60)


def submit(c, *args, directives=(), minutes=10):
    script = "#!/bin/bash\n" + "".join(f"#MLSCHED {d}\n" for d in directives) + "sleep 600\n"
    res, _ = c.sbatch(USER, script, "-A", TEAM, "-t", str(minutes), *args)
    return c.job_id(res)


def fill(c, pool, nodes, minutes=10):
    """One 8-GPU job per node of `pool`; returns them once all run."""
    jobs = [submit(c, "-p", pool, "-w", n, "--gres=gpu:8", minutes=minutes) for n in nodes]
    for j in jobs:
        c.wait_state(j, {"RUNNING"})
    return jobs


def test_the_cluster_has_two_pools(pools):
    res = pools.run(["sinfo", "-h", "-o", "%R %N %G"])
    assert res.rc == 0, res
    rows = sorted(res.out.split("\n")[:-1])
    assert rows == ["a100 gpu[05-08] gpu:a100:8", "h100 gpu[01-04] gpu:h100:8"], res.out


def test_a_job_naming_two_pools_starts_in_the_one_with_room_and_why_shows_each(pools, clean):
    """h100 full: a job that accepts both pools starts in a100 at once. Both full: a
    pending job that accepts both gets `mlsched why` lines for each pool, naming the
    jobs in its way there."""
    h100_jobs = fill(pools, "h100", H100)
    job = submit(pools, "-p", "h100,a100", "--gres=gpu:8")
    pools.wait_state(job, {"RUNNING"})
    assert pools.job_field(job, "Partition") == "a100", pools.show_job(job)
    assert "gres/gpu:a100=8" in (pools.alloc_tres(job) or ""), pools.show_job(job)

    a100_jobs = fill(pools, "a100", A100[1:])  # with `job`, every a100 GPU is busy
    waiting = submit(pools, "-p", "h100,a100", "--gres=gpu:8")
    wait_for(lambda: pools.job_field(waiting, "Reason") not in (None, "None"), "the job to be considered")
    why = pools.run([str(TOOL), "why", waiting], user=USER)
    assert why.rc == 0, why
    print(f"\nmlsched why {waiting}:\n{why.out}")
    assert "pools it accepts (mlsched why's recomputation" in why.out, why.out
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^  (h100|a100) \(gpu\[\d+-\d+\]\): (.*)$", why.out, re.M)}
    assert set(lines) == {"h100", "a100"}, why.out
    for pool, theirs in (("h100", h100_jobs), ("a100", a100_jobs + [job])):
        assert "in its way" in lines[pool], lines[pool]
        named = set(re.findall(r"job t-\w+ (\d+) \(", lines[pool]))
        assert named and named <= set(theirs), (pool, named, theirs)
    doc = json.loads(pools.run([str(TOOL), "why", "--json", waiting], user=USER).out)
    assert [p["pool"] for p in doc["pools"]] == ["h100", "a100"], doc["pools"]
    assert not any(p["fits_now"] for p in doc["pools"]), doc["pools"]

    # Operators see each pool: every GPU allocated, the waiting job counted in both.
    top = pools.run([str(TOOL), "top", "--json"], user=USER)
    assert top.rc == 0, top
    by_pool = json.loads(top.out)["pools"]
    for pool in ("h100", "a100"):
        assert by_pool[pool]["total"] == 32 and by_pool[pool]["allocated"] == 32, by_pool
        assert by_pool[pool]["pending_jobs"] == 1 and by_pool[pool]["pending_gpus"] == 8, by_pool
    metrics = pools.run([str(TOOL), "metrics"], user=USER)
    assert metrics.rc == 0, metrics
    assert 'mlsched_pool_gpus{pool="h100",state="allocated"} 32\n' in metrics.out, metrics.out
    assert 'mlsched_pool_jobs_pending{pool="a100"} 1\n' in metrics.out, metrics.out

    # GPUs free up in h100: it is placed there.
    pools.cancel(h100_jobs[0])
    pools.wait_state(waiting, {"RUNNING"}, timeout=90)
    assert pools.job_field(waiting, "Partition") == "h100", pools.show_job(waiting)


def test_a_job_waits_for_the_faster_pool_when_it_would_finish_sooner(pools, pools_conf, clean):
    """GpuTypeSpeed=h100:2,a100:1. The h100 pool is busy for at most 3 more minutes,
    the a100 pool idle. A 1-hour job that accepts both pools (a100 first) would end by
    +33 min in h100 against +60 min in a100 now: it waits for the h100 pool and backfill
    plans it there. A 2-minute job starts in a100 at once. Once h100 frees, the hour
    job starts in the h100 pool."""
    pools_conf.append("GpuTypeSpeed=h100:2,a100:1", plugin="select/mlsched", tag="speed-aware pool choice")
    busy = fill(pools, "h100", H100, minutes=3)
    long_job = submit(pools, "-p", "a100,h100", "--gres=gpu:8", minutes=60)
    planned = wait_for(lambda: (v := pools.job_field(long_job, "SchedNodeList")) and v != "(null)" and v,
                       "backfill to plan the hour job", timeout=60)
    names = pools.run(["scontrol", "show", "hostnames", planned]).out.split()
    assert names and set(names) <= set(H100), pools.show_job(long_job)
    assert pools.job_field(long_job, "JobState") == "PENDING", pools.show_job(long_job)
    idle_a100 = pools.run(["sinfo", "-h", "-p", "a100", "-t", "idle", "-o", "%D"]).out.split()
    assert idle_a100 == ["4"], idle_a100  # a100 was there to take, and left free
    reason = wait_for(lambda: "waits for h100" in (v := pools.job_field(long_job, "SystemComment") or "") and v,
                      "select/mlsched to say the job waits for h100", timeout=60)
    assert "(GpuTypeSpeed 2 vs 1)" in reason, reason

    short_job = submit(pools, "-p", "a100,h100", "--gres=gpu:8", minutes=2)
    pools.wait_state(short_job, {"RUNNING"})
    assert pools.job_field(short_job, "Partition") == "a100", pools.show_job(short_job)
    assert pools.job_field(long_job, "JobState") == "PENDING"

    pools.run(["scancel", *busy])
    pools.wait_state(long_job, {"RUNNING"}, timeout=90)
    assert pools.job_field(long_job, "Partition") == "h100", pools.show_job(long_job)
    assert "gres/gpu:h100=8" in (pools.alloc_tres(long_job) or ""), pools.show_job(long_job)


@pytest.fixture
def batch_pool(pools):
    """A second a100 pool, `a100-batch` (gpu[07-08], also in pool a100), created at
    run time as an admin may (`scontrol create partition`), deleted afterwards."""
    res = pools.run(["scontrol", "create", "PartitionName=a100-batch", "Nodes=gpu[07-08]",
                     "State=UP", "MaxTime=INFINITE"])
    assert res.rc == 0, res
    yield "a100-batch"
    pools.run(["scancel", "-u", USER, "-p", "a100-batch"])
    wait_for(lambda: not pools.run(["squeue", "-h", "-p", "a100-batch"]).out.strip(), "a100-batch to empty", timeout=60)
    res = pools.run(["scontrol", "delete", "PartitionName=a100-batch"])
    assert res.rc == 0, res


def test_team_quota_per_pool_counts_a_shared_gpu_type_by_partition(pools, pools_conf, batch_pool, clean):
    """TeamQuota=research:a100@a100-batch=8,a100=0: research is guaranteed 8 a100 in pool
    a100-batch and none elsewhere. Its older job in pool a100 borrows; its newer job in
    a100-batch is within its quota there. With one quota per type (a100=8) it would be
    the other way round: the older job fills the guarantee, the newer borrows."""
    pools_conf.append("TeamQuota=research:a100@a100-batch=8,a100=0", "PriorityCalcPeriod=1",
                      plugin="priority/mlsched", tag="quota per pool")
    older = submit(pools, "-p", "a100", "-w", "gpu05", "--gres=gpu:8")
    pools.wait_state(older, {"RUNNING"})
    time.sleep(1)  # a later start: the start order decides who borrows within one kind
    newer = submit(pools, "-p", batch_pool, "-w", "gpu07", "--gres=gpu:8")
    pools.wait_state(newer, {"RUNNING"})

    def marks():
        return {j: re.search(r"borrowing=(yes|no)", pools.job_field(j, "AdminComment") or "") for j in (older, newer)}
    wait_for(lambda: all(m and m.group(1) for m in marks().values()) and marks(), "priority/mlsched's borrowing marks",
             timeout=30)
    got = {j: m.group(1) for j, m in marks().items()}
    assert got == {older: "yes", newer: "no"}, got

    res = pools.run([str(TOOL), "why", newer], user=USER)
    assert res.rc == 0, res
    assert "team:       research holds 8 a100@a100-batch, guaranteed 8" in res.out, res.out
    assert "borrowing:  no (priority/mlsched's mark)" in res.out, res.out
    res = pools.run([str(TOOL), "why", older], user=USER)
    assert "team:       research holds 8 a100, guaranteed 0" in res.out, res.out
    assert "borrowing:  yes (priority/mlsched's mark): a team within its quota may reclaim its GPUs" in res.out, res.out

    # One quota per type: the same two jobs, the older now within it and the newer borrowing.
    pools_conf.append("TeamQuota=research:a100=8", "PriorityCalcPeriod=1", plugin="priority/mlsched",
                      tag="quota per type")
    wait_for(lambda: {j: m and m.group(1) for j, m in marks().items()} == {older: "no", newer: "yes"},
             lambda: f"the marks to follow the per-type quota: {marks()}", timeout=30)
