"""Two regions on the real machine: Slurm clusters `east` (etc/cluster/region-east.shape,
2 nodes of 8 h100) and `west` (region-west.shape, 2 nodes of 8 a100), each with its own
slurmctld, slurmds and mlsched plugins, sharing one munged and one slurmdbd, and
members of one Slurm federation `ml` (docs/regions.md). Started beside the main test
cluster with its plugins and Slurm, removed afterwards."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import CLUSTER_DIR, Cluster, MlschedConf, REPO, TOOL, wait_for
from test_priority import decayed_through

USER, TEAM = "ml-bob", "nlp"
CAROL = "ml-carol"   # team research
FEDERATION = "ml"


def region_up(name, directory, port_base, shape=None):
    """`scripts/cluster up` for a region, with the main test cluster's plugins and Slurm."""
    settings = json.loads((CLUSTER_DIR / "etc" / "cluster.json").read_text())
    return [str(REPO / "scripts" / "cluster"), "up", "--plugins", "mlsched", "--plugin-dir", settings["plugin_dir"],
            "--slurm", settings["slurm_prefix"],
            "--shape", str(REPO / "etc" / "cluster" / f"region-{shape or name}.shape"),
            "--dir", directory, "--port-base", str(port_base), "--cluster-name", name, "--federation", FEDERATION]


def start_region(name, directory, port_base, join=None):
    cmd = region_up(name, directory, port_base)
    if join:
        cmd += ["--join", join]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        pytest.fail(f"region {name} did not start:\n{res.stderr}")
    return Cluster(directory)


def stop_region(directory):
    subprocess.run([str(REPO / "scripts" / "cluster"), "down", "--purge", "--dir", directory],
                   capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def regions(cluster):
    east_dir = os.environ.get("MLSCHED_EAST_CLUSTER_DIR", "/tmp/mlsched-east")
    west_dir = os.environ.get("MLSCHED_WEST_CLUSTER_DIR", "/tmp/mlsched-west")
    # west first: it uses east's munged and slurmdbd.
    stop_region(west_dir)
    stop_region(east_dir)
    try:
        east = start_region("east", east_dir, int(os.environ.get("MLSCHED_EAST_PORT_BASE", "25300")))
        west = start_region("west", west_dir, int(os.environ.get("MLSCHED_WEST_PORT_BASE", "25600")), join=east_dir)
        # slurmdbd tells each slurmctld of the federation; both must see both, active.
        for region in (east, west):
            wait_for(lambda: federation_members(region) == {"east": "ACTIVE", "west": "ACTIVE"},
                     lambda: f"both regions active in the federation as {region.dir} sees it: "
                             f"{region.run(['scontrol', 'show', 'federation']).out}", timeout=60)
        yield east, west
    finally:
        stop_region(west_dir)
        stop_region(east_dir)


def federation_members(region):
    """{cluster: state} from `scontrol show federation`: this region's own state, and
    each sibling's with ",synced" once the two controllers exchanged their jobs (until
    then Slurm schedules nothing in a federation)."""
    out = region.run(["scontrol", "show", "federation"]).out
    members = {}
    for line in out.splitlines():
        m = re.match(r"\s*(Self|Sibling):\s+([^:\s]+):\S* ID:\d+ FedState:(\S+)", line)
        if m:
            synced = m.group(1) == "Self" or "Synced:Yes" in line
            members[m.group(2)] = m.group(3) + ("" if synced else ",not-synced")
    return members


@pytest.fixture
def clean(regions):
    yield
    for region in regions:
        region.run(["scancel", "-u", USER])
    for region in regions:
        wait_for(lambda: not region.run(["squeue", "-h", "-u", USER, "--local"]).out.strip(),
                 "the test's jobs to leave", timeout=60)


def submit(region, *args, directives=(), minutes=10, user=USER, account=TEAM):
    script = "#!/bin/bash\n" + "".join(f"#MLSCHED {d}\n" for d in directives) + "sleep 600\n"
    res, _ = region.sbatch(user, script, "-A", account, "-t", str(minutes), *args)
    return region.job_id(res)


def test_the_two_regions_are_one_federation(regions):
    east, west = regions
    for region in regions:
        assert federation_members(region) == {"east": "ACTIVE", "west": "ACTIVE"}, \
            region.run(["scontrol", "show", "federation"]).out
    # Each region has only its own nodes and GPU type.
    assert "h100" in east.run(["sinfo", "-h", "-o", "%G"]).out
    assert "a100" in west.run(["sinfo", "-h", "-o", "%G"]).out
    # A region keeps its name: slurmctld would refuse its own state under another.
    port_base = json.loads((west.dir / "etc" / "cluster.json").read_text())["port_base"]
    res = subprocess.run(region_up("north", str(west.dir), port_base, shape="west"),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0, res
    assert (f"the cluster in {west.dir} is named west, not north: `scripts/cluster down --purge --dir {west.dir}` "
            "first") in res.stderr, res.stderr
    assert federation_members(west) == {"east": "ACTIVE", "west": "ACTIVE"}


def test_a_job_submitted_to_a_full_region_runs_in_the_other(regions, clean):
    east, west = regions
    # east's two nodes are taken; a federated job submitted to east starts in west.
    fillers = [submit(east, "-w", n, "--gres=gpu:8", "--clusters=east") for n in ("east01", "east02")]
    for j in fillers:
        east.wait_state(j, {"RUNNING"})
    job = submit(east, "--gres=gpu:8", directives=("type=training", "checkpoint-signal=USR1 checkpoint-grace=60"))
    wait_for(lambda: west.run(["squeue", "-h", "--local", "-j", job, "-o", "%T %N"]).out.split()[:1] == ["RUNNING"],
             lambda: f"job {job} to run in west: {west.run(['squeue', '-h', '--local', '-j', job]).out!r} "
                     f"east: {east.run(['squeue', '-h', '--local', '-j', job]).out!r}")
    nodes = west.run(["squeue", "-h", "--local", "-j", job, "-o", "%N"]).out.strip()
    assert nodes.startswith("west"), nodes
    # The sibling that runs carries what job_submit/mlsched wrote at the origin.
    text = west.show_job(job)
    assert "mlsched: type=training" in text, text
    assert "Requeue=1" in text, text


def test_fair_share_is_kept_per_region(regions):
    """docs/regions.md: each region's priority/mlsched charges the jobs it runs; a team's
    standing in one region does not move with its use of another. sshare, asked of each
    region, shows it. Team research, which no other test here runs: in west it has no
    usage at all, so its factor there stays 1.0 whatever the other teams did."""
    east, west = regions
    confs = [MlschedConf(region) for region in regions]
    job = None
    try:
        for conf in confs:
            conf.append("PriorityCalcPeriod=1", plugin="priority/mlsched", tag="test_regions")
        applied = time.time()
        for region in regions:
            wait_for(lambda: decayed_through(region) > applied + 1, f"a priority pass in {region.dir} under 1 s passes")
        assert raw_usage(west, "research") == 0, sshare_text(west)
        before = raw_usage(east, "research")
        job = submit(east, "--gres=gpu:8", "--clusters=east", user=CAROL, account="research")
        east.wait_state(job, {"RUNNING"})
        # 8 GPUs for a few seconds: well above what a pass's rounding hides.
        wait_for(lambda: raw_usage(east, "research") >= before + 8 * 3, "east to charge research 3 s on 8 GPUs")
        time.sleep(3)   # three more passes in west, had it anything to charge
        assert raw_usage(west, "research") == 0, sshare_text(west)
        east_fs, west_fs = fairshare(east, "research", CAROL), fairshare(west, "research", CAROL)
        assert east_fs < 1.0 and west_fs == 1.0, (sshare_text(east), sshare_text(west))
        print(f"\nresearch after 8 GPUs in east: FairShare east {east_fs}, west {west_fs}")
    finally:
        if job:
            east.run(["scancel", job])
        for conf in confs:
            conf.restore()


def sshare_text(region):
    return region.run(["sshare", "-a", "-l", "-P"]).out


def sshare_row(region, account, user=""):
    lines = sshare_text(region).strip().splitlines()
    header = lines[0].split("|")
    for line in lines[1:]:
        row = dict(zip(header, line.split("|")))
        if row["Account"].strip() == account and row["User"].strip() == user:
            return row
    raise AssertionError(f"sshare has no row for {account}/{user}:\n" + "\n".join(lines))


def raw_usage(region, account):
    return int(sshare_row(region, account)["RawUsage"])


def fairshare(region, account, user):
    return float(sshare_row(region, account, user)["FairShare"])


def test_why_shows_each_regions_view_of_a_federated_job(regions, clean):
    east, west = regions
    fillers = {}
    for region, name in ((east, "east"), (west, "west")):
        fillers[name] = [submit(region, "-w", f"{name}0{i}", "--gres=gpu:8", f"--clusters={name}") for i in (1, 2)]
        for j in fillers[name]:
            region.wait_state(j, {"RUNNING"})
    # Both regions full: the 2-node job waits in each, and each region's controller says why.
    job = submit(east, "-N2", "--gres=gpu:8")
    def both_pending_with_estimates():
        out = east.run([str(TOOL), "why", job], user=USER).out
        # A copy may be PENDING (FedJobLock) for a moment, Slurm's reason while another
        # region holds the job's federation lock (seen once on 24.11, in west); the view
        # to check is both waiting for resources.
        lines = [l for l in out.splitlines() if re.match(r"  (east|west)( \(here\))?: PENDING \(Resources\)", l)]
        return out if len(lines) == 2 and all("Slurm's estimate" in l for l in lines) else None
    out = wait_for(both_pending_with_estimates, "mlsched why to show the job waiting in both regions, with estimates")
    assert "regions holding a copy of the job (each region's controller; submitted to east):" in out, out
    assert re.search(r"^  east \(here\): PENDING \(Resources\); Slurm's estimate .* on east\[01-02\]; "
                     r"select/mlsched there: needs 16 GPUs \(2 nodes x 8\)", out, re.M), out
    assert re.search(r"^  west: PENDING \(Resources\); .* on west\[01-02\]; select/mlsched there: .*a100", out, re.M), out
    assert "first to start as the estimates stand:" in out, out
    # Asked in west, the same regions, with west the one here.
    west_out = west.run([str(TOOL), "why", job], user=USER).out
    assert re.search(r"^  west \(here\): PENDING", west_out, re.M), west_out

    # west frees its nodes: the job starts there, and east's view says so.
    for j in fillers["west"]:
        west.run(["scancel", j])
    wait_for(lambda: west.run(["squeue", "-h", "--local", "-j", job, "-o", "%T"]).out.strip() == "RUNNING",
             f"job {job} to start in west")
    # The other copies are revoked a moment after the start (the origin tells them).
    seen = {}
    def revoked_here():
        seen["out"] = east.run([str(TOOL), "why", job], user=USER).out
        return seen["out"] if "the job runs in west" in seen["out"] else None
    out = wait_for(revoked_here, lambda: f"east's mlsched why to say the job runs in west:\n{seen.get('out')}\n"
                                         f"{east.run(['squeue', '--federation', '--sibling', '-j', job]).out}")
    # The origin keeps a record of the job (pending or revoked, by Slurm's timing):
    # no wait is explained for it.
    assert re.match(rf"job \S+ {job} \({USER}, account {TEAM}\) runs in region west on west\[01-02\] since .*; "
                    r"this region's copy \((PENDING|REVOKED)\) is Slurm's record of it: run mlsched why in west", out), out
    assert "why it waits" not in out, out
    assert re.search(r"^  west: RUNNING on west\[01-02\] since ", out, re.M), out
    print(f"\nmlsched why {job} in east, once west started it:\n{out}")
    data = json.loads(east.run([str(TOOL), "why", "--json", job], user=USER).out)
    assert data["origin_region"] == "east" and data["runs_in_region"] == "west", data
    assert {r["region"]: r["state"] for r in data["regions"]}["west"] == "RUNNING", data["regions"]
    # Asked in west, the full analysis of the running job.
    west_out = west.run([str(TOOL), "why", job], user=USER).out
    assert re.match(rf"job \S+ {job} \({USER}, account {TEAM}, partition gpu\): RUNNING", west_out), west_out
    assert re.search(r"^  west \(here\): RUNNING on west\[01-02\]", west_out, re.M), west_out


def local_job(region, job):
    """`scontrol show job -d` of this region's own copy of a federated job."""
    res = region.run(["scontrol", "--local", "show", "job", "-d", job])
    assert res.rc == 0, res
    return res.out


def test_a_gpu_type_only_another_region_has_is_sent_there(regions, clean):
    """docs/regions.md point 1: scripts/cluster declares each region's GPU types as its
    cluster features; job_submit/mlsched in the origin accepts a type only another region
    has, asks Slurm for siblings only where the job's types are (--cluster-constraint),
    and each sibling rewrites the job for its own types."""
    east, west = regions
    features = east.run(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster,features"]).out
    assert "east|h100" in features and "west|a100" in features, features
    # A type no region has: refused at the origin, with what each has.
    res, _ = east.sbatch(USER, "#!/bin/bash\n#MLSCHED gpu-type=v100\nsleep 600\n", "-A", TEAM, "-t", "10",
                         "--gres=gpu:2")
    assert res.rc != 0, res
    assert ("gpu-type=v100: this cluster has no v100 GPUs (it has h100), nor does another region of its "
            "federation (they have a100)") in res.err, res.err
    # a100, only west has it: east keeps the federation's tracking copy, west runs it.
    job = submit(east, "--gres=gpu:2", directives=("gpu-type=a100",))
    wait_for(lambda: west.run(["squeue", "-h", "--local", "-j", job, "-o", "%T"]).out.strip() == "RUNNING",
             lambda: f"job {job} to run in west: {west.run(['squeue', '-h', '--local', '-j', job]).out!r}")
    # Each region's own copy (--local). Seen on 24.11: the copy in west, RUNNING for 0 s,
    # had no GRES=...(IDX:...) line yet; it had one 3 s later.
    wait_for(lambda: re.search(r"GRES=gpu:a100:2\(IDX:\d", local_job(west, job)),
             lambda: f"west's copy of {job} on a100 GPUs: {local_job(west, job)}", timeout=30)
    # Only west was a viable region (--cluster-constraint=a100). The federation's view
    # from east: 22.05 shows east's revoked tracking copy, 24.11 west's running one.
    seen = east.show_job(job)
    assert re.search(r"\bFedViableSiblings=west\b", seen), seen
    # A list the regions split, with east full: the sibling in west is rewritten for a100.
    fillers = [submit(east, "-w", n, "--gres=gpu:8", "--clusters=east") for n in ("east01", "east02")]
    for j in fillers:
        east.wait_state(j, {"RUNNING"})
    both = submit(east, "--gres=gpu:4", directives=("gpu-type=h100,a100",))
    seen = east.show_job(both)
    assert re.search(r"\bFedViableSiblings=east,west\b", seen), seen
    wait_for(lambda: west.run(["squeue", "-h", "--local", "-j", both, "-o", "%T"]).out.strip() == "RUNNING",
             lambda: f"job {both} to run in west: {west.run(['squeue', '-h', '--local', '-j', both]).out!r}; "
                     f"east: {east.run(['squeue', '-h', '--local', '-j', both, '-o', '%T %r']).out!r}")
    wait_for(lambda: re.search(r"GRES=gpu:a100:4\(IDX:\d", local_job(west, both)),
             lambda: f"west's copy of {both} on a100 GPUs: {local_job(west, both)}", timeout=30)
    detail = local_job(west, both)
    assert "AdminComment=mlsched: type=training gpu-type=h100,a100 " in detail, detail


def test_a_region_whose_controller_is_down(regions, clean):
    """docs/regions.md, "When a region's controller is down": a job running there keeps
    running, a federated job waiting in both regions starts in the other, and `mlsched
    why` names the region that does not answer. The module's last test: west's
    controller stays down (the module's fixture removes both regions)."""
    east, west = regions
    kept = submit(west, "-w", "west01", "--gres=gpu:8", "--clusters=west")
    west_filler = submit(west, "-w", "west02", "--gres=gpu:8", "--clusters=west")
    east_fillers = [submit(east, "-w", n, "--gres=gpu:8", "--clusters=east") for n in ("east01", "east02")]
    for region, job in [(west, kept), (west, west_filler)] + [(east, j) for j in east_fillers]:
        region.wait_state(job, {"RUNNING"})
    job = submit(east, "--gres=gpu:8")
    wait_for(lambda: all(r.run(["squeue", "-h", "--local", "-j", job, "-o", "%T"]).out.strip() == "PENDING"
                         for r in regions), f"job {job} to wait in both regions")

    res = west.run(["scontrol", "shutdown", "slurmctld"])
    assert res.rc == 0, res
    wait_for(lambda: west.run(["scontrol", "ping"]).rc != 0 or "DOWN" in west.run(["scontrol", "ping"]).out,
             "west's slurmctld to stop")
    # The job west runs keeps running: slurmd does not need slurmctld for that.
    step = re.compile(rf"slurmstepd: \[{kept}\.batch\]")
    assert any(step.search(l) for l in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                      text=True).stdout.splitlines()), f"job {kept}'s step is gone"
    # mlsched why in east names west as not answering.
    out = wait_for(lambda: (o := east.run([str(TOOL), "why", job], user=USER).out) and
                   "west: no answer from its controller" in o and o,
                   lambda: f"mlsched why in east to name west as not answering: "
                           f"{east.run([str(TOOL), 'why', job], user=USER).out}")
    assert re.search(r"^  east \(here\): PENDING", out, re.M), out
    print(f"\nmlsched why {job} in east, west's controller down:\n{out}")
    # east frees a node: the job starts there without west.
    east.run(["scancel", east_fillers[0]])
    wait_for(lambda: east.run(["squeue", "-h", "--local", "-j", job, "-o", "%T"]).out.strip() == "RUNNING",
             lambda: f"job {job} to start in east: {east.run(['squeue', '-h', '--local', '-j', job]).out!r}")
    assert any(step.search(l) for l in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                      text=True).stdout.splitlines()), f"job {kept}'s step is gone"
    # Submitting to west fails at submission, with Slurm's message.
    res = west.run(["sbatch", "--parsable", "-A", TEAM, "-t", "1", "--clusters=west", "-D", west.workdir(USER)],
                   user=USER, stdin="#!/bin/bash\nsleep 1\n", timeout=180)
    print(f"sbatch --clusters=west with west's controller down: rc {res.rc}: {res.err.strip()}")
    assert res.rc != 0 and "'west' can't be reached now" in res.err, res
