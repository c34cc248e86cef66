"""Pipelines on the real cluster, as their user sees them: `mlsched pipeline submit`
of etc/pipeline-example (a CPU data job, a 2-node training with one retry, a 1-GPU
evaluation) runs the stages in order under their <pipeline>/<stage> names with their
membership in mlsched's record; a failed upstream stage and what the stages after it
show (`pipeline status`, `why`); a retry that succeeds; bad pipeline files refused
with their message and no job; `pipeline cancel`."""
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO, TOOL, require_tool, wait_for

ALICE, BOB = "ml-alice", "ml-bob"   # teams vision, nlp
EXAMPLE = REPO / "etc" / "pipeline-example"
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def tool(cluster, user, *args, cwd=None, env=()):
    """The tool as `user`, from `cwd` (the jobs' working directory, as with sbatch)."""
    require_tool()
    prefix = ["env"] + (["-C", cwd] if cwd else []) + list(env)
    return cluster.run([*prefix, str(TOOL), *args], user=user)


@pytest.fixture
def pipelines(cluster):
    """Pipeline ids to cancel after the test, whatever happens."""
    ids = []
    yield ids
    for pid in ids:
        tool(cluster, "root", "pipeline", "cancel", pid)
    for pid in ids:
        wait_for(lambda: not [j for j in pipeline_jobs(cluster, pid) if j["state"] not in ENDED],
                 f"pipeline {pid}'s jobs to end", timeout=60, interval=0.5)


def workspace(cluster, user, files=None, scripts=None):
    """A fresh directory of `user` with the example (or `files`) in it."""
    d = Path(cluster.workdir(user)) / f"pl-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    if files is None:
        for f in EXAMPLE.iterdir():
            shutil.copy(f, d / f.name)
    for name, text in (files or {}).items():
        (d / name).write_text(text)
    for name, text in (scripts or {}).items():
        (d / name).write_text(text)
    shutil.chown(d, user, user)
    for f in d.iterdir():
        shutil.chown(f, user, user)
    return d


def submit(cluster, user, directory, pipelines, file="pipeline.json", sleep=6):
    res = tool(cluster, user, "pipeline", "submit", str(directory / file), cwd=str(directory),
               env=[f"PIPELINE_EXAMPLE_SLEEP={sleep}"])
    assert res.rc == 0, res
    m = re.search(r"^pipeline (\S+) submitted: (\d+) stages?, (\d+) jobs?$", res.out, re.M)
    assert m, res
    pipelines.append(m.group(1))
    ids = {}
    for line in res.out.splitlines():
        row = re.match(r"^  (\S+)\s+(\d+)(?:\s+\(retries, each if the one before fails: ([\d, ]+)\))?$", line)
        if row:
            ids[row.group(1)] = [row.group(2)] + (row.group(3).split(", ") if row.group(3) else [])
    return m.group(1), ids, res


def pipeline_jobs(cluster, pid):
    """Every job slurmctld knows with this pipeline id in its record: id, name, state, reason, record."""
    res = cluster.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%r", "--noheader"])
    assert res.rc == 0, res
    out = []
    for line in res.out.splitlines():
        jid, name, state, reason = line.split("|")
        record = cluster.job_field(jid, "AdminComment") or ""
        if f"pipeline={pid} " in record + " ":
            out.append({"id": jid, "name": name, "state": state, "reason": reason, "record": record})
    return out


def status(cluster, user, pid):
    res = tool(cluster, user, "pipeline", "status", pid)
    assert res.rc == 0, res
    data = tool(cluster, user, "pipeline", "status", "--json", pid)
    assert data.rc == 0, data
    return res.out, json.loads(data.out)


def stage_of(data, name):
    return next(s for s in data["stages"] if s["stage"] == name)


def times(cluster, job):
    """(start, end) as epoch seconds, from scontrol."""
    text = cluster.run(["scontrol", "-o", "show", "job", str(job)]).out
    conv = lambda v: time.mktime(time.strptime(v, "%Y-%m-%dT%H:%M:%S"))
    return (conv(re.search(r"StartTime=(\S+)", text).group(1)), conv(re.search(r"EndTime=(\S+)", text).group(1)))


def wait_ended(cluster, job, timeout=120):
    return wait_for(lambda: (lambda s: s if s in ENDED else None)(cluster.job_field(job, "JobState")),
                    f"job {job} to end", timeout=timeout, interval=0.5)


def test_three_stage_pipeline_runs_in_order(cluster, pipelines):
    d = workspace(cluster, ALICE)
    pid, ids, res = submit(cluster, ALICE, d, pipelines, sleep=8)
    assert pid.startswith("nightly-"), res
    assert "3 stages, 4 jobs" in res.out, res
    assert list(ids) == ["data-prep", "train", "evaluate"], res
    assert len(ids["train"]) == 2, res            # the attempt and its retry
    assert f"see it with: mlsched pipeline status {pid}" in res.out, res
    data_job, train_job, retry_job, eval_job = ids["data-prep"][0], *ids["train"], ids["evaluate"][0]

    # Names and records as scontrol shows them.
    for stage, job, attempt in (("data-prep", data_job, "1/1"), ("train", train_job, "1/2"),
                                ("train", retry_job, "2/2"), ("evaluate", eval_job, "1/1")):
        assert cluster.job_field(job, "JobName") == f"nightly/{stage}"
        record = cluster.job_field(job, "AdminComment")
        assert f"pipeline={pid} stage={stage} attempt={attempt}" in record, record
    # The CPU stage has no directives: only its membership is stored, plus, once
    # priority/mlsched has seen it, its borrowing mark (a status word, written at its
    # next pass: whether it is already there when this line runs is a race, so both
    # moments are accepted, and nothing else).
    record = cluster.job_field(data_job, "AdminComment")
    membership = f"mlsched: pipeline={pid} stage=data-prep attempt=1/1"
    assert record in (membership, membership + " borrowing=no"), record
    assert "type=training" in cluster.job_field(train_job, "AdminComment")
    assert cluster.job_field(eval_job, "Dependency") == f"afterok:{train_job}(unfulfilled)?afterok:{retry_job}(unfulfilled)"

    # While the data stage runs: the later stages wait, with ETAs from the time limits.
    cluster.wait_state(data_job, {"RUNNING"})
    text, data = status(cluster, ALICE, pid)
    assert data["pipeline"] == pid and data["name"] == "nightly" and data["state"] == "running", data
    prep, train, evaluate = (stage_of(data, s) for s in ("data-prep", "train", "evaluate"))
    assert prep["state"] == "running" and prep["job_id"] == int(data_job), data
    assert train["state"] == "waiting" and "waits for data-prep (running)" in train["detail"], data
    # data-prep's limit is 10 min, train's 30: the chain of expected ends.
    assert train["eta"] == prep["expected_end"] == prep["start"] + 600, data
    assert evaluate["eta"] == train["expected_end"] == train["eta"] + 1800, data
    assert re.search(rf"^  train\s+{train_job}\s+waiting\s+~", text, re.M), text
    why = tool(cluster, ALICE, "why", train_job)
    assert why.rc == 0, why
    assert re.search(rf"WaitingForDependency\s+waits for afterok on nightly/data-prep {data_job}, RUNNING, ~\d+ min left",
                     why.out), why
    assert f"pipeline {pid}, stage train: waiting" in why.out, why
    assert f"After it: evaluate (after ok): waiting, job {eval_job}" in why.out, why
    assert "This job is attempt 1 of 2 of the stage" in why.out, why
    # Its GPUs are free: it can start when data-prep reaches its time limit.
    assert "when the jobs it waits for reach their time limits (its GPUs are free now)" in why.out, why
    assert json.loads(tool(cluster, ALICE, "why", "--json", train_job).out)["model_eta"] == prep["expected_end"]

    for job in (data_job, train_job, eval_job):
        assert wait_ended(cluster, job) == "COMPLETED", cluster.show_job(job)
    # In order: each stage started after the one before ended.
    (d0, d1), (t0, t1), (e0, e1) = (times(cluster, j) for j in (data_job, train_job, eval_job))
    assert d1 <= t0 and t1 <= e0, (d0, d1, t0, t1, e0, e1)
    assert cluster.job_field(train_job, "NumNodes") == "2"
    assert "gpu:h100:8" in cluster.show_job(train_job, detail=True)
    assert re.search(r"(?:^|\s)TresPerNode=gres[:/]gpu:1\b", cluster.show_job(eval_job), re.M)
    # The retry was not needed: Slurm cancelled it without running it.
    assert wait_ended(cluster, retry_job) == "CANCELLED"
    assert cluster.job_field(retry_job, "Reason") == "DependencyNeverSatisfied"

    text, data = status(cluster, ALICE, pid)
    assert data["state"] == "completed", data
    assert [(s["stage"], s["state"], s["job_id"]) for s in data["stages"]] == [
        ("data-prep", "completed", int(data_job)), ("train", "completed", int(train_job)),
        ("evaluate", "completed", int(eval_job))], data
    assert [a["job_id"] for a in stage_of(data, "train")["attempts"]] == [int(train_job), int(retry_job)], data
    assert f"pipeline {pid} (nightly): completed, 3 stages" in text, text
    assert re.search(rf"^  evaluate\s+{eval_job}\s+completed\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\d\d-\d\d", text, re.M), text
    # A stage's job id finds its pipeline too.
    assert json.loads(tool(cluster, ALICE, "pipeline", "status", "--json", eval_job).out)["pipeline"] == pid


FAILING = """#!/bin/bash
#SBATCH -N 1 -n 1 -t 5
sleep 2
echo "no data today" >&2
exit 3
"""
ALERT = """#!/bin/bash
#SBATCH -N 1 -n 1 -t 5
echo "data-prep failed" > alert.txt
"""


def test_failed_upstream_cancels_the_stages_after_it(cluster, pipelines):
    d = workspace(cluster, BOB, files={
        "pipeline.json": json.dumps({"pipeline": "broken", "stages": [
            {"name": "data-prep", "script": "data-prep.sh"},
            {"name": "train", "script": "train.sh", "after": ["data-prep"], "retries": 1},
            {"name": "evaluate", "script": "evaluate.sh", "after": ["train:ok"]},
            {"name": "alert", "script": "alert.sh", "after": ["data-prep:notok"]}]}),
        "data-prep.sh": FAILING, "alert.sh": ALERT,
        "train.sh": (EXAMPLE / "train.sh").read_text(), "evaluate.sh": (EXAMPLE / "evaluate.sh").read_text()})
    pid, ids, res = submit(cluster, BOB, d, pipelines)
    prep_job, alert_job, eval_job = ids["data-prep"][0], ids["alert"][0], ids["evaluate"][0]
    assert wait_ended(cluster, prep_job) == "FAILED"
    assert wait_ended(cluster, alert_job) == "COMPLETED"
    assert (d / "alert.txt").read_text().strip() == "data-prep failed"
    # Nothing waits forever: Slurm cancels every stage whose condition can no longer hold.
    for job in ids["train"] + [eval_job]:
        assert wait_ended(cluster, job, timeout=60) == "CANCELLED", cluster.show_job(job)
        assert cluster.job_field(job, "Reason") == "DependencyNeverSatisfied"

    text, data = status(cluster, BOB, pid)
    assert data["state"] == "failed", data
    assert stage_of(data, "data-prep")["state"] == "failed", data
    assert stage_of(data, "data-prep")["detail"] == "FAILED (exit code 3)", data
    for name, upstream in (("train", "data-prep"), ("evaluate", "train")):
        s = stage_of(data, name)
        assert s["state"] == "skipped" and s["start"] is None, data
        assert s["detail"] == f"cancelled by Slurm, never ran: {upstream} did not succeed", data
    assert stage_of(data, "alert")["state"] == "completed", data
    assert f"pipeline {pid} (broken): failed, 4 stages" in text, text
    assert "cancelled by Slurm, never ran: data-prep did not succeed" in text, text
    # why for the failed upstream says what became of the stages after it.
    why = tool(cluster, BOB, "why", prep_job)
    assert why.rc == 0, why
    assert f"pipeline {pid}, stage data-prep: failed (FAILED (exit code 3))" in why.out, why
    assert f"After it: train (after ok): skipped, job {ids['train'][-1]}" in why.out, why
    assert f"alert (after notok): completed, job {alert_job}" in why.out, why


FLAKY = """#!/bin/bash
#SBATCH -N 1 -n 1 -t 5
# Fails the first time, succeeds the second.
if [ ! -e first-attempt-done ]; then touch first-attempt-done; exit 1; fi
echo ok
"""


def test_a_failed_attempt_is_retried_and_the_pipeline_goes_on(cluster, pipelines):
    d = workspace(cluster, ALICE, files={
        "p.json": json.dumps({"pipeline": "flaky", "stages": [
            {"name": "fetch", "script": "fetch.sh", "retries": 2},
            {"name": "use", "script": "use.sh", "after": ["fetch"]}]}),
        "fetch.sh": FLAKY, "use.sh": "#!/bin/bash\n#SBATCH -n 1 -t 5\necho used\n"})
    pid, ids, _ = submit(cluster, ALICE, d, pipelines, file="p.json")
    first, second, third = ids["fetch"]
    assert wait_ended(cluster, first) == "FAILED"
    assert wait_ended(cluster, second) == "COMPLETED"
    assert wait_ended(cluster, ids["use"][0]) == "COMPLETED"
    assert wait_ended(cluster, third) == "CANCELLED"
    _, data = status(cluster, ALICE, pid)
    fetch = stage_of(data, "fetch")
    assert data["state"] == "completed", data
    assert fetch["state"] == "completed" and fetch["job_id"] == int(second), data
    assert fetch["detail"].startswith("attempt 2/3, ended ") and "after 1 failed attempt(s)" in fetch["detail"], data
    assert [a["slurm_state"] for a in fetch["attempts"]] == ["FAILED", "COMPLETED", "CANCELLED"], data


def my_jobs(cluster, user):
    res = cluster.run(["squeue", "-h", "-u", user, "-t", "all", "-o", "%i"])
    assert res.rc == 0, res
    return set(res.out.split())


@pytest.mark.parametrize("files, message", [
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "retires": 1}]}'},
     'stages[0]: unknown key "retires"; did you mean "retries"?'),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "after": ["b"]},'
                ' {"name": "b", "script": "a.sh", "after": ["a"]}]}'},
     "the stages wait for each other in a cycle: a -> b -> a"),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "after": ["prep"]}]}'},
     'after names "prep", which is not a stage of this pipeline'),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "missing.sh"}]}'},
     "stage a: script {dir}/missing.sh: missing.sh does not exist"),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "../a.sh"}]}'},
     'script "../a.sh" must be a relative path inside the pipeline file\'s directory'),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "notes.txt"}]}', "notes.txt": "hello\n"},
     "does not start with #! (sbatch takes batch scripts only)"),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "a.sh"}, {"name": "b", "script": "link.sh"}]}'},
     "stage b: script {dir}/link.sh: link.sh is a symlink"),
    ({"p.json": '{"pipeline": "x", "stages": [{"name": "a", "script": "a.sh"}, {"name": "b", "script": "bobs.sh"}]}'},
     "bobs.sh belongs to uid"),
    # A recurring pipeline's schedule is checked before anything goes into the scrontab.
    ({"p.json": '{"pipeline": "x", "schedule": "0 25 * * *", "stages": [{"name": "a", "script": "a.sh"}]}'},
     'p.json: schedule "0 25 * * *": hour 25 is out of range (0-23)'),
])
def test_bad_pipeline_is_refused_with_its_message_and_no_job(cluster, files, message):
    d = workspace(cluster, ALICE, files={"a.sh": "#!/bin/bash\ntrue\n", **files})
    (d / "link.sh").symlink_to(d / "a.sh")
    os.lchown(d / "link.sh", *(lambda p: (p.pw_uid, p.pw_gid))(__import__("pwd").getpwnam(ALICE)))
    (d / "bobs.sh").write_text("#!/bin/bash\ntrue\n")
    shutil.chown(d / "bobs.sh", BOB, BOB)
    before = my_jobs(cluster, ALICE)
    res = tool(cluster, ALICE, "pipeline", "submit", str(d / "p.json"), cwd=str(d))
    assert res.rc == 1, res
    assert "the pipeline was not submitted (no job was)" in res.err, res
    assert message.replace("{dir}", str(d)) in res.err, res
    assert my_jobs(cluster, ALICE) == before, res


def test_cancel_stops_every_stage(cluster, pipelines):
    d = workspace(cluster, ALICE)
    pid, ids, _ = submit(cluster, ALICE, d, pipelines, sleep=120)
    cluster.wait_state(ids["data-prep"][0], {"RUNNING"})
    res = tool(cluster, ALICE, "pipeline", "cancel", pid)
    assert res.rc == 0, res
    every = [j for js in ids.values() for j in js]
    assert res.out.strip() == f"pipeline {pid}: cancelled " + ", ".join(sorted(every, key=int, reverse=True)), res
    for job in every:
        assert wait_ended(cluster, job) == "CANCELLED"
    _, data = status(cluster, ALICE, pid)
    assert data["state"] == "cancelled", data
    assert stage_of(data, "data-prep")["detail"] == "cancelled while running", data
    assert stage_of(data, "evaluate")["detail"] == "cancelled before it ran", data
    # Another user cannot cancel it.
    pid2, ids2, _ = submit(cluster, ALICE, workspace(cluster, ALICE), pipelines, sleep=60)
    res = tool(cluster, BOB, "pipeline", "cancel", pid2)
    assert res.rc == 1 and "could not cancel" in res.err, res
    assert cluster.job_field(ids2["data-prep"][0], "JobState") in {"PENDING", "RUNNING"}


def sprio_age(cluster, job):
    res = cluster.run(["sprio", "-h", "-j", str(job), "-o", "%A"])
    return int(res.out.strip()) if res.rc == 0 and res.out.strip() else None


def epoch(cluster, job, field):
    value = cluster.job_field(job, field)
    return None if value in (None, "Unknown", "None") else time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%S"))


def test_downstream_stage_starts_with_the_queue_age_its_pipeline_accrued(cluster, pipelines, mlsched_conf):
    # Age in 1 s steps up to 60 s, so seconds show in sprio's AGE (weight 1000).
    mlsched_conf.append("PriorityCalcPeriod=1", "PriorityMaxAge=60", plugin="priority/mlsched", tag="test_pipeline")
    weight, max_age = 1000, 60
    blockers = []
    for node, body in (("gpu09", "sleep 15"), ("gpu10", "sleep 300")):
        res, _ = cluster.sbatch(BOB, f"#!/bin/bash\n{body}\n", "-A", "nlp", "-t", "5", "-w", node, "--gres=gpu:a100:8")
        blockers.append(cluster.job_id(res))
    mlsched_conf.jobs.extend(blockers)
    for b in blockers:
        cluster.wait_state(b, {"RUNNING"})
    # "wait" queues behind the first blocker (~15 s), then runs 20 s; "next" then
    # queues behind the second blocker.
    d = workspace(cluster, ALICE, files={
        "p.json": json.dumps({"pipeline": "aged", "stages": [
            {"name": "wait", "script": "wait.sh"}, {"name": "next", "script": "next.sh", "after": ["wait"]}]}),
        "wait.sh": "#!/bin/bash\n#SBATCH -w gpu09 --gres=gpu:a100:8 -t 2\nsleep 20\n",
        "next.sh": "#!/bin/bash\n#SBATCH -w gpu10 --gres=gpu:a100:8 -t 2\ntrue\n"})
    pid, ids, _ = submit(cluster, ALICE, d, pipelines, file="p.json")
    first, nxt = ids["wait"][0], ids["next"][0]
    assert cluster.wait_state(first, {"COMPLETED"}, timeout=90)
    eligible = wait_for(lambda: epoch(cluster, nxt, "EligibleTime"), "the next stage to become eligible", timeout=30)
    waited = epoch(cluster, first, "StartTime") - epoch(cluster, first, "EligibleTime")
    assert 10 <= waited <= 30, waited
    time.sleep(3)  # a few passes (PriorityCalcPeriod=1)
    before = time.time()
    age = sprio_age(cluster, nxt)
    after = time.time()
    assert cluster.job_field(nxt, "JobState") == "PENDING", cluster.show_job(nxt)
    # AGE = weight x (what "wait" waited in the queue + what "next" has waited since it
    # became eligible) / PriorityMaxAge; the 20 s "wait" ran are not counted. One
    # second either way for the pass and the clock's whole seconds.
    low = weight * (waited + before - eligible - 2) / max_age
    high = weight * (waited + after - eligible + 1) / max_age
    assert low <= age <= high, (age, low, high, waited)
    # Counted from its submission, as before, it would also hold the 20 s of running.
    from_submit = weight * (before - epoch(cluster, nxt, "SubmitTime")) / max_age
    assert age < from_submit - weight * 15 / max_age, (age, from_submit)


def has_scrontab(cluster):
    return shutil.which("scrontab", path=cluster.env.get("PATH")) is not None


# Debian 12's slurm-client does not ship scrontab; the 24.11 line (built from source) has it.
needs_scrontab = pytest.mark.skipif(shutil.which("scrontab") is None,
                                    reason="scrontab is not installed (Debian 12's slurm-client lacks it): "
                                           "the live schedule runs on the Slurm 24.11 line")


def scrontab(cluster, user):
    res = cluster.run(["scrontab", "-l"], user=user)
    return res.out if res.rc == 0 else ""


@needs_scrontab
def test_recurring_pipeline_skips_a_time_while_its_previous_run_is_still_going(cluster, pipelines):
    """A pipeline with a schedule goes into its user's scrontab; each minute the entry
    submits a run, unless (concurrency forbid) the last run is still going: then that
    time is skipped, and `pipeline status NAME` says so."""
    name = f"hourly{uuid.uuid4().hex[:4]}"
    spec = {"pipeline": name, "schedule": "* * * * *", "concurrency": "forbid",
            "stages": [{"name": "train", "script": "train.sh"}]}
    # The run outlives the next time. A scrontab job starts when slurmctld next looks
    # at jobs whose begin time has passed, up to a minute late here (seen: 43 s), so
    # the first run may start late and the next time's job early: 200 s covers both.
    d = workspace(cluster, ALICE, files={"recurring.json": json.dumps(spec)},
                  scripts={"train.sh": "#!/bin/bash\n#SBATCH -N 1 -t 5\nsleep 200\n"})
    res = tool(cluster, ALICE, "pipeline", "submit", str(d / "recurring.json"), cwd=str(d))
    try:
        assert res.rc == 0, res
        assert f'pipeline {name} installed in your scrontab: schedule "* * * * *", concurrency forbid' in res.out, res
        cron_job = re.search(r"scrontab job (\d+); next run ", res.out)
        assert cron_job, res
        cron_job = cron_job.group(1)
        tab = scrontab(cluster, ALICE)
        assert f"#SCRON --job-name={name}/schedule" in tab, tab
        assert f"pipeline fire --name {name} {d}/recurring.json" in tab, tab
        assert cluster.job_field(cron_job, "JobName") == f"{name}/schedule"

        def last(outcome):
            text = tool(cluster, ALICE, "pipeline", "status", name)
            return text if text.rc == 0 and f"): {outcome}" in text.out else None

        # The first time: a run is submitted, and its stage runs.
        text = wait_for(lambda: last("submitted run"), "the first scheduled run", timeout=180, interval=2)
        run = re.search(rf"submitted run ({name}-[0-9a-f]{{6}})", text.out).group(1)
        pipelines.append(run)
        jobs = wait_for(lambda: [j for j in pipeline_jobs(cluster, run) if j["state"] == "RUNNING"],
                        f"run {run}'s stage to run", timeout=60, interval=1)
        assert jobs[0]["name"] == f"{name}/train", jobs
        # The next time, a minute later, finds it still running: skipped.
        text = wait_for(lambda: last("skipped"), "the second time to be skipped", timeout=150, interval=2)
        assert f"skipped, run {run} was still going (concurrency forbid); 1 run submitted, 1 skipped, 0 failed" in text.out, text
        assert re.search(rf"^    {run}\s+running$", text.out, re.M), text
        assert f'pipeline {name}: recurring, schedule "* * * * *", concurrency forbid (scrontab job {cron_job})' in text.out, text
        # No second run was submitted; the run's log says what each time did.
        runs = {m for m in re.findall(rf"pipeline=({name}-[0-9a-f]{{6}})", " ".join(
            cluster.job_field(j, "AdminComment") or "" for j in cluster.run(
                ["squeue", "-h", "-t", "all", "-u", ALICE, "-o", "%i"]).out.split()))}
        assert runs == {run}, runs
        log = (d / f"{name}.schedule.log").read_text()
        assert f"pipeline {run} submitted: 1 stage, 1 job" in log, log
        assert re.search(rf"skipped: run {run} \(job \d+\) is still going \(concurrency forbid\)", log), log
        data = json.loads(tool(cluster, ALICE, "pipeline", "status", "--json", name).out)
        assert data["concurrency"] == "forbid" and data["last"]["outcome"] == "skipped", data
        assert data["last"]["run"] == run and {"pipeline": run, "state": "running"} in data["runs"], data
        # Another user has no such schedule.
        other = tool(cluster, BOB, "pipeline", "status", name)
        assert other.rc == 1 and f"no job of pipeline {name} is known to slurmctld" in other.err, other
    finally:
        gone = tool(cluster, ALICE, "pipeline", "unschedule", name)
    assert gone.rc == 0, gone
    assert f"pipeline {name} removed from your scrontab: it is not run again" in gone.out, gone
    assert f"{name}/schedule" not in scrontab(cluster, ALICE)
    wait_for(lambda: cluster.job_field(cron_job, "JobState") in (None, "CANCELLED", "COMPLETED"),
             "the scrontab job to go", timeout=30, interval=0.5)
    again = tool(cluster, ALICE, "pipeline", "unschedule", name)
    assert again.rc == 1 and f"your scrontab has no recurring pipeline {name}" in again.err, again


def test_recurring_pipeline_refusals_name_their_reason(cluster):
    """Where a schedule cannot be installed, the user is told why and nothing changes."""
    spec = {"pipeline": "nightly", "schedule": "@daily", "stages": [{"name": "a", "script": "a.sh"}]}
    before = scrontab(cluster, ALICE)
    # A path the scrontab line could not carry safely.
    d = workspace(cluster, ALICE, files={"p.json": json.dumps(spec)}, scripts={"a.sh": "#!/bin/bash\ntrue\n"})
    spaced = d.parent / (d.name + " two")
    d.rename(spaced)
    res = tool(cluster, ALICE, "pipeline", "submit", str(spaced / "p.json"), cwd=str(spaced))
    assert res.rc == 1, res
    assert f"the pipeline file {spaced}/p.json goes on a scrontab command line, which takes only absolute paths" in res.err, res
    ok = workspace(cluster, ALICE, files={"p.json": json.dumps(spec)}, scripts={"a.sh": "#!/bin/bash\ntrue\n"})
    # A machine without the scrontab command (Debian 12's slurm-client): sbatch and
    # scontrol only, wherever this Slurm has them.
    bin_dir = ok / "bin"
    bin_dir.mkdir()
    for program in ("sbatch", "scontrol"):
        (bin_dir / program).symlink_to(shutil.which(program, path=cluster.env.get("PATH")))
    res = cluster.run(["env", "-C", str(ok), f"PATH={bin_dir}:/usr/bin:/bin", str(TOOL), "pipeline", "submit",
                       str(ok / "p.json")], user=ALICE)
    assert res.rc == 1, res
    assert "recurring pipelines are installed with Slurm's scrontab command, which is not on your PATH" in res.err, res
    if has_scrontab(cluster):
        # A cluster without scrontab (what the client reads from slurm.conf).
        conf = cluster.conf.parent / "slurm-noscron.conf"
        conf.write_text("".join(l for l in cluster.conf.read_text().splitlines(True)
                                if not l.startswith("ScronParameters")))
        try:
            res = cluster.run(["env", "-C", str(ok), f"SLURM_CONF={conf}", str(TOOL), "pipeline", "submit",
                               str(ok / "p.json")], user=ALICE)
            assert res.rc == 1, res
            assert "recurring pipelines run from scrontab, which this cluster has disabled (an admin enables it " \
                   "with ScronParameters=enable in slurm.conf)" in res.err, res
        finally:
            conf.unlink()
    assert scrontab(cluster, ALICE) == before


@needs_scrontab
def test_example_recurring_pipeline_waits_for_two_in_the_morning(cluster):
    """etc/pipeline-example/recurring.json as a user would install it: next run at 02:00,
    a second submit replaces the entry, unschedule removes it."""
    d = workspace(cluster, BOB)
    try:
        res = tool(cluster, BOB, "pipeline", "submit", str(d / "recurring.json"), cwd=str(d))
        assert res.rc == 0, res
        assert 'pipeline nightly installed in your scrontab: schedule "0 2 * * *", concurrency forbid' in res.out, res
        assert re.search(r"scrontab job \d+; next run \d{4}-\d\d-\d\d 02:00:00$", res.out, re.M), res
        text = tool(cluster, BOB, "pipeline", "status", "nightly")
        assert text.rc == 0, text
        assert re.search(r"^  next run: \d{4}-\d\d-\d\d 02:00:00 \(in ", text.out, re.M), text
        assert "has not run yet; 0 runs submitted, 0 skipped, 0 failed so far" in text.out, text
        again = tool(cluster, BOB, "pipeline", "submit", str(d / "recurring.json"), cwd=str(d))
        assert again.rc == 0 and "pipeline nightly replaced in your scrontab" in again.out, again
        assert scrontab(cluster, BOB).count("# mlsched pipeline nightly begin") == 1
    finally:
        gone = tool(cluster, BOB, "pipeline", "unschedule", "nightly")
    assert gone.rc == 0, gone
