"""Unit tests of bench/replay/prepare's choice of a representative window, on a
synthetic trace (no cluster, no ../shared needed):
    python3 -m pytest -q bench/replay/test_prepare.py
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scripts  # noqa: E402

prepare = scripts.load("prepare")


def job(n, submit, gpus, duration=600.0):
    return {"trace_id": str(n), "group": "g%d" % (n % 3), "gpus": gpus, "submit": submit,
            "duration": duration, "best_effort": False, "model": ""}


def test_size_classes_follow_the_report():
    assert [prepare.size_class(g) for g in (1, 2, 8, 16, 32)] == ["1", "2-8", "2-8", "16+", "16+"]


def test_mix_is_gpu_time_not_job_count():
    jobs = [job(0, 0, 1, 100.0), job(1, 0, 1, 100.0), job(2, 0, 16, 100.0)]
    mix = prepare.gpu_time_mix(jobs, lambda j: j["duration"])
    assert mix == {"1": 11.1, "2-8": 0.0, "16+": 88.9}


def synthetic_trace():
    """The busiest hour holds only 1-GPU jobs; a quieter hour later has the
    trace's mix with gangs in it."""
    jobs, n = [], 0
    for i in range(400):                 # hour 0: busiest, all 1-GPU
        jobs.append(job(n, i * 9.0, 1, 3000.0)); n += 1
    for i in range(60):                  # hour 2: mixed, with 16-GPU gangs
        gpus = (1, 4, 8, 16)[i % 4]
        jobs.append(job(n, 7200.0 + i * 60.0, gpus, 600.0)); n += 1
    return jobs


def test_busiest_window_is_skipped_when_it_is_not_representative():
    jobs = synthetic_trace()
    dur = lambda j: min(j["duration"], 1800.0)
    wanted = prepare.gpu_time_mix([j for j in jobs if j["submit"] >= 7200], dur)
    start, ok, mix, gangs = prepare.representative_window(
        jobs, 3600.0, dur, target=1e12, seed=1, trace_mix=wanted, tolerance=5.0, min_gangs=5)
    assert ok and gangs >= 5
    assert start >= 3600.0, start  # not the busiest hour, which has no gang
    assert prepare.mix_distance(mix, wanted) <= 5.0


def test_no_window_qualifies_says_so():
    jobs = [job(n, n * 10.0, 1) for n in range(100)]
    start, ok, mix, gangs = prepare.representative_window(
        jobs, 600.0, lambda j: j["duration"], target=1e12, seed=1,
        trace_mix={"1": 30.0, "2-8": 60.0, "16+": 10.0}, tolerance=5.0, min_gangs=5)
    assert not ok and gangs == 0 and mix["1"] == 100.0


def test_prepare_records_both_mixes_and_names_the_trace_by_file(tmp_path):
    trace = tmp_path / "tiny.csv"
    rows = ["job_id,user,num_gpu,submit_time,duration,best_effort"]
    for j in synthetic_trace():
        rows.append("%s,%s,%d,%.0f,%.0f,0" % (j["trace_id"], j["group"], j["gpus"], j["submit"], j["duration"]))
    trace.write_text("\n".join(rows) + "\n")
    out = tmp_path / "jobs.json"
    res = subprocess.run([sys.executable, os.path.join(HERE, "prepare"), "--trace", str(trace), "--out", str(out),
                          "--minutes", "12", "--compression", "5", "--load", "0.5", "--min-gangs", "1",
                          "--mix-tolerance", "100"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "GPU-time by size" in res.stderr
    meta = json.load(open(out))["meta"]
    assert meta["trace"] == "tiny.csv" and len(meta["trace_sha256"]) == 64
    assert str(tmp_path) not in json.dumps(meta)
    assert set(meta["gpu_time_mix_trace"]) == {"1", "2-8", "16+"}
    assert meta["representative"] is True and meta["gangs_16_plus"] >= 1
