"""Unit tests of issue 11's targets over seeds (seeds.py; no cluster needed):
    python3 -m pytest -q bench/replay/test_seeds.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seeds  # noqa: E402
import topology  # noqa: E402


def side(mean_jct, p95, alloc=100.0, jain=0.99, lost=0.5, preemptions=10, ideal=None):
    """One cluster's results: p95 = {class: (wait p95, jct p95)}."""
    return {"jct": {"mean": mean_jct},
            "by_size": {c: {"wait": {"p95": w}, "jct": {"p95": j}} for c, (w, j) in p95.items()},
            "alloc_mean_window": alloc, "jain": jain, "gpu_hours_lost": lost, "preemptions": preemptions,
            "ideal_jct": ideal}


def run(seed, stock, mlsched, penalty="on", representative=True):
    return {"meta": {"seed": seed, "jobs": 768, "gangs_16_plus": 7, "mix_gap_points": 0.6,
                     "representative": representative}, "load": "1.5", "penalty": penalty, "loadavg_mean": 1.0, "loadavg_max": 2.0,
            "stock": stock, "mlsched": mlsched}


STOCK = {"1": (100.0, 200.0), "2-8": (300.0, 600.0), "16+": (900.0, 1200.0)}


def test_every_target_met_in_every_seed():
    good = {"1": (100.0, 200.0), "2-8": (300.0, 600.0), "16+": (150.0, 1100.0)}
    runs = [run(s, side(100.0, STOCK), side(65.0, good, ideal={"fifo": 80.0, "sjf": 70.0, "srpt": 60.0}))
            for s in (3, 1, 2)]
    text = "\n".join(seeds.table(runs))
    assert "| | seed 1 | seed 2 | seed 3 |" in text   # seeds in order
    assert "| job list: jobs; 16+ GPU jobs; GPU-time mix gap to the trace (points) | 768; 7; 0.6 | 768; 7; 0.6 | " \
           "768; 7; 0.6 |  | representative: yes in all 3 |" in text
    assert "| mean JCT, mlsched / stock | 0.65 | 0.65 | 0.65 | 0.65 (0.65-0.65) | <= 0.70: met in all 3 |" in text
    assert "| idealised SJF, oracle / stock's measured | 0.70 | 0.70 | 0.70 | 0.70 (0.70-0.70) | below 0.70 in 3 of 3 |" in text
    assert "missed" not in text


def test_a_miss_is_named_with_its_seed_count_and_margin():
    bad = {"1": (100.0, 230.0), "2-8": (300.0, 600.0), "16+": (950.0, 1200.0)}
    runs = [run(1, side(100.0, STOCK), side(65.0, STOCK)),
            run(2, side(100.0, STOCK), side(90.0, bad, alloc=97.0, jain=0.98), representative=False)]
    text = "\n".join(seeds.table(runs))
    assert "<= 0.70: **missed** in 1 of 2, by up to 0.20 |" in text
    assert "representative: **no** in 1 of 2 |" in text
    # 16+ p95 wait: 950 against stock's 900 in seed 2, and 9.5x its 1-GPU p95 wait.
    assert "<= stock's: **missed** in 1 of 2, by up to 50.0 s |" in text
    assert "| mlsched 16+ GPU p95 wait / its 1-GPU p95 wait | 9.00 | 9.50 | 9.25 (9.00-9.50) | <= 2: **missed** in 2 of 2, by up to 7.50x |" in text
    assert "| p95 JCT, 1 GPU, mlsched / stock | 1.00 | 1.15 | 1.07 (1.00-1.15) | <= 1.10: **missed** in 1 of 2, by up to 0.05 |" in text
    assert ">= stock's - 2 %: **missed** in 1 of 2, by up to 1.0 GPUs |" in text
    assert "| Jain's index of team shares, stock / mlsched | 0.990 / 0.990 | 0.990 / 0.980 |  | >= stock's: **missed** in 1 of 2" in text


def test_penalty_off_has_its_own_target_and_table():
    runs = [run(1, side(100.0, STOCK), side(80.0, STOCK), penalty="off"),
            run(1, side(100.0, STOCK), side(80.0, STOCK), penalty="on")]
    text = "\n".join(seeds.table(runs))
    assert "### Load 1.5, penalty off: 1 seed (1)" in text and "### Load 1.5, penalty on: 1 seed (1)" in text
    assert "<= 0.85: met in all 1 |" in text and "<= 0.70: **missed** in 1 of 1, by up to 0.10 |" in text


def recorded_run(data_dir, gpu_type, mlsched_mean):
    """A run directory as `run` records it: one 1-GPU job of 20 s of work on gpu_type,
    finished in 25 s on both clusters; results.json with stock's mean JCT 25 s and
    mlsched's `mlsched_mean`."""
    run_dir = data_dir / "run1-load1.5-penalty-on"
    run_dir.mkdir(parents=True)
    jobs = [{"n": 0, "submit": 0, "work": 20.0, "gpus": 1, "nodes": 1, "gpu_type": gpu_type}]
    (run_dir / "jobs.json").write_text(json.dumps({"meta": {}, "jobs": jobs}))
    rec = {"attempts": [{"name": "r0", "jobid": "1", "state": "COMPLETED", "submit": 0, "start": 0, "end": 25,
                         "gpus": 1, "team": "a"}], "segments": []}
    for s in ("stock", "mlsched"):
        (run_dir / ("%s-records.json" % s)).write_text(json.dumps(rec))
    (run_dir / "results.json").write_text(json.dumps(run(1, side(25.0, STOCK), side(mlsched_mean, STOCK))))
    return run_dir


def test_recorded_runs_get_their_idealised_schedules_and_speeds(tmp_path):
    run_dir = recorded_run(tmp_path / "replay-data", "h100", 25.0)
    (run_dir / "mlsched.conf").write_text("#GpuTypeSpeed=h100:1.8,a100:1.0\nGpuTypeSpeed=a100:1,h100:2\n")
    assert seeds.run_speed(str(run_dir)) == {"a100": 1.0, "h100": 2.0}
    topo = topology.Topology()
    topo.nodes["n0"] = {"gpu_type": "h100", "gpus": 8, "clique_of": [0] * 8, "domain": None, "switch": "sw0"}
    [r] = seeds.load(str(tmp_path), topo)
    assert r["mlsched"]["ideal_jct"] == {"fifo": 10.0, "sjf": 10.0, "srpt": 10.0}
    assert seeds.load(str(tmp_path / "nothing")) == []


def test_seed_and_run_directories():
    assert seeds.seed_dir("/o", 3, [3]) == "/o"
    assert seeds.seed_dir("/o", 3, [1, 3]) == "/o/seed3"
    assert seeds.run_dir("/o/seed3", 2, "1.5", "off") == "/o/seed3/replay-data/run2-load1.5-penalty-off"


def test_ideal_table_rows_are_ratios_to_stocks_measured_mean():
    r = run(1, side(100.0, STOCK, ideal={"fifo": 80.0, "sjf": 70.0, "srpt": 60.0}),
            side(90.0, STOCK, ideal={"fifo": 85.0, "sjf": 75.0, "srpt": None}))
    lines = seeds.ideal_table([("seed1/run1", r)])
    assert lines[2] == "| seed1/run1 | stock | 100.0 | 80.0 / 70.0 / 60.0 | 1.00 / 0.80 / 0.70 / 0.60 |"
    # A missing reference shows as '-', never as a number.
    assert lines[3] == "| seed1/run1 | mlsched | 90.0 | 85.0 / 75.0 / - | 0.90 / 0.85 / 0.75 / - |"


def test_ideal_cli_reads_a_recorded_run_and_rejects_what_is_not_one(tmp_path):
    import subprocess
    run_dir = recorded_run(tmp_path / "out" / "replay-data", "a100", 40.0)
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ideal")
    out = subprocess.run([tool, str(run_dir)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # The default shape has a100 nodes: the one job runs its 20 s of work at once.
    assert "| out/run1-load1.5-penalty-on | mlsched | 40.0 | 20.0 / 20.0 / 20.0 | 1.60 / 0.80 / 0.80 / 0.80 |" \
        in out.stdout
    bad = subprocess.run([tool, str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1 and "not a replay run directory" in bad.stderr


def test_the_gang_target_is_shown_beside_the_idealised_schedules_ratio():
    m1, m2 = side(65.0, STOCK), side(65.0, STOCK)
    m1["ideal_gang_over_small"] = {"fifo": 12.0, "sjf": 20.5}
    m2["ideal_gang_over_small"] = {"fifo": 1.5, "sjf": None}
    text = "\n".join(seeds.table([run(1, side(100.0, STOCK), m1), run(2, side(100.0, STOCK), m2)]))
    assert "| idealised FIFO: 16+ GPU p95 wait / 1-GPU p95 wait | 12.00 | 1.50 | 6.75 (1.50-12.00) | below 2 in 1 of 2 |" in text
    assert "| idealised SJF, oracle: 16+ GPU p95 wait / 1-GPU p95 wait | 20.50 | - | 20.50 (20.50-20.50) | below 2 in 0 of 2 |" in text


def test_pooled_runs_compare_mlsched_configurations_with_stocks_mean_over_all_runs():
    import report
    base = report.conf_settings("PriorityWeightQuota=10000\nJobType=training  Preemptible=yes\n# a comment\n")
    term = report.conf_settings("PriorityWeightQuota=10000\nJobType=training Preemptible=yes\n"
                                "# bench/replay: --mlsched-set\nPriorityWeightQuota=5000\n")
    # A later one-word line wins; a record line is kept whole, its spacing normalised.
    assert term == {"PriorityWeightQuota=5000", "JobType=training Preemptible=yes"}
    r = lambda seed, stock, mlsched, penalty="on": run(seed, side(stock, STOCK), side(mlsched, STOCK), penalty)
    # c first: the rows are told apart from the configuration with most runs, not the first.
    entries = [("c", r(1, 100.0, 100.0), term, "d1", "p1"),
               ("a", r(1, 120.0, 110.0), base, "d1", "p1"), ("b", r(1, 140.0, 112.0), base, "d1", "p1"),
               ("d", r(1, 140.0, 90.0), base, "d1", "p2"),        # another build of the plugins
               ("e", r(1, 90.0, 80.0), base, "d2", "p1"),         # another job list: its own table
               ("f", r(1, 120.0, 100.0, "off"), base, "d1", None)]
    text = "\n".join(seeds.pooled_table(entries))
    # Stock pooled over a, b, c, d: 125.0; mlsched's base configuration over a, b: 111.0.
    assert "| stock | - | c, a, b, d (4) | 125.0 (100.0-140.0) | 1.00 | - |" in text
    # Each run over its own stock run: 110/120 and 112/140.
    assert "| mlsched | p1 | a, b (2) | 111.0 (110.0-112.0) | 0.89 | 0.86 (0.80-0.92) |" in text
    assert "| mlsched: + `PriorityWeightQuota=5000`, - `PriorityWeightQuota=10000` | p1 | c (1) | 100.0 | 0.80 | " \
           "1.00 |" in text
    assert "| mlsched | p2 | d (1) | 90.0 | 0.72 | 0.64 |" in text
    assert text.count("### Seed 1, load 1.5, penalty on") == 2
    assert "| mlsched | not recorded | f (1) | 100.0 | 0.83 | 0.83 |" in text


def test_reserve_for_gang_wait_is_read_from_the_runs_own_mlsched_conf(tmp_path):
    assert seeds.reserve_for_gang_wait(str(tmp_path)) == 600.0          # no mlsched.conf: mlsched's default
    (tmp_path / "mlsched.conf").write_text("ReserveForGangGpus=16\nReserveForGangWait=120\n")
    assert seeds.reserve_for_gang_wait(str(tmp_path)) == 120.0
    (tmp_path / "mlsched.conf").write_text("ReserveForGangWait=120\n# bench/replay: --mlsched-set\nReserveForGangWait=0\n")
    assert seeds.reserve_for_gang_wait(str(tmp_path)) == 0.0             # the later line wins
    (tmp_path / "mlsched.conf").write_text("ReserveForGangWait=10m\n")
    assert seeds.reserve_for_gang_wait(str(tmp_path)) == 600.0


def test_the_mean_with_jobs_cut_at_the_cap_is_shown_beside_the_finished_jobs_mean():
    s, m = side(100.0, STOCK), side(80.0, STOCK)
    s["jct_with_cut"], m["jct_with_cut"] = {"mean": 100.0, "cut": 0}, {"mean": 90.0, "cut": 4}
    text = "\n".join(seeds.table([run(1, s, m)]))
    assert "| mean JCT, mlsched / stock | 0.80 |" in text
    assert "| the same, jobs cut at the drain cap counted up to it (cut: stock / mlsched) | 0.90 (0 / 4) | " \
           "0.90 (0.90-0.90) | <= 0.70: **missed** in 1 of 1, by up to 0.20 |" in text
    # Runs recorded without the records (no figure): no row.
    assert "cut at the drain cap" not in "\n".join(seeds.table([run(1, side(100.0, STOCK), side(80.0, STOCK))]))
