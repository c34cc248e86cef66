"""Unit tests of the mlsched.conf that bench/replay/run gives the mlsched cluster
(no cluster needed):  python3 -m pytest -q bench/replay/test_run_conf.py
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scripts  # noqa: E402

run = scripts.load("run", "replay_run")


def settings(lines):
    """key (lowercase) -> list of values, of the non-comment Key=Value lines."""
    out = {}
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        key, value = text.split()[0].split("=", 1)
        out.setdefault(key.lower(), []).append(value)
    return out


def args(profile):
    return argparse.Namespace(mlsched_profile=profile, half_life_minutes=15, compression=5.0,
                              attained_thresholds="100,1000", attained_promote_after=300)


def test_default_profile_scales_the_trace_clock_settings_once():
    conf = settings(run.mlsched_conf_lines(args("default"), "60"))
    # Each replaced key once, with the replay's value: not the shipped 1d / 300 / 2h.
    assert conf["prioritymaxage"] == ["900"]
    assert conf["preemptminruntime"] == ["60"]
    assert conf["preemptforlargegangwait"] == ["1440"]
    assert "attainedservice" not in conf and "preemptforattainedservice" not in conf
    # The rest of etc/mlsched.conf comes along (its NVLink domains, weights).
    assert len(conf["nvlinkdomain"]) == 4 and conf["priorityweightfairshare"] == ["10000"]


def test_ml_profile_appends_the_levers_with_the_replays_levels():
    conf = settings(run.mlsched_conf_lines(args("ml"), "60"))
    assert conf["attainedservice"] == ["all"]
    assert conf["preemptforattainedservice"] == ["yes"]
    # The profile's 1h,10h and 2h are replaced, not repeated.
    assert conf["attainedservicethresholds"] == ["100,1000"]
    assert conf["attainedservicepromoteafter"] == ["300"]
    assert conf["prioritymaxage"] == ["900"]
    # Reservations for large gangs, after 10 min of trace time (compression 5: 120 s).
    assert conf["reserveforganggpus"] == ["16"]
    assert conf["reserveforgangwait"] == ["120"]


def test_gpu_speed_is_given_to_mlsched_as_gpu_type_speed():
    a = args("default")
    assert "gputypespeed" not in settings(run.mlsched_conf_lines(a, "60"))
    a.gpu_speed = {"h100": 1.8, "a100": 1.0}
    assert settings(run.mlsched_conf_lines(a, "60"))["gputypespeed"] == ["a100:1,h100:1.8"]


def test_mlsched_set_lines_come_last_so_they_win():
    a = args("ml")
    a.mlsched_set = ["PreemptForNonPreemptible=yes"]
    lines = run.mlsched_conf_lines(a, "60")
    assert lines[-1] == "PreemptForNonPreemptible=yes\n"
    assert settings(lines)["preemptfornonpreemptible"] == ["yes"]


def test_a_rewritten_report_names_what_the_run_gave_mlsched_not_the_rewrites_arguments():
    report = run.report
    a = args("ml")
    a.mlsched_set = ["PriorityWeightNonPreemptible=0"]
    conf = "".join(run.mlsched_conf_lines(a, "60"))
    # --report-only with none of the run's arguments: the kept mlsched.conf says what ran.
    text = report.mlsched_profile_text(args("default"), conf)
    assert text.startswith("ML cluster profile: ") and "`AttainedService=all`" in text
    assert text.endswith("(`--mlsched-set`): `PriorityWeightNonPreemptible=0`")
    plain = "".join(run.mlsched_conf_lines(args("default"), "60"))
    text = report.mlsched_profile_text(args("ml"), plain)
    assert text.startswith("default: ") and "--mlsched-set" not in text
    # No kept mlsched.conf (a run recorded before it was kept): the arguments.
    assert report.mlsched_profile_text(a, None).startswith("ML cluster profile: ")
    assert report.mlsched_profile_text(args("default"), None).startswith("default: ")


def test_compute_splits_1gpu_waits_by_type_and_preemptibility():
    import topology
    topo = topology.Topology()
    topo.nodes["n0"] = {"gpu_type": "h100", "gpus": 8, "clique_of": [0] * 8, "domain": None, "switch": "sw0"}
    jobs = [{"n": 0, "submit": 0, "work": 10.0, "gpus": 1, "nodes": 1, "gpu_type": "h100", "best_effort": False},
            {"n": 1, "submit": 0, "work": 10.0, "gpus": 1, "nodes": 1, "gpu_type": "h100", "best_effort": True},
            {"n": 2, "submit": 0, "work": 10.0, "gpus": 1, "nodes": 1, "gpu_type": "any", "best_effort": False},
            {"n": 3, "submit": 0, "work": 10.0, "gpus": 8, "nodes": 1, "gpu_type": "h100", "best_effort": False}]
    attempts = [{"name": "r%d" % n, "jobid": str(n), "state": "COMPLETED", "submit": 0.0, "start": start,
                 "end": start + 10.0, "gpus": g, "team": "a"}
                for n, start, g in ((0, 30.0, 1), (1, 2.0, 1), (2, 4.0, 1), (3, 0.0, 8))]
    meta = {"load_offered": 1.0, "team_entitlement": {"a": 1.0}}
    out = run.compute(meta, jobs, attempts, [], topo, 60.0, 60.0)
    kinds = out["wait_1gpu_by_kind"]
    assert sorted(kinds) == ["any, not preemptible", "h100, not preemptible", "h100, preemptible"]
    assert kinds["h100, not preemptible"]["mean"] == 30.0 and kinds["h100, preemptible"]["mean"] == 2.0
    assert kinds["any, not preemptible"]["n"] == 1   # the 8-GPU job is in no 1-GPU kind


def test_the_plugins_a_run_loaded_are_named_by_a_digest_of_the_staged_files(tmp_path):
    lib = tmp_path / "usr" / "local" / "lib" / "mlsched"
    lib.mkdir(parents=True)
    (lib / "select_mlsched.so").write_bytes(b"one build")
    (lib / "priority_mlsched.so").write_bytes(b"same")
    first = run.plugins_digest(str(tmp_path))
    assert len(first) == 12
    (lib / "select_mlsched.la").write_text("libtool's note: not a plugin")
    assert run.plugins_digest(str(tmp_path)) == first
    (lib / "select_mlsched.so").write_bytes(b"another build")
    assert run.plugins_digest(str(tmp_path)) != first
