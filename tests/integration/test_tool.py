"""The mlsched command-line tool on the real cluster: what `mlsched why` tells a
user about their job, asserted on content and numbers. Jobs are cleaned up."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, SLURM_CONF

ALICE = "ml-alice"   # team vision
BOB = "ml-bob"       # team nlp
TOOL = Path(os.environ.get("MLSCHED_BUILD_DIR", REPO / "build")) / "src" / "tools" / "mlsched" / "mlsched"


def mlsched(cluster, *args, user=None):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is not built (scripts/build, or set MLSCHED_BUILD_DIR)")
    res = cluster.run([str(TOOL), *args], user=user)
    # libslurm prints plugin load problems on stderr but carries on; a fatal one
    # ends the process without output, which the assertions below then show.
    return res


@pytest.fixture
def jobs(cluster):
    """Job ids to cancel after the test, whatever happens."""
    ids = []
    yield ids
    for j in ids:
        cluster.cancel(j)
    deadline = time.time() + 30
    while ids and time.time() < deadline:
        left = cluster.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i"]).out.split()
        if not left:
            break
        time.sleep(0.5)


def submit(cluster, jobs, user, *args, comment=None, account="vision", body="sleep 300"):
    extra = ["--comment", comment] if comment else []
    res, name = cluster.sbatch(user, f"#!/bin/bash\n{body}\n", "-A", account, "-t", "10", *extra, *args)
    job = cluster.job_id(res)
    jobs.append(job)
    return job, name


def test_strict_locality_shows_prefer_counterfactual_with_numbers(cluster, jobs):
    # Leave one idle h100 node in each of nvl0 (gpu01) and nvl1 (gpu05): 16 h100 are
    # free, but no NVLink domain has two idle nodes.
    fills = [submit(cluster, jobs, BOB, "-w", node, "-N1", "--gres=gpu:h100:8", account="nlp")[0]
             for node in ("gpu02", "gpu03", "gpu04", "gpu06", "gpu07", "gpu08")]
    for f in fills:
        cluster.wait_state(f, {"RUNNING"})
    # Held, so stock or mlsched selection alike cannot start it while we look.
    job, name = submit(cluster, jobs, ALICE, "-H", "-N2", "--gres=gpu:8",
                       comment="mlsched: gpu-type=h100 locality=nvlink-domain locality-mode=strict")
    res = mlsched(cluster, "why", job, user=ALICE)
    assert res.rc == 0, res
    out = res.out
    assert f"job {name} {job} (ml-alice, account vision" in out, res
    assert "needs:      16 h100 GPUs as 2 nodes x 8, locality nvlink-domain (strict)" in out, res
    assert "HeldByUser" in out and f"scontrol release {job}" in out, res
    assert "StrictLocalityCannotFit  no single nvlink-domain can take 16 h100 now (best: nvl0 with 8 free)" in out, res
    assert "h100  nvlink-domain nvl0: 8 of 32 free" in out, res
    assert "h100  nvlink-domain nvl1: 8 of 32 free" in out, res
    assert "locality-mode=prefer: would fit now: 16 h100 free across 2 nvlink-domains (gpu01,gpu05)" in out, res
    assert "locality=switch: would fit now in sw0 (16 h100 free there)" in out, res
    assert "gpu-type=a100: would fit now" in out, res
    # The running jobs in the way are named with their time limit.
    assert "in its way (nvl0):" in out and "(ml-bob, nlp) holds 8 GPUs, ends by" in out, res

    data = json.loads(mlsched(cluster, "why", "--json", job).out)
    reasons = [r["reason"] for r in data["reasons"]]
    assert reasons[:2] == ["HeldByUser", "StrictLocalityCannotFit"], data
    nvl0 = [u for u in data["free_gpus"] if u["unit"] == "nvl0"]
    assert nvl0 and nvl0[0]["free"] == 8 and nvl0[0]["total"] == 32, data
    assert any(c["change"] == "locality-mode=prefer" for c in data["counterfactuals"]), data
    assert data["directives"].startswith("type=training gpu-type=h100 locality=nvlink-domain locality-mode=strict")


def test_dependency_names_the_running_upstream_job(cluster, jobs):
    up, up_name = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:1")
    cluster.wait_state(up, {"RUNNING"})
    down, _ = submit(cluster, jobs, ALICE, f"--dependency=afterok:{up}", "-N1", "--gres=gpu:a100:1")
    res = mlsched(cluster, "why", down, user=ALICE)
    assert res.rc == 0, res
    assert "Slurm says: Dependency" in res.out, res
    assert f"WaitingForDependency" in res.out, res
    assert f"waits for afterok on {up_name} {up}, RUNNING, ~10 min left at most" in res.out, res


def test_running_job_shows_where_and_gpus(cluster, jobs):
    job, _ = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:2", comment="mlsched: gpu-type=a100")
    cluster.wait_state(job, {"RUNNING"})
    res = mlsched(cluster, "why", job)
    assert res.rc == 0, res
    assert ": RUNNING" in res.out, res
    detail = cluster.show_job(job, detail=True)
    node = cluster.job_field(job, "NodeList")
    import re
    idx = re.search(r"GRES=gpu:a100:2\(IDX:([\d,-]+)\)", detail).group(1)
    assert f"runs on:    {node} (GPU {idx})" in res.out, (res, detail)
    assert "directives: type=training gpu-type=a100" in res.out, res
    data = json.loads(mlsched(cluster, "why", "--json", job).out)
    assert data["state"] == "RUNNING" and list(data["gpus_by_node"]) == [node], data


def test_why_errors_are_clear(cluster):
    res = mlsched(cluster, "why", "99999999")
    assert res.rc == 1 and "job 99999999 does not exist" in res.err, res
    res = mlsched(cluster, "why", "abc")
    assert res.rc == 2 and "'abc' is not a job id" in res.err, res
    res = mlsched(cluster, "why")
    assert res.rc == 2 and "which job?" in res.err, res
    res = mlsched(cluster, "why", "1", "--frobnicate")
    assert res.rc == 2 and "unknown option '--frobnicate'" in res.err, res
    res = mlsched(cluster, "frob")
    assert res.rc == 2 and "unknown command 'frob'" in res.err, res
    res = mlsched(cluster, "why", "--help")
    assert res.rc == 0 and "StrictLocalityCannotFit" in res.out and "FreeGpusFragmented" in res.out, res
