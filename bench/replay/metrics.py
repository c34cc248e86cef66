"""Metric math of the trace replay (no Slurm, no I/O): from per-attempt records
(sacct) and trainer events to the numbers of the report. Unit-tested by
bench/replay/test_metrics.py.

Inputs, all times in seconds since the replay started:
- attempts: [{"name", "jobid", "state", "submit", "start", "end", "gpus", "team"}]
  one per Slurm run of a job (sacct -D: requeued runs are records of their own);
  start/end None when absent.
- segments: [{"name", "start", "end", "alloc": {node: [idx]}, "level", "penalty",
  "done_start", "saved", "preempted", "gpus"}] one per trainer start.
"""

import datetime
import math
import re

SIZE_CLASSES = (("1", 1, 1), ("2-8", 2, 8), ("16+", 16, 10 ** 9))
FINISHED = ("COMPLETED",)


def gpu_types_of(job):
    """The GPU types a replayed job (jobs.json) accepts."""
    return ["h100", "a100"] if job["gpu_type"] == "any" else [job["gpu_type"]]


def part_order(key):
    """Sort key of mean_jct_parts' keys: size class as in SIZE_CLASSES, then the rest."""
    sizes = [c for c, _, _ in SIZE_CLASSES]
    size = key.split(", ")[0]
    return (sizes.index(size) if size in sizes else len(sizes), key)


def mean_jct_parts(logical, kind_of):
    """Where a mean JCT comes from: for each kind of job (kind_of(name), e.g. size class
    and whether it is preemptible), its finished jobs' JCT and wait summed and divided by
    all finished jobs, so the parts add up to the mean JCT and mean wait, and two
    clusters' difference splits by kind. {"size, preemptible|not preemptible": {"jct",
    "wait", "finished", "jobs"}}."""
    finished = [j for j in logical.values() if j["jct"] is not None]
    parts = {}
    for name, j in logical.items():
        size, best_effort = kind_of(name)
        key = "%s, %s" % (size, "preemptible" if best_effort else "not preemptible")
        p = parts.setdefault(key, {"jct": 0.0, "wait": 0.0, "finished": 0, "jobs": 0})
        p["jobs"] += 1
        if j["jct"] is not None:
            p["jct"] += j["jct"] / len(finished)
            p["wait"] += (j["wait"] or 0.0) / len(finished)
            p["finished"] += 1
    return dict(sorted(parts.items()))


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default); None if empty."""
    vals = sorted(values)
    if not vals:
        return None
    k = (len(vals) - 1) * p / 100.0
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def summary(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "p50": percentile(vals, 50),
            "p95": percentile(vals, 95), "p99": percentile(vals, 99), "max": max(vals)}


def jct_floor(logical, jobs_by_name, speed=None):
    """Mean JCT that no scheduler can go below on this job list: each finished job's
    work at its fastest accepted GPU type, with no wait, no communication penalty and
    no restart (JCT >= work for every job, however it is scheduled). Over the jobs
    that finished in `logical` (jobs_from_attempts), so that it compares with that
    run's own mean JCT. speed: {gpu_type: factor}, None or {} for 1.0 everywhere."""
    speed = speed or {}
    floors = []
    for name, j in logical.items():
        if j["jct"] is None or name not in jobs_by_name:
            continue
        job = jobs_by_name[name]
        types = list(speed) if job["gpu_type"] == "any" else [job["gpu_type"]]
        fastest = max([speed.get(t, 1.0) for t in types] or [1.0])
        floors.append(job["work"] / fastest)
    return sum(floors) / len(floors) if floors else None


IDEAL_ORDERS = ("fifo", "sjf", "srpt")


def ideal_jcts(jobs, topo, order, speed=None, prefer=None):
    """{"r<n>": JCT} of ideal_schedule."""
    return {name: jct for name, (jct, _) in ideal_schedule(jobs, topo, order, speed, prefer).items()}


def ideal_schedule(jobs, topo, order, speed=None, prefer=None):
    """JCT and wait of every job of a job list under an idealised scheduler, as references for
    what scheduling alone can win on that list. It is not a lower bound (the best
    schedule of gangs on typed nodes is NP-hard); it is what a scheduler gets with
    none of a real one's costs: a job starts the instant it fits (no cycle, no
    launch), runs exactly its work at its type's speed (no communication penalty),
    and takes GPUs by best fit on the nodes of topo (a gang: whole per-node shares
    on nodes of one type, as the replay asks for them).
      fifo: in submission order, every job that fits starts (backfill without
            reservations, no time limits needed);
      sjf:  the same, least GPU-time first, with the real durations (an oracle);
      srpt: at every arrival and completion all jobs are placed again, least
            remaining GPU-time first; preemption and migration cost nothing (an
            oracle, and free preemption).
    A job that accepts any type takes the fastest type with room; among equally fast
    ones, `prefer` (a type) if given, else the type with the most free GPUs.
    jobs: the replay's job list ({"n", "submit", "work", "gpus", "nodes",
    "gpu_type"}); returns {"r<n>": (jct, wait)}, wait being the time to the job's
    first start. speed: {gpu_type: factor}."""
    speed = speed or {}
    if order not in IDEAL_ORDERS:
        raise ValueError("ideal order %r: expected one of %s" % (order, ", ".join(IDEAL_ORDERS)))
    nodes = sorted(topo.nodes)
    types_of = lambda j: sorted({topo.nodes[n]["gpu_type"] for n in nodes}) if j["gpu_type"] == "any" \
        else [j["gpu_type"]]

    def place(j, free):
        """Nodes for j on `free` ({node: GPUs}), fastest type first, best fit; None."""
        per = j["gpus"] // max(1, j["nodes"])
        room = lambda t: sum(free[n] for n in nodes if topo.nodes[n]["gpu_type"] == t)
        for t in sorted(types_of(j), key=lambda t: (-speed.get(t, 1.0), t != prefer, -room(t), t)):
            fits = sorted((n for n in nodes if topo.nodes[n]["gpu_type"] == t and free[n] >= per),
                          key=lambda n: (free[n], n))
            if len(fits) >= max(1, j["nodes"]):
                return fits[:max(1, j["nodes"])], per, speed.get(t, 1.0)
        return None

    arrivals = sorted(jobs, key=lambda j: (j["submit"], j["n"]))
    remaining = {}   # n -> work left at speed 1.0
    running = {}     # n -> (nodes, per, speed) under fifo/sjf
    jct, first, now, i = {}, {}, 0.0, 0
    by_n = {j["n"]: j for j in jobs}
    while i < len(arrivals) or remaining:
        while i < len(arrivals) and arrivals[i]["submit"] <= now:
            remaining[arrivals[i]["n"]] = float(arrivals[i]["work"])
            i += 1
        free = {n: topo.nodes[n]["gpus"] for n in nodes}
        if order == "srpt":
            running = {}
            rank = lambda n: (remaining[n] * by_n[n]["gpus"], by_n[n]["submit"], n)
        else:
            for n, (al, per, _) in running.items():
                for x in al:
                    free[x] -= per
            rank = (lambda n: (by_n[n]["submit"], n)) if order == "fifo" else \
                (lambda n: (remaining[n] * by_n[n]["gpus"], by_n[n]["submit"], n))
        for n in sorted((n for n in remaining if n not in running), key=rank):
            got = place(by_n[n], free)
            if got:
                for x in got[0]:
                    free[x] -= got[1]
                running[n] = got
                first.setdefault(n, now)
        if not running and i >= len(arrivals):
            raise ValueError("ideal schedule: job r%d fits no node of the topology" % min(remaining))
        step = min([remaining[n] / running[n][2] for n in running] +
                   [arrivals[i]["submit"] - now if i < len(arrivals) else float("inf")])
        now += step
        for n in list(running):
            remaining[n] -= step * running[n][2]
            if remaining[n] <= 1e-9:
                jct["r%d" % n] = (now - by_n[n]["submit"], first[n] - by_n[n]["submit"])
                del remaining[n], running[n]
    return jct


def ideal_schedules(jobs, topo, speed=None):
    """{(order, prefer): ideal_schedule} for every order and every choice of type for
    jobs that accept any (the most free GPUs, then each type first): greedy schedules
    swing by several percent with that choice, and each of them is a schedule the
    idealised scheduler could have made. Computed once, read by ideal_mean_jct and
    ideal_gang_over_small."""
    types = sorted({info["gpu_type"] for info in topo.nodes.values()})
    return {(order, prefer): ideal_schedule(jobs, topo, order, speed, prefer)
            for order in IDEAL_ORDERS for prefer in [None] + (types if len(types) > 1 else [])}


def ideal_mean_jct(jobs, topo, logical, speed=None, schedules=None):
    """{order: mean ideal JCT} over the jobs that finished in `logical`
    (jobs_from_attempts), so that each compares with that run's own mean JCT; of
    the type choices (ideal_schedules), the lowest mean. `schedules`: ideal_schedules'
    answer when the caller has it."""
    schedules = schedules if schedules is not None else ideal_schedules(jobs, topo, speed)
    done = [name for name, j in logical.items() if j["jct"] is not None]
    out = {}
    for order in IDEAL_ORDERS:
        means = []
        for (o, _), sched in schedules.items():
            if o != order:
                continue
            vals = [sched[name][0] for name in done if name in sched]
            if vals:
                means.append(sum(vals) / len(vals))
        out[order] = min(means) if means else None
    return out


# The orders in which waiting is comparable with a real scheduler's: under SRPT's
# free preemption a 1-GPU job hardly ever waits, and no ratio to it means anything.
IDEAL_WAIT_ORDERS = ("fifo", "sjf")


def ideal_gang_over_small(jobs, topo, logical, speed=None, schedules=None):
    """{order: p95 wait of 16+ GPU jobs / p95 wait of 1-GPU jobs} in the idealised
    FIFO and SJF schedules, over the jobs that finished in `logical`: issue 11's
    "gangs wait at most twice as long as 1-GPU jobs" in a schedule that has no
    reason to favour gangs, as a reference for the measured ratio. Of the type
    choices (ideal_schedules), the lowest ratio; None where a class has no job or
    the 1-GPU jobs never wait. `schedules` as for ideal_mean_jct."""
    schedules = schedules if schedules is not None else ideal_schedules(jobs, topo, speed)
    done = {name for name, j in logical.items() if j["jct"] is not None}
    size = {"r%d" % j["n"]: size_class(j["gpus"]) for j in jobs}
    out = {}
    for order in IDEAL_WAIT_ORDERS:
        ratios = []
        for (o, _), sched in schedules.items():
            if o != order:
                continue
            p95 = {c: percentile([w for name, (_, w) in sched.items() if name in done and size[name] == c], 95)
                   for c in ("1", "16+")}
            if p95["1"] and p95["16+"] is not None:
                ratios.append(p95["16+"] / p95["1"])
        out[order] = min(ratios) if ratios else None
    return out


def parse_sdiag(text):
    """The scheduler's own cycle figures from `sdiag`: main and backfill cycles
    (count, mean and max microseconds) and backfill's mean depth. Keys whose line is
    absent are left out (the format differs a little between Slurm releases)."""
    out, section = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Main schedule statistics"):
            section = "main"
        elif line.startswith("Backfilling stats"):
            section = "backfill"
        elif not raw.startswith((" ", "\t")) and line:
            section = None
        if section is None or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key = key.strip().lower()
        field = {"total cycles": "cycles", "mean cycle": "mean_us", "max cycle": "max_us",
                 "depth mean": "depth_mean"}.get(key)
        if field is None:
            continue
        try:
            out["%s_%s" % (section, field)] = int(value.split()[0])
        except (ValueError, IndexError):
            pass
    return out


def size_class(gpus):
    for name, lo, hi in SIZE_CLASSES:
        if lo <= gpus <= hi:
            return name
    return "other"


def jain(xs):
    """Jain's fairness index: 1 when all equal, 1/n when one takes all."""
    xs = [x for x in xs if x is not None]
    if not xs or sum(x * x for x in xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def jobs_from_attempts(attempts):
    """One logical job per name: first submit, first start, last end, last state."""
    by_name = {}
    for a in attempts:
        by_name.setdefault(a["name"], []).append(a)
    jobs = {}
    for name, runs in by_name.items():
        runs.sort(key=lambda a: (a["start"] if a["start"] is not None else float("inf"), a["jobid"]))
        started = [a for a in runs if a["start"] is not None]
        last = runs[-1]
        jobs[name] = {
            "name": name, "team": last["team"], "gpus": last["gpus"],
            "submit": min(a["submit"] for a in runs),
            "start": started[0]["start"] if started else None,
            "end": last["end"] if last["state"] in FINISHED else None,
            "state": last["state"], "attempts": len(started),
        }
    for j in jobs.values():
        j["wait"] = j["start"] - j["submit"] if j["start"] is not None else None
        j["jct"] = j["end"] - j["submit"] if j["end"] is not None else None
    return jobs


def mean_jct_with_cut(logical, t_end):
    """The mean JCT over every submitted job, a job cut at the drain cap (no end)
    counted from its submission to the cap, t_end: a lower bound on what its JCT would
    have been. The mean over finished jobs alone flatters the cluster that leaves more
    (or longer) jobs unfinished. Returns {"mean", "cut"}; mean None with no jobs."""
    jcts = [j["jct"] if j["jct"] is not None else max(0.0, t_end - j["submit"]) for j in logical.values()]
    return {"mean": sum(jcts) / len(jcts) if jcts else None,
            "cut": sum(1 for j in logical.values() if j["jct"] is None)}


def step_series(intervals, t_from, t_to, dt):
    """[(t, sum of weight over intervals [s, e) holding t)] sampled every dt."""
    points = []
    n = int((t_to - t_from) / dt) + 1
    for k in range(max(n, 0)):
        t = t_from + k * dt
        points.append((t, sum(w for s, e, w in intervals if s <= t < e)))
    return points


def allocation_intervals(attempts, t_end):
    return [(a["start"], a["end"] if a["end"] is not None else t_end, a["gpus"])
            for a in attempts if a["start"] is not None]


def waits(attempts, t_end):
    """[(since, until, attempt)]: every wait of every job. Its first run waits from its
    submission, each later run from the end of the run before it, until it starts
    (t_end if it never does)."""
    by_name = {}
    for a in attempts:
        by_name.setdefault(a["name"], []).append(a)
    out = []
    for runs in by_name.values():
        runs.sort(key=lambda a: (a["start"] if a["start"] is not None else float("inf")))
        since = min(a["submit"] for a in runs)
        for a in runs:
            until = a["start"] if a["start"] is not None else t_end
            if until > since:
                out.append((since, until, a))
            if a["end"] is None or a["start"] is None:
                break
            since = a["end"]
    return out


def pending_intervals(attempts, t_end):
    """Pending GPU demand over time: (since, until, GPUs) of every wait."""
    return [(since, until, a["gpus"]) for since, until, a in waits(attempts, t_end)]


def saturated_times(attempts, capacity, t_from, t_to, dt):
    """Sample times when waiting jobs ask for at least the free GPUs: the
    scheduler cannot give everyone what they want, so shares matter."""
    alloc = dict(step_series(allocation_intervals(attempts, t_to), t_from, t_to, dt))
    pend = dict(step_series(pending_intervals(attempts, t_to), t_from, t_to, dt))
    return [t for t in sorted(alloc) if pend[t] > 0 and pend[t] >= capacity - alloc[t]]


def team_shares(attempts, times, entitlement):
    """GPU share each team held over the given sample times, its ratio to its
    entitlement, and Jain's index of those ratios."""
    times = set(times)
    held = {team: 0.0 for team in entitlement}
    for a in attempts:
        if a["start"] is None:
            continue
        end = a["end"] if a["end"] is not None else float("inf")
        held[a["team"]] = held.get(a["team"], 0.0) + a["gpus"] * sum(1 for t in times if a["start"] <= t < end)
    total = sum(held.values())
    out = {}
    for team, ent in entitlement.items():
        share = held.get(team, 0.0) / total if total else None
        out[team] = {"share": share, "entitlement": ent,
                     "ratio": share / ent if share is not None and ent else None}
    return out, jain([v["ratio"] for v in out.values()])


def fragmentation(free_by_node, node_gpus):
    """Share of free GPUs that sit on partly used nodes (0: every free GPU is on
    an idle node, so any gang that fits in count also fits in whole nodes)."""
    total = sum(len(f) for f in free_by_node.values())
    if total == 0:
        return 0.0
    partial = sum(len(f) for n, f in free_by_node.items() if 0 < len(f) < node_gpus[n])
    return partial / float(total)


def free_at(topo, segments, t, exclude=None, margin=0.0):
    """Free GPU indices per node at time t, from the trainer segments running then.
    With a margin, GPUs held at any moment within t +- margin count as busy
    (Slurm releases GPUs a little after the trainer ends and takes them a little
    before it starts, and sacct times have 1-s resolution)."""
    free = {n: set(range(info["gpus"])) for n, info in topo.nodes.items()}
    for s in segments:
        end = max(s["end"], s.get("release") or s["end"])
        if s is exclude or not (s["start"] - margin <= t < end + margin):
            continue
        for node, idx in s["alloc"].items():
            free.get(node, set()).difference_update(idx)
    return free


def idle_while_gangs_wait(topo, segments, attempts, gpu_types_of, t_end, dt):
    """GPUs left idle while large gangs (16+ GPUs) wait: at each sample time at which
    at least one waits (metrics.waits), the free GPUs (free_at) on nodes of the GPU
    types the waiting gangs accept. Returns (idle GPU-seconds, seconds with a gang
    waiting). A reservation that holds a gang's nodes empty shows here; one that lends
    them does not."""
    gang_waits = [(s, e, set(gpu_types_of(a["name"]))) for s, e, a in waits(attempts, t_end) if a["gpus"] >= 16]
    idle = seconds = 0.0
    for t, types in _types_waited_for(gang_waits, t_end, dt):
        free = free_at(topo, segments, t)
        idle += dt * sum(len(f) for n, f in free.items() if topo.nodes[n]["gpu_type"] in types)
        seconds += dt
    return idle, seconds


def gangs_held_while_small_wait(topo, segments, attempts, gpu_types_of, t_end, dt):
    """The other side of the trade: GPUs held by large gangs (segments of 16+ GPUs)
    while 1-GPU jobs wait. At each sample time at which at least one 1-GPU job waits
    (metrics.waits), the gangs' GPUs on nodes of the types the waiting jobs accept.
    Returns (GPU-seconds, seconds with a 1-GPU job waiting). A gang started while small
    jobs queue for its GPU type shows here, whether it started early or late."""
    small_waits = [(s, e, set(gpu_types_of(a["name"]))) for s, e, a in waits(attempts, t_end) if a["gpus"] == 1]
    gangs = [(s["start"], max(s["end"], s.get("release") or s["end"]), s["alloc"]) for s in segments
             if sum(len(idx) for idx in s["alloc"].values()) >= 16]
    held = seconds = 0.0
    for t, types in _types_waited_for(small_waits, t_end, dt):
        held += dt * sum(len(idx) for start, end, alloc in gangs if start <= t < end
                         for n, idx in alloc.items() if topo.nodes[n]["gpu_type"] in types)
        seconds += dt
    return held, seconds


def runs_held(segments, attempts):
    """Each trainer segment as the GPUs it held: [{"name", "start", "end", "alloc",
    "scheduler"}]. A run holds its GPUs from Slurm's start (sacct), a second or two
    before the trainer reports in, to Slurm's end: the launch is not idle time.
    "scheduler" is the Slurm scheduler that started it ("main", "backfill"; None
    where not known)."""
    slurm_starts = {}
    for a in attempts:
        if a["start"] is not None:
            slurm_starts.setdefault(a["jobid"].split("_")[0], []).append(a)
    out = []
    for s in segments:
        starts = [a for a in slurm_starts.get(s.get("job"), []) if s["start"] - 10.0 <= a["start"] <= s["start"]]
        a = max(starts, key=lambda a: a["start"]) if starts else None
        out.append({"name": s["name"], "start": a["start"] if a else s["start"],
                    "end": max(s["end"], s.get("release") or s["end"]), "alloc": s["alloc"],
                    "scheduler": a.get("scheduler") if a else None})
    return out


WAITED_BEHIND = ("idle", "idle_reserved", "preemptible", "lent", "scattered", "not_preemptible")


def what_jobs_waited_behind(topo, segments, attempts, gpu_types_of, best_effort_of, reservations, t_end, dt,
                            gpus=(1, 1)):
    """What held the GPUs while jobs that may not be preempted, of gpus[0] to gpus[1]
    GPUs on one node, waited. At each sample time t = 0, dt, ... inside each of their
    waits, the first that holds on the nodes of the GPU types the job accepts: "idle" a
    node off any reserved unit had that many GPUs free (the job waited on the scheduler
    or its priority); "idle_reserved" such a node only on a large gang's reserved unit
    (kept off it); "preemptible" no node had room, and on one off the reserved units the
    free GPUs and those preemptible jobs held would have made room; "lent" that only on
    reserved units; "scattered" not even that, but the GPUs free on those nodes off the
    reserved units were enough in all, spread over nodes (fragmentation; never for one
    GPU); "not_preemptible" none of these: jobs that may not be preempted held the rest
    (for one GPU: held them all). Returns wait-seconds per kind (WAITED_BEHIND).
    `reservations` as gang_reservations (end None: to t_end)."""
    out = {k: 0.0 for k in WAITED_BEHIND}
    held = [(r["start"], r["end"], r["alloc"], best_effort_of(r["name"])) for r in runs_held(segments, attempts)]
    cache = {}

    def state(k):
        """Per node at sample k: (free GPUs, GPUs preemptible jobs held, on a reserved unit)."""
        if k not in cache:
            t = k * dt
            reserved = set()
            for r in reservations:
                if r["since"] <= t < (r["end"] if r["end"] is not None else t_end):
                    reserved.update(r["nodes"])
            free = {n: set(range(info["gpus"])) for n, info in topo.nodes.items()}
            preemptible_held = {n: 0 for n in topo.nodes}
            for start, end, alloc, be in held:
                if start <= t < end:
                    for node, idx in alloc.items():
                        free.get(node, set()).difference_update(idx)
                        if be and node in topo.nodes:
                            preemptible_held[node] += len(idx)
            cache[k] = {n: (len(free[n]), preemptible_held[n], n in reserved) for n in topo.nodes}
        return cache[k]

    for since, until, a in waits(attempts, t_end):
        if not gpus[0] <= a["gpus"] <= gpus[1] or best_effort_of(a["name"]):
            continue
        types = set(gpu_types_of(a["name"]))
        need = a["gpus"]
        nodes = [n for n in topo.nodes if topo.nodes[n]["gpu_type"] in types]
        for k in range(int(math.ceil(since / dt)), int(math.ceil(min(until, t_end) / dt))):
            st = state(k)
            room = lambda on_unit, with_preemptible: any(
                st[n][2] == on_unit and st[n][0] + (st[n][1] if with_preemptible else 0) >= need for n in nodes)
            if room(False, False):
                kind = "idle"
            elif room(True, False):
                kind = "idle_reserved"
            elif room(False, True):
                kind = "preemptible"
            elif room(True, True):
                kind = "lent"
            elif sum(st[n][0] for n in nodes if not st[n][2]) >= need:
                kind = "scattered"
            else:
                kind = "not_preemptible"
            out[kind] += dt
    return out


def who_took_room(topo, segments, attempts, jobs, reservations, t_end, gpus=(2, 8)):
    """Who took the room that jobs that may not be preempted, of gpus[0] to gpus[1] GPUs
    on one node, could have used while they waited: every run that started inside such a
    job's wait on a node of a GPU type it accepts, where just before that start (without
    the run itself) the node had as many GPUs free as the waiting job needs. Returns one
    dict per (waiting job, run): "waiting", "run" (job names), "start" (the run's),
    "gpus" (its GPUs on the first such node), "size" (the run's size class),
    "best_effort", "earlier" (the run's job was submitted before the waiting one),
    "same_team", "scheduler" (as runs_held), and "reserved" (the node was on a large
    gang's reserved unit then). `jobs` maps a job's name to its job-list entry;
    `reservations` as what_jobs_waited_behind."""
    held = runs_held(segments, attempts)
    submitted = {}
    for a in attempts:
        submitted[a["name"]] = min(a["submit"], submitted.get(a["name"], a["submit"]))
    # Free GPUs per node just before each run's start, without the run: the same for
    # every job that waited then, so computed once per run.
    before = []
    for r in held:
        t = r["start"]
        free = {n: set(range(info["gpus"])) for n, info in topo.nodes.items()}
        for o in held:
            if o is not r and o["start"] <= t < o["end"]:
                for node, idx in o["alloc"].items():
                    free.get(node, set()).difference_update(idx)
        before.append({n: len(f) for n, f in free.items()})
    out = []
    for since, until, a in waits(attempts, t_end):
        w = jobs.get(a["name"])
        if w is None or w.get("best_effort") or not gpus[0] <= a["gpus"] <= gpus[1]:
            continue
        types = set(gpu_types_of(w))
        for r, free in zip(held, before):
            job = jobs.get(r["name"])
            if r["name"] == a["name"] or job is None or not since < r["start"] < until:
                continue
            for node, idx in r["alloc"].items():
                if node not in topo.nodes or topo.nodes[node]["gpu_type"] not in types or free[node] < a["gpus"]:
                    continue
                reserved = any(node in v["nodes"] and v["since"] <= r["start"] < (v["end"] if v["end"] is not None
                                                                                  else t_end) for v in reservations)
                out.append({"waiting": a["name"], "run": r["name"], "start": r["start"], "gpus": len(idx),
                            "size": size_class(job["gpus"]), "best_effort": bool(job.get("best_effort")),
                            "earlier": submitted.get(r["name"], float("inf")) < submitted.get(a["name"], 0.0),
                            "same_team": job.get("team") == w.get("team"), "scheduler": r["scheduler"],
                            "reserved": reserved})
                break  # a gang over several nodes with room passes the job once
    return out


TOOK_ROOM = ("gang", "earlier", "later", "best_effort_reserved", "best_effort")


def took_room_by_kind(pairs):
    """who_took_room's pairs by kind of run: "gang" 16+ GPUs; runs of jobs that may not
    be preempted submitted "earlier" or "later" than the waiting job; best-effort runs
    on a reserved unit ("best_effort_reserved", on loan) or elsewhere ("best_effort").
    Per kind: {"runs": distinct runs, "passed": (waiting job, run) pairs}."""
    def kind(p):
        if p["size"] == "16+":
            return "gang"
        if p["best_effort"]:
            return "best_effort_reserved" if p["reserved"] else "best_effort"
        return "earlier" if p["earlier"] else "later"
    out = {k: {"runs": set(), "passed": 0} for k in TOOK_ROOM}
    for p in pairs:
        out[kind(p)]["runs"].add((p["run"], p["start"]))
        out[kind(p)]["passed"] += 1
    return {k: {"runs": len(v["runs"]), "passed": v["passed"]} for k, v in out.items()}


def _types_waited_for(intervals, t_end, dt):
    """(t, GPU types accepted by the waits holding t) at each sample time t = 0, dt, ...
    up to t_end at which at least one of the (since, until, types) intervals waits."""
    for k in range(int(t_end / dt) + 1):
        t = k * dt
        types = set()
        for s, e, ts in intervals:
            if s <= t < e:
                types |= ts
        if types:
            yield t, types


def placement_quality(topo, segments, gpu_types_of, margin=1.5):
    """For each multi-GPU trainer start: its level and the narrowest level the
    GPUs free at that moment (its own included) allowed. GPUs busy within
    `margin` seconds of the start count as busy, so a scheduler is never blamed
    for GPUs that were only about to be released."""
    rank = {lvl: i for i, lvl in enumerate(("single", "clique", "node", "nvlink-domain", "switch", "cluster"))}
    rows = []
    for s in segments:
        if s["gpus"] < 2 or not s["alloc"]:
            continue
        free = free_at(topo, segments, s["start"], exclude=s, margin=margin)
        for node, idx in s["alloc"].items():     # its own GPUs were free for it
            free.setdefault(node, set()).update(idx)
        nodes = len(s["alloc"])
        best = topo.best_level(s["gpus"], nodes, gpu_types_of(s["name"]), free)
        rows.append({"name": s["name"], "level": s["level"], "best": best,
                     "at_best": best is not None and rank[s["level"]] <= rank[best],
                     "narrow_possible": best in ("clique", "nvlink-domain"),
                     "narrow": s["level"] in ("clique", "nvlink-domain")})
    return rows


def stretch(segment):
    """Wall seconds per second of work in a run: its communication penalty over its
    GPU type's speed (runs recorded before speeds existed have none: 1.0)."""
    return segment["penalty"] / segment.get("speed", 1.0)


def preemption_losses(segments):
    """Preempted runs, and the GPU-seconds preemption cost: for each run that was
    stopped after a checkpoint signal, its wall time minus the work its
    checkpoint kept (at its stretch: penalty / speed); for each resumed run that went on, the time
    it spent loading the checkpoint (wall time minus the work it added)."""
    count, lost = 0, 0.0
    for s in segments:
        if s["preempted"]:
            count += 1
            kept = max(0.0, s["saved"] - s["done_start"]) * stretch(s)
        elif s["done_start"] > 0 and s.get("done_end") is not None:
            kept = max(0.0, s["done_end"] - s["done_start"]) * stretch(s)
        else:
            continue
        lost += s["gpus"] * max(0.0, (s["end"] - s["start"]) - kept)
    return count, lost


# select/mlsched's log lines when a large gang reserves its unit and when the
# reservation ends: the gang starts (end_reservation_of_started), or a job test finds
# it no longer waiting (reservation_now; plugins before the first only log this).
_RESERVES = re.compile(r"^\[(?P<ts>[0-9T:.-]+)\] select/mlsched: JobId=(?P<job>\d+)\S* \((?P<gpus>\d+) GPUs, "
                       r"eligible for -?\d+ s\) reserves (?P<nodes>\S+?):")
_RESERVATION_ENDS = re.compile(r"^\[(?P<ts>[0-9T:.-]+)\] select/mlsched: JobId=(?P<job>\d+)\S* (?:starts|no longer waits): "
                               r"its reservation of (?P<nodes>\S+) ends")


def _log_time(ts):
    """slurmctld's default log time (ISO 8601 with milliseconds, local time) as a Unix time."""
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in ts else "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(ts, fmt).timestamp()


def gang_reservations(lines, t0, expand):
    """The large gangs' reservations, from slurmctld's log lines: [{"job", "gpus",
    "nodes", "since", "end"}], times in seconds since t0 (end None: still held when
    the log ends). `expand` turns a Slurm hostlist into node names."""
    out, open_by_job = [], {}
    for line in lines:
        m = _RESERVES.match(line)
        if m:
            r = {"job": m["job"], "gpus": int(m["gpus"]), "nodes": expand(m["nodes"]),
                 "since": _log_time(m["ts"]) - t0, "end": None}
            out.append(r)
            open_by_job[m["job"]] = r
            continue
        m = _RESERVATION_ENDS.match(line)
        if m and m["job"] in open_by_job:
            open_by_job.pop(m["job"])["end"] = _log_time(m["ts"]) - t0
    return out


def reservations_until_start(reservations, attempts):
    """The reservations with each one ended no later than its gang's next Slurm start:
    select/mlsched before it logged a gang's start logged the end at the next job test
    that looked, and when nothing was left to test (the end of a run) never; runs
    recorded with those plugins need this. The logged end is kept as "logged_end"."""
    out = []
    for r in reservations:
        starts = [a["start"] for a in attempts
                  if a["jobid"].split("_")[0] == r["job"] and a["start"] is not None and a["start"] >= r["since"]]
        c = dict(r, logged_end=r.get("logged_end", r["end"]))
        if starts and (c["end"] is None or min(starts) < c["end"]):
            c["end"] = min(starts)
        out.append(c)
    return out


GANG_WAITED = ("own", "other", "none")


def gangs_waited_for_reservations(reservations, attempts, t_end, reserve_after=0.0, gpus=16):
    """How large gangs (gpus or more) spent their waits with respect to the
    reservations (as reservations_until_start; end None: to t_end): "own" their own
    reservation was in force (their unit draining); "other" they had waited
    reserve_after (ReserveForGangWait) and could have reserved, but another gang's
    reservation was in force and theirs was not (select/mlsched holds one at a time:
    they queued behind it); "none" neither (no reservation in force, or not yet
    waited reserve_after; all of it under a scheduler without reservations).
    Returns ({kind: gang wait-seconds}, {Slurm job id: the same for that gang}), exact
    to the recorded times."""
    total = {k: 0.0 for k in GANG_WAITED}
    per_gang = {}
    spans = [(r["job"], r["since"], r["end"] if r["end"] is not None else t_end) for r in reservations]
    for since, until, a in waits(attempts, t_end):
        if a["gpus"] < gpus:
            continue
        job = a["jobid"].split("_")[0]
        eligible = since + reserve_after
        cuts = sorted({since, until} | {t for _, s, e in spans for t in (s, e) if since < t < until}
                      | ({eligible} if since < eligible < until else set()))
        mine = per_gang.setdefault(job, {k: 0.0 for k in GANG_WAITED})
        for lo, hi in zip(cuts, cuts[1:]):
            holders = {j for j, s, e in spans if s <= lo and hi <= e}
            kind = "own" if job in holders else ("other" if holders and lo >= eligible else "none")
            mine[kind] += hi - lo
            total[kind] += hi - lo
    return total, per_gang


def reserved_unit_use(topo, reservations, segments, best_effort_of, t_end):
    """What the reserved units held while their gangs waited: GPU-seconds of jobs that
    can give GPUs back (preemptible: lent) and of jobs that cannot (there before the
    reservation, or let in because their time limit ended by the unit's ready time),
    the jobs of each kind that started there meanwhile, and the unit's idle GPU-seconds.
    A run's own gang is not counted on its unit."""
    out = {"reservations": len(reservations), "seconds": 0.0, "unit_gpu_seconds": 0.0,
           "preemptible_gpu_seconds": 0.0, "not_preemptible_gpu_seconds": 0.0,
           "preemptible_started": 0, "not_preemptible_started": 0, "idle_gpu_seconds": 0.0}
    for r in reservations:
        lo = r["since"]
        hi = r["end"] if r["end"] is not None else t_end
        if hi <= lo:
            continue
        nodes = set(r["nodes"])
        unit = sum(topo.nodes[n]["gpus"] for n in nodes if n in topo.nodes)
        used = 0.0
        for s in segments:
            if s.get("job") == r["job"]:
                continue
            on_unit = sum(len(idx) for node, idx in s["alloc"].items() if node in nodes)
            held_to = max(s["end"], s.get("release") or s["end"])
            overlap = min(hi, held_to) - max(lo, s["start"])
            if not on_unit or overlap <= 0:
                continue
            kind = "preemptible" if best_effort_of(s["name"]) else "not_preemptible"
            out[kind + "_gpu_seconds"] += on_unit * overlap
            used += on_unit * overlap
            if lo <= s["start"] < hi:
                out[kind + "_started"] += 1
        out["seconds"] += hi - lo
        out["unit_gpu_seconds"] += unit * (hi - lo)
        out["idle_gpu_seconds"] += max(0.0, unit * (hi - lo) - used)
    return out
