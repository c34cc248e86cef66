"""select/mlsched on the real cluster, side by side with stock cons_tres where the
difference is the point. Shape (etc/cluster/default.shape): gpu01-08 h100 (NVLink
domains nvl0 = gpu01-04, nvl1 = gpu05-08, switch sw0), gpu09-16 a100 with two 4-GPU
NVLink cliques per node (nvl2, nvl3, switch sw1)."""
import os
import re
import time
from pathlib import Path

import pytest

from conftest import REPO, TOOL

USER, TEAM = "ml-carol", "research"
DOMAIN = {f"gpu{i:02d}": f"nvl{(i - 1) // 4}" for i in range(1, 17)}


def hostnames(cluster, nodelist):
    res = cluster.run(["scontrol", "show", "hostnames", nodelist])
    assert res.rc == 0, res
    return res.out.split()


def submit(cluster, *args, directives=(), body="sleep 300"):
    script = "#!/bin/bash\n" + "".join(f"#MLSCHED {d}\n" for d in directives) + body + "\n"
    res, _ = cluster.sbatch(USER, script, "-A", TEAM, "-t", "10", *args)
    return cluster.job_id(res)


def occupy(cluster, nodes, gpus=8):
    """Fills `gpus` GPUs on each node with a sleeping job; returns when all run."""
    jobs = [submit(cluster, "-w", n, f"--gres=gpu:{gpus}") for n in nodes]
    for j in jobs:
        cluster.wait_state(j, {"RUNNING"})
    return jobs


def nodes_of(cluster, job):
    return hostnames(cluster, cluster.job_field(job, "NodeList"))


def gpu_idx(cluster, job):
    """{node: "IDX"} from scontrol show job -d."""
    text = cluster.show_job(job, detail=True)
    return dict(re.findall(r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu:\w+:\d+\(IDX:([\d,-]+)\)", text))


def idx_set(idx):
    """{0, 1, 4} from scontrol's IDX text "0-1,4"."""
    out = set()
    for part in idx.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def recorded_reason(cluster, job, timeout=20):
    """The SystemComment select/mlsched records on a job it cannot place, once it
    says what is free (None if it never does within `timeout`)."""
    deadline = time.time() + timeout
    reason = None
    while time.time() < deadline:
        reason = cluster.job_field(job, "SystemComment")
        if reason and "free now" in reason:
            break
        time.sleep(0.5)
    return reason


def wait_for_field(cluster, job, field, timeout=30):
    """A job field once it is set (None if it never is within `timeout`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = cluster.job_field(job, field)
        if value and value != "(null)":
            return value
        time.sleep(0.5)
    return None


@pytest.fixture
def clean(request):
    """Cancels every job of the test user on the clusters a test used."""
    used = []
    yield used.append
    for c in used:
        c.run(["scancel", "-u", USER])
        deadline = time.time() + 30
        while time.time() < deadline and c.run(["squeue", "-h", "-u", USER]).out.strip():
            time.sleep(0.5)


def test_domain_gang_lands_in_one_domain_stock_does_not(cluster, stock_cluster, clean):
    # gpu01 (nvl0) is free and first in node order; nvl1 has two free nodes.
    placed = {}
    for name, c in (("mlsched", cluster), ("stock", stock_cluster)):
        clean(c)
        occupy(c, ["gpu02", "gpu03", "gpu04", "gpu05", "gpu08"])
        job = submit(c, "-N", "2", "--gres=gpu:h100:8",
                     directives=["gpu-type=h100 locality=nvlink-domain locality-mode=strict"])
        c.wait_state(job, {"RUNNING"})
        placed[name] = nodes_of(c, job)
        c.run(["scancel", "-u", USER])
    assert placed["mlsched"] == ["gpu06", "gpu07"], placed
    # Stock cons_tres takes the first free nodes and spans two NVLink domains.
    assert len({DOMAIN[n] for n in placed["stock"]}) == 2, placed


def test_strict_waits_with_reason_prefer_spreads(cluster, clean):
    clean(cluster)
    # One idle h100 node per h100 domain: 16 h100 free, never 16 in one domain.
    occupy(cluster, ["gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"])
    prefer = submit(cluster, "-N", "2", "--gres=gpu:8",
                    directives=["gpu-type=h100 locality=nvlink-domain locality-mode=prefer"])
    cluster.wait_state(prefer, {"RUNNING"})
    assert nodes_of(cluster, prefer) == ["gpu01", "gpu05"]
    cluster.run(["scancel", prefer])
    wait_gone(cluster, prefer)
    # The same job, strict: it never starts, and its reason says what it needs and
    # what is free. (Submitted after, since a waiting gang's backfill reservation
    # rightly keeps later jobs off the nodes it will need.)
    strict = submit(cluster, "-N", "2", "--gres=gpu:8",
                    directives=["gpu-type=h100 locality=nvlink-domain locality-mode=strict"])
    reason = recorded_reason(cluster, strict)
    assert cluster.job_field(strict, "JobState") == "PENDING"
    assert reason == ("mlsched: needs 16 h100 GPUs (2 nodes x 8) in one NVLink domain; free now: "
                      "h100: 16 free on 2 nodes with room, at most 8 in one NVLink domain (nvl0)"), reason


def test_why_agrees_with_select_on_a_strict_gang(cluster, clean):
    """select/mlsched records why it cannot place a strict gang (its SystemComment);
    `mlsched why` shows that view with when slurmctld last evaluated the job, beside
    its own recomputation by the same placement code on the model it builds, and
    says they agree."""
    clean(cluster)
    occupy(cluster, ["gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"])
    strict = submit(cluster, "-N", "2", "--gres=gpu:8",
                    directives=["gpu-type=h100 locality=nvlink-domain locality-mode=strict"])
    reason = recorded_reason(cluster, strict)
    assert reason and reason.startswith("mlsched: needs 16 h100 GPUs"), reason
    select_view = reason[len("mlsched: "):]
    res = cluster.run([str(TOOL), "why", strict], user=USER)
    assert res.rc == 0, res
    assert f"  select:     {select_view} (select/mlsched's view, " in res.out, res.out
    assert (f"  now:        {select_view} (mlsched why's recomputation, " in res.out and
            "; agrees with select/mlsched" in res.out), res.out
    assert cluster.job_field(strict, "JobState") == "PENDING"


def test_gpu_type_list_takes_a100_when_no_h100_can_start_it(cluster, clean):
    clean(cluster)
    occupy(cluster, ["gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08"])
    job = submit(cluster, "-N", "2", "--gres=gpu:8",
                 directives=["gpu-type=h100,a100 locality=nvlink-domain locality-mode=strict"])
    cluster.wait_state(job, {"RUNNING"})
    nodes = nodes_of(cluster, job)
    assert all(int(n[3:]) >= 9 for n in nodes), nodes          # a100 nodes
    assert len({DOMAIN[n] for n in nodes}) == 1, nodes          # inside one domain
    assert "gres/gpu:a100=16" in (cluster.alloc_tres(job) or "")


def test_four_gpu_jobs_get_one_nvlink_clique_each(cluster, stock_cluster, clean):
    results = {}
    for name, c in (("mlsched", cluster), ("stock", stock_cluster)):
        clean(c)
        small = submit(c, "-w", "gpu13", "--gres=gpu:a100:2")
        c.wait_state(small, {"RUNNING"})
        big = submit(c, "-w", "gpu13", "--gres=gpu:a100:4", "-o", "%j.out",
                     body='echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 300')
        c.wait_state(big, {"RUNNING"})
        results[name] = (gpu_idx(c, small), gpu_idx(c, big), big)
        c.run(["scancel", "-u", USER])
    small_idx, big_idx, big = results["mlsched"]
    assert small_idx == {"gpu13": "0-1"}, results
    assert big_idx == {"gpu13": "4-7"}, results                  # a whole NVLink clique
    out = open(f"{cluster.workdir(USER)}/{big}.out").read()
    assert "CUDA_VISIBLE_DEVICES=4,5,6,7" in out, out            # what the job itself sees
    # Stock cons_tres does not keep the job in one clique (gpu13's are 0-3 and 4-7):
    # 22.05 takes the next free indices (2-5), 24.11 spreads them (1-2,5-6).
    stock_big = idx_set(results["stock"][1]["gpu13"])
    assert len(stock_big) == 4 and not stock_big <= {0, 1, 2, 3} and not stock_big <= {4, 5, 6, 7}, results


def test_backfill_reservation_stays_in_one_domain(cluster, clean):
    clean(cluster)
    # Every h100 node busy for a while; a strict 3-node domain gang must wait, and
    # backfill's will-run plan for it must already be inside one domain.
    occupy(cluster, [f"gpu0{i}" for i in range(1, 9)])
    job = submit(cluster, "-N", "3", "--gres=gpu:8",
                 directives=["gpu-type=h100 locality=nvlink-domain locality-mode=strict"])
    planned = wait_for_field(cluster, job, "SchedNodeList")
    assert planned, cluster.show_job(job)
    nodes = hostnames(cluster, planned)
    assert len(nodes) == 3 and len({DOMAIN[n] for n in nodes}) == 1, nodes
    assert cluster.job_field(job, "StartTime") not in ("Unknown", None)


def wait_gone(cluster, job, timeout=30):
    """Until the job has left the queue (its GPUs are free again)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not cluster.run(["squeue", "-h", "-j", str(job)]).out.strip():
            return
        time.sleep(0.3)
    raise AssertionError(f"job {job} still in the queue")


def fragmentation(cluster):
    """(idle GPU nodes, fragmentation index) from scontrol's view of GPU use."""
    res = cluster.run(["scontrol", "-d", "show", "nodes", "-o"])
    free_total = free_on_idle = idle = 0
    for line in res.out.splitlines():
        total = int(re.search(r"Gres=gpu:\w+:(\d+)", line).group(1))
        used_m = re.search(r"GresUsed=gpu:\w+:(\d+)", line)
        used = int(used_m.group(1)) if used_m else 0
        free_total += total - used
        if used == 0:
            idle += 1
            free_on_idle += total
    return idle, (1 - free_on_idle / free_total) if free_total else 0.0


def test_stream_of_small_jobs_keeps_whole_nodes_free(cluster, stock_cluster, clean):
    # The same arrivals and departures on both clusters: 1-, 2-, 4- and 8-GPU jobs;
    # every third arrival, the job submitted three arrivals earlier ends.
    sizes = [1, 2, 4, 1, 8, 2, 1, 4, 2, 1, 1, 2, 4, 1, 2, 8, 1, 1, 2, 4,
             2, 1, 4, 1, 2, 2, 1, 8, 4, 1, 2, 1, 1, 4, 2, 1]
    report = {}
    for name, c in (("mlsched", cluster), ("stock", stock_cluster)):
        clean(c)
        jobs = []
        for k, n in enumerate(sizes):
            jobs.append(submit(c, f"--gres=gpu:{n}"))
            c.wait_state(jobs[-1], {"RUNNING"})
            if (k + 1) % 3 == 0:
                c.run(["scancel", jobs[k - 2]])
                wait_gone(c, jobs[k - 2])
        time.sleep(1)
        report[name] = fragmentation(c)
        c.run(["scancel", "-u", USER])
    print("idle nodes, fragmentation index:", report)
    (ours_idle, ours_index), (stock_idle, stock_index) = report["mlsched"], report["stock"]
    assert ours_idle > stock_idle, report
    assert ours_index < stock_index, report


def wait_reason_contains(cluster, job, words, timeout=30):
    """select/mlsched's recorded reason (SystemComment) once it contains `words`."""
    deadline = time.time() + timeout
    reason = None
    while time.time() < deadline:
        reason = cluster.job_field(job, "SystemComment")
        if reason and words in reason:
            return reason
        time.sleep(0.5)
    return reason


def test_job_waits_for_the_faster_gpu_type_when_it_would_finish_sooner(cluster, mlsched_conf, clean):
    """GpuTypeSpeed=h100:2,a100:1. Every h100 is busy for at most 3 more minutes, every
    a100 is free. A 1-hour job that accepts either type would end by +33 min on h100
    (half its limit, from +3 min) against +60 min on a100 now: it waits for h100, says
    so, and backfill plans it on h100. A 2-minute job would end by +4 min on h100 against +2 min on a100: it
    starts on a100 now. Once the h100 nodes free up, the hour job starts there."""
    clean(cluster)
    mlsched_conf.append("GpuTypeSpeed=h100:2,a100:1", plugin="select/mlsched", tag="speed-aware type choice")
    busy = [submit(cluster, "-w", f"gpu0{i}", "--gres=gpu:8", "-t", "3") for i in range(1, 9)]
    for j in busy:
        cluster.wait_state(j, {"RUNNING"})
    long_job = submit(cluster, "-t", "60", "--gres=gpu:8", directives=["gpu-type=h100,a100"])
    reason = wait_reason_contains(cluster, long_job, "waits for h100")
    assert reason and re.fullmatch(
        r"mlsched: waits for h100 \(GpuTypeSpeed 2 vs 1\): expected to start there in [1-3] min and, by its "
        r"time limit, to finish (2[7-9]|30) min sooner than if started on a100 now", reason), reason
    assert cluster.job_field(long_job, "JobState") == "PENDING"
    # Backfill plans it on h100 (its reservation), not on the idle a100 nodes.
    planned = wait_for_field(cluster, long_job, "SchedNodeList")
    assert planned and all(int(n[3:]) <= 8 for n in hostnames(cluster, planned)), cluster.show_job(long_job)
    free_a100 = cluster.run(["sinfo", "-h", "-n", "gpu[09-16]", "-t", "idle", "-o", "%D"]).out.split()
    assert free_a100 == ["8"], free_a100  # a100 was there to take, and left free
    why = cluster.run([str(TOOL), "why", long_job], user=USER)
    assert why.rc == 0, why
    assert "select/mlsched: it waits for h100 (GpuTypeSpeed 2 vs 1)" in why.out, why.out
    assert "select/mlsched holds it for the faster type above" in why.out, why.out
    print(f"\nmlsched why {long_job} while a100 is free:\n{why.out}")

    short_job = submit(cluster, "-t", "2", "--gres=gpu:8", directives=["gpu-type=h100,a100"])
    cluster.wait_state(short_job, {"RUNNING"}, timeout=60)
    assert "gres/gpu:a100=8" in (cluster.alloc_tres(short_job) or ""), cluster.show_job(short_job)
    assert cluster.job_field(long_job, "JobState") == "PENDING"

    cluster.run(["scancel", *busy])
    cluster.wait_state(long_job, {"RUNNING"}, timeout=90)
    assert "gres/gpu:h100=8" in (cluster.alloc_tres(long_job) or ""), cluster.show_job(long_job)
