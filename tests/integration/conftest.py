"""Fixtures for integration tests against the real local Slurm cluster.

The cluster (munged, MariaDB, slurmdbd, slurmctld, several slurmd with fake typed
GPUs) is started by scripts/cluster; scripts/test brings it up with our plugins
before pytest runs. Tests talk to it only through Slurm's own commands, run as the
cluster's real Unix test users, and assert on what those users would see.
"""
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(os.environ.get("MLSCHED_CLUSTER_DIR", "/tmp/mlsched-cluster"))
SLURM_CONF = CLUSTER_DIR / "etc" / "slurm.conf"
# The mlsched tool of the build under test (scripts/test sets MLSCHED_BUILD_DIR per Slurm release).
TOOL = Path(os.environ.get("MLSCHED_BUILD_DIR", REPO / "build")) / "src" / "tools" / "mlsched" / "mlsched"


def require_tool():
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is not built (scripts/build, or set MLSCHED_BUILD_DIR)")


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return f"rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}"


class Cluster:
    """Runs Slurm commands against a test cluster, as root or as a test user."""

    def __init__(self, directory=CLUSTER_DIR):
        self.dir = Path(directory)
        self.conf = self.dir / "etc" / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        # `scripts/test --sanitize`: Slurm's clients dlopen the sanitized plugins too, so
        # they need the runtime preloaded, as scripts/cluster gives the daemons.
        if os.environ.get("MLSCHED_SANITIZER_PRELOAD"):
            self.env["LD_PRELOAD"] = os.environ["MLSCHED_SANITIZER_PRELOAD"]

    def slurm_release(self):
        """(major, minor) of the Slurm the clients run, e.g. (24, 11): where what users
        see differs by release (README, "Slurm releases")."""
        out = self.run(["scontrol", "--version"]).out.split()
        major, minor = out[-1].split(".")[:2]
        return int(major), int(minor)

    def run(self, args, user=None, stdin=None, timeout=60):
        cmd = list(args)
        if user:
            cmd = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={self.conf}"] + cmd
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=self.env, timeout=timeout)
        return Result(proc)

    def workdir(self, user):
        return str(self.dir / "work" / user)

    def sbatch(self, user, script, *args, name=None):
        """Submits a batch script as `user`; returns (Result, job name)."""
        name = name or f"t-{uuid.uuid4().hex[:8]}"
        res = self.run(["sbatch", "--parsable", "-J", name, "-D", self.workdir(user), *args],
                       user=user, stdin=script)
        return res, name

    def job_id(self, res):
        assert res.rc == 0, res
        return res.out.strip().split(";")[0]

    def show_job(self, job_id, detail=False):
        args = ["scontrol", "show", "job"] + (["-d"] if detail else []) + [str(job_id)]
        res = self.run(args)
        assert res.rc == 0, res
        return res.out

    def job_field(self, job_id, field):
        text = self.show_job(job_id)
        # scontrol's keys are CamelCase; a value runs to the next such key or the line's
        # end, so values with spaces (AdminComment=mlsched: type=...) stay whole.
        m = re.search(r"(?:^|\s)" + re.escape(field) + r"=(.*?)(?=\s+[A-Z][\w:/]*=|\s*$)", text, re.M)
        return m.group(1).strip() if m else None

    def alloc_tres(self, job_id):
        """What a running job was allocated, as `scontrol show job` prints it: `TRES=` in
        22.05, `AllocTRES=` from 23.02 on (beside `ReqTRES=`)."""
        value = self.job_field(job_id, "AllocTRES")
        return value if value is not None else self.job_field(job_id, "TRES")

    def squeue_names(self, user):
        res = self.run(["squeue", "-h", "-u", user, "-o", "%j"])
        assert res.rc == 0, res
        return set(res.out.split())

    def wait_state(self, job_id, states, timeout=60):
        deadline = time.time() + timeout
        state = None
        while time.time() < deadline:
            state = self.job_field(job_id, "JobState")
            if state in states:
                return state
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} stayed {state}, wanted {states}")

    def cancel(self, job_id):
        self.run(["scancel", str(job_id)])


def has_tres(text, field, spec):
    """True if `scontrol show job` text shows `field` (TresPerNode, ...) as the GRES
    `spec` ("gpu:h100:8"). Slurm 22.05 prints it as gres:gpu:..., 24.11 as gres/gpu:...;
    either is what the user sees for the same request."""
    return re.search(r"(?:^|\s)" + re.escape(field) + r"=gres[:/]" + re.escape(spec) + r"(?=\s|,|$)", text, re.M) is not None


def wait_for(condition, what, timeout=90, interval=0.2):
    """Polls `condition` until it returns something true and returns that. `what` may be
    a function, called on timeout, so the message shows the state at that moment."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")


class MlschedConf:
    """The cluster's mlsched.conf, changed for one test and put back after it.

    The plugins re-read the file by themselves (a watcher thread); each one logs
    "<plugin>: loaded <path>" to slurmctld's log when a new version took effect,
    or names every problem and keeps the previous one."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.path = cluster.dir / "etc" / "mlsched.conf"
        self.original = self.path.read_text()
        self.log = cluster.dir / "log" / "slurmctld.log"
        self.changed = False
        self.jobs = []  # the test's jobs: cancelled, and waited for, before the file comes back

    def log_offset(self):
        return self.log.stat().st_size

    def log_since(self, start):
        return self.log.read_bytes()[start:].decode(errors="replace")

    def wait_log(self, pattern, start, what, timeout=60):
        return wait_for(lambda: re.search(pattern, self.log_since(start)) and self.log_since(start), what, timeout)

    def write(self, text, plugin=None, reconfigure=False):
        """Replaces the file by the original followed by `text`; with `plugin`
        ("priority/mlsched"), waits until that plugin has loaded it. Returns the
        log offset from before the change."""
        start = self.log_offset()
        self.path.write_text(self.original + "\n" + text + "\n")
        self.changed = True
        if reconfigure:
            assert self.cluster.run(["scontrol", "reconfigure"]).rc == 0
        if plugin:
            self.wait_log(rf"{re.escape(plugin)}: loaded \S*mlsched\.conf", start,
                          f"{plugin} to load the new mlsched.conf")
        return start

    def append(self, *lines, plugin=None, tag="test"):
        return self.write(f"# {tag}\n" + "\n".join(lines), plugin=plugin)

    def cancel_jobs(self):
        for job in self.jobs:
            self.cluster.cancel(job)
        if self.jobs:
            wait_for(lambda: not self.cluster.run(["squeue", "-h", "-t", "PD,R,CG", "-j", ",".join(self.jobs)]).out.strip(),
                     "the test's jobs to leave the cluster", timeout=90)

    def restore(self):
        self.cancel_jobs()
        if self.changed:
            start = self.log_offset()
            self.path.write_text(self.original)
            self.changed = False
            # The next test must see the original settings, not the test's.
            self.wait_log(r"mlsched: loaded \S*mlsched\.conf", start, "the original mlsched.conf to be loaded again")


@pytest.fixture
def mlsched_conf(cluster):
    conf = MlschedConf(cluster)
    yield conf
    conf.restore()


@pytest.fixture(scope="session")
def cluster():
    c = Cluster()
    res = c.run(["sinfo", "-h", "-o", "%D %T"])
    if res.rc != 0:
        pytest.fail("the test cluster is not running: start it with scripts/cluster up "
                    f"--plugins mlsched (see scripts/test)\n{res}")
    conf = SLURM_CONF.read_text()
    if "JobSubmitPlugins=mlsched" not in conf.replace(" ", ""):
        pytest.fail("the test cluster runs without job_submit/mlsched (scripts/cluster up --plugins mlsched)")
    if TOOL.exists():
        # A tool built with another Slurm release cannot talk to this controller: every
        # request the tests and the jobs' `mlsched ckpt` make would fail far from here.
        version = subprocess.run([str(TOOL), "--version"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"Slurm (\d+\.\d+)", version)
        built, running = (m.group(1) if m else repr(version.strip())), "%d.%02d" % c.slurm_release()
        if built != running:
            pytest.fail(f"{TOOL} was built with Slurm {built} and the cluster runs {running}: "
                        "set MLSCHED_BUILD_DIR to the build for the cluster's release (scripts/test does)")
    return c


@pytest.fixture(scope="session")
def stock_cluster():
    """A second cluster of the same shape running stock Slurm (cons_tres, multifactor),
    for tests that show what mlsched changes. Started on demand, removed afterwards."""
    directory = os.environ.get("MLSCHED_STOCK_CLUSTER_DIR", "/tmp/mlsched-stock")
    port_base = os.environ.get("MLSCHED_STOCK_PORT_BASE", "20800")
    # Started empty: jobs an earlier run left behind would change what the tests see.
    subprocess.run([str(REPO / "scripts" / "cluster"), "down", "--purge", "--dir", directory],
                   capture_output=True, text=True, timeout=300)
    up = subprocess.run([str(REPO / "scripts" / "cluster"), "up", "--plugins", "stock", "--dir", directory,
                         "--port-base", port_base], capture_output=True, text=True, timeout=300)
    if up.returncode != 0:
        pytest.fail(f"the stock comparison cluster did not start:\n{up.stderr}")
    yield Cluster(directory)
    subprocess.run([str(REPO / "scripts" / "cluster"), "down", "--purge", "--dir", directory],
                   capture_output=True, text=True, timeout=300)
