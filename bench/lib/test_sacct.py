import datetime

from sacct import gpus_of, scheduler_of, time_of


def test_gpus_and_types_of_an_alloc_tres():
    assert gpus_of("billing=16,cpu=16,gres/gpu:h100=8,gres/gpu=8,mem=1G,node=1") == (8, {"h100"})
    assert gpus_of("cpu=32,gres/gpu:a100=8,gres/gpu:h100=8,gres/gpu=16,node=2") == (16, {"a100", "h100"})


def test_untyped_and_gpu_free_jobs():
    assert gpus_of("cpu=4,gres/gpu=2,node=1") == (2, set())
    assert gpus_of("cpu=4,mem=1G,node=1") == (0, set())
    assert gpus_of("") == (0, set())


def test_times_in_both_forms_and_missing_ones():
    assert time_of("1796486534") == 1796486534
    iso = datetime.datetime(2026, 12, 5, 20, 0, 0).timestamp()
    assert time_of("2026-12-05T20:00:00") == iso
    for missing in ("Unknown", "None", "", None):
        assert time_of(missing) is None


def test_the_scheduler_that_started_a_job():
    assert scheduler_of("SchedBackfill,StartRecieved") == "backfill"
    assert scheduler_of("StartRecieved,SchedMain") == "main"
    assert scheduler_of("SchedSubmit") == "submit"
    assert scheduler_of("") == scheduler_of(None) == scheduler_of("StartRecieved") == ""
