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
