"""job_submit/mlsched on the real cluster: what users see from sbatch, srun, salloc
and scontrol when they write ML directives."""
import re
import time

import pytest

from conftest import has_tres

ALICE = "ml-alice"   # team vision
BOB = "ml-bob"       # team nlp


def script(*directive_lines, sbatch="", body="sleep 1"):
    lines = ["#!/bin/bash"]
    if sbatch:
        lines.append(f"#SBATCH {sbatch}")
    lines += [f"#MLSCHED {d}" for d in directive_lines]
    lines.append(body)
    return "\n".join(lines) + "\n"


def assert_refused(cluster, user, res, name, *messages):
    """sbatch failed, printed each message, and no job of that name exists."""
    assert res.rc != 0, f"expected sbatch to refuse the job\n{res}"
    for m in messages:
        assert m in res.err, f"missing {m!r} in sbatch's output\n{res}"
    assert name not in cluster.squeue_names(user), f"a job named {name} was created"


def test_valid_directives_rewrite_the_job(cluster):
    res, name = cluster.sbatch(
        ALICE,
        script("type=training gpu-type=h100 locality=nvlink-domain locality-mode=strict",
               "checkpoint-signal=USR1 checkpoint-grace=300 preemptible=yes max-restarts=5",
               sbatch="-N 2 --gres=gpu:8 -A vision"),
        "-H")
    job = cluster.job_id(res)
    try:
        text = cluster.show_job(job)
        assert has_tres(text, "TresPerNode", "gpu:h100:8"), text
        assert "Requeue=1" in text, text
        admin = cluster.job_field(job, "AdminComment")
        assert admin == ("mlsched: type=training gpu-type=h100 locality=nvlink-domain locality-mode=strict "
                         "checkpoint-signal=USR1 checkpoint-grace=300 checkpoint-interval=0 preemptible=yes "
                         "max-restarts=5"), text
    finally:
        cluster.cancel(job)


def test_checkpoint_signal_reaches_slurm(cluster):
    # --signal is visible to users through squeue's job info in 22.05 only via the
    # controller's record; sacct/scontrol do not print it, so check the job's own view:
    # the batch shell must receive USR1 `grace` seconds before its time limit.
    body = "trap 'echo got-USR1; exit 0' USR1\nfor i in $(seq 600); do sleep 1; done\necho no-signal"
    res, name = cluster.sbatch(
        ALICE, script("checkpoint-signal=USR1 checkpoint-grace=55", sbatch="-t 1 -A vision", body=body),
        "-o", "%x.out")
    job = cluster.job_id(res)
    try:
        cluster.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=120)
        out = open(f"{cluster.workdir(ALICE)}/{name}.out").read()
        assert "got-USR1" in out, out
    finally:
        cluster.cancel(job)


def test_running_job_gets_typed_gpus(cluster):
    res, name = cluster.sbatch(ALICE, script("gpu-type=a100", sbatch="-N1 --gres=gpu:2 -A vision", body="sleep 30"))
    job = cluster.job_id(res)
    try:
        cluster.wait_state(job, {"RUNNING"})
        detail = cluster.show_job(job, detail=True)
        assert re.search(r"GRES=gpu:a100:2\(IDX:\d+-\d+\)", detail), detail
    finally:
        cluster.cancel(job)


def test_gpu_type_list_keeps_one_type(cluster):
    res, name = cluster.sbatch(ALICE, script("gpu-type=h100,a100", sbatch="-N2 --gres=gpu:4 -A vision"), "-H")
    job = cluster.job_id(res)
    try:
        assert cluster.job_field(job, "Features") == "[h100|a100]"
        # select/mlsched follows the list's order itself; without it, Prefer=h100.
        select_mlsched = "SelectType=select/mlsched" in cluster.conf.read_text().replace(" ", "")
        assert cluster.job_field(job, "Prefer") == (None if select_mlsched else "h100")
    finally:
        cluster.cancel(job)


def test_notes_are_shown_on_success(cluster):
    res, name = cluster.sbatch(ALICE, script("checkpoint-grace=2h", sbatch="-N1 --gres=gpu:1 -A vision"), "-H")
    job = cluster.job_id(res)
    try:
        assert "mlsched: line 3: checkpoint-grace=2h capped to 600 seconds" in res.err, res
        assert "checkpoint-grace=600" in cluster.job_field(job, "AdminComment")
    finally:
        cluster.cancel(job)


def test_a_time_limit_too_short_for_the_checkpoint_signal_is_noted(cluster):
    # Slurm checks time limits every 30 s: with -t 1 and 30 s of grace the signal can
    # come before the script runs. The job is accepted and the user told.
    res, name = cluster.sbatch(BOB, script("checkpoint-signal=USR1 checkpoint-grace=30",
                                           sbatch="-N1 --gres=gpu:1 -A nlp -t 1"), "-H")
    job = cluster.job_id(res)
    try:
        assert ("mlsched: --time=1 is not longer than checkpoint-grace (30 s) + 60 s: Slurm may send the checkpoint "
                "signal before the job's script has started, and the checkpoint is lost; give --time=2 or more") \
            in res.err, res
        assert cluster.job_field(job, "TimeLimit") == "00:01:00"
    finally:
        cluster.cancel(job)
    res, name = cluster.sbatch(BOB, script("checkpoint-signal=USR1 checkpoint-grace=30",
                                           sbatch="-N1 --gres=gpu:1 -A nlp -t 2"), "-H")
    cluster.cancel(cluster.job_id(res))
    assert "--time=" not in res.err, res

def test_jobs_without_directives_are_untouched(cluster):
    res, name = cluster.sbatch(BOB, "#!/bin/bash\nsleep 1\n", "-A", "nlp", "--gres=gpu:1", "-H")
    job = cluster.job_id(res)
    try:
        text = cluster.show_job(job)
        assert has_tres(text, "TresPerNode", "gpu:1"), text
        assert "AdminComment" not in text or "mlsched" not in cluster.job_field(job, "AdminComment")
        assert res.err == "", res
    finally:
        cluster.cancel(job)


@pytest.mark.parametrize("directives,sbatch,messages", [
    (["gpu_type=h100"], "--gres=gpu:1",
     ["mlsched: line 3: unknown key 'gpu_type'; did you mean 'gpu-type'?"]),
    (["preemptible=sometimes"], "--gres=gpu:1",
     ["mlsched: line 3: preemptible=sometimes must be yes or no"]),
    (["checkpoint-grace=soon"], "--gres=gpu:1",
     ["checkpoint-grace=soon is not a duration"]),
    (["gpu-type=h200"], "--gres=gpu:1",
     ["gpu-type=h200: this cluster has no h200 GPUs (it has a100, h100)"]),
    (["gpu-type=h100 locality=nvlink-domain locality-mode=strict"], "-N 5 --gres=gpu:8",
     ["needs 40 GPUs (5 nodes x 8) in one NVLink domain, but the largest has 32 h100 GPUs",
      "use locality-mode=prefer to let it spread"]),
    (["type=sweep preemptible=no"], "--gres=gpu:1",
     ["preemptible=no is not allowed: sweep jobs must be preemptible on this cluster"]),
    (["gpu-type=a100"], "",
     ["gpu-type=a100 needs GPUs: add --gres=gpu:N"]),
    (["gpu-type=h100", "type=bogus"], "--gres=gpu:a100:1",
     ["mlsched: ", "line 4: type=bogus is not a job type"]),
])
def test_bad_directives_are_refused(cluster, directives, sbatch, messages):
    res, name = cluster.sbatch(BOB, script(*directives, sbatch=f"-A nlp {sbatch}".strip()))
    assert_refused(cluster, BOB, res, name, *messages)


def test_several_problems_are_listed_at_once(cluster):
    res, name = cluster.sbatch(BOB, script("gpu-typ=h100 locality=rack", sbatch="-A nlp --gres=gpu:1"))
    assert_refused(cluster, BOB, res, name, "mlsched: 2 problems with this job:",
                   "line 3: unknown key 'gpu-typ'; did you mean 'gpu-type'?",
                   "line 3: locality=rack is not a locality")


def test_salloc_comment_directives_are_checked(cluster):
    name = "salloc-bad"
    res = cluster.run(["salloc", "-A", "nlp", "-J", name, "--gres=gpu:1", "--comment", "mlsched: gpu-type=t4",
                       "true"], user=BOB)
    assert res.rc != 0, res
    assert "gpu-type=t4: this cluster has no t4 GPUs" in res.err, res
    assert name not in cluster.squeue_names(BOB)


def test_srun_comment_directives_rewrite(cluster):
    res = cluster.run(["srun", "-A", "nlp", "-N1", "--gres=gpu:1", "-D", cluster.workdir(BOB),
                       "--comment", "mlsched: type=interactive gpu-type=a100",
                       "scontrol", "show", "job", "-d"], user=BOB, timeout=90)
    assert res.rc == 0, res
    assert has_tres(res.out, "TresPerNode", "gpu:a100:1"), res
    assert re.search(r"GRES=gpu:a100:1\(IDX:\d+\)", res.out), res
    assert "AdminComment=mlsched: type=interactive" in res.out, res


def test_directives_cannot_be_changed_after_submission(cluster):
    res, name = cluster.sbatch(ALICE, script("gpu-type=h100", sbatch="--gres=gpu:1 -A vision"), "-H")
    job = cluster.job_id(res)
    try:
        # New directives through the comment: refused by job_modify.
        # From 23.02 job_modify has a message channel: the user also sees why (22.05:
        # Slurm's text for the error code only, the reason in slurmctld's log).
        says_why = cluster.slurm_release() >= (23, 2)
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "comment=mlsched: gpu-type=a100"], user=ALICE)
        assert upd.rc != 0, upd
        assert "not supported" in upd.err.lower(), upd
        assert ("directives are fixed at submission" in upd.err) == says_why, upd
        # A GPU type outside the directive: refused.
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "TresPerNode=gres:gpu:a100:1"], user=ALICE)
        assert upd.rc != 0, upd
        assert "Invalid generic resource" in upd.err, upd
        assert ("GPU type a100 is outside this job's gpu-type directive (h100)" in upd.err) == says_why, upd
        # The stored directives themselves: only admins may touch the admin comment.
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "AdminComment=mlsched: gpu-type=a100"],
                          user=ALICE)
        assert upd.rc != 0, upd
        assert "denied" in upd.err.lower(), upd
        assert "gpu-type=h100" in cluster.job_field(job, "AdminComment")
        # A harmless change still works.
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "comment=first try"], user=ALICE)
        assert upd.rc == 0, upd
    finally:
        cluster.cancel(job)
    # Directives given in the comment stay there. The checkpoint report `mlsched ckpt
    # done` sends (the same comment plus mlsched-checkpoint=<time>) goes through; a
    # changed directive beside it does not.
    res, name = cluster.sbatch(ALICE, script(sbatch="--gres=gpu:1 -A vision"), "-H",
                               "--comment", "mlsched: gpu-type=h100")
    job = cluster.job_id(res)
    try:
        upd = cluster.run(["scontrol", "update", f"jobid={job}",
                           "comment=mlsched: gpu-type=h100 mlsched-checkpoint=1700000000"], user=ALICE)
        assert upd.rc == 0, upd
        assert cluster.job_field(job, "Comment") == "mlsched: gpu-type=h100 mlsched-checkpoint=1700000000"
        upd = cluster.run(["scontrol", "update", f"jobid={job}",
                           "comment=mlsched: gpu-type=a100 mlsched-checkpoint=1700000001"], user=ALICE)
        assert upd.rc != 0 and "not supported" in upd.err.lower(), upd
        assert cluster.job_field(job, "Comment") == "mlsched: gpu-type=h100 mlsched-checkpoint=1700000000"
        # Cleared, then put back as submitted: the directives do not change, so it passes.
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "comment="], user=ALICE)
        assert upd.rc == 0, upd
        upd = cluster.run(["scontrol", "update", f"jobid={job}", "comment=mlsched: gpu-type=h100"], user=ALICE)
        assert upd.rc == 0, upd
        assert cluster.job_field(job, "Comment") == "mlsched: gpu-type=h100"
    finally:
        cluster.cancel(job)


def test_hetjob_components_take_their_own_directives(cluster):
    # Each `#SBATCH hetjob` part has its own #MLSCHED lines, as its own #SBATCH lines.
    script = ("#!/bin/bash\n#SBATCH -N1 --gres=gpu:2 -A vision\n#MLSCHED gpu-type=h100\n"
              "#SBATCH hetjob\n#SBATCH -N1 --gres=gpu:1 -A vision\n#MLSCHED gpu-type=a100 type=inference\n"
              "sleep 1\n")
    res, _ = cluster.sbatch(ALICE, script, "-H")
    job = cluster.job_id(res)
    try:
        out = cluster.show_job(job)
        parts = {}
        for record in out.strip().split("\n\n"):
            offset = re.search(r"HetJobOffset=(\d+)", record)
            assert offset, out
            parts[int(offset.group(1))] = record
        assert sorted(parts) == [0, 1], out
        assert has_tres(parts[0], "TresPerNode", "gpu:h100:2"), parts[0]
        assert "AdminComment=mlsched: type=training gpu-type=h100" in parts[0], parts[0]
        assert has_tres(parts[1], "TresPerNode", "gpu:a100:1"), parts[1]
        assert "AdminComment=mlsched: type=inference gpu-type=a100" in parts[1], parts[1]
    finally:
        cluster.cancel(job)
