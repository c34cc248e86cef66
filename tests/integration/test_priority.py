"""priority/mlsched on the real cluster: what sprio and sshare show, which job
starts first, the borrowing mark on running jobs, a large gang behind a stream of
small jobs, and GPU-time delivered in proportion to shares. Each test appends its
priority settings to the cluster's mlsched.conf (mostly PriorityCalcPeriod=1, so a
pass runs every second) and restores the file after. The gang test takes about
30 s, the shares test about 3 min. The last tests cover attained-service levels and
kill slurmctld (SIGKILL, `scripts/cluster restart-slurmctld --kill`) to check that
usage resumes from the saved file, or is rebuilt when that file is corrupt or gone
(about 1 min together).

Jobs are confined to the a100 nodes gpu[13-16] so the rest of the cluster stays
free for other tests; every job is cancelled at the end.
"""
import json
import os
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO, TOOL, wait_for


CAROL, BOB = "ml-carol", "ml-bob"          # teams research and nlp (1 share each)
ALICE = "ml-alice"                         # team vision (2 shares)
MY_NODES = ["gpu13", "gpu14", "gpu15", "gpu16"]
OTHER_NODES = "gpu[01-12]"
STATE_FILE = "priority_mlsched.state"


def priority_plugin_in_use(cluster):
    return "PriorityType=priority/mlsched" in (cluster.dir / "etc" / "slurm.conf").read_text().replace(" ", "")


@pytest.fixture
def priority_conf(cluster, mlsched_conf):
    """Returns a function that appends settings to mlsched.conf and waits until the
    plugin has loaded them, and the list where tests put their jobs; the jobs are
    cancelled and the original file comes back afterwards."""
    if not priority_plugin_in_use(cluster):
        pytest.fail("the test cluster runs without priority/mlsched (build priority_mlsched.so into --plugin-dir)")

    def apply(*lines):
        mlsched_conf.append(*lines, plugin="priority/mlsched", tag="test_priority")
        return mlsched_conf.jobs

    return apply


def submit(cluster, jobs, user, account, *args, seconds=300):
    res, _ = cluster.sbatch(user, f"#!/bin/bash\nsleep {seconds}\n", "-A", account, "-t", "10", *args)
    job = cluster.job_id(res)
    jobs.append(job)
    return job


def sshare(cluster):
    """(account, user) -> {column: value} from `sshare -a -l -P`."""
    res = cluster.run(["sshare", "-a", "-l", "-P"])
    assert res.rc == 0, res
    lines = res.out.strip().splitlines()
    header = lines[0].split("|")
    rows = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split("|")))
        rows[(row["Account"].strip(), row["User"].strip())] = row
    return rows


def sprio(cluster, job):
    """{column: number} of one pending job: the columns of `sprio -l`."""
    res = cluster.run(["sprio", "-h", "-j", str(job), "-o", "%i|%Y|%S|%A|%B|%F|%J|%P|%Q|%N"])
    # A job sprio does not list (not pending, or held until its begin time) gives a
    # message on stdout and status 0.
    if res.rc != 0 or not re.fullmatch(r"-?\d+(\|-?\d+)+", res.out.strip()):
        return None
    names = ["JOBID", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE"]
    return {n: int(v) for n, v in zip(names, res.out.strip().split("|"))}


def saved_state(cluster):
    """The core's ledger as the plugin last saved it: team -> (decayed, charged GPU-seconds)."""
    path = cluster.dir / "state" / STATE_FILE
    teams = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if words and words[0] == "team":
            teams[words[1]] = (float(words[2]), float(words[3]))
    return teams


def decayed_through(cluster):
    """Up to when the saved ledger has decayed usage (the time of its last pass)."""
    for line in (cluster.dir / "state" / STATE_FILE).read_text().splitlines():
        if line.startswith("decayed_through "):
            return int(line.split()[1])
    return 0


def charging(cluster, team):
    """Jobs of `team` the saved ledger is still charging."""
    path = cluster.dir / "state" / STATE_FILE
    return [l for l in path.read_text().splitlines() if l.startswith("job ") and l.split()[2] == team]


def test_sprio_and_sshare_show_the_core_numbers(cluster, priority_conf):
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityDecayHalfLife=1d", "GpuWeight=a100:0.5")
    # Earlier tests may have charged research already: compare what this job adds,
    # once jobs that ended before are settled. The state must come from a pass under
    # this test's settings: the last pass before them may be a whole (default 5 min)
    # PriorityCalcPeriod old, and the next would decay research's earlier usage over
    # that gap by more than the tolerance below.
    applied = time.time()
    wait_for(lambda: decayed_through(cluster) > applied + 1, "a priority pass under the test's settings")
    wait_for(lambda: not charging(cluster, "research"), "research's earlier jobs to be settled")
    decayed_before, charged_before = saved_state(cluster).get("research", (0.0, 0.0))
    # research runs 4 a100 GPUs; its usage is charged every pass at weight 0.5.
    running = submit(cluster, jobs, CAROL, "research", "-w", "gpu13", "--gres=gpu:a100:4")
    cluster.wait_state(running, ["RUNNING"])
    wait_for(lambda: saved_state(cluster).get("research", (0, 0))[1] >= charged_before + 4 * 3,
             "research to be charged 3 s")

    # sshare shows the ledger's decayed usage, from the same pass as the saved file.
    def consistent():
        before = saved_state(cluster)
        rows = sshare(cluster)
        after = saved_state(cluster)
        if before != after or int(before["research"][0]) != int(rows[("research", "")]["RawUsage"]):
            return None
        return before, rows
    state, rows = wait_for(consistent, "sshare and the saved state to show the same pass")
    decayed, charged = state["research"]
    # GPU-type weight: 0.5 per a100 GPU-second. A day's half-life takes < 0.1 % off
    # within this test, of the new usage and of what was there before.
    assert decayed - decayed_before == pytest.approx(0.5 * (charged - charged_before), rel=1e-3,
                                                     abs=1e-3 * decayed_before + 1e-6)
    total = sum(d for d, _ in state.values())
    usage_norm = decayed / total
    team = rows[("research", "")]
    assert float(team["NormShares"]) == pytest.approx(0.25, abs=1e-6)   # 1 of 1+1+2 shares
    assert float(team["EffectvUsage"]) == pytest.approx(usage_norm, abs=1e-5)
    fairshare = 2 ** (-usage_norm / 0.25)
    assert float(rows[("research", CAROL)]["FairShare"]) == pytest.approx(fairshare, abs=1e-5)

    # A pending research job (it needs all four nodes, one is busy): sprio's terms.
    waiting = submit(cluster, jobs, CAROL, "research", "-x", OTHER_NODES, "-N", "4", "--gres=gpu:8")
    factors = wait_for(lambda: sprio(cluster, waiting), "sprio to list the pending job")
    rows = sshare(cluster)
    fs = float(rows[("research", CAROL)]["FairShare"])
    assert abs(factors["FAIRSHARE"] - 10000 * fs) <= 10000 * 2e-3 + 1      # weight 10000 x team factor
    assert factors["ASSOC"] == 0              # 4 + 32 GPUs: beyond research's guarantee (borrowing)
    assert factors["SITE"] == 1000            # job type training
    assert factors["PARTITION"] == 1000       # the only partition: normalized 1
    assert factors["NICE"] == 0
    terms = sum(factors[k] for k in ("SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"))
    assert abs(factors["PRIORITY"] - terms) <= 7          # each printed term is rounded
    scontrol_priority = int(cluster.job_field(waiting, "Priority"))
    assert abs(scontrol_priority - factors["PRIORITY"]) <= 7


def test_team_within_quota_starts_before_borrowing_team(cluster, priority_conf):
    # Only the quota term and age count here: fair share is switched off so the
    # result cannot come from research's usage.
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityWeightFairshare=0",
                         "TeamQuota=research:h100=8,a100=8", "TeamQuota=nlp:h100=8,a100=8")
    # research fills gpu[13-16]: 32 GPUs against a guarantee of 16.
    fill = [submit(cluster, jobs, CAROL, "research", "-w", node, "--gres=gpu:8") for node in MY_NODES]
    for job in fill:
        cluster.wait_state(job, ["RUNNING"])
    # research asks first (so it is older), then nlp, which holds nothing.
    borrower = submit(cluster, jobs, CAROL, "research", "-x", OTHER_NODES, "--gres=gpu:8")
    entitled = submit(cluster, jobs, BOB, "nlp", "-x", OTHER_NODES, "--gres=gpu:8")
    # A job is priced at submission with the last pass's view; the next pass (1 s)
    # sees research's four running fill jobs.
    b = wait_for(lambda: (lambda f: f if f and f["ASSOC"] == 0 else None)(sprio(cluster, borrower)),
                 "research's job to lose the quota term (it borrows)")
    e = wait_for(lambda: (lambda f: f if f and f["ASSOC"] == 10000 else None)(sprio(cluster, entitled)),
                 "nlp's job to get the quota term")
    assert e["PRIORITY"] > b["PRIORITY"], (b, e)

    # One node frees up: exactly one of the two can start, and it is nlp's.
    cluster.cancel(fill[0])
    cluster.wait_state(entitled, ["RUNNING"])
    assert cluster.job_field(borrower, "JobState") == "PENDING"


def nlp_runs_8_a100_on_full_nodes(cluster, jobs):
    """nlp runs 8 a100 on gpu13 and research fills the other nodes of MY_NODES, so
    the test's later jobs wait; returns the sbatch options that keep them there."""
    held = submit(cluster, jobs, BOB, "nlp", "-w", "gpu13", "--gres=gpu:a100:8")
    fill = [submit(cluster, jobs, CAROL, "research", "-w", node, "--gres=gpu:8") for node in MY_NODES[1:]]
    for job in [held] + fill:
        cluster.wait_state(job, ["RUNNING"])
    return ["-x", OTHER_NODES]


def test_a_gang_is_not_overtaken_into_its_team_guarantee(cluster, priority_conf):
    # nlp is guaranteed 16 a100 and runs 8. Its 16-GPU gang, queued after one
    # 1-GPU job and before another, keeps the rest of the guarantee: the later job
    # gets no quota term although its GPU would fit, and ranks below the gang;
    # the earlier one keeps its term; another team's job is untouched.
    # A short PriorityMaxAge, so that a second of age shows in AGE and JOBSIZE.
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityWeightFairshare=0", "PriorityMaxAge=60",
                         "TeamQuota=nlp:h100=8,a100=16")
    pending = nlp_runs_8_a100_on_full_nodes(cluster, jobs)
    before = submit(cluster, jobs, BOB, "nlp", *pending, "--gres=gpu:a100:1")
    time.sleep(1.1)  # queue order is by submit time, in seconds
    gang = submit(cluster, jobs, BOB, "nlp", *pending, "-N", "2", "--gres=gpu:a100:8")
    time.sleep(1.1)
    after = submit(cluster, jobs, BOB, "nlp", *pending, "--gres=gpu:a100:1")
    other = submit(cluster, jobs, ALICE, "vision", *pending, "--gres=gpu:a100:1")

    def terms():
        f = {job: sprio(cluster, job) for job in (before, gang, after, other)}
        if not all(f.values()):
            return None
        # A job is priced at submission with age 0; wait for a pass (PriorityCalcPeriod=1)
        # that priced all four with their ages.
        if min(f[job]["AGE"] for job in (before, gang, after)) == 0:
            return None
        return f if f[gang]["ASSOC"] == 0 and f[after]["ASSOC"] == 0 else None
    f = wait_for(terms, "the gang and the job after it to show no quota term")
    assert f[before]["ASSOC"] == 10000, f     # queued first: 8 + 1 of 16
    assert f[other]["ASSOC"] == 10000, f      # vision's guarantee is its own
    assert f[gang]["PRIORITY"] > f[after]["PRIORITY"], f

    # `mlsched why` names the job the guarantee is kept for.
    res = cluster.run([str(TOOL), "why", str(after)], user=BOB)
    assert res.rc == 0, res
    assert "TeamQuotaKeptForEarlierJob" in res.out, res.out
    assert (f"team nlp holds 8 a100 of the 16 it is guaranteed; the rest is kept for its job {gang} (16 GPUs), "
            "queued before this one: no quota priority until that job starts") in res.out, res.out
    data = cluster.run([str(TOOL), "why", "--json", str(after)], user=BOB)
    assert data.rc == 0, data
    assert json.loads(data.out)["team"]["guarantee_kept_for"] == int(gang), data.out
    res = cluster.run([str(TOOL), "why", str(before)], user=BOB)
    assert res.rc == 0 and "TeamQuotaKeptForEarlierJob" not in res.out, res.out


def test_only_a_large_gang_keeps_its_team_guarantee(cluster, priority_conf):
    # nlp is guaranteed 10 a100 and runs 8. Its 4-GPU job, queued first, does not
    # fit the 2 left. With TeamQuotaKeptForGpus at its default (16), a single-node
    # job holds no place, so nlp's 1-GPU job queued after it still gets the quota
    # term; with TeamQuotaKeptForGpus=1 every job holds its place and the 4-GPU job
    # keeps the rest of the guarantee from it.
    base = ("PriorityCalcPeriod=1", "PriorityWeightFairshare=0", "PriorityMaxAge=60",
            "TeamQuota=nlp:h100=8,a100=10")
    jobs = priority_conf(*base)
    pending = nlp_runs_8_a100_on_full_nodes(cluster, jobs)
    wide = submit(cluster, jobs, BOB, "nlp", *pending, "--gres=gpu:a100:4")
    time.sleep(1.1)  # queue order is by submit time, in seconds
    small = submit(cluster, jobs, BOB, "nlp", *pending, "--gres=gpu:a100:1")

    def priced(extra=lambda f: True):
        f = {job: sprio(cluster, job) for job in (wide, small)}
        # Priced by a pass (age above 0), not only at submission.
        if not all(f.values()) or min(v["AGE"] for v in f.values()) == 0:
            return None
        return f if extra(f) else None
    f = wait_for(priced, "a pass to price both pending jobs")
    assert f[wide]["ASSOC"] == 0, f          # 4 > 2 left
    assert f[small]["ASSOC"] == 10000, f     # 1 <= 2 left: the 4-GPU job keeps nothing
    res = cluster.run([str(TOOL), "why", str(small)], user=BOB)
    assert res.rc == 0 and "TeamQuotaKeptForEarlierJob" not in res.out, res.out

    priority_conf(*base, "TeamQuotaKeptForGpus=1")
    f = wait_for(lambda: priced(lambda f: f[small]["ASSOC"] == 0),
                 "nlp's 1-GPU job to lose its quota term to the 4-GPU job queued before it", timeout=30)
    assert f[wide]["ASSOC"] == 0, f
    res = cluster.run([str(TOOL), "why", str(small)], user=BOB)
    assert res.rc == 0, res
    assert (f"team nlp holds 8 a100 of the 10 it is guaranteed; the rest is kept for its job {wide} (4 GPUs), "
            "queued before this one: no quota priority until that job starts") in res.out, res.out

    # TeamQuotaPartialCredit (TeamQuotaKeptForGpus back at 16): 2 of the 4-GPU job's
    # GPUs fit the 2 left, so it gets half the quota term and still borrows; the
    # 1-GPU job is within the guarantee again.
    priority_conf(*base, "TeamQuotaPartialCredit=yes")
    f = wait_for(lambda: priced(lambda f: f[wide]["ASSOC"] == 5000 and f[small]["ASSOC"] == 10000),
                 "nlp's 4-GPU job to get half the quota term, 2 of its 4 GPUs within the guarantee", timeout=30)
    total = sum(f[wide][k] for k in ("SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"))
    assert abs(f[wide]["PRIORITY"] - total) <= 7, f          # each printed term is rounded
    res = cluster.run([str(TOOL), "why", str(wide)], user=BOB)
    assert res.rc == 0, res
    assert ("this job's 4 would be borrowed: 2 of them fit the guarantee, so the quota term is 2/4 of "
            "PriorityWeightQuota (TeamQuotaPartialCredit)") in res.out, res.out


def borrowing_mark(cluster, job):
    """The `borrowing=` token in mlsched's part of the job's admin comment, as
    `scontrol show job` shows it (None when there is none)."""
    admin = cluster.job_field(job, "AdminComment") or ""
    ours = admin.split(";")[0]
    marks = [w.split("=", 1)[1] for w in ours.split() if w.startswith("borrowing=")]
    assert len(marks) <= 1, admin
    return marks[0] if marks else None


def test_running_jobs_carry_a_borrowing_mark(cluster, priority_conf):
    # A long PriorityCalcPeriod: the marks below must come from the job starting
    # and ending, not from a periodic pass (none is due within the test).
    jobs = priority_conf("PriorityCalcPeriod=10m", "TeamQuota=research:a100=8")
    inside = submit(cluster, jobs, CAROL, "research", "-w", "gpu13", "--gres=gpu:a100:8")
    cluster.wait_state(inside, ["RUNNING"])
    # Started after `inside`, it takes research to 16 a100 GPUs against 8. It has
    # directives: the mark sits beside them and they still read the same.
    res, _ = cluster.sbatch(CAROL, "#!/bin/bash\n#MLSCHED type=sweep max-restarts=2\nsleep 300\n",
                            "-A", "research", "-t", "10", "-w", "gpu14", "--gres=gpu:a100:8")
    borrower = cluster.job_id(res)
    jobs.append(borrower)
    cluster.wait_state(borrower, ["RUNNING"])
    wait_for(lambda: borrowing_mark(cluster, inside) == "no", "the job inside research's quota to be marked")
    wait_for(lambda: borrowing_mark(cluster, borrower) == "yes", "the job beyond research's quota to be marked")
    admin = cluster.job_field(borrower, "AdminComment")
    assert admin.startswith("mlsched: type=sweep "), admin
    assert "max-restarts=2" in admin and admin.count("borrowing=") == 1, admin
    # A job without directives gets a part of its own, holding only the mark.
    assert cluster.job_field(inside, "AdminComment") == "mlsched: borrowing=no"

    # The older job ends: research is back within its quota, and the borrower is
    # re-evaluated without waiting for a periodic pass.
    cluster.cancel(inside)
    wait_for(lambda: borrowing_mark(cluster, borrower) == "no", "the remaining job to stop borrowing")
    assert "type=sweep" in cluster.job_field(borrower, "AdminComment")


def sacct_jobs(cluster, jobs):
    """job id -> (submit, start, end, node list) in epoch seconds from sacct; start
    or end is None while it has not happened."""
    res = cluster.run(["sacct", "-X", "-n", "-P", "-j", ",".join(jobs), "-o", "JobID,Submit,Start,End,NodeList",
                       "--starttime", "now-1hour"])
    assert res.rc == 0, res

    def epoch(text):
        if text in ("Unknown", "None", ""):
            return None
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    out = {}
    for line in res.out.strip().splitlines():
        job, submit, start, end, nodes = line.split("|")
        out[job] = (epoch(submit), epoch(start), epoch(end), nodes)
    return out


# The gang test's settings. PriorityMaxAge=30 s makes the size term's time unit
# short enough for a test; the other weights are the defaults, so the bound below
# is the README's formula with C = 26000.
GANG_CONF = ("PriorityCalcPeriod=1", "PriorityMaxAge=30", "TeamQuota=nlp:a100=64")
BOUNDED_CEILING = 10000 + 10000 + 1000 + 3000 + 1000 + 1000   # fairshare+quota+age+interactive+qos+partition
CLUSTER_GPUS = 128
STREAM_SECONDS = 8           # each stream job's run time
STREAM_LIMIT = 20            # ... and its time limit (-t 0:20), what backfill plans with
BF_INTERVAL = 2              # slurm.conf's bf_interval in scripts/cluster
SCHED_MARGIN = 5             # launching the gang's batch step and polling


def test_large_gang_is_not_starved_by_a_stream_of_small_jobs(cluster, priority_conf):
    jobs = priority_conf(*GANG_CONF)
    # nlp streams 1-GPU interactive jobs inside its quota onto the four a100 nodes of
    # this test: each ranks above research's borrowing training gang at first
    # (quota term, job type, fair share). The stream never stops on its own: a
    # feeder keeps eight jobs pending until the gang has started.
    stream = []
    stop = threading.Event()
    errors = []

    def feed():
        try:
            while not stop.is_set():
                pending = cluster.run(["squeue", "-h", "-t", "PD", "-u", BOB, "-o", "%i"]).out.split()
                for _ in range(max(0, 8 - len(pending))):
                    res, _ = cluster.sbatch(BOB, f"#!/bin/bash\n#MLSCHED type=interactive\nsleep {STREAM_SECONDS}\n",
                                            "-A", "nlp", "-t", f"0:{STREAM_LIMIT}", "-x", OTHER_NODES,
                                            "--gres=gpu:a100:1")
                    job = cluster.job_id(res)
                    stream.append(job)
                    jobs.append(job)
                time.sleep(0.5)
        except Exception as e:  # surfaced by the main thread
            errors.append(e)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        def busy_gpus():
            out = cluster.run(["squeue", "-h", "-t", "R", "-u", BOB, "-o", "%i"]).out.split()
            return len(out) >= 32
        wait_for(busy_gpus, "the stream to fill the four nodes", timeout=90)
        gang = submit(cluster, jobs, CAROL, "research", "-x", OTHER_NODES, "-N", "4", "--gres=gpu:a100:8",
                      seconds=5)
        # The gang must start while the stream is still going.
        cluster.wait_state(gang, ["RUNNING", "COMPLETING", "COMPLETED"], timeout=180)
        still_pending = cluster.run(["squeue", "-h", "-t", "PD", "-u", BOB, "-o", "%i"]).out.split()
        assert not errors, errors
        assert still_pending, "the stream had ended before the gang started"
    finally:
        stop.set()
        feeder.join(timeout=30)

    # Everything below is read from accounting, at whole seconds.
    def settled():
        acct = sacct_jobs(cluster, [gang] + stream)
        return acct if acct.get(gang, (None, None))[1] else None
    acct = wait_for(settled, "sacct to record the gang's start")
    gang_submit, gang_start, _, _ = acct[gang]
    started_before = [a for j, a in acct.items() if j != gang and a[1] is not None and a[1] <= gang_start]
    # Stream jobs the gang had to overtake waited at most this long (README: w).
    w = max(start - submit for submit, start, _, _ in started_before)
    to_top = BOUNDED_CEILING * 30 * CLUSTER_GPUS / (100000 * 32) + w * 1 / 32
    # README bound: T + PriorityCalcPeriod + the longest time limit running on its
    # nodes, plus the backfill interval and a few seconds to launch (stated margin).
    bound = to_top + 1 + STREAM_LIMIT + BF_INTERVAL + SCHED_MARGIN
    waited = gang_start - gang_submit
    print(f"gang waited {waited:.0f} s; reaches the top after {to_top:.1f} s; bound {bound:.1f} s")
    assert waited <= bound, (waited, bound)

    # GPUs of the four nodes the gang was waiting for, from its submission to its
    # start. Before the gang is at the top the stream keeps them busy; after, they
    # drain for the reservation: at most the stream's run time, since no stream job
    # may start there unless it ends first. Allowed idle: the drain plus the gaps
    # between one stream job ending and the next starting, at most a backfill
    # interval per job (about 0.6 s measured). Each stream job holds one GPU.
    busy = 0.0
    for submit_t, start, end, nodes in started_before:
        end = end if end is not None else gang_start
        busy += max(0.0, min(end, gang_start) - max(start, gang_submit))
    idle = 32 * waited - busy
    drain = STREAM_SECONDS + BF_INTERVAL + SCHED_MARGIN
    gaps = 32 * (waited - drain) * (BF_INTERVAL / (STREAM_SECONDS + BF_INTERVAL))
    print(f"idle GPU-seconds on the gang's nodes while it waited: {idle:.0f} (allowed {32 * drain + gaps:.0f})")
    assert idle <= 32 * drain + max(0.0, gaps), (idle, busy, waited)


# The fair-share test's run shape (also used for the stock comparison, see README):
# two teams with entitlements 2:1 (vision 2 shares, nlp 1) each keep an array of
# 2-GPU jobs pending on the four a100 nodes (16 slots of 32 GPUs). Both arrays run
# the same lengths, 3 to 7 s by task id (mean 5 s): with one fixed length, jobs that
# started in one scheduling cycle all end in one, and every wave of freed slots
# goes to a single team, so GPU-time would come in coarse, lockstep chunks.
SHARE_JOB_GPUS = 2
SHARE_JOB_SECONDS = 5        # mean
SHARE_WARMUP = 30            # at least; then until the two teams' standings meet
SHARE_WARMUP_MAX = 150
SHARE_SETTLE = 15            # after they meet: the catching-up team's running jobs end
SHARE_MEASURE = 120
# Half-life 5 min: long against the jobs. Decay pulls the delivered ratio off 2:1 in proportion to 1/half-life,
# towards the smaller team: a team that got a slot is seen using it only as the job
# runs, and nlp's overshoots move the balance twice as far as vision's. With a 60 s
# half-life this run shape delivered 1.80 to 1.92 instead of 2 (README).
SHARE_CONF = ("PriorityCalcPeriod=1", "PriorityDecayHalfLife=300",
              # Only fair share decides: the quota term would cap nlp at its
              # guarantee (16 a100 GPUs) and age/size are equal for both arrays.
              "PriorityWeightQuota=0")


def delivered_gpu_seconds(cluster, array_job, window):
    """GPU-seconds the tasks of one job array ran inside [window), from sacct."""
    res = cluster.run(["sacct", "-X", "-n", "-P", "-j", array_job, "-o", "JobID,Start,End,State",
                       "--starttime", "now-1hour"])
    assert res.rc == 0, res
    lo, hi = window
    total = 0.0
    for line in res.out.strip().splitlines():
        job, start, end, state = line.split("|")
        if start in ("Unknown", "None"):
            continue
        s = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S"))
        e = hi if end in ("Unknown", "None") else time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S"))
        total += SHARE_JOB_GPUS * max(0.0, min(e, hi) - max(s, lo))
    return total


def levels_meet(cluster, tolerance=0.05):
    rows = sshare(cluster)
    try:
        v, n = (float(rows[(team, "")]["LevelFS"]) for team in ("vision", "nlp"))
    except (KeyError, ValueError):
        return False
    return abs(v / n - 1) <= tolerance


def run_share_shape(cluster, jobs, wait_for_balance=True):
    """Runs the 2:1 shape on `cluster`; returns (vision, nlp) GPU-seconds delivered
    after warm-up, the idle GPU-seconds of the slice in that window, and how long it
    took. Without `wait_for_balance` warm-up is a fixed minute (stock Slurm's
    standings need not meet within the test)."""
    script = f"#!/bin/bash\nsleep $(( {SHARE_JOB_SECONDS} - 2 + SLURM_ARRAY_TASK_ID % 5 ))\n"
    tasks = (SHARE_WARMUP_MAX + SHARE_SETTLE + SHARE_MEASURE) * (32 // SHARE_JOB_GPUS) // SHARE_JOB_SECONDS + 20
    arrays = {}
    # Submitted together, so both arrays have the same age throughout.
    for user, team in ((ALICE, "vision"), (BOB, "nlp")):
        res, _ = cluster.sbatch(user, script, "-A", team, "-t", "1", "-x", OTHER_NODES,
                                f"--gres=gpu:a100:{SHARE_JOB_GPUS}", f"--array=0-{tasks}")
        arrays[team] = cluster.job_id(res)
        jobs.append(arrays[team])
    start = time.time()
    time.sleep(SHARE_WARMUP)
    # Warm-up ends when both teams stand equally against their entitlements (LevelFS
    # = entitlement / usage share, as sshare shows it): usage they brought from
    # earlier tests (none after forget_team_usage; stock keeps its own) has then
    # been caught up on, and from there on the delivered GPU-time follows the shares.
    if wait_for_balance:
        wait_for(lambda: levels_meet(cluster), "vision's and nlp's standings to meet", timeout=SHARE_WARMUP_MAX)
    else:
        time.sleep(2 * SHARE_WARMUP)
    # The team that was catching up still holds most GPUs when they meet, and the
    # other gets every slot for a while to even that out: measure after it has.
    time.sleep(SHARE_SETTLE)
    window = (time.time(), time.time() + SHARE_MEASURE)
    time.sleep(SHARE_MEASURE)
    for team in ("vision", "nlp"):
        pending = cluster.run(["squeue", "-h", "-t", "PD", "-j", arrays[team], "-r", "-o", "%i"]).out.split()
        assert pending, f"{team}'s array ran dry: the slice was not kept saturated"
    for a in arrays.values():
        cluster.cancel(a)
    # The last tasks of the window end up to a few seconds later in accounting.
    time.sleep(2)
    vision = delivered_gpu_seconds(cluster, arrays["vision"], window)
    nlp = delivered_gpu_seconds(cluster, arrays["nlp"], window)
    idle = 32 * SHARE_MEASURE - vision - nlp
    return vision, nlp, idle, time.time() - start


def forget_team_usage(cluster, priority_conf, teams=("vision", "nlp")):
    """Lets the teams' usage from earlier tests decay away: a 1 s half-life while
    nothing of theirs runs, until sshare shows under one GPU-second each. How much
    an earlier test charged (test_history's 16-GPU trainer, say) must not decide
    whether the catch-up fits in this test's warm-up."""
    priority_conf("PriorityCalcPeriod=1", "PriorityDecayHalfLife=1")

    def raw_usage_gone():
        rows = sshare(cluster)
        try:
            return all(float(rows[(team, "")]["RawUsage"]) < 1 for team in teams)
        except (KeyError, ValueError):
            return False
    wait_for(raw_usage_gone, f"the usage of {', '.join(teams)} to decay", timeout=60, interval=1)


def test_two_teams_get_gpu_time_in_proportion_to_their_shares(cluster, priority_conf):
    forget_team_usage(cluster, priority_conf)
    jobs = priority_conf(*SHARE_CONF)
    vision, nlp, idle, took = run_share_shape(cluster, jobs)
    ratio = vision / nlp
    print(f"mlsched: vision {vision:.0f} / nlp {nlp:.0f} GPU-s = {ratio:.2f} (target 2), "
          f"idle {idle:.0f} GPU-s of {32 * SHARE_MEASURE}, {took:.0f} s")
    # Saturated: GPUs idle only between one job ending and the next starting (the
    # node's epilog report, then a scheduling cycle: about 0.6 s per 5 s job here).
    assert idle <= 0.25 * 32 * SHARE_MEASURE, idle
    assert 2 * 0.9 <= ratio <= 2 * 1.1, (vision, nlp)


@pytest.mark.skipif(not os.environ.get("MLSCHED_COMPARE_STOCK"),
                    reason="comparison run for the README, not a check: set MLSCHED_COMPARE_STOCK=1")
def test_stock_multifactor_on_the_same_shape(stock_cluster):
    """What stock priority/multifactor delivers on the 2:1 shape (README reports it).
    Its settings: the same half-life; PriorityCalcPeriod is in minutes there, 1 at
    least; fair share weighted as in mlsched. Only saturation is checked."""
    conf = stock_cluster.conf
    original = conf.read_text()
    conf.write_text(original + "\nPriorityDecayHalfLife=00:05:00\nPriorityCalcPeriod=1\n"
                    "PriorityWeightJobSize=0\nPriorityWeightAge=0\n")
    jobs = []
    try:
        assert stock_cluster.run(["scontrol", "reconfigure"]).rc == 0
        vision, nlp, idle, took = run_share_shape(stock_cluster, jobs, wait_for_balance=False)
        ratio = vision / nlp if nlp else float("inf")
        print(f"stock multifactor: vision {vision:.0f} / nlp {nlp:.0f} GPU-s = {ratio:.2f} (target 2), "
              f"idle {idle:.0f} GPU-s of {32 * SHARE_MEASURE}, {took:.0f} s")
        assert idle <= 0.25 * 32 * SHARE_MEASURE, idle
    finally:
        for job in jobs:
            stock_cluster.cancel(job)
        conf.write_text(original)
        stock_cluster.run(["scontrol", "reconfigure"])


def run_seconds(cluster, job):
    """The job's RunTime as `scontrol show job` shows it ([D-]HH:MM:SS), in seconds."""
    text = cluster.job_field(job, "RunTime") or "0:0:0"
    days, _, hms = text.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


def pending_order(cluster, jobs):
    """Job ids of `jobs` that are pending, highest priority first, as `squeue` lists
    them sorted by priority."""
    res = cluster.run(["squeue", "-h", "-t", "PD", "-j", ",".join(jobs), "--sort=-p,i", "-o", "%i"])
    assert res.rc == 0, res
    return res.out.split()


def test_attained_service_ranks_a_team_s_fresh_job_above_one_that_ran(cluster, priority_conf):
    # research's jobs get attained-service levels: below 20 GPU-seconds attained is
    # level 0, above it level 1, 5000 below. PriorityMaxAge=60 makes age count
    # within the test, so without levels the job that has waited longer ranks first.
    attained = ("AttainedService=team:research", "AttainedServiceThresholds=20",
                "PriorityWeightAttainedService=5000", "AttainedServicePromoteAfter=10m")
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityMaxAge=60", *attained)
    first_submit = time.time()
    ran = submit(cluster, jobs, CAROL, "research", "-w", "gpu13", "--gres=gpu:a100:8")
    cluster.wait_state(ran, ["RUNNING"])
    wait_for(lambda: run_seconds(cluster, ran) >= 4, "the first job to run 4 s (32 GPU-seconds)")
    # Requeued (as a preemption would): it waits again, its run recorded.
    assert cluster.run(["scontrol", "requeue", ran]).rc == 0
    admin = wait_for(lambda: (lambda a: a if a and "attained-gpu-seconds=" in a else None)(
        cluster.job_field(ran, "AdminComment")), "the requeued job's attained GPU-time mark")
    attained_gpu_seconds = int(re.search(r"attained-gpu-seconds=(\d+)", admin).group(1))
    assert attained_gpu_seconds >= 32, admin
    # nlp takes the node, so both research jobs below wait for it.
    blocker = submit(cluster, jobs, BOB, "nlp", "-w", "gpu13", "--gres=gpu:a100:8")
    cluster.wait_state(blocker, ["RUNNING"])
    # Slurm holds a requeued batch job back (BeginTime) for its old credential to
    # expire; let it compete now.
    assert cluster.run(["scontrol", "update", f"jobid={ran}", "StartTime=now"]).rc == 0
    time.sleep(1)
    fresh = submit(cluster, jobs, CAROL, "research", "-w", "gpu13", "--gres=gpu:a100:8")

    # Both priced by a pass (at submission a job's wait is 0): the requeued job has
    # waited longer, and SITE shows its attained-service term (training's 1000 - 5000).
    def priced():
        r, f = sprio(cluster, ran), sprio(cluster, fresh)
        return (r, f) if r and f and r["SITE"] == 1000 - 5000 and f["SITE"] == 1000 and r["AGE"] > f["AGE"] > 0 \
            else None
    r, f = wait_for(priced, "sprio to show the attained-service term in SITE")
    # The fresh job ranks first although the other has waited longer: the requeue
    # kept its age, counted from its first submission (PriorityWeightAge 1000 per 60 s;
    # sprio's numbers are from the last pass, at most a couple of seconds old).
    assert r["AGE"] >= 1000 * (time.time() - first_submit - 3) / 60, (r, time.time() - first_submit)
    assert f["PRIORITY"] > r["PRIORITY"], (r, f)
    assert pending_order(cluster, [ran, fresh]) == [fresh, ran]
    print(f"attained {attained_gpu_seconds} GPU-s: requeued job {r}, fresh job {f}")

    # Attained service off: the same two jobs, the older first again.
    priority_conf("PriorityCalcPeriod=1", "PriorityMaxAge=60")
    r, f = wait_for(lambda: (lambda r, f: (r, f) if r and f and r["SITE"] == 1000 else None)(
        sprio(cluster, ran), sprio(cluster, fresh)), "the attained-service term to go")
    assert r["PRIORITY"] > f["PRIORITY"], (r, f)
    assert pending_order(cluster, [ran, fresh]) == [ran, fresh]


def test_best_effort_queues_behind_a_job_that_cannot_be_preempted(cluster, priority_conf):
    # PriorityWeightNonPreemptible: a job that says preemptible=no gets the weight in
    # SITE and ranks above a preemptible job of the same team that has waited longer
    # (PriorityMaxAge=60 makes age count within the test); when GPUs free, it starts.
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityMaxAge=60", "PriorityWeightNonPreemptible=4000")
    where = nlp_runs_8_a100_on_full_nodes(cluster, jobs)
    nlp_on_gpu13 = jobs[0]  # the first job that helper submits

    def job(preemptible):
        res, _ = cluster.sbatch(CAROL, f"#!/bin/bash\n#MLSCHED type=training preemptible={preemptible}\nsleep 300\n",
                                "-A", "research", "-t", "10", "--gres=gpu:a100:8", *where)
        jobs.append(cluster.job_id(res))
        return jobs[-1]
    best_effort = job("yes")
    time.sleep(2)
    pinned = job("no")

    def priced():
        b, p = sprio(cluster, best_effort), sprio(cluster, pinned)
        return (b, p) if b and p and b["SITE"] == 1000 and p["SITE"] == 1000 + 4000 and b["AGE"] > p["AGE"] \
            else None
    b, p = wait_for(priced, "sprio to show the non-preemptible term in SITE")
    assert p["PRIORITY"] > b["PRIORITY"], (b, p)
    assert pending_order(cluster, [best_effort, pinned]) == [pinned, best_effort]
    # mlsched why tells the best-effort job's owner why it waits behind.
    res = cluster.run([str(TOOL), "why", "--json", best_effort], user=CAROL)
    assert res.rc == 0, res
    reasons = {r["reason"]: r["message"] for r in json.loads(res.out)["reasons"]}
    assert re.fullmatch(r"the job is preemptible; [1-9]\d* of the [1-9]\d* pending job\(s\) ahead for the same GPUs "
                        r"are not, and rank 4000 higher for it \(PriorityWeightNonPreemptible\)",
                        reasons.get("BestEffortQueuesBehind", "")), reasons

    # One node frees up: the job that cannot give its GPUs back takes it.
    cluster.cancel(nlp_on_gpu13)
    cluster.wait_state(pinned, ["RUNNING"])
    assert cluster.job_field(best_effort, "JobState") == "PENDING"
    print(f"best effort {b}, not preemptible {p}")


@pytest.fixture
def crash_cleanup(cluster):
    """Listed first by a test that crashes slurmctld, so that it runs last. Slurm 22.05
    itself (stock plugins too) keeps the typed GPU count (gres/gpu:a100) of a job that
    ran across a SIGKILL and restart allocated after the job ends, and later untyped
    jobs on that node then leave gres/gpu allocated as well: the next tests found GPUs
    allocated to no job. Once the test's jobs are gone, `scontrol reconfigure` recounts."""
    yield
    wait_for(lambda: not cluster.run(["squeue", "-h", "-o", "%i"]).out.strip(), "the test's jobs to be gone", timeout=120)
    assert cluster.run(["scontrol", "reconfigure"]).rc == 0

    def leftover():
        nodes = cluster.run(["scontrol", "-o", "show", "node"]).out
        return re.findall(r"NodeName=(\S+).*AllocTRES=(\S*gpu\S*)", nodes)
    try:
        wait_for(lambda: not leftover(), "the recount", timeout=30)
    except AssertionError:
        raise AssertionError(f"GPUs allocated to no job after scontrol reconfigure: {leftover()}")


def restart_slurmctld(cluster):
    """SIGKILL slurmctld, as a crash, and start it again on its saved state; the
    slurmds and their jobs keep running. Tests that call it take crash_cleanup."""
    res = subprocess.run([str(REPO / "scripts" / "cluster"), "restart-slurmctld", "--kill", "--dir", str(cluster.dir)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    wait_for(lambda: cluster.run(["scontrol", "ping"]).rc == 0, "slurmctld to answer again")


def wait_jobs_saved(cluster, jobs):
    """Makes slurmctld save its job table with `jobs` running and waits for the file: a
    job it had not saved yet is gone after a SIGKILL (Slurm's own state, not ours).
    slurmctld 22.05 saves within 5 s of a change it schedules a save for (a submission,
    an update, a start by the main scheduler) but not after a backfill start, so
    without a trigger the save could wait for its 5-minute periodic checkpoint. A
    no-op update of each job's time limit is such a change."""
    job_state = cluster.dir / "state" / "job_state"
    for job in jobs:
        limit = cluster.job_field(job, "TimeLimit")
        res = cluster.run(["scontrol", "update", f"JobId={job}", f"TimeLimit={limit}"])
        assert res.rc == 0, res
    updated = time.time_ns()
    wait_for(lambda: job_state.exists() and job_state.stat().st_mtime_ns > updated, "slurmctld to save its jobs",
             timeout=30)


def sacct_gpu_seconds(cluster, jobs):
    """job id -> GPUs x elapsed seconds, from sacct, once every job has ended there."""
    res = cluster.run(["sacct", "-X", "-n", "-P", "-j", ",".join(jobs), "-o", "JobID,State,ElapsedRaw,AllocTRES",
                       "--starttime", "now-1hour"])
    assert res.rc == 0, res
    out = {}
    for line in res.out.strip().splitlines():
        job, state, elapsed, tres = line.split("|")
        if state in ("RUNNING", "PENDING", "REQUEUED") or not elapsed:
            return None
        gpus = re.search(r"gres/gpu=(\d+)", tres)
        out[job] = int(elapsed) * (int(gpus.group(1)) if gpus else 0)
    return out if set(out) == set(jobs) else None


def test_usage_resumes_after_slurmctld_is_killed_mid_run(crash_cleanup, cluster, priority_conf, mlsched_conf):
    jobs = priority_conf("PriorityCalcPeriod=1")
    applied = time.time()
    wait_for(lambda: decayed_through(cluster) > applied + 1, "a priority pass under the test's settings")
    wait_for(lambda: not charging(cluster, "research"), "research's earlier jobs to be settled")
    charged_before = saved_state(cluster).get("research", (0.0, 0.0))[1]
    # The jobs run until the test lets them end, after the restart: with fixed
    # lengths, a slow start (a fresh machine's first run) let the first one finish
    # before the kill, and its usage was settled, correctly, before the crash.
    release = Path(cluster.workdir(CAROL)) / f"release-{uuid.uuid4().hex[:8]}"
    body = f"#!/bin/bash\nwhile [ ! -e {release} ]; do sleep 0.2; done\n"
    ours = []
    for node, gpus in (("gpu13", 8), ("gpu14", 4)):
        res, _ = cluster.sbatch(CAROL, body, "-A", "research", "-t", "10", "-w", node, f"--gres=gpu:a100:{gpus}")
        ours.append(cluster.job_id(res))
        jobs.append(ours[-1])
    try:
        for job in ours:
            cluster.wait_state(job, ["RUNNING"])
        wait_jobs_saved(cluster, ours)
        # Killed once the saved usage holds both jobs, a few seconds into their runs.
        wait_for(lambda: len(charging(cluster, "research")) == 2 and run_seconds(cluster, ours[0]) >= 6,
                 "the saved usage to charge both running jobs")
        assert [cluster.job_field(j, "JobState") for j in ours] == ["RUNNING", "RUNNING"]
        start = mlsched_conf.log_offset()
        restart_slurmctld(cluster)
        log = mlsched_conf.wait_log(r"priority/mlsched: resumed usage of \d+ teams and \d+ running jobs", start,
                                    "priority/mlsched to resume the saved usage")
        assert int(re.search(r"resumed usage of \d+ teams and (\d+) running jobs", log).group(1)) >= 2, log
        time.sleep(3)  # a few seconds of running after the restart, charged too
    finally:
        release.touch()
    for job in ours:
        cluster.wait_state(job, ["COMPLETED"], timeout=120)
    release.unlink()
    wait_for(lambda: not charging(cluster, "research"), "the two jobs to be settled")
    charged = saved_state(cluster)["research"][1] - charged_before
    acct = wait_for(lambda: sacct_gpu_seconds(cluster, ours), "sacct to record both jobs' ends")
    print(f"charged {charged:.0f} GPU-s across the crash; sacct {sum(acct.values())} GPU-s {acct}")
    assert charged == pytest.approx(sum(acct.values()), rel=0.01)


def test_slurmctld_starts_on_a_corrupt_or_missing_usage_file(crash_cleanup, cluster, priority_conf, mlsched_conf):
    job = submit(cluster, mlsched_conf.jobs, CAROL, "research", "-w", "gpu13", "--gres=gpu:a100:2")
    cluster.wait_state(job, ["RUNNING"])
    wait_jobs_saved(cluster, [job])
    # A long period: the pass that follows this change charges the running job and
    # saves; nothing rewrites the file after that before the restarts below.
    path = cluster.dir / "state" / STATE_FILE
    changed = time.time()
    priority_conf("PriorityCalcPeriod=10m")
    wait_for(lambda: path.stat().st_mtime > changed and charging(cluster, "research"),
             "the pass after the change to save usage charging the running job")
    aside = path.with_name(STATE_FILE + ".corrupt")
    if aside.exists():
        aside.unlink()
    for damage in ("corrupt", "missing"):
        if damage == "corrupt":
            path.write_bytes(b"mlsched-priority-state 1\nteam research 12\x00\xff garbage\n")
        else:
            path.unlink()
        start = mlsched_conf.log_offset()
        restart_slurmctld(cluster)
        log = mlsched_conf.wait_log(r"rebuilt usage from the job table", start, "the usage to be rebuilt")
        if damage == "corrupt":
            assert re.search(r"priority/mlsched: WARNING: saved usage in \S+ is corrupt \(line 2: bad team line\); "
                             r"kept it as \S+\.corrupt", log), log
            assert aside.read_bytes().startswith(b"mlsched-priority-state 1\nteam research 12\x00")
        else:
            assert re.search(r"priority/mlsched: WARNING: saved usage \S+: no such file; rebuilding", log), log
        m = re.search(r"rebuilt usage from the job table: (\d+) running jobs charged from their start", log)
        assert m and int(m.group(1)) >= 1, log
        # slurmctld answers, and the running job is charged again, from its start.
        assert cluster.job_field(job, "JobState") == "RUNNING"
        wait_for(lambda: path.exists() and path.read_text().endswith("end\n") and charging(cluster, "research"),
                 "a whole usage file again")
        rows = sshare(cluster)
        assert float(rows[("research", "")]["RawUsage"]) > 0, rows[("research", "")]
