"""Unit tests of the replay's metric math and topology (no cluster needed):
    python3 -m pytest -q bench/replay/test_metrics.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
import topology  # noqa: E402

SHAPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "etc", "cluster", "default.shape")


def approx(a, b, eps=1e-9):
    return abs(a - b) < eps


def test_percentile_interpolates_between_ranks():
    assert metrics.percentile([], 50) is None
    assert metrics.percentile([5], 99) == 5
    assert approx(metrics.percentile([1, 2, 3, 4], 50), 2.5)
    assert approx(metrics.percentile(list(range(1, 101)), 95), 95.05)


def test_size_classes():
    assert [metrics.size_class(g) for g in (1, 2, 8, 16, 32)] == ["1", "2-8", "2-8", "16+", "16+"]


def test_jain_index():
    assert approx(metrics.jain([1, 1, 1]), 1.0)
    assert approx(metrics.jain([1, 0, 0]), 1 / 3.0)
    assert metrics.jain([]) is None


def attempt(name, submit, start, end, gpus=1, team="a", state="COMPLETED", jobid=None):
    return {"name": name, "jobid": jobid or name, "state": state, "submit": submit, "start": start,
            "end": end, "gpus": gpus, "team": team}


def test_requeued_job_counts_once_from_first_submit_to_last_end():
    jobs = metrics.jobs_from_attempts([
        attempt("r1", 0, 5, 10, state="REQUEUED", jobid="1"),
        attempt("r1", 0, 40, 50, jobid="1"),
        attempt("r2", 2, None, None, state="CANCELLED", jobid="2"),
    ])
    assert jobs["r1"]["wait"] == 5 and jobs["r1"]["jct"] == 50 and jobs["r1"]["attempts"] == 2
    assert jobs["r2"]["jct"] is None and jobs["r2"]["wait"] is None


def test_pending_demand_restarts_after_a_requeue():
    pend = metrics.pending_intervals([attempt("r1", 0, 5, 10, gpus=4, state="REQUEUED"),
                                      attempt("r1", 0, 40, 50, gpus=4)], 100)
    assert pend == [(0, 5, 4), (10, 40, 4)]


def test_team_shares_and_jain_during_saturation():
    atts = [attempt("a1", 0, 0, 10, gpus=2, team="a"), attempt("b1", 0, 0, 10, gpus=2, team="b")]
    shares, jain = metrics.team_shares(atts, [0, 1, 2], {"a": 0.5, "b": 0.5})
    assert approx(shares["a"]["share"], 0.5) and approx(shares["a"]["ratio"], 1.0) and approx(jain, 1.0)
    shares, jain = metrics.team_shares(atts, [0], {"a": 0.75, "b": 0.25})
    assert approx(shares["b"]["ratio"], 2.0)
    assert jain < 1.0


def test_saturation_needs_waiting_demand_of_at_least_the_free_gpus():
    # 4-GPU cluster: one 2-GPU job runs 0-10, a 3-GPU job waits 0-10 (3 >= 2 free).
    atts = [attempt("x", 0, 0, 10, gpus=2), attempt("y", 0, 10, 20, gpus=3)]
    sat = metrics.saturated_times(atts, 4, 0, 20, 1)
    assert sat == list(range(0, 10))


def test_fragmentation_counts_free_gpus_on_partly_used_nodes():
    free = {"n1": set(range(8)), "n2": {0, 1}}
    assert approx(metrics.fragmentation(free, {"n1": 8, "n2": 8}), 2 / 10.0)
    assert metrics.fragmentation({"n1": set()}, {"n1": 8}) == 0.0


def test_topology_levels_and_penalty():
    topo = topology.Topology.from_shape(SHAPE)
    assert topo.total_gpus == 128
    assert topo.level({"gpu09": [0, 1, 2, 3]}) == "clique"
    assert topo.level({"gpu09": [2, 3, 4, 5]}) == "node"
    assert topo.level({"gpu01": [0], "gpu02": [0]}) == "nvlink-domain"
    assert topo.level({"gpu01": [0], "gpu05": [0]}) == "switch"
    assert topo.level({"gpu01": [0], "gpu09": [0]}) == "cluster"
    assert topo.penalty({"gpu09": [0]}) == 1.0
    assert topo.penalty({"gpu09": [2, 3, 4, 5]}) == topology.DEFAULT_PENALTY["node"]
    # Whole a100 nodes in one domain still cross their 4+4 cliques over PCIe.
    assert topo.penalty({"gpu09": list(range(8)), "gpu10": list(range(8))}) == topology.DEFAULT_PENALTY["node"]
    assert topo.penalty({"gpu01": [0], "gpu09": [0]}, topology.NO_PENALTY) == 1.0


def test_best_level_depends_on_what_is_free():
    topo = topology.Topology.from_shape(SHAPE)
    assert topo.best_level(4, 1, ["a100"], {"gpu09": {2, 3, 4, 5}}) == "node"
    assert topo.best_level(4, 1, ["a100"], {"gpu09": {3, 4, 5, 6, 7}}) == "clique"
    both = {"gpu01": set(range(8)), "gpu05": set(range(8))}
    assert topo.best_level(16, 2, ["h100"], both) == "switch"
    both["gpu02"] = set(range(8))
    assert topo.best_level(16, 2, ["h100"], both) == "nvlink-domain"
    assert topo.best_level(16, 2, ["a100"], both) is None


def test_scontrol_allocation_lines():
    text = ("   Nodes=gpu[01-02] CPU_IDs=0 Mem=4000 GRES=gpu:h100:8(IDX:0-7)\n"
            "   Nodes=gpu05 CPU_IDs=0 Mem=4000 GRES=gpu:h100:2(IDX:1,3)\n")
    alloc = topology.parse_job_alloc(text)
    assert alloc == {"gpu01": list(range(8)), "gpu02": list(range(8)), "gpu05": [1, 3]}
    assert topology.parse_alloc(topology.format_alloc(alloc)) == alloc


def test_preemption_loss_is_wall_time_minus_kept_work():
    seg = {"preempted": True, "saved": 30.0, "done_start": 10.0, "penalty": 1.5, "gpus": 4,
           "start": 0.0, "end": 40.0}
    count, lost = metrics.preemption_losses([seg, dict(seg, preempted=False, done_start=0.0, done_end=10.0)])
    assert count == 1 and approx(lost, 4 * (40 - 20 * 1.5))
    # The resumed run: 12 s of its 42 s went to loading the checkpoint.
    resumed = dict(seg, preempted=False, done_start=30.0, done_end=50.0, start=50.0, end=92.0)
    count, lost = metrics.preemption_losses([resumed])
    assert count == 0 and approx(lost, 4 * (42 - 20 * 1.5))


def test_placement_is_judged_against_what_was_free_at_the_start():
    topo = topology.Topology.from_shape(SHAPE)
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end,
                                           "gpus": sum(len(i) for i in alloc.values()),
                                           "level": topo.level(alloc)}
    busy = {n: list(range(8)) for n in topo.nodes if n not in ("gpu09", "gpu10")}
    others = [seg("x%s" % n, {n: idx}, 0, 100) for n, idx in busy.items()]
    # gpu09 has GPUs 1,2,3,5 free (across its cliques), gpu10 a whole clique (4-7).
    others += [seg("y", {"gpu09": [0, 4, 6, 7]}, 0, 100), seg("z", {"gpu10": [0, 1, 2, 3]}, 0, 100)]
    spread = seg("a", {"gpu09": [1, 2, 3, 5]}, 10, 50)
    rows = metrics.placement_quality(topo, others + [spread], lambda name: ["a100"])
    row = [r for r in rows if r["name"] == "a"][0]
    assert row["level"] == "node" and row["best"] == "clique" and not row["at_best"]
    # A job that takes GPUs released a moment before is judged with them free.
    follow = seg("b", {"gpu10": [0, 1, 2, 3]}, 100.5, 150)
    rows = metrics.placement_quality(topo, others + [follow], lambda name: ["a100"])
    row = [r for r in rows if r["name"] == "b"][0]
    assert row["best"] == "clique" and row["at_best"]


def test_idle_gpus_are_counted_on_the_waiting_gangs_types_only_while_they_wait():
    topo = topology.Topology.from_shape(SHAPE)
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end}
    # Every a100 node full from 0 to 100 but gpu16, which has 3 GPUs free; h100 idle.
    busy = [seg("x%s" % n, {n: list(range(8))}, 0, 100) for n in topo.nodes
            if topo.nodes[n]["gpu_type"] == "a100" and n != "gpu16"]
    busy.append(seg("y", {"gpu16": [0, 1, 2, 3, 4]}, 0, 100))
    gang = attempt("g", 10, 50, 90, gpus=16)
    small = attempt("s", 0, 30, 40, gpus=1)  # a small job's wait does not count
    types = lambda name: ["a100"]
    idle, waited = metrics.idle_while_gangs_wait(topo, busy, [gang, small], types, 100, 1.0)
    assert waited == 40 and idle == 3 * 40
    # A gang that accepts either type: the 64 idle h100 GPUs count too.
    idle, _ = metrics.idle_while_gangs_wait(topo, busy, [gang], lambda name: ["a100", "h100"], 100, 1.0)
    assert idle == (3 + 64) * 40
    # No gang waits: nothing.
    assert metrics.idle_while_gangs_wait(topo, busy, [small], types, 100, 1.0) == (0.0, 0.0)


def test_gang_gpus_are_counted_on_the_waiting_small_jobs_types_only_while_they_wait():
    topo = topology.Topology.from_shape(SHAPE)
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end}
    # A 16-GPU gang on two a100 nodes from 20 to 80, a 4-GPU job on h100 all along.
    gang = seg("g", {"gpu13": list(range(8)), "gpu14": list(range(8))}, 20, 80)
    four = seg("f", {"gpu01": [0, 1, 2, 3]}, 0, 100)
    # A 1-GPU job waits from 10 to 50, runs to 60, is requeued and waits again to 70.
    small = [attempt("s", 10, 50, 60, gpus=1, state="REQUEUED"), attempt("s", 10, 70, 90, gpus=1)]
    a100 = lambda name: ["a100"]
    held, waited = metrics.gangs_held_while_small_wait(topo, [gang, four], small, a100, 100, 1.0)
    assert waited == 40 + 10 and held == 16 * (30 + 10)
    # One that waits for h100 only: the a100 gang holds nothing it could use.
    assert metrics.gangs_held_while_small_wait(topo, [gang, four], small, lambda n: ["h100"], 100, 1.0) == (0.0, 50.0)
    # Only 1-GPU jobs' waits count: a waiting 4-GPU job is not a small one.
    assert metrics.gangs_held_while_small_wait(topo, [gang], [attempt("b", 10, 50, 60, gpus=4)], a100, 100,
                                               1.0) == (0.0, 0.0)


def test_gpu_speed_factors_parse_and_apply_per_allocation():
    topo = topology.Topology.from_shape(SHAPE)
    assert topology.parse_speed("off") == {}
    assert topology.parse_speed("mlperf") == {"h100": 1.8, "a100": 1.0}
    speed = topology.parse_speed("h100=2,a100=1.0")
    assert speed == {"h100": 2.0, "a100": 1.0} and topology.format_speed(speed) == "a100=1,h100=2"
    for bad, words in (("h100", "expected type=factor"), ("h100=fast", "expected type=factor"),
                       ("=2", "expected type=factor"), ("a100=0.5", "at least 1.0")):
        try:
            topology.parse_speed(bad)
        except ValueError as e:
            assert words in str(e), e
        else:
            raise AssertionError("%s accepted" % bad)
    assert topo.speed({"gpu01": [0, 1]}, speed) == 2.0      # gpu01 is h100
    assert topo.speed({"gpu09": [0]}, speed) == 1.0         # gpu09 is a100
    assert topo.speed({"gpu01": [0]}, {}) == 1.0


def test_preemption_loss_counts_work_at_the_runs_speed():
    # On a type twice as fast, 20 s of work kept took 10 s of wall time (x penalty).
    seg = {"preempted": True, "saved": 30.0, "done_start": 10.0, "penalty": 1.5, "speed": 2.0, "gpus": 4,
           "start": 0.0, "end": 40.0}
    count, lost = metrics.preemption_losses([seg])
    assert count == 1 and approx(lost, 4 * (40 - 20 * 1.5 / 2.0))


def test_jct_floor_is_the_finished_jobs_work_at_their_fastest_type():
    attempts = [
        {"name": "r0", "jobid": "1", "state": "COMPLETED", "submit": 0, "start": 5, "end": 25, "gpus": 1, "team": "a"},
        {"name": "r1", "jobid": "2", "state": "PREEMPTED", "submit": 0, "start": 1, "end": 9, "gpus": 8, "team": "a"},
        {"name": "r1", "jobid": "2", "state": "COMPLETED", "submit": 0, "start": 30, "end": 90, "gpus": 8, "team": "a"},
        {"name": "r2", "jobid": "3", "state": "CANCELLED", "submit": 0, "start": None, "end": None, "gpus": 1, "team": "a"},
    ]
    jobs = {"r0": {"work": 10.0, "gpu_type": "a100"}, "r1": {"work": 36.0, "gpu_type": "any"},
            "r2": {"work": 1000.0, "gpu_type": "h100"}}
    logical = metrics.jobs_from_attempts(attempts)
    # r2 never finished: not in the floor, as it is not in the run's mean JCT.
    assert metrics.jct_floor(logical, jobs) == (10.0 + 36.0) / 2
    # r1 accepts either type and the h100 runs its work 1.8x faster; r0 asked for a100.
    assert abs(metrics.jct_floor(logical, jobs, {"h100": 1.8, "a100": 1.0}) - (10.0 + 20.0) / 2) < 1e-9
    assert metrics.jct_floor({}, jobs) is None


SDIAG_22_05 = """*******************************************************
sdiag output at Sun Dec 06 07:50:01 2026 (1796543401)
*******************************************************
Server thread count:  3
Jobs submitted: 1060

Main schedule statistics (microseconds):
\tLast cycle:   812
\tMax cycle:    45210
\tTotal cycles: 402
\tMean cycle:   2133
\tMean depth cycle:  17
\tLast queue length: 3

Backfilling stats
\tTotal backfilled jobs (since last slurm start): 1055
\tTotal cycles: 377
\tLast cycle when: Sun Dec 06 07:49:59 2026 (1796543399)
\tLast cycle: 4411
\tMax cycle:  1204332
\tMean cycle: 88120
\tLast depth cycle: 4
\tDepth Mean: 61

Remote Procedure Call statistics by message type
\tREQUEST_SUBMIT_BATCH_JOB                ( 4003) count:1060   ave_time:1200   total_time:1272000
"""


def test_sdiag_cycles_are_read_per_section():
    d = metrics.parse_sdiag(SDIAG_22_05)
    assert d == {"main_cycles": 402, "main_mean_us": 2133, "main_max_us": 45210,
                 "backfill_cycles": 377, "backfill_mean_us": 88120, "backfill_max_us": 1204332,
                 "backfill_depth_mean": 61}
    # 24.11 puts "Main scheduler exit:" between the sections: its lines are not the main cycle's.
    d = metrics.parse_sdiag(SDIAG_22_05.replace("\\nBackfilling stats", "\\nMain scheduler exit:\\n\\tEnd of job queue: 3\\n\\tMax cycle: 7\\n\\nBackfilling stats"))
    assert d["main_max_us"] == 45210 and d["backfill_max_us"] == 1204332
    assert metrics.parse_sdiag("") == {}


def small_topology(types=("a100", "a100")):
    topo = topology.Topology()
    for k, t in enumerate(types):
        topo.nodes["n%d" % k] = {"gpu_type": t, "gpus": 8, "clique_of": [0] * 8, "domain": None, "switch": "sw0"}
    return topo


def job(n, submit, work, gpus, nodes=1, gpu_type="a100"):
    return {"n": n, "submit": submit, "work": work, "gpus": gpus, "nodes": nodes, "gpu_type": gpu_type}


def test_ideal_fifo_starts_every_job_that_fits_in_submission_order():
    topo = small_topology()
    jobs = [job(0, 0, 10, 8), job(1, 0, 10, 4), job(2, 1, 10, 8), job(3, 2, 1, 2)]
    jct = metrics.ideal_jcts(jobs, topo, "fifo")
    # r2 waits for a whole node (r0's, at 10); r3 fits beside r1 at once: no reservations.
    assert approx(jct["r0"], 10) and approx(jct["r1"], 10)
    assert approx(jct["r2"], 19) and approx(jct["r3"], 1)


def test_ideal_sjf_runs_the_least_gpu_time_first_and_srpt_preempts_for_it():
    topo = small_topology(("a100",))
    jobs = [job(0, 0, 10, 8), job(1, 1, 10, 8), job(2, 2, 1, 8)]
    fifo = metrics.ideal_jcts(jobs, topo, "fifo")
    sjf = metrics.ideal_jcts(jobs, topo, "sjf")
    srpt = metrics.ideal_jcts(jobs, topo, "srpt")
    assert approx(fifo["r1"], 19) and approx(fifo["r2"], 19)
    # sjf: r2 (8 GPU-s) before r1 (80), once r0 ends; never preempts r0.
    assert approx(sjf["r0"], 10) and approx(sjf["r2"], 9) and approx(sjf["r1"], 20)
    # srpt: r2 (8 GPU-s) preempts r0 (64 GPU-s left at t=2) for free and runs at once.
    assert approx(srpt["r2"], 1) and approx(srpt["r0"], 11) and approx(srpt["r1"], 20)


def test_ideal_gang_takes_whole_shares_on_nodes_of_one_type():
    topo = small_topology(("a100", "h100", "h100"))
    # 16 GPUs on 2 nodes of any type: only the two h100 nodes can hold it, and only
    # once the 1-GPU job on one of them ends.
    jobs = [job(0, 0, 5, 1, gpu_type="h100"), job(1, 0, 10, 16, nodes=2, gpu_type="any")]
    jct = metrics.ideal_jcts(jobs, topo, "fifo", prefer="h100")
    assert approx(jct["r1"], 15)


def test_ideal_jobs_of_any_type_run_at_the_faster_types_speed():
    topo = small_topology(("a100", "h100"))
    jobs = [job(0, 0, 18, 1, gpu_type="any"), job(1, 0, 18, 1, gpu_type="a100")]
    jct = metrics.ideal_jcts(jobs, topo, "fifo", speed={"h100": 1.8, "a100": 1.0})
    assert approx(jct["r0"], 10) and approx(jct["r1"], 18)


def test_ideal_mean_is_over_the_runs_finished_jobs_and_the_best_type_choice():
    topo = small_topology(("a100", "h100"))
    jobs = [job(0, 0, 10, 1, gpu_type="any"), job(1, 0, 10, 8, gpu_type="h100"), job(2, 11, 100, 1, gpu_type="h100")]
    # r0 on h100 keeps r1 (a whole h100 node) waiting 10 s; on a100 nothing waits.
    assert approx(metrics.ideal_jcts(jobs, topo, "fifo", prefer="h100")["r1"], 20)
    assert approx(metrics.ideal_jcts(jobs, topo, "fifo", prefer="a100")["r1"], 10)
    attempts = [
        {"name": "r0", "jobid": "1", "state": "COMPLETED", "submit": 0, "start": 0, "end": 10, "gpus": 1, "team": "a"},
        {"name": "r1", "jobid": "2", "state": "COMPLETED", "submit": 0, "start": 0, "end": 10, "gpus": 8, "team": "a"},
        {"name": "r2", "jobid": "3", "state": "CANCELLED", "submit": 0, "start": None, "end": None, "gpus": 1, "team": "a"},
    ]
    # The better choice is kept, and r2 (submitted later) never finished
    # in the run, so it is not in the mean.
    best = metrics.ideal_mean_jct(jobs, topo, metrics.jobs_from_attempts(attempts))
    assert approx(best["fifo"], 10) and approx(best["sjf"], 10) and approx(best["srpt"], 10)


def test_ideal_refuses_what_it_cannot_schedule():
    topo = small_topology(("a100",))
    try:
        metrics.ideal_jcts([job(0, 0, 1, 1)], topo, "lifo")
        assert False
    except ValueError as e:
        assert "fifo, sjf, srpt" in str(e)
    try:
        metrics.ideal_jcts([job(0, 0, 1, 16, nodes=2)], topo, "fifo")
        assert False
    except ValueError as e:
        assert "r0 fits no node" in str(e)


def test_ideal_schedule_gives_each_jobs_wait_to_its_first_start():
    topo = small_topology(("a100",))
    jobs = [job(0, 0, 10, 8), job(1, 1, 10, 8), job(2, 2, 1, 8)]
    srpt = metrics.ideal_schedule(jobs, topo, "srpt")
    # r0 starts at once and is preempted by r2 at 2: its wait is 0, its JCT 11.
    assert approx(srpt["r0"][0], 11) and approx(srpt["r0"][1], 0)
    # r1 first starts when r0 ends at 11: waited 10, done at 21.
    assert approx(srpt["r1"][1], 10) and approx(srpt["r1"][0], 20)


def test_ideal_gang_over_small_is_the_ratio_of_the_classes_p95_waits():
    topo = small_topology(("a100", "a100"))
    # Two 8-GPU jobs hold both nodes until 10; the 1-GPU job waits 10 - 1 = 9 s and
    # the 16-GPU gang (submitted at 1) waits until both are free at 10 and the
    # 1-GPU job, placed first in FIFO, is done at 11: 10 s. Ratio 10 / 9.
    jobs = [job(0, 0, 10, 8), job(1, 0, 10, 8), job(2, 1, 1, 1), job(3, 1, 5, 16, nodes=2)]
    done = {"r%d" % j["n"]: {"jct": 1.0} for j in jobs}
    got = metrics.ideal_gang_over_small(jobs, topo, done)
    assert approx(got["fifo"], 10 / 9)
    # SJF runs the gang (80 GPU-s) after the 1-GPU job too: the same here.
    assert approx(got["sjf"], 10 / 9)
    # No 16+ GPU job that finished in the run: no ratio.
    done["r3"]["jct"] = None
    assert metrics.ideal_gang_over_small(jobs, topo, done) == {"fifo": None, "sjf": None}


def test_reservations_are_read_from_the_controllers_log_and_their_units_use_counted():
    topo = topology.Topology.from_shape(SHAPE)
    t0 = metrics._log_time("2026-12-07T10:00:00.000")
    lines = [
        "[2026-12-07T10:00:05.500] sched: Allocate JobId=7 NodeList=gpu01 #CPUs=1 Partition=gpu\n",
        "[2026-12-07T10:00:10.000] select/mlsched: JobId=40 (16 GPUs, eligible for 130 s) reserves gpu[01-02]: "
        "GPUs freed there go only to preemptible jobs until it starts\n",
        "[2026-12-07T10:01:50.000] select/mlsched: JobId=40 no longer waits: its reservation of gpu[01-02] ends\n",
        "[2026-12-07T10:02:00.000] select/mlsched: JobId=41 (32 GPUs, eligible for 200 s) reserves gpu[03-06]: "
        "GPUs freed there go only to preemptible jobs until it starts\n",
    ]
    # The line of a plugin that logs the end when the gang starts ends it the same way.
    started = lines[:2] + ["[2026-12-07T10:01:50.000] select/mlsched: JobId=40 starts: its reservation of "
                           "gpu[01-02] ends\n"] + lines[3:]
    assert metrics.gang_reservations(started, t0, topology.expand_hostlist) == \
        metrics.gang_reservations(lines, t0, topology.expand_hostlist)
    res = metrics.gang_reservations(lines, t0, topology.expand_hostlist)
    assert res == [{"job": "40", "gpus": 16, "nodes": ["gpu01", "gpu02"], "since": 10.0, "end": 110.0},
                   {"job": "41", "gpus": 32, "nodes": ["gpu03", "gpu04", "gpu05", "gpu06"], "since": 120.0,
                    "end": None}]
    seg = lambda job, name, alloc, start, end: {"job": job, "name": name, "alloc": alloc, "start": start, "end": end}
    segments = [
        seg("1", "np-before", {"gpu01": [0, 1, 2, 3]}, 0, 60),     # there before: 4 GPUs x 50 s in the window
        seg("2", "np-let-in", {"gpu02": [0, 1]}, 70, 100),         # started meanwhile, not preemptible: 2 x 30
        seg("3", "lent", {"gpu01": [4, 5], "gpu09": [0]}, 20, 200),  # preemptible, started meanwhile, 2 GPUs on the unit: 2 x 90
        seg("4", "elsewhere", {"gpu09": [1, 2]}, 0, 300),           # off the unit: not counted
        seg("40", "gang", {"gpu01": list(range(8)), "gpu02": list(range(8))}, 110, 400),  # the gang itself
    ]
    best_effort = {"np-before": False, "np-let-in": False, "lent": True, "elsewhere": False, "gang": False}.get
    u = metrics.reserved_unit_use(topo, res[:1], segments, best_effort, 500)
    assert u == {"reservations": 1, "seconds": 100.0, "unit_gpu_seconds": 1600.0,
                 "preemptible_gpu_seconds": 180.0, "not_preemptible_gpu_seconds": 260.0,
                 "preemptible_started": 1, "not_preemptible_started": 1, "idle_gpu_seconds": 1160.0}
    # A reservation still held when the log ends runs to the end of the run.
    u = metrics.reserved_unit_use(topo, res, segments, best_effort, 500)
    assert u["reservations"] == 2 and u["seconds"] == 100.0 + 380.0
    assert u["unit_gpu_seconds"] == 1600.0 + 32 * 380.0


def test_what_non_preemptible_small_jobs_waited_behind_is_split_by_who_held_their_type():
    topo = topology.Topology.from_shape(SHAPE)
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end}
    h100 = [n for n in sorted(topo.nodes) if topo.nodes[n]["gpu_type"] == "h100"]
    full = lambda n: {n: list(range(8))}
    # h100: every node full of jobs that may not be preempted from 0 to 100, but gpu01:
    # free from 0 to 10, then a preemptible job on it from 10 to 100; a gang reserves
    # gpu01 from 30 to 60 (its preemptible job is lent GPUs there); from 60 the
    # reservation ends. gpu02's job is preemptible from 80 on (a new run).
    segments = [seg("np-%s" % n, full(n), 0, 100) for n in h100 if n not in ("gpu01", "gpu02")]
    segments += [seg("be-1", full("gpu01"), 10, 100), seg("np-2", full("gpu02"), 0, 80),
                 seg("be-2", full("gpu02"), 80, 100)]
    best_effort = lambda name: name.startswith("be") or name == "be-small"
    reservations = [{"job": "99", "gpus": 16, "nodes": ["gpu01"], "since": 30.0, "end": 60.0}]
    waiting = attempt("small", 0, 100, 150)               # waits 0-100 for an h100 GPU
    other = attempt("be-small", 0, 100, 150)              # preemptible: not counted
    w = metrics.what_jobs_waited_behind(topo, segments, [waiting, other], lambda name: ["h100"], best_effort,
                                              reservations, 200, 1.0)
    assert w == {"idle": 10.0, "idle_reserved": 0.0, "preemptible": 20.0 + 40.0, "lent": 30.0, "scattered": 0.0,
                 "not_preemptible": 0.0}
    # Without gpu01's and gpu02's preemptible jobs: all held by jobs that may not be preempted.
    w = metrics.what_jobs_waited_behind(topo, [s for s in segments if not best_effort(s["name"])]
                                              + [seg("np-1", full("gpu01"), 10, 100)], [waiting], lambda name: ["h100"],
                                              best_effort, [], 200, 1.0)
    assert w["not_preemptible"] == 70.0 and w["idle"] == 10.0 + 20.0
    # A free GPU only on the reserved unit: the job was kept off it.
    w = metrics.what_jobs_waited_behind(topo, [s for s in segments if s["name"] != "be-1"], [waiting],
                                              lambda name: ["h100"], best_effort, reservations, 200, 1.0)
    assert w["idle_reserved"] == 30.0 and w["idle"] == 30.0 + 40.0


def test_a_4_gpu_job_needs_room_on_one_node_and_only_its_own_size_is_counted():
    topo = topology.Topology.from_shape(SHAPE)
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end}
    h100 = [n for n in sorted(topo.nodes) if topo.nodes[n]["gpu_type"] == "h100"]
    a, b = h100[0], h100[1]
    # Every h100 node full of jobs that may not be preempted, but a and b: from 0 to 100,
    # 2 free GPUs on each (4 free in all, never 4 on one node); from 40, a preemptible
    # job holds 2 of a's other GPUs, so preempting it would make room there; from 70 a
    # gang reserves a.
    segments = [seg("np-%s" % n, {n: list(range(8))}, 0, 100) for n in h100 if n not in (a, b)]
    segments += [seg("np-a", {a: list(range(6))}, 0, 40), seg("np-a2", {a: [0, 1, 2, 3]}, 40, 100),
                 seg("be-a", {a: [4, 5]}, 40, 100), seg("np-b", {b: list(range(6))}, 0, 100)]
    best_effort = lambda name: name.startswith("be")
    reservations = [{"job": "99", "gpus": 16, "nodes": [a], "since": 70.0, "end": None}]
    four = attempt("four", 0, 100, 150, gpus=4)
    one = attempt("one", 0, 100, 150)
    w = metrics.what_jobs_waited_behind(topo, segments, [four, one], lambda name: ["h100"], best_effort,
                                        reservations, 200, 1.0, (2, 8))
    # Before 40 it had 4 GPUs free in all, never 4 on one node: fragmentation.
    assert w == {"idle": 0.0, "idle_reserved": 0.0, "preemptible": 30.0, "lent": 30.0, "scattered": 40.0,
                 "not_preemptible": 0.0}
    # With one GPU fewer free on b, 3 in all: jobs that may not be preempted held the rest.
    fewer = [seg("np-b", {b: list(range(7))}, 0, 100) if x["name"] == "np-b" else x for x in segments]
    w = metrics.what_jobs_waited_behind(topo, fewer, [four, one], lambda name: ["h100"], best_effort,
                                        reservations, 200, 1.0, (2, 8))
    assert w["scattered"] == 0.0 and w["not_preemptible"] == 40.0 and w["preemptible"] == 30.0
    # The 1-GPU job, in the same state, had a free GPU the whole time (b's are off the unit).
    w = metrics.what_jobs_waited_behind(topo, segments, [four, one], lambda name: ["h100"], best_effort,
                                        reservations, 200, 1.0)
    assert w == {"idle": 100.0, "idle_reserved": 0.0, "preemptible": 0.0, "lent": 0.0, "scattered": 0.0,
                 "not_preemptible": 0.0}


def test_the_mean_jct_splits_into_parts_by_kind_of_job_that_add_up_to_it():
    runs = [attempt("a", 0, 10, 30), attempt("b", 0, 0, 100, gpus=8), attempt("c", 5, 25, 45),
            attempt("d", 0, 50, None, state="CANCELLED")]
    logical = metrics.jobs_from_attempts(runs)
    kind = {"a": ("1", False), "b": ("2-8", False), "c": ("1", True), "d": ("1", False)}.get
    parts = metrics.mean_jct_parts(logical, kind)
    assert parts == {"1, not preemptible": {"jct": 30 / 3, "wait": 10 / 3, "finished": 1, "jobs": 2},
                     "1, preemptible": {"jct": 40 / 3, "wait": 20 / 3, "finished": 1, "jobs": 1},
                     "2-8, not preemptible": {"jct": 100 / 3, "wait": 0.0, "finished": 1, "jobs": 1}}
    assert abs(sum(p["jct"] for p in parts.values()) - metrics.summary(j["jct"] for j in logical.values())["mean"]) < 1e-9


def test_a_reservation_ends_when_its_gang_starts_even_if_the_log_says_nothing():
    res = [{"job": "40", "gpus": 16, "nodes": ["gpu01", "gpu02"], "since": 10.0, "end": None},
           {"job": "41", "gpus": 16, "nodes": ["gpu03", "gpu04"], "since": 20.0, "end": 90.0},
           {"job": "42", "gpus": 16, "nodes": ["gpu05", "gpu06"], "since": 30.0, "end": 50.0}]
    runs = [attempt("g40", 0, 5, 8, jobid="40"),        # an earlier run, before the reservation
            attempt("g40", 0, 70, 200, jobid="40"),
            attempt("g41", 0, 80, 100, jobid="41"),       # logged end 10 s after the start
            attempt("g42", 0, 60, 100, jobid="42")]       # logged end before the start: kept
    out = metrics.reservations_until_start(res, runs)
    assert [(r["end"], r["logged_end"]) for r in out] == [(70, None), (80, 90.0), (50.0, 50.0)]
    assert res[0]["end"] is None    # the input is not changed


def test_who_took_room_a_waiting_4_gpu_job_could_have_used():
    topo = topology.Topology.from_shape(SHAPE)
    h100 = [n for n in sorted(topo.nodes) if topo.nodes[n]["gpu_type"] == "h100"]
    a100 = [n for n in sorted(topo.nodes) if topo.nodes[n]["gpu_type"] == "a100"]
    a, b, c, d, e = h100[:5]
    seg = lambda name, alloc, start, end: {"name": name, "alloc": alloc, "start": start, "end": end}
    job = lambda gpus, team="t1", be=False, gpu_type="h100": {"gpus": gpus, "team": team, "best_effort": be,
                                                               "gpu_type": gpu_type}
    jobs = {"w": job(4), "full": job(8), "later": job(2, team="t2"), "be": job(4, be=True), "small": job(1),
            "a100": job(2, gpu_type="a100"), "gang": job(16), "be-d": job(2, be=True), "early": job(8),
            "after": job(2), "be-wait": job(4, be=True)}
    # Every other h100 node is full for the whole run, so only a-e matter.
    segments = [seg("np-%s" % n, {n: list(range(8))}, 0, 200) for n in h100[5:]]
    segments += [seg("full", {a: list(range(8))}, 0, 30),
                 seg("later", {a: [0, 1]}, 30, 200),        # a had 8 free: passes w
                 seg("be", {a: [2, 3, 4, 5]}, 35, 200),     # 6 free before it: passes w
                 seg("small", {a: [6]}, 40, 200),           # 2 free before it: no room for w, not counted
                 seg("a100", {a100[0]: [0, 1]}, 45, 200),   # a type w does not accept
                 seg("gang", {b: list(range(8)), c: list(range(8))}, 50, 200),   # once, not per node
                 seg("be-d", {d: [0, 1]}, 60, 200),         # on the reserved unit d
                 seg("early", {e: list(range(8))}, 70, 200),
                 seg("w", {a: [7]}, 100, 200),              # w itself: not counted
                 seg("after", {d: [2, 3]}, 120, 200)]       # after w started
    runs = [attempt("w", 10, 100, 200, gpus=4), attempt("full", 0, 0, 30, gpus=8),
            attempt("later", 20, 30, 200, gpus=2), attempt("be", 5, 35, 200, gpus=4),
            attempt("small", 30, 40, 200), attempt("a100", 30, 45, 200, gpus=2),
            attempt("gang", 0, 50, 200, gpus=16), attempt("be-d", 50, 60, 200, gpus=2),
            attempt("early", 1, 70, 200, gpus=8), attempt("after", 110, 120, 200, gpus=2),
            attempt("be-wait", 0, 150, 200, gpus=4)]   # waits, but best effort: not a waiting job here
    runs += [attempt("np-%s" % n, 0, 0, 200, gpus=8) for n in h100[5:]]
    jobs.update({"np-%s" % n: job(8) for n in h100[5:]})
    reservations = [{"job": "gang2", "gpus": 16, "nodes": [d], "since": 0.0, "end": None}]
    pairs = metrics.who_took_room(topo, segments, runs, jobs, reservations, 300)
    assert [(p["waiting"], p["run"], p["earlier"], p["same_team"], p["reserved"]) for p in pairs] == [
        ("w", "later", False, False, False), ("w", "be", True, True, False), ("w", "gang", True, True, False),
        ("w", "be-d", False, True, True), ("w", "early", True, True, False),
        # "early" (8 GPUs) waited too, from 1 to 70: a had 8 free at 30, b at 50, d at 60.
        ("early", "later", False, False, False), ("early", "gang", True, True, False),
        ("early", "be-d", False, True, True)]
    assert metrics.took_room_by_kind(pairs) == {
        "gang": {"runs": 1, "passed": 2}, "earlier": {"runs": 1, "passed": 1}, "later": {"runs": 1, "passed": 2},
        "best_effort_reserved": {"runs": 1, "passed": 2}, "best_effort": {"runs": 1, "passed": 1}}
    # A 1-GPU waiting job is outside the 2-8 range asked for.
    assert metrics.who_took_room(topo, segments, [attempt("small", 30, 40, 200)], jobs, [], 300) == []


def test_gangs_wait_for_their_own_reservation_or_queue_behind_anothers():
    # Gang 40 reserves at 30 and starts at 70; gang 41 (waiting since 10) can reserve only
    # after 40 starts: from 72 to 100, when it starts. A 1-GPU job's wait is not counted.
    res = [{"job": "40", "gpus": 16, "nodes": ["gpu01", "gpu02"], "since": 30.0, "end": 70.0},
           {"job": "41", "gpus": 16, "nodes": ["gpu03", "gpu04"], "since": 72.0, "end": 100.0}]
    runs = [attempt("g40", 0, 70, 200, gpus=16, jobid="40"), attempt("g41", 10, 100, 200, gpus=32, jobid="41"),
            attempt("small", 0, 50, 60)]
    total, per_gang = metrics.gangs_waited_for_reservations(res, runs, 300)
    assert per_gang == {"40": {"own": 40.0, "other": 0.0, "none": 30.0},
                        "41": {"own": 28.0, "other": 40.0, "none": 22.0}}
    assert total == {"own": 68.0, "other": 40.0, "none": 52.0}
    # Gangs reserve only after waiting 20 s: gang 41's first 20 s (10-30) are "none"
    # whoever holds the reservation; here 40's started at 30, so nothing changes.
    assert metrics.gangs_waited_for_reservations(res, runs, 300, reserve_after=20.0)[0] == total
    # After 50 s: 41 could have reserved from 60, so 60-70 behind 40's, 30-60 not yet.
    _, per_gang = metrics.gangs_waited_for_reservations(res, runs, 300, reserve_after=50.0)
    assert per_gang["41"] == {"own": 28.0, "other": 10.0, "none": 52.0}
    # No reservations (stock): all of it "none".
    total, _ = metrics.gangs_waited_for_reservations([], runs, 300)
    assert total == {"own": 0.0, "other": 0.0, "none": 160.0}
    # A reservation still held at the end of the run counts to t_end.
    total, _ = metrics.gangs_waited_for_reservations([dict(res[0], end=None)],
                                                     [attempt("g40", 0, None, None, gpus=16, jobid="40")], 100)
    assert total == {"own": 70.0, "other": 0.0, "none": 30.0}


def test_a_job_cut_at_the_drain_cap_counts_up_to_the_cap():
    logical = metrics.jobs_from_attempts([attempt("a", 0, 10, 30), attempt("b", 20, 40, None, state="CANCELLED"),
                                          attempt("c", 50, None, None, state="CANCELLED")])
    # a: 30; b cut: 100 - 20 = 80; c never started: 100 - 50 = 50.
    assert metrics.mean_jct_with_cut(logical, 100) == {"mean": 160 / 3, "cut": 2}
    assert metrics.mean_jct_with_cut({}, 100) == {"mean": None, "cut": 0}
