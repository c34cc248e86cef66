"""Unit test of bench/replay/gang_quota on a made-up replay (no cluster needed):
    python3 -m pytest -q bench/replay/test_gang_quota.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scripts  # noqa: E402

gang_quota = scripts.load("gang_quota")


def seg(name, start, release, alloc, gpus):
    return {"name": name, "start": start, "release": release, "end": release, "alloc": alloc, "gpus": gpus}


def test_borrowing_share_and_starts_within_guarantee(tmp_path):
    # default.shape: gpu[01-08] h100 (64 GPUs). nlp is entitled to 0.25: 16 h100.
    # nlp's gang r1 (16 h100) waits 100 s, from 0 to 100; nlp holds 8 h100 until 50
    # (r0, submitted before the gang), so the gang would borrow for the first half of
    # its wait; then from 60 to 80 it holds r3's 8 (submitted after the gang), so
    # counting every team job the gang borrows longer. Meanwhile r2 (vision, within
    # its 32) and r3 (nlp, 0 + 8 <= 16, within) start.
    jobs = {"meta": {"shape": "default.shape", "team_entitlement": {"vision": 0.5, "nlp": 0.25, "research": 0.25}},
            "jobs": [{"n": 0, "gpus": 8, "gpu_type": "h100", "team": "nlp", "submit": -20},
                     {"n": 1, "gpus": 16, "gpu_type": "h100", "team": "nlp", "submit": 0},
                     {"n": 2, "gpus": 4, "gpu_type": "h100", "team": "vision", "submit": 5},
                     {"n": 3, "gpus": 8, "gpu_type": "any", "team": "nlp", "submit": 6}]}
    segments = [seg("r0", -10, 50, {"gpu01": list(range(8))}, 8),
                seg("r1", 100, 200, {"gpu02": list(range(8)), "gpu03": list(range(8))}, 16),
                seg("r2", 10, 20, {"gpu04": [0, 1, 2, 3]}, 4),
                seg("r3", 60, 80, {"gpu05": list(range(8))}, 8)]
    attempts = [{"name": s["name"], "submit": j["submit"]} for s, j in zip(segments, jobs["jobs"])]
    data = tmp_path / "replay-data" / "run1"
    data.mkdir(parents=True)
    (data / "jobs.json").write_text(json.dumps(jobs))
    for cluster in ("stock", "mlsched"):
        (data / ("%s-records.json" % cluster)).write_text(json.dumps({"attempts": attempts, "segments": segments}))
    rows = gang_quota.analyse(str(data))
    assert len(rows) == 2
    cluster, name, gpus, asked, ran_on, team, wait, borrowing, borrowing_older, others, within = rows[1]
    assert (cluster, name, gpus, asked, ran_on, team, wait) == ("mlsched", "r1", 16, "h100", "h100", "nlp", 100)
    # samples at 0, 10, ..., 100: nlp holds r0's 8 at 0-40 (5 samples) and r3's at 60-70 (2)
    assert abs(borrowing - 100.0 * 7 / 11) < 1e-9
    # r3 was submitted after the gang: only r0's 5 samples are left
    assert abs(borrowing_older - 100.0 * 5 / 11) < 1e-9
    assert (others, within) == (2, 2)
