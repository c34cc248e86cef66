"""mlsched.conf changes reach the running slurmctld; a broken file keeps the old
configuration and the log names every problem."""
import re

ALICE = "ml-alice"


def grace_cap_seen_by_user(cluster):
    res, name = cluster.sbatch(ALICE, "#!/bin/bash\n#MLSCHED checkpoint-grace=5h\nsleep 1\n",
                               "-A", "vision", "--gres=gpu:1", "-H")
    job = cluster.job_id(res)
    cluster.cancel(job)
    m = re.search(r"capped to (\d+) seconds", res.err)
    assert m, res
    return int(m.group(1))


def test_reload_and_bad_file(cluster, mlsched_conf):
    before = grace_cap_seen_by_user(cluster)
    # A file with a typo: the old configuration stays, the log says where.
    start = mlsched_conf.write("MaxCheckpointGrace=900\nMaxCheckpointGrase=60", reconfigure=True)
    text = mlsched_conf.wait_log(r"unknown key 'MaxCheckpointGrase'; did you mean 'MaxCheckpointGrace'\?", start,
                                 "the log to name the unknown key", timeout=30)
    assert "keeping the previous configuration" in text, text
    assert grace_cap_seen_by_user(cluster) == before

    # A good file takes effect without restarting slurmctld.
    mlsched_conf.write("MaxCheckpointGrace=900", plugin="job_submit/mlsched", reconfigure=True)
    assert grace_cap_seen_by_user(cluster) == 900


def test_empty_file_keeps_the_previous_configuration(cluster, mlsched_conf):
    # An empty mlsched.conf (a write cut short) must not silently become all
    # defaults (no NVLink domains, MaxCheckpointGrace back to 600).
    mlsched_conf.write("MaxCheckpointGrace=900", plugin="job_submit/mlsched", reconfigure=True)
    assert grace_cap_seen_by_user(cluster) == 900
    start = mlsched_conf.log_offset()
    mlsched_conf.path.write_text("# emptied\n")
    assert cluster.run(["scontrol", "reconfigure"]).rc == 0
    text = mlsched_conf.wait_log(r"has no settings \(empty or only comments\)", start,
                                 "the log to refuse the empty file", timeout=30)
    assert "keeping the previous configuration" in text, text
    assert grace_cap_seen_by_user(cluster) == 900
    # A missing file is the same: the previous configuration stays.
    start = mlsched_conf.log_offset()
    mlsched_conf.path.unlink()
    assert cluster.run(["scontrol", "reconfigure"]).rc == 0
    mlsched_conf.wait_log(r"mlsched\.conf: cannot be read", start, "the log to name the missing file", timeout=30)
    assert grace_cap_seen_by_user(cluster) == 900
