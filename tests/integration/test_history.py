"""An ML job's whole life on the real cluster, as its user and an operator see it.

A fake trainer of team nlp (tests/fake-trainer under `mlsched run`, 2 nodes x 8 a100,
borrowing: nlp is guaranteed no a100) is preempted once by team vision's job, resumes,
loses a node (its second node's slurmd is killed), resumes again and completes.
`mlsched jobs` shows it `checkpointing` during its grace and `preempted` while it
waits; `mlsched history` shows three runs with those causes, the checkpoints each run
ended with and resumed from (the steps the trainer printed) and GPU-times equal to
sacct's; the same after slurmctld restarts and after the job has left slurmctld
(MinJobAge shortened for that); the ML state gauges parse as Prometheus text and
match `mlsched jobs --all`.
"""
import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import wait_for
from test_preempt import (ALICE, BOB, CAROL, CHECKPOINT_EVERY, OTHER_NODES, REPO, TOOL, TRAINER, forget_node_failures,
                          kill_slurmd, metrics, output, preempt_cluster, restart_slurmd, restarts,
                          set_slurmd_timeout, slurmd_of, start_requeued_now)

STEPS = 1000             # 0.1 s steps: the third run finishes the rest
CHECKPOINT_SECONDS = 8   # the checkpoint on the signal takes this long: the grace is visible


def tool(cluster, *args, user=None):
    res = cluster.run([str(TOOL), *args], user=user)
    assert res.rc == 0, res
    return res.out


def jobs_row(cluster, job, user=BOB):
    """The job's line of `mlsched jobs` as its user sees it, and the same as JSON, from one moment.

    The text and the JSON are two runs of the tool: the job may change state between them (a
    preemption's signal lands between the two). The JSON is read before and after the text and
    the three kept only when both JSON reads agree, so the line and the data describe the same
    state."""
    def as_json():
        return next((j for j in json.loads(tool(cluster, "jobs", "--json", user=user))
                     if j["job_id"] == int(job)), None)

    def key(d):
        return d and (d["status"]["state"], d["status"]["run"], d["status"].get("preempted_by"))

    for _ in range(10):
        before = as_json()
        text = tool(cluster, "jobs", user=user)
        after = as_json()
        if key(before) == key(after):
            break
    line = next((l for l in text.splitlines() if l.split()[:1] == [str(job)]), None)
    return text, line, after


def sacct_runs(cluster, job):
    """Accounting's runs of the job: [(start, end, elapsed, gpus, state)], oldest first."""
    res = cluster.run(["sacct", "-X", "-D", "-n", "-P", "-j", str(job), "-o",
                       "JobID,State,Start,End,ElapsedRaw,AllocTRES", "--units=K"])
    assert res.rc == 0, res
    rows = []
    for line in res.out.strip().splitlines():
        jid, state, start, end, elapsed, tres = line.split("|")
        if start in ("Unknown", "None") or jid != str(job):
            continue
        m = re.search(r"gres/gpu=(\d+)", tres)
        rows.append((start, end, int(elapsed), int(m.group(1)) if m else 0, state))
    return rows


def history(cluster, job, user=BOB):
    text = tool(cluster, "history", str(job), user=user)
    data = json.loads(tool(cluster, "history", "--json", str(job), user=user))
    return text, data


def set_conf(cluster, key, value):
    """One slurm.conf setting replaced, reconfigured; returns the previous text."""
    text = cluster.conf.read_text()
    lines = [l for l in text.splitlines() if not l.replace(" ", "").startswith(f"{key}=")]
    lines.append(f"{key}={value}")
    cluster.conf.write_text("\n".join(lines) + "\n")
    res = cluster.run(["scontrol", "reconfigure"])
    assert res.rc == 0, res
    return text


def state_gauges_match_jobs(cluster):
    """The state gauges against `mlsched jobs --all --json` read just before and after
    (equal reads, so nothing changed state in between): {state: count} when they match."""
    before = json.loads(tool(cluster, "jobs", "--all", "--json"))
    gauges = metrics(cluster)
    after = json.loads(tool(cluster, "jobs", "--all", "--json"))
    states = lambda rows: sorted((r["job_id"], r["status"]["state"]) for r in rows)
    if states(before) != states(after):
        return None
    counted = {}
    for r in after:
        counted[r["status"]["state"]] = counted.get(r["status"]["state"], 0) + 1
    from_gauges = {dict(labels)["state"]: v for (name, labels), v in gauges.items()
                   if name == "mlsched_jobs_by_ml_state"}
    names = ["queued", "placed", "running", "checkpointing", "preempted", "requeued", "resumed", "completed",
             "failed", "cancelled"]
    assert sorted(from_gauges) == sorted(names), from_gauges
    return from_gauges if all(from_gauges[s] == counted.get(s, 0) for s in names) else None


def check_history(cluster, job, expect, user=BOB):
    """`mlsched history` against what the test saw and sacct's runs; returns its text."""
    text, data = history(cluster, job, user=user)
    runs = data["runs"]
    assert [r["ended"] for r in runs] == ["preempted", "node_failure", "completed"], text
    assert runs[0]["preempted_by"] == int(expect["preemptor"]), text
    assert runs[1]["failed_nodes"] == [expect["failed_node"]], text
    # Checkpoints: what each run ended with is what the next one resumed from: the
    # steps the trainer printed at each start.
    assert runs[0]["resumed_from"] is None, text
    assert runs[0]["ended_with"]["name"] == runs[1]["resumed_from"]["name"] == f"step-{expect['resumed'][0]}", text
    assert runs[1]["ended_with"]["name"] == runs[2]["resumed_from"]["name"] == f"step-{expect['resumed'][1]}", text
    # GPU-time of each run is accounting's: GPUs x elapsed.
    acct = wait_for(lambda: (lambda rows: rows if len(rows) == 3 and all(r[1] != "Unknown" for r in rows) else None)(
        sacct_runs(cluster, job)), "sacct to hold the three runs", timeout=60, interval=1)
    for run, (start, end, elapsed, gpus, state) in zip(runs, acct):
        assert run["gpus"] == gpus == 16, (run, acct)
        assert run["gpu_seconds"] == elapsed * gpus, (run, acct)
    assert data["gpu_seconds"] == sum(e * g for _, _, e, g, _ in acct), (data, acct)
    # Lost: the run's GPUs from its last checkpoint to its end, for the two cut short.
    for run in runs[:2]:
        assert run["lost_gpu_seconds"] == 16 * (run["end"] - min(run["ended_with"]["time"], run["end"])), run
    assert runs[2]["lost_gpu_seconds"] == 0
    # What the user reads.
    assert re.search(rf"(?m)^job {job} hist-\S+ \(ml-bob, account nlp\): completed: finished in run 3$", text), text
    assert "runs:       3 (from accounting)" in text, text
    assert f"  ended:        preempted by job {expect['preemptor']}\n" in text, text
    assert f"  ended:        node failure on {expect['failed_node']}\n" in text, text
    assert "  ended:        completed\n" in text, text
    assert f"  resumed from: step-{expect['resumed'][0]} marked at" in text, text
    assert f"  resumed from: step-{expect['resumed'][1]} marked at" in text, text
    return text, data


def test_trainer_preempted_then_losing_a_node_then_completing_has_three_runs_in_history(
        preempt_cluster, mlsched_conf, forget_node_failures):
    cluster, jobs, files = preempt_cluster
    # The trainer: 2 nodes x 8 a100, checkpoints every CHECKPOINT_EVERY steps and on
    # its signal (taking CHECKPOINT_SECONDS), STEPS steps in all.
    script = f"""#!/bin/bash
#MLSCHED type=training checkpoint-signal=USR1 checkpoint-grace=30 checkpoint-interval=2 preemptible=yes max-restarts=3
export MLSCHED_TOOL={TOOL} FAKE_TRAINER_STEP_SECONDS=0.1 FAKE_TRAINER_CHECKPOINT_EVERY={CHECKPOINT_EVERY}
export FAKE_TRAINER_STEPS={STEPS} FAKE_TRAINER_CHECKPOINT_SECONDS={CHECKPOINT_SECONDS}
exec {TOOL} run -- {TRAINER}
"""
    out = Path(f"{cluster.workdir(BOB)}/hist-{uuid.uuid4().hex[:8]}.out")
    res, _ = cluster.sbatch(BOB, script, "-A", "nlp", "--gres=gpu:a100:8", "-N2", "-x", OTHER_NODES, "-t", "10",
                            "--open-mode=append", "-o", str(out), name=f"hist-{uuid.uuid4().hex[:4]}")
    job = cluster.job_id(res)
    jobs.append(job)
    files += [str(out), f"{cluster.workdir(BOB)}/mlsched-checkpoints/{job}"]
    cluster.wait_state(job, {"RUNNING"})
    wait_for(lambda: "fake-trainer: start at step 0" in output(out), "the trainer to start")
    # The other two a100 nodes go to research's jobs, which may not be preempted: vision's
    # job can only start by preempting the trainer.
    fillers = []
    for _ in range(2):
        r, _ = cluster.sbatch(CAROL, "#!/bin/bash\n#MLSCHED type=training preemptible=no\nsleep 600\n", "-A",
                              "research", "--gres=gpu:a100:8", "-N1", "-x", OTHER_NODES, "-t", "10", "-o", "/dev/null")
        fillers.append(cluster.job_id(r))
    jobs.extend(fillers)
    for f in fillers:
        cluster.wait_state(f, {"RUNNING"})
    text, line, data = jobs_row(cluster, job)
    assert data["status"]["state"] == "running" and data["status"]["run"] == 1, text
    assert re.search(r"\brunning\s+1\s", line), text
    time.sleep(3)  # past PreemptMinRunTime

    # 1. Preempted: checkpointing during the grace, then preempted while it waits.
    res, _ = cluster.sbatch(ALICE, "#!/bin/bash\n#MLSCHED type=training preemptible=no\nsleep 600\n",
                            "-A", "vision", "--gres=gpu:a100:8", "-N1", "-x", OTHER_NODES, "-t", "10",
                            "-o", "/dev/null")
    preemptor = cluster.job_id(res)
    jobs.append(preemptor)
    # (preempt/mlsched's mark, which names the preemptor, follows Slurm's signal within a second)
    seen = wait_for(lambda: (lambda t: t if t[2] and t[2]["status"]["state"] == "checkpointing"
                             and t[2]["status"]["preempted_by"] else None)(jobs_row(cluster, job)),
                    "mlsched jobs to show the victim checkpointing", timeout=60, interval=0.3)
    text, line, data = seen
    assert data["status"]["preempted_by"] == int(preemptor), text
    assert re.search(rf"\bcheckpointing\s+1\s.*checkpoint signal sent \(preempted by job {preemptor}\); grace running",
                     line), text
    # The operator's view during the grace: the gauge counts it (its own read of slurmctld).
    gauges = wait_for(lambda: (lambda g: g if g[("mlsched_jobs_by_ml_state", (("state", "checkpointing"),))] >= 1
                               else None)(metrics(cluster)), "the checkpointing gauge", timeout=20, interval=0.3)
    assert gauges[("mlsched_checkpointing_seconds", ())] >= 0
    why = tool(cluster, "why", job, user=BOB)
    assert why.splitlines()[1].startswith("  ML state:   "), why
    print(f"\nmlsched jobs during the grace:\n{seen[0]}")

    cluster.wait_state(preemptor, {"RUNNING"}, timeout=90)
    wait_for(lambda: restarts(cluster, job) == 1, "the trainer to be requeued", timeout=60)
    text, line, data = wait_for(lambda: (lambda t: t if t[2] and t[2]["status"]["state"] == "preempted" else None)(
        jobs_row(cluster, job)), "mlsched jobs to show the victim preempted", timeout=30, interval=0.5)
    assert re.search(rf"\bpreempted\s+1\s+\d+ s ago\s+after run 1, preempted by job {preemptor}; waiting to resume "
                     r"from step-\d+", line), text
    print(f"mlsched jobs while it waits:\n{text}")
    # With the victim waiting (a stable moment), the gauges are `mlsched jobs --all`'s counts.
    matched = wait_for(lambda: state_gauges_match_jobs(cluster), "the state gauges to match mlsched jobs --all",
                       timeout=30, interval=1)
    assert matched["preempted"] >= 1 and matched["running"] >= 3, matched
    top = tool(cluster, "top", "--once")
    assert re.search(r"(?m)^  ML states: .*preempted \d+", top), top

    # 2. Resumes, then loses a node.
    for other in (preemptor, *fillers):
        cluster.cancel(other)
    start_requeued_now(cluster, job)
    m = wait_for(lambda: re.search(r"fake-trainer: start at step (\d+) \(restart 1", output(out)),
                 "the trainer to resume", timeout=120)
    resumed = [int(m.group(1))]
    cluster.wait_state(job, {"RUNNING"})
    text, line, data = jobs_row(cluster, job)
    assert data["status"]["state"] == "resumed" and data["status"]["run"] == 2, text
    wait_for(lambda: len(re.findall(r"periodic checkpoint at step", output(out).split("(restart 1")[1])) >= 2,
             "two periodic checkpoints in the second run", timeout=60)
    nodes = cluster.run(["scontrol", "show", "hostnames", cluster.job_field(job, "NodeList")]).out.split()
    failed_node = [n for n in nodes if n != cluster.job_field(job, "BatchHost")][0]
    _, argv, env = slurmd_of(cluster, failed_node)
    original = set_slurmd_timeout(cluster, 10)
    try:
        kill_slurmd(cluster, failed_node)
        wait_for(lambda: restarts(cluster, job) == 2, "the trainer to be requeued after the node failure",
                 timeout=90, interval=1)
        start_requeued_now(cluster, job)
        m = wait_for(lambda: re.search(r"fake-trainer: start at step (\d+) \(restart 2", output(out)),
                     "the trainer to resume again", timeout=120)
        resumed.append(int(m.group(1)))
    finally:
        cluster.conf.write_text(original)
        assert cluster.run(["scontrol", "reconfigure"]).rc == 0
        restart_slurmd(cluster, failed_node, argv, env)

    # 3. Completes.
    cluster.wait_state(job, {"COMPLETED"}, timeout=180)
    assert f"fake-trainer: finished at step {STEPS}" in output(out)
    expect = {"preemptor": preemptor, "failed_node": failed_node, "resumed": resumed}
    text, data = wait_for(lambda: (lambda h: h if len(h[1]["runs"]) == 3 and h[1]["runs"][2]["end"] else None)(
        history(cluster, job)), "accounting to hold the third run's end", timeout=60, interval=1)
    text, data = check_history(cluster, job, expect)
    assert data["in_controller"] is True
    print(f"\nmlsched history {job}:\n{text}")

    # The same after slurmctld restarts (its saved state), ...
    res = subprocess.run([str(REPO / "scripts" / "cluster"), "restart-slurmctld", "--dir", str(cluster.dir)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    wait_for(lambda: cluster.run(["scontrol", "ping"]).rc == 0, "slurmctld to answer again")
    after_restart, _ = check_history(cluster, job, expect)
    assert after_restart == text

    # ... and after the job has left slurmctld (MinJobAge 300 s here, shortened to 2 s;
    # slurmctld purges ended jobs about once a minute).
    original = set_conf(cluster, "MinJobAge", 2)
    try:
        wait_for(lambda: cluster.run(["scontrol", "show", "job", job]).rc != 0, "the job to leave slurmctld",
                 timeout=150, interval=2)
        gone, data = check_history(cluster, job, expect)
        assert data["in_controller"] is False
        assert "slurmctld:  no longer holds the job; from accounting only" in gone, gone
        # Only that line differs from what slurmctld's copy gave.
        assert [l for l in gone.splitlines() if not l.startswith("  slurmctld:")] == text.splitlines(), (gone, text)
    finally:
        cluster.conf.write_text(original)
        assert cluster.run(["scontrol", "reconfigure"]).rc == 0


def test_history_and_jobs_refuse_bad_input_and_say_when_accounting_is_unknown(cluster, tmp_path):
    # Not job ids: usage errors (exit 2) with the reason, no crash.
    for bad in ("0", "abc", "-5", "99999999999", "1;reboot"):
        res = cluster.run([str(TOOL), "history", bad])
        assert res.rc == 2 and ("is not a job id" in res.err or "unknown option '-5'" in res.err), res
    res = cluster.run([str(TOOL), "history"])
    assert res.rc == 2 and "which job?" in res.err, res
    res = cluster.run([str(TOOL), "jobs", "--all", "--user", BOB])
    assert res.rc == 2 and "exclude each other" in res.err, res
    res = cluster.run([str(TOOL), "jobs", "--user", "no-such-user-x"])
    assert res.rc == 1 and "no such user" in res.err, res
    # A job nobody knows.
    res = cluster.run([str(TOOL), "history", "4000000000"])
    assert res.rc == 1 and "does not exist" in res.err, res

    # Accounting unreachable (a copy of slurm.conf naming a port nothing listens on):
    # the run slurmctld knows is shown, and what is unknown is said.
    res, _ = cluster.sbatch(BOB, "#!/bin/bash\nsleep 60\n", "-A", "nlp", "--gres=gpu:1", "-t", "2", "-o", "/dev/null")
    job = cluster.job_id(res)
    try:
        cluster.wait_state(job, {"RUNNING"})
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed_port = s.getsockname()[1]
        conf = tmp_path / "slurm.conf"
        conf.write_text(re.sub(r"(?m)^AccountingStoragePort=.*$", f"AccountingStoragePort={closed_port}",
                               cluster.conf.read_text()))
        conf.chmod(0o644)
        tmp_path.chmod(0o755)
        env = dict(cluster.env, SLURM_CONF=str(conf))
        started = time.time()
        proc = subprocess.run([str(TOOL), "history", job], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        assert "accounting (slurmdbd) could not be read" in proc.stdout, proc.stdout
        assert "earlier runs, if any, are unknown" in proc.stdout, proc.stdout
        assert re.search(r"(?m)^run 1 .* on gpu\d+, 1 GPU$", proc.stdout), proc.stdout
        assert "  ended:        still running" in proc.stdout, proc.stdout
        data = json.loads(subprocess.run([str(TOOL), "history", "--json", job], capture_output=True, text=True,
                                         env=env, timeout=120).stdout)
        assert data["accounting_read"] is False and data["accounting_problem"], data
        print(f"\nmlsched history without accounting ({time.time() - started:.1f} s):\n{proc.stdout}")
    finally:
        cluster.cancel(job)
