"""The mlsched command-line tool on the real cluster: what `mlsched why` tells a
user about their job, and what `mlsched top` and `mlsched metrics` tell operators,
asserted on content and on numbers read back from scontrol, squeue and sshare.
Jobs are cleaned up; a drained node is resumed."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, SLURM_CONF, TOOL, require_tool, wait_for

ALICE = "ml-alice"   # team vision
BOB = "ml-bob"       # team nlp


def mlsched(cluster, *args, user=None):
    require_tool()
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


def submit(cluster, jobs, user, *args, comment=None, account="vision", body="sleep 300", minutes=10):
    extra = ["--comment", comment] if comment else []
    res, name = cluster.sbatch(user, f"#!/bin/bash\n{body}\n", "-A", account, "-t", str(minutes), *extra, *args)
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


# ---- more `why` scenarios: each asserts the reason and its numbers --------------

def fill(cluster, jobs, nodes, gpus, gpu_type, minutes=10, body="sleep 300"):
    """Running jobs of ml-bob (team nlp) holding `gpus` GPUs on each of `nodes`."""
    ids = []
    for node in nodes:
        job, _ = submit(cluster, jobs, BOB, "-w", node, "-N1", f"--gres=gpu:{gpu_type}:{gpus}", account="nlp",
                        body=body, minutes=minutes)
        ids.append(job)
    for job in ids:
        cluster.wait_state(job, {"RUNNING"})
    return ids


H100_NODES = [f"gpu0{i}" for i in range(1, 9)]
A100_NODES = ["gpu09"] + [f"gpu{i}" for i in range(10, 17)]


def test_fragmented_free_gpus_with_other_type_counterfactual(cluster, jobs):
    # One h100 busy on every h100 node: 56 h100 free, but no node has 8.
    fill(cluster, jobs, H100_NODES, 1, "h100")
    job, _ = submit(cluster, jobs, ALICE, "-H", "-N2", "--gres=gpu:8", comment="mlsched: gpu-type=h100")
    res = mlsched(cluster, "why", job, user=ALICE)
    assert res.rc == 0, res
    assert "FreeGpusFragmented" in res.out, res
    assert "56 h100 free in total (needs 16) but no 2 nodes with 8 free each" in res.out, res
    assert "h100  nvlink-domain nvl0: 28 of 32 free" in res.out, res
    assert "h100  nvlink-domain nvl1: 28 of 32 free" in res.out, res
    assert "h100  whole cluster: 56 of 64 free" in res.out, res
    assert "gpu-type=a100: would fit now" in res.out, res
    data = json.loads(mlsched(cluster, "why", "--json", job).out)
    assert [r["reason"] for r in data["reasons"]] == ["HeldByUser", "FreeGpusFragmented"], data


def test_admin_hold_is_named(cluster, jobs):
    job, _ = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:1", "--begin=now+1hour")
    assert cluster.run(["scontrol", "hold", job]).rc == 0
    res = mlsched(cluster, "why", job, user=ALICE)
    assert res.rc == 0, res
    assert "Slurm says: JobHeldAdmin" in res.out, res
    assert "HeldByAdmin" in res.out and "held by an administrator (priority 0)" in res.out, res


def test_missing_gpu_type_gets_alternative_type_counterfactual(cluster, jobs):
    # Slurm refuses a GRES type no node has, except for a held job (it skips the
    # test at submission); once released, the job waits on BadConstraints forever.
    job, _ = submit(cluster, jobs, ALICE, "-H", "-N1", "--gres=gpu:v100:2")
    assert cluster.run(["scontrol", "release", job], user=ALICE).rc == 0
    deadline = time.time() + 30
    while cluster.job_field(job, "Reason") in ("JobHeldUser", "None") and time.time() < deadline:
        time.sleep(0.5)
    res = mlsched(cluster, "why", job, user=ALICE)
    assert res.rc == 0, res
    assert "Slurm says: BadConstraints" in res.out, res
    assert "needs:      2 v100 GPUs as 1 node x 2" in res.out, res
    assert "GpuTypeNotInCluster  no node has v100 GPUs; the cluster has a100, h100" in res.out, res
    assert re.search(r"gpu-type=a100: would fit now in gpu\d\d \(\d+ a100 free there\)", res.out), res
    assert re.search(r"gpu-type=h100: would fit now in gpu\d\d \(\d+ h100 free there\)", res.out), res


def test_priority_behind_named_jobs(cluster, jobs):
    # One a100 busy on every a100 node, so jobs wanting a whole a100 node queue up.
    fill(cluster, jobs, A100_NODES, 1, "a100")
    # Same user and team, so fair share is equal and only the nice value differs.
    ahead, ahead_name = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:8")
    behind, _ = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:8", "--nice=10000")
    # Priorities are set at submission; wait until both have one.
    deadline = time.time() + 30
    while time.time() < deadline:
        p_ahead, p_behind = (int(cluster.job_field(j, "Priority")) for j in (ahead, behind))
        if p_ahead > p_behind > 0:
            break
        time.sleep(0.5)
    assert p_ahead > p_behind > 0, (p_ahead, p_behind)
    res = mlsched(cluster, "why", behind, user=ALICE)
    assert res.rc == 0, res
    assert (f"BehindHigherPriorityJobs  1 pending job(s) for the same GPUs come first: "
            f"{ahead_name} {ahead} (ml-alice, priority {p_ahead})") in res.out, res
    assert f"priority: {p_behind}, rank 2 of 2 pending jobs for the same GPU types" in res.out, res
    assert "NotEnoughFreeGpus" not in res.out and "FreeGpusFragmented" in res.out, res
    data = json.loads(mlsched(cluster, "why", "--json", behind).out)
    assert data["rank"] == 2 and data["ahead"] == [int(ahead)], data


def sshare_teams(cluster):
    """{team: (NormShares, EffectvUsage)} from sshare's team (account) rows."""
    res = cluster.run(["sshare", "-n", "-P", "-o", "Account,User,NormShares,EffectvUsage"])
    assert res.rc == 0, res
    rows = {}
    for line in res.out.splitlines():
        account, user, norm, usage = line.split("|")
        if not user.strip() and account.strip() not in ("", "root"):
            rows[account.strip()] = (float(norm), float(usage))
    return rows


def test_quota_and_fair_share_behind_another_team(cluster, mlsched_conf):
    # vision is guaranteed 8 a100, nlp none. nlp's jobs hold one a100 on every a100
    # node (not preemptible: no directives), so a whole-node a100 job waits; vision's
    # comes first (within its quota), nlp's would borrow.
    mlsched_conf.append("TeamQuota=vision:a100=8", "TeamQuota=nlp:a100=0", plugin="priority/mlsched",
                        tag="test_quota_and_fair_share")
    jobs = mlsched_conf.jobs
    fill(cluster, jobs, A100_NODES, 1, "a100")
    ahead, ahead_name = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:8")
    behind, _ = submit(cluster, jobs, BOB, "-N1", "--gres=gpu:a100:8", account="nlp")
    prio = lambda j: int(cluster.job_field(j, "Priority"))
    wait_for(lambda: prio(ahead) > prio(behind) > 0, "vision's job to be priced above nlp's", timeout=30)
    res = mlsched(cluster, "why", behind, user=BOB)
    assert res.rc == 0, res
    out = res.out
    # Reasons are listed in a column as wide as the longest name.
    assert re.search(r"BehindHigherPriorityJobs +1 pending job\(s\) for the same GPUs come first: "
                     + re.escape(f"{ahead_name} {ahead}"), out), res
    assert re.search(r"TeamBeyondQuota +team nlp holds 8 a100 of the 0 it is guaranteed; this job's 8 would be "
                     r"borrowed: no quota priority, and preemptible by a team within its quota", out), res
    data = json.loads(mlsched(cluster, "why", "--json", behind).out)
    team = data["team"]
    assert (team["team"], team["gpu_type"], team["holds"], team["guaranteed"], team["job_borrows"]) == \
        ("nlp", "a100", 8, 0, True), data
    assert [t["team"] for t in data["teams_ahead"]] == ["vision"], data
    # Usage and entitlement are sshare's numbers (usage moves with each priority
    # pass, hence the tolerance).
    shares = sshare_teams(cluster)
    vision = data["teams_ahead"][0]
    assert abs(team["share"] - shares["nlp"][0]) < 1e-4 and abs(vision["share"] - shares["vision"][0]) < 1e-4, (data, shares)
    assert abs(team["usage_share"] - shares["nlp"][1]) < 0.02, (data, shares)
    assert abs(vision["usage_share"] - shares["vision"][1]) < 0.02, (data, shares)
    assert re.search(r"team:       nlp holds 8 a100, guaranteed 0; has had [\d.]+% of recent GPU-time for a "
                     + re.escape(f"{shares['nlp'][0] * 100:.1f}% entitlement (fair-share factor"), out), res
    # Fair share is named as a reason exactly when vision stands better than nlp.
    fair = [r["message"] for r in data["reasons"] if r["reason"] == "TeamFairShareBehind"]
    if vision["fairshare"] > team["fairshare"]:
        assert fair and "ahead: vision has had" in fair[0], data
    else:
        assert not fair, data
    # vision's own job is within its quota: no quota reason there.
    data = json.loads(mlsched(cluster, "why", "--json", ahead).out)
    assert data["team"]["guaranteed"] == 8 and data["team"]["job_borrows"] is False, data
    assert "TeamBeyondQuota" not in [r["reason"] for r in data["reasons"]], data


def scheduling_cycle(cluster):
    """Seconds Slurm may take to start a job once its resources are free: the backfill
    interval or the batch scheduling delay after a job ends, whichever is longer."""
    params = cluster.run(["scontrol", "show", "config"]).out
    m = re.search(r"SchedulerParameters\s*=\s*(\S+)", params)
    opts = dict(o.split("=", 1) for o in (m.group(1).split(",") if m else []) if "=" in o)
    return max(int(opts.get("bf_interval", 30)), int(opts.get("batch_sched_delay", 3)))


def test_eta_matches_actual_start(cluster, jobs):
    # Every a100 node has one long job, except gpu09, which is full with a job that
    # ends on its own just before its 1-minute limit: a whole a100 node frees then.
    fill(cluster, jobs, A100_NODES[1:], 1, "a100")
    short = fill(cluster, jobs, ["gpu09"], 8, "a100", minutes=1, body="sleep 57")[0]
    job, _ = submit(cluster, jobs, ALICE, "-N1", "--gres=gpu:a100:8")
    data = json.loads(mlsched(cluster, "why", "--json", job).out)
    assert data["state"] == "PENDING", data
    assert [b["job_id"] for b in data["blockers"]] == [int(short)], data
    eta = data["model_eta"]
    short_end = time.mktime(time.strptime(cluster.job_field(short, "EndTime"), "%Y-%m-%dT%H:%M:%S"))
    assert eta == short_end, (data, short_end)
    cluster.wait_state(job, {"RUNNING"}, timeout=150)
    started = time.mktime(time.strptime(cluster.job_field(job, "StartTime"), "%Y-%m-%dT%H:%M:%S"))
    # It cannot start before the blocker's GPUs are free (3 s before its limit at the
    # earliest) and should start within one scheduling cycle of the ETA.
    cycle = scheduling_cycle(cluster)
    assert eta - 5 <= started <= eta + cycle, (started - eta, cycle)


# ---- mlsched metrics / top -------------------------------------------------------

def node_table(cluster):
    """{node: (gpu type, configured GPUs, GPUs in use, sinfo state)} from scontrol."""
    res = cluster.run(["scontrol", "-d", "-o", "show", "node"])
    assert res.rc == 0, res
    nodes = {}
    for line in res.out.splitlines():
        name = re.search(r"NodeName=(\S+)", line).group(1)
        gres = re.search(r"\bGres=gpu:(\w+):(\d+)", line)
        used = re.search(r"GresUsed=gpu:\w+:(\d+)", line)
        state = re.search(r"\bState=(\S+)", line).group(1)
        nodes[name] = (gres.group(1), int(gres.group(2)), int(used.group(1)) if used else 0, state)
    return nodes


def parse_metrics(text):
    """Families by name, read by a real Prometheus text-format parser (which raises
    on malformed exposition)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        pytest.fail("python3-prometheus-client is missing: run scripts/install-deps")
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(families, family, sample_name=None, **labels):
    matches = [s.value for s in families[family].samples
               if s.name == (sample_name or family) and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matches) == 1, (family, labels, families[family].samples)
    return matches[0]


def test_metrics_parse_and_match_scontrol(cluster, jobs):
    run, _ = submit(cluster, jobs, BOB, "-N1", "--gres=gpu:a100:2", account="nlp")
    cluster.wait_state(run, {"RUNNING"})
    held, _ = submit(cluster, jobs, ALICE, "-H", "-N1", "--gres=gpu:h100:1")
    res = mlsched(cluster, "metrics")
    assert res.rc == 0, res
    fams = parse_metrics(res.out)
    nodes = node_table(cluster)

    for gpu_type in ("a100", "h100"):
        total = sum(n[1] for n in nodes.values() if n[0] == gpu_type)
        used = sum(n[2] for n in nodes.values() if n[0] == gpu_type)
        assert value(fams, "mlsched_gpus", gpu_type=gpu_type, state="allocated") == used, res.out
        assert sum(value(fams, "mlsched_gpus", gpu_type=gpu_type, state=s)
                   for s in ("allocated", "idle", "unavailable")) == total
    assert value(fams, "mlsched_gpus", gpu_type="a100", state="allocated") >= 2

    # The team's GPUs are what its running jobs were allocated, as scontrol shows them.
    running = cluster.run(["squeue", "-h", "-t", "R", "-A", "nlp", "-o", "%i"]).out.split()
    expected = sum(int(m) for j in running
                   for m in re.findall(r"gres/gpu:a100=(\d+)", cluster.alloc_tres(j) or ""))
    assert expected >= 2
    assert value(fams, "mlsched_team_gpus_in_use", team="nlp", gpu_type="a100") == expected

    # Pending jobs by reason equal squeue's reasons; the histogram counts them all.
    reasons = {}
    for r in cluster.run(["squeue", "-h", "-t", "PD", "-o", "%r"]).out.split():
        reasons[r] = reasons.get(r, 0) + 1
    assert reasons.get("JobHeldUser", 0) >= 1
    for reason, count in reasons.items():
        assert value(fams, "mlsched_jobs_pending", reason=reason) == count, (reason, res.out)
    assert value(fams, "mlsched_queue_wait_seconds", "mlsched_queue_wait_seconds_count") == sum(reasons.values())
    assert value(fams, "mlsched_queue_wait_seconds", "mlsched_queue_wait_seconds_bucket", le="+Inf") == \
        sum(reasons.values())

    # Fragmentation from the same node table: free GPUs not on a wholly idle node.
    usable = [n for n in nodes.values() if not re.search(r"DRAIN|DOWN|FAIL|NOT_RESPONDING", n[3])]
    free = sum(n[1] - n[2] for n in usable)
    on_idle = sum(n[1] for n in usable if n[2] == 0)
    assert value(fams, "mlsched_fragmentation_index", level="node") == pytest.approx(1 - on_idle / free)

    # Teams and fair share as sshare shows them.
    sshare = cluster.run(["sshare", "-h", "-P", "-o", "Account,User,NormShares"]).out
    shares = {l.split("|")[0].strip(): float(l.split("|")[2]) for l in sshare.splitlines()
              if l.split("|")[1] == "" and l.split("|")[0].strip() not in ("root", "")}
    assert shares and set(shares) <= {s.labels["team"] for s in fams["mlsched_team_share"].samples}
    for team, norm in shares.items():
        assert value(fams, "mlsched_team_share", team=team) == pytest.approx(norm, abs=1e-6)
    assert 0 < value(fams, "mlsched_team_fairshare", team="nlp") <= 1


def test_metrics_listen_serves_loopback_http(cluster):
    proc = subprocess.Popen([str(TOOL), "metrics", "--listen", "127.0.0.1:0"], env=cluster.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.search(r"serving (http://127\.0\.0\.1:\d+/metrics)", line)
        assert m, line
        with urllib.request.urlopen(m.group(1), timeout=30) as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            fams = parse_metrics(r.read().decode())
        assert value(fams, "mlsched_gpus", gpu_type="h100", state="idle") >= 0
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(m.group(1).replace("/metrics", "/other"), timeout=30)
        assert e.value.code == 404
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(m.group(1), data=b"x", method="POST"), timeout=30)
        assert e.value.code == 405
        port = int(m.group(1).split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(b"nonsense\r\n\r\n")
            assert raw.recv(4096).startswith(b"HTTP/1.0 400 Bad Request"), "malformed request line"
        # Still serving after the errors.
        with urllib.request.urlopen(m.group(1), timeout=30) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_top_refreshes_until_stopped(cluster):
    proc = subprocess.Popen([str(TOOL), "top", "--interval", "1"], env=cluster.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        headers = 0
        for line in proc.stdout:
            headers += line.startswith("mlsched top ")
            if headers == 2:
                break
        assert headers == 2, proc.stderr.read()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_metrics_and_top_errors_are_clear(cluster):
    res = mlsched(cluster, "metrics", "--listen", "0.0.0.0:9400")
    assert res.rc == 2 and "only loopback addresses (127.0.0.0/8) are served" in res.err, res
    res = mlsched(cluster, "metrics", "--listen", "9400")
    assert res.rc == 2 and "has no port" in res.err, res
    res = mlsched(cluster, "metrics", "--listen", "127.0.0.1:99999")
    assert res.rc == 2 and "bad port" in res.err, res
    res = mlsched(cluster, "metrics", "--listen", "example.org:80")
    assert res.rc == 2 and "'example.org' is not an IPv4 address" in res.err, res
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        res = mlsched(cluster, "metrics", "--listen", f"127.0.0.1:{taken.getsockname()[1]}")
        assert res.rc == 1 and "cannot listen on 127.0.0.1:" in res.err and "in use" in res.err, res
    res = mlsched(cluster, "top", "--interval", "0")
    assert res.rc == 2 and "--interval '0' is not 1..3600 seconds" in res.err, res
    res = mlsched(cluster, "top", "--frob")
    assert res.rc == 2 and "unknown option '--frob' for mlsched top" in res.err, res
    res = mlsched(cluster, "metrics", "--json")
    assert res.rc == 2 and "unknown option '--json' for mlsched metrics" in res.err, res
    res = mlsched(cluster, "metrics", "--help")
    assert res.rc == 0 and "--listen ADDR:PORT" in res.out and "loopback addresses only" in res.out, res
    res = mlsched(cluster, "top", "--help")
    assert res.rc == 0 and "--once" in res.out and "# allocated, . idle, x unavailable" in res.out, res

def test_metrics_without_controller_fails_clearly(cluster, tmp_path):
    # The cluster's configuration with a port nobody listens on: the tool must say
    # so and print no metrics, not a page of zeros a scraper would believe.
    etc = tmp_path / "etc"
    shutil.copytree(Path(cluster.dir) / "etc", etc)
    conf = etc / "slurm.conf"
    conf.write_text(re.sub(r"(?m)^SlurmctldPort=\d+", "SlurmctldPort=1", conf.read_text()))
    env = dict(cluster.env, SLURM_CONF=str(conf))
    proc = subprocess.run([str(TOOL), "metrics"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert "cannot read the nodes from slurmctld: Unable to contact slurm controller" in proc.stderr, proc
    # Served, the same failure is a 503 with the reason, and the server stays up.
    server = subprocess.Popen([str(TOOL), "metrics", "--listen", "localhost:0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (\S+)", server.stderr.readline()).group(1)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=60)
        assert e.value.code == 503 and b"Unable to contact slurm controller" in e.value.read()
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_top_shows_team_gpus_and_drained_node(cluster, jobs):
    job, _ = submit(cluster, jobs, BOB, "-N1", "--gres=gpu:a100:2", account="nlp")
    cluster.wait_state(job, {"RUNNING"})
    node = cluster.job_field(job, "NodeList")
    drained = "gpu08"
    res = cluster.run(["scontrol", "update", f"nodename={drained}", "state=drain", "reason=mlsched-test fan"])
    assert res.rc == 0, res
    try:
        res = mlsched(cluster, "top", "--once")
        assert res.rc == 0, res
        out = res.out
        nlp = re.search(r"^  nlp +(\d+) +(\d+) +\S+ +(\d+) .*a100:(\d+)$", out, re.M)
        assert nlp and int(nlp.group(1)) >= 2 and int(nlp.group(4)) >= 2, out
        assert re.search(rf"^  {drained} +drain\w* +8 GPUs  \"mlsched-test fan\"$", out, re.M), out
        assert re.search(rf" {drained} xxxxxxxx", out), out
        assert re.search(rf" {node} [#.]*##[#.]*", out), out
        assert "\033[" not in out  # not a terminal: no colour
        data = json.loads(mlsched(cluster, "top", "--json").out)
        assert data["teams"]["nlp"]["gpus_in_use"]["a100"] >= 2, data
        assert any(n["node"] == drained and n["reason"] == "mlsched-test fan" for n in data["nodes_unavailable"]), data
        assert data["gpu_map"][node].count("#") >= 2 and data["gpu_map"][drained] == "xxxxxxxx", data
        nodes = node_table(cluster)
        assert data["gpus_by_type"]["a100"]["allocated"] == sum(n[2] for n in nodes.values() if n[0] == "a100")
    finally:
        cluster.run(["scontrol", "update", f"nodename={drained}", "state=resume"])


def preempted_within(start, end, admin_comment):
    m = re.search(r"preempted-at=(\S+)", admin_comment)
    if not m or start in ("", "Unknown", "None"):
        return False
    t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    return time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S")) <= t and (
        end in ("", "Unknown", "None") or t <= time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S")))


def test_metrics_count_requeues_as_scontrol_does(cluster, jobs):
    job, _ = submit(cluster, jobs, BOB, "-N1", "--gres=gpu:a100:1", account="nlp")
    cluster.wait_state(job, {"RUNNING"})
    res = cluster.run(["scontrol", "requeue", job])
    assert res.rc == 0, res
    # scontrol shows REQUEUED while the first run is being cleaned up; then PENDING.
    deadline = time.time() + 60
    while time.time() < deadline and not (cluster.job_field(job, "Restarts") == "1" and
                                          cluster.job_field(job, "JobState") in ("PENDING", "RUNNING")):
        time.sleep(0.5)
    assert cluster.job_field(job, "Restarts") == "1", cluster.show_job(job)
    fams = parse_metrics(mlsched(cluster, "metrics").out)
    # Only jobs pending or running count, as the metric's HELP says.
    live = [int(m.group(2)) for m in re.finditer(r"\bJobState=(\w+).*?\bRestarts=(\d+)",
                                                  cluster.run(["scontrol", "-o", "show", "job"]).out)
            if m.group(1) in ("PENDING", "RUNNING", "SUSPENDED")]
    assert value(fams, "mlsched_job_restarts") == sum(live) >= 1
    assert value(fams, "mlsched_jobs_restarted") == sum(1 for r in live if r)
    # Not a preemption: a requeue for another cause, for nlp.
    assert value(fams, "mlsched_team_requeues_other_causes", team="nlp") >= 1

    # Interrupted runs from accounting, as sacct lists them (one record per run).
    deadline = time.time() + 30
    while time.time() < deadline:
        fams = parse_metrics(mlsched(cluster, "metrics").out)
        sacct = cluster.run(["sacct", "-X", "-D", "-a", "-n", "-P", "-S", "now-1days", "-E", "now",
                             "-o", "JobID,State,ElapsedRaw,AllocTRES,Start,End,AdminComment"]).out
        # A run preempt/mlsched preempted (its mark's preempted-at within the run)
        # counts as preempted, not requeued.
        requeued = [l.split("|") for l in sacct.splitlines() if l.split("|")[1] == "REQUEUED"
                    and not preempted_within(*l.split("|")[4:7])]
        if any(r[0] == job for r in requeued):
            break
        time.sleep(1)  # the first run's record reaches slurmdbd asynchronously
    assert any(r[0] == job for r in requeued), sacct
    gpu_seconds = sum(int(r[2]) * int((re.search(r"gres/gpu=(\d+)", r[3]) or [0, 0])[1]) for r in requeued)
    assert value(fams, "mlsched_interrupted_runs", cause="requeued") == len(requeued)
    assert value(fams, "mlsched_interrupted_gpu_seconds", cause="requeued") == gpu_seconds


def test_metrics_without_accounting_leave_out_interrupted_runs(cluster, tmp_path):
    # slurmctld reachable, slurmdbd not: everything else is still served, and the
    # accounting series are missing (unknown), not zero.
    etc = tmp_path / "etc"
    shutil.copytree(Path(cluster.dir) / "etc", etc)
    conf = etc / "slurm.conf"
    conf.write_text(re.sub(r"(?m)^AccountingStoragePort=\d+", "AccountingStoragePort=1", conf.read_text()))
    proc = subprocess.run([str(TOOL), "metrics"], env=dict(cluster.env, SLURM_CONF=str(conf)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc
    assert "cannot read TRES from the accounting database" in proc.stderr
    assert "interrupted runs not shown" in proc.stderr, proc
    fams = parse_metrics(proc.stdout)
    assert "mlsched_interrupted_runs" not in fams and "mlsched_gpus" in fams
