"""mlsched.conf changes reach the running slurmctld; a broken file keeps the old
configuration and the log names every problem."""
import re
import time

ALICE = "ml-alice"


def log_path(cluster):
    res = cluster.run(["scontrol", "show", "config"])
    return re.search(r"SlurmctldLogFile\s*=\s*(\S+)", res.out).group(1)


def wait_for_log(path, pattern, start, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path, errors="replace") as f:
            f.seek(start)
            text = f.read()
        if re.search(pattern, text):
            return text
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} never appeared in {path}")


def grace_cap_seen_by_user(cluster):
    res, name = cluster.sbatch(ALICE, "#!/bin/bash\n#MLSCHED checkpoint-grace=5h\nsleep 1\n",
                               "-A", "vision", "--gres=gpu:1", "-H")
    job = cluster.job_id(res)
    cluster.cancel(job)
    m = re.search(r"capped to (\d+) seconds", res.err)
    assert m, res
    return int(m.group(1))


def test_reload_and_bad_file(cluster):
    conf = cluster.dir / "etc" / "mlsched.conf"
    original = conf.read_text()
    log = log_path(cluster)
    try:
        before = grace_cap_seen_by_user(cluster)
        # A file with a typo: the old configuration stays, the log says where.
        start = open(log, "rb").seek(0, 2)
        conf.write_text(original + "\nMaxCheckpointGrace=900\nMaxCheckpointGrase=60\n")
        assert cluster.run(["scontrol", "reconfigure"]).rc == 0
        text = wait_for_log(log, r"unknown key 'MaxCheckpointGrase'; did you mean 'MaxCheckpointGrace'\?", start)
        assert "keeping the previous configuration" in text, text
        assert grace_cap_seen_by_user(cluster) == before

        # A good file takes effect without restarting slurmctld.
        start = open(log, "rb").seek(0, 2)
        conf.write_text(original + "\nMaxCheckpointGrace=900\n")
        assert cluster.run(["scontrol", "reconfigure"]).rc == 0
        wait_for_log(log, r"job_submit/mlsched: loaded .*mlsched\.conf", start)
        assert grace_cap_seen_by_user(cluster) == 900
    finally:
        start = open(log, "rb").seek(0, 2)
        conf.write_text(original)
        wait_for_log(log, r"job_submit/mlsched: loaded .*mlsched\.conf", start)
