"""Unit test of bench/replay/explain on a made-up replay (no cluster needed):
    python3 -m pytest -q bench/replay/test_explain.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scripts  # noqa: E402

explain = scripts.load("explain")


def test_parts_of_the_mean_and_what_a_waiting_job_waited_behind(tmp_path):
    # One 1-GPU job that may not be preempted (r0) and a preemptible one (r1), both on
    # h100. On stock r0 starts at once; on mlsched r1 holds gpu01's 8 GPUs and the
    # rest of h100 is full of r2 (8 GPUs x 7 nodes, not preemptible) until 50, so r0
    # waits 0-50 behind the preemptible job. mlsched kept a reservation of gpu08.
    jobs = {"meta": {"shape": "default.shape"},
            "jobs": [{"n": 0, "gpus": 1, "gpu_type": "h100", "team": "a", "best_effort": False, "submit": 0},
                     {"n": 1, "gpus": 8, "gpu_type": "h100", "team": "a", "best_effort": True, "submit": 0},
                     {"n": 2, "gpus": 56, "gpu_type": "h100", "team": "a", "best_effort": False, "submit": 0}]}
    att = lambda n, start, end: {"name": "r%d" % n, "jobid": str(n), "state": "COMPLETED", "submit": 0,
                                 "start": start, "end": end, "gpus": jobs["jobs"][n]["gpus"], "team": "a"}
    seg = lambda n, start, end, alloc: {"name": "r%d" % n, "job": str(n), "start": start, "end": end,
                                        "release": end, "alloc": alloc}
    others = {"gpu0%d" % k: list(range(8)) for k in range(2, 9)}
    records = {
        "stock": {"attempts": [att(0, 0, 10), att(1, 10, 60), att(2, 0, 50)],
                  "segments": [seg(0, 0, 10, {"gpu01": [0]}), seg(1, 10, 60, {"gpu01": list(range(8))}),
                               seg(2, 0, 50, others)]},
        "mlsched": {"attempts": [att(0, 50, 60), att(1, 0, 50), att(2, 0, 50)],
                    "segments": [seg(0, 50, 60, {"gpu01": [0]}), seg(1, 0, 50, {"gpu01": list(range(8))}),
                                 seg(2, 0, 50, others)]},
    }
    run = tmp_path / "out" / "replay-data" / "run1-load1.5-penalty-on"
    run.mkdir(parents=True)
    (run / "jobs.json").write_text(json.dumps(jobs))
    # Recorded before results.json carried the figures: explain computes them from the records.
    side = lambda mean: {"jct": {"mean": mean}, "ideal_jct": {}, "ideal_gang_over_small": {}}
    (run / "results.json").write_text(json.dumps({"t_run": 100, "stock": side(40.0), "mlsched": side(160 / 3)}))
    for c, r in records.items():
        (run / ("%s-records.json" % c)).write_text(json.dumps(r))
    (run / "mlsched-reservations.json").write_text(json.dumps(
        [{"job": "9", "gpus": 16, "nodes": ["gpu08"], "since": 20.0, "end": 40.0}]))
    a = explain.analyse(str(run))
    # Stock: JCTs 10, 60, 50 -> parts 10/3, 60/3, 50/3; mlsched: r0's JCT is 60.
    assert a["stock"]["parts"]["1, not preemptible"]["jct"] == 10 / 3
    assert a["mlsched"]["parts"]["1, not preemptible"] == {"jct": 20.0, "wait": 50 / 3, "finished": 1, "jobs": 1}
    assert abs(sum(p["jct"] for p in a["mlsched"]["parts"].values()) - a["mlsched"]["mean"]) < 1e-9
    assert a["stock"]["behind"]["preemptible"] == 0.0
    assert a["mlsched"]["behind"] == {"idle": 0.0, "idle_reserved": 0.0, "preemptible": 50.0, "lent": 0.0,
                                      "scattered": 0.0, "not_preemptible": 0.0}
    # gpu08 (8 GPUs) reserved 20 s while r2 held it: all of it not preemptible, nothing started there.
    u = a["mlsched"]["units"]
    assert u["unit_gpu_seconds"] == 160.0 and u["not_preemptible_gpu_seconds"] == 160.0
    assert u["not_preemptible_started"] == 0 and a["stock"]["units"] is None
    text = "\n".join(explain.report("out", a))
    assert "| 1, not preemptible | 3.3 (wait 0.0) | 20.0 (wait 16.7) | +16.7 |" in text
    assert "none idle; a preemptible job held one (off reserved units) | 0 (0 %) | 50 (100 %) |" in text
    # No 2-8 GPU job waited; nothing started on a node with room for one.
    assert "| a gang of 16+ GPUs | 0 (0) | 0 (0) |" in text
    # r2 (56 GPUs) started at once: no gang waited for a reservation.
    assert "Gangs of 16+ GPUs waited 0 s with their own reservation in force" in text
