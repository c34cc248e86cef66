"""priority/mlsched on the real cluster: what sprio and sshare show, and which job
starts first. Each test appends its priority settings to the cluster's mlsched.conf
(PriorityCalcPeriod=1 so a pass runs every second) and restores the file after.

Jobs are confined to the a100 nodes gpu[13-16] so the rest of the cluster stays
free for other tests; every job is cancelled at the end.
"""
import re
import time

import pytest

CAROL, BOB = "ml-carol", "ml-bob"          # teams research and nlp (1 share each)
MY_NODES = ["gpu13", "gpu14", "gpu15", "gpu16"]
OTHER_NODES = "gpu[01-12]"
STATE_FILE = "priority_mlsched.state"


def priority_plugin_in_use(cluster):
    return "PriorityType=priority/mlsched" in (cluster.dir / "etc" / "slurm.conf").read_text().replace(" ", "")


@pytest.fixture
def priority_conf(cluster):
    """Returns a function that appends settings to mlsched.conf and waits until the
    plugin has loaded them; the original file comes back afterwards."""
    if not priority_plugin_in_use(cluster):
        pytest.fail("the test cluster runs without priority/mlsched (build priority_mlsched.so into --plugin-dir)")
    conf = cluster.dir / "etc" / "mlsched.conf"
    original = conf.read_text()
    log = cluster.dir / "log" / "slurmctld.log"
    jobs = []

    def apply(*lines):
        start = log.stat().st_size
        conf.write_text(original + "\n# test_priority\n" + "\n".join(lines) + "\n")
        wait_for(lambda: re.search(r"priority/mlsched: loaded \S*mlsched\.conf", log.read_text(errors="replace")[start:]),
                 "priority/mlsched to load the new mlsched.conf")
        return jobs

    yield apply
    for job in jobs:
        cluster.cancel(job)
    conf.write_text(original)
    if jobs:
        wait_for(lambda: not cluster.run(["squeue", "-h", "-t", "PD,R,CG", "-j", ",".join(jobs)]).out.strip(),
                 "the test's jobs to leave the cluster")


def wait_for(condition, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


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
    if res.rc != 0 or not res.out.strip():
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


def charging(cluster, team):
    """Jobs of `team` the saved ledger is still charging."""
    path = cluster.dir / "state" / STATE_FILE
    return [l for l in path.read_text().splitlines() if l.startswith("job ") and l.split()[2] == team]


def test_sprio_and_sshare_show_the_core_numbers(cluster, priority_conf):
    jobs = priority_conf("PriorityCalcPeriod=1", "PriorityDecayHalfLife=1d", "GpuWeight=a100:0.5")
    # Earlier tests may have charged research already: compare what this job adds,
    # once jobs that ended before are settled.
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
