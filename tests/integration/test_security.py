"""Hostile users on the real cluster: what one ordinary user can do to another's
job through files mlsched reads, and to root running `mlsched why`. Each test is
the attack as a user would try it, asserted on what the victim (or root) sees."""
import os
import re
import shutil
import stat
import uuid
from pathlib import Path

import pytest

from conftest import REPO, TOOL, require_tool, wait_for

ALICE = "ml-alice"   # the victim, team vision
BOB = "ml-bob"       # the attacker, team nlp
TRAINER = REPO / "tests" / "fake-trainer"


@pytest.fixture
def shared_dir(cluster):
    """A shared, sticky work directory (as /scratch or a project area): anyone may
    create entries in it, nobody may rename another's."""
    require_tool()
    d = cluster.dir / "work" / f"shared-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    os.chmod(d, 0o1777)
    jobs = []
    yield d, jobs
    for j in jobs:
        cluster.cancel(j)
    if jobs:
        wait_for(lambda: not cluster.run(["squeue", "-h", "-j", ",".join(jobs)]).out.strip(),
                 "the test's jobs to leave the cluster", timeout=60)
    shutil.rmtree(d, ignore_errors=True)


def as_user(cluster, user, *cmd):
    res = cluster.run(list(cmd), user=user)
    assert res.rc == 0, res
    return res


def held_trainer(cluster, jobs, workdir):
    """Alice's checkpointing trainer, submitted held so the test knows its id
    before it starts (an attacker guesses the next id; the test need not)."""
    out = workdir / f"alice-{uuid.uuid4().hex[:6]}.out"
    script = f"""#!/bin/bash
export MLSCHED_TOOL={TOOL} FAKE_TRAINER_STEP_SECONDS=0.1 FAKE_TRAINER_STEPS=20
exec {TOOL} run -- {TRAINER}
"""
    res = cluster.run(["sbatch", "--parsable", "-H", "-A", "vision", "-N1", "--gres=gpu:1", "-t", "5",
                       "-D", str(workdir), "-o", str(out)], user=ALICE, stdin=script)
    job = cluster.job_id(res)
    jobs.append(job)
    return job, out


def finished_output(cluster, job, out):
    cluster.wait_state(job, {"COMPLETED", "FAILED"}, timeout=90)
    return out.read_text(errors="replace")


def test_run_refuses_a_checkpoint_directory_another_user_planted(cluster, shared_dir):
    shared, jobs = shared_dir
    job, out = held_trainer(cluster, jobs, shared)
    # Bob prepares Alice's checkpoint directory with a checkpoint of his.
    planted = shared / "mlsched-checkpoints" / job
    as_user(cluster, BOB, "mkdir", "-p", str(planted))
    as_user(cluster, BOB, "sh", "-c", f"echo 777777 > {planted}/step-777777 && "
            f"echo 'mlsched-checkpoint restart=0 time=1 path=step-777777' > {planted}/LATEST")
    as_user(cluster, ALICE, "scontrol", "release", job)
    text = finished_output(cluster, job, out)
    assert cluster.job_field(job, "JobState") == "FAILED", text
    assert "refusing to use a directory another user controls" in text, text
    assert f"mlsched-checkpoints/{job} belongs to uid {Path(planted).stat().st_uid}" in text, text
    assert "start at step 777777" not in text and "fake-trainer: start" not in text, text


def test_run_refuses_a_parent_another_user_may_rewrite(cluster, shared_dir):
    # Bob only makes mlsched-checkpoints/ (open to all, not sticky): Alice's job could
    # create its directory there, but Bob could swap it later, so it is refused.
    shared, jobs = shared_dir
    job, out = held_trainer(cluster, jobs, shared)
    as_user(cluster, BOB, "mkdir", "-m", "0777", str(shared / "mlsched-checkpoints"))
    as_user(cluster, ALICE, "scontrol", "release", job)
    text = finished_output(cluster, job, out)
    assert cluster.job_field(job, "JobState") == "FAILED", text
    assert "another user could replace" in text, text


def test_run_in_a_shared_directory_of_ones_own_works(cluster, shared_dir):
    # The same sticky directory with nothing planted: the job makes its own
    # checkpoint directory (0700) and trains to the end.
    shared, jobs = shared_dir
    job, out = held_trainer(cluster, jobs, shared)
    as_user(cluster, ALICE, "scontrol", "release", job)
    text = finished_output(cluster, job, out)
    assert cluster.job_field(job, "JobState") == "COMPLETED", text
    assert "fake-trainer: finished at step 20" in text, text
    mode = (shared / "mlsched-checkpoints" / job).stat()
    assert stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == Path(cluster.workdir(ALICE)).stat().st_uid


@pytest.mark.parametrize("plant, shown", [
    (["mkfifo", "{latest}"], "LATEST is not a regular file"),               # would hang a reader forever
    (["ln", "-s", "/dev/zero", "{latest}"], "LATEST is a symlink"),         # endless read, bad_alloc
    (["ln", "-s", "/etc/shadow", "{latest}"], "LATEST is a symlink"),       # opened as root
    (["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x > {latest}"], "more than the 8192 expected"),
])
def test_why_as_root_reads_a_users_latest_safely(cluster, shared_dir, plant, shown):
    _, jobs = shared_dir
    work = Path(cluster.workdir(ALICE))
    res = cluster.run(["sbatch", "--parsable", "-A", "vision", "-N1", "--gres=gpu:1", "-t", "5", "-D", str(work), "--comment", "mlsched: type=training",
                       "-o", "/dev/null"], user=ALICE, stdin="#!/bin/bash\nsleep 120\n")
    job = cluster.job_id(res)
    jobs.append(job)
    ckpt = work / "mlsched-checkpoints" / job
    try:
        as_user(cluster, ALICE, "mkdir", "-p", "-m", "0700", str(ckpt))
        as_user(cluster, ALICE, *[a.format(latest=ckpt / "LATEST") for a in plant])
        cluster.wait_state(job, {"RUNNING"})
        # Root (no user=): must neither hang, nor run out of memory, nor read /etc/shadow.
        why = cluster.run([str(TOOL), "why", job], timeout=20)
        assert why.rc == 0, why
        assert "checkpoint: not read: " in why.out and shown in why.out, why
        assert "root:" not in why.out
    finally:
        shutil.rmtree(ckpt, ignore_errors=True)


def test_a_flood_of_bad_directives_is_bounded(cluster):
    # 300,000 bad lines: one bounded message for the user, a bounded line in the log.
    log = cluster.dir / "log" / "slurmctld.log"
    before = log.stat().st_size
    body = "".join(f"#MLSCHED b{i}=1\n" for i in range(300000))
    res = cluster.run(["sbatch", "-A", "vision", "--gres=gpu:1", "-D", cluster.workdir(ALICE)], user=ALICE,
                      stdin="#!/bin/bash\n" + body + "sleep 1\n", timeout=120)
    assert res.rc != 0, res
    assert "mlsched: 300000 problems with this job:" in res.err, res.err[:2000]
    assert "... and 299980 more" in res.err
    assert len(res.err) < 10000, len(res.err)
    assert log.stat().st_size - before < 20000


def test_control_bytes_never_reach_the_terminal_raw(cluster):
    # ESC [2J would clear the reader's screen; U+202E reverses the text after it.
    res = cluster.run(["sbatch", "-A", "vision", "--gres=gpu:1", "-D", cluster.workdir(ALICE)], user=ALICE,
                      stdin="#!/bin/bash\n#MLSCHED gpu-type=h\x1b[2J type=\u202eniart\nsleep 1\n")
    assert res.rc != 0, res
    assert "\x1b" not in res.err and "\u202e" not in res.err, repr(res.err)
    assert "gpu-type=h\\x1b[2J names" in res.err, res.err
    assert "type=\\u{202e}niart is not a job type" in res.err, res.err


def held_job(cluster, jobs, user, account, *extra):
    res = cluster.run(["sbatch", "--parsable", "-H", "-A", account, "--gres=gpu:1", "-t", "5",
                       "-D", cluster.workdir(user), "-o", "/dev/null", *extra], user=user,
                      stdin="#!/bin/bash\nsleep 60\n")
    job = cluster.job_id(res)
    jobs.append(job)
    return job


def test_a_user_cannot_submit_for_a_team_they_are_not_in(cluster):
    res = cluster.run(["sbatch", "-A", "nlp", "--gres=gpu:1", "-D", cluster.workdir(ALICE)], user=ALICE,
                      stdin="#!/bin/bash\n#MLSCHED type=training\nsleep 1\n")
    assert res.rc != 0, res
    assert "Invalid account" in res.err, res


@pytest.mark.parametrize("how", [["--comment", "mlsched: borrowing=no"],
                                 ["--comment", "mlsched: attained-gpu-seconds=0 first-submit=1"],
                                 ["--comment", "mlsched: preempted=0"]])
def test_marks_the_plugins_keep_cannot_be_set_by_a_user(cluster, how):
    # The marks live beside the directives in the admin comment; given as directives
    # they are unknown keys, and the job is refused.
    res = cluster.run(["sbatch", "-A", "vision", "--gres=gpu:1", "-D", cluster.workdir(ALICE), *how], user=ALICE,
                      stdin="#!/bin/bash\nsleep 1\n")
    assert res.rc != 0, res
    assert "unknown key" in res.err, res


def test_another_users_job_cannot_be_changed_or_given_a_checkpoint_report(cluster, shared_dir):
    _, jobs = shared_dir
    job = held_job(cluster, jobs, ALICE, "vision", "--comment", "mlsched: gpu-type=h100")
    for change in ("comment=mlsched: gpu-type=h100 mlsched-checkpoint=1", "comment=hello", "TimeLimit=1"):
        upd = cluster.run(["scontrol", "update", f"jobid={job}", change], user=BOB)
        assert upd.rc != 0, upd
        # Slurm 22.05 answers "Invalid user id for job N"; later releases "Access/permission denied".
        assert re.search(r"invalid user id|denied", upd.err, re.I), upd
    assert cluster.job_field(job, "Comment") == "mlsched: gpu-type=h100"
    # `mlsched ckpt done` as Bob, pretending to be inside Alice's job, with Alice's
    # checkpoint directory: the directory is refused before anything is reported.
    work = Path(cluster.workdir(ALICE)) / "mlsched-checkpoints" / job
    as_user(cluster, ALICE, "mkdir", "-p", "-m", "0700", str(work))
    try:
        res = cluster.run(["env", f"SLURM_JOB_ID={job}", f"MLSCHED_CHECKPOINT_DIR={work}", "MLSCHED_RESTART_COUNT=0",
                           str(TOOL), "ckpt", "done", "step-1"], user=BOB)
        assert res.rc != 0, res
        assert "mlsched ckpt" in res.err and ("belongs to" in res.err or "Permission denied" in res.err), res
        assert cluster.job_field(job, "Comment") == "mlsched: gpu-type=h100"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_files_mlsched_writes_have_safe_owners_and_modes(cluster, shared_dir):
    shared, jobs = shared_dir
    job, out = held_trainer(cluster, jobs, shared)
    as_user(cluster, ALICE, "scontrol", "release", job)
    finished_output(cluster, job, out)
    alice = Path(cluster.workdir(ALICE)).stat().st_uid
    ckpt = shared / "mlsched-checkpoints" / job
    for path, mode in [(shared / "mlsched-checkpoints", 0o700), (ckpt, 0o700), (ckpt / ".mlsched-lock", 0o600)]:
        st = path.stat()
        assert st.st_uid == alice and stat.S_IMODE(st.st_mode) == mode, (path, oct(st.st_mode), st.st_uid)
    for f in ckpt.iterdir():
        st = f.lstat()
        assert st.st_uid == alice and not stat.S_ISLNK(st.st_mode), f
        assert not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH), (f, oct(st.st_mode))
    assert not list(ckpt.glob(".*.tmp.*")), list(ckpt.iterdir())   # no temporary left behind
    # Saved team usage: slurmctld's alone.
    state = cluster.dir / "state" / "priority_mlsched.state"
    st = state.stat()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
