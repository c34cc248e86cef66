"""Unit tests of the replay report's provenance (report.py; no cluster needed):
    python3 -m pytest -q bench/replay/test_report.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def test_a_run_is_credited_to_the_commit_it_started_from(monkeypatch):
    monkeypatch.setattr(report, "checkout_commit", lambda: "2f5236f")
    # The checkout moved on while the run was going: its figures are the start's.
    assert report.machine("99645ce")["commit"] == \
        "99645ce at the start (the checkout was at 2f5236f when this was written)"
    # It did not move, or the caller does not know where it started.
    assert report.machine("2f5236f")["commit"] == "2f5236f"
    assert report.machine()["commit"] == "2f5236f"


def test_the_profile_named_is_the_one_the_run_gave_mlsched():
    conf = ("PriorityWeightQuota=10000\n"
            "# bench/replay: the ML cluster profile (etc/mlsched-ml-profile.conf), levels scaled\n"
            "# a comment\nAttainedService=all\nReserveForGangGpus=16\nAttainedServiceThresholds=100,1000\n"
            "# bench/replay: --mlsched-set\nPriorityWeightNonPreemptible=10000\n")
    # What ran: the profile's lines as they were then, not the experiment's --mlsched-set.
    assert report.profile_levers(conf) == ["AttainedService=all", "ReserveForGangGpus=16"]
    # No run kept (or one before the marker): the profile as it is in the checkout.
    with open(os.path.join(report.REPO, "etc", "mlsched-ml-profile.conf")) as f:
        shipped = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    assert report.profile_levers(None) == [l for l in shipped if not l.lower().startswith(
        report.SCALED_PROFILE_KEYS)]
    assert "AttainedService=all" in report.profile_levers(None)
