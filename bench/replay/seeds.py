"""Issue 11's targets over several seeds of the same replay configuration: per seed,
then mean and min-max, and whether each target was met in every seed and by how
much it was missed. Input: the results.json of each run (one per seed and run spec).
Unit-tested by bench/replay/test_seeds.py; `bench/replay/seeds` and `run --seeds`
print it."""

import hashlib
import json
import os

import metrics
import report

# The targets, in one place (issue 11, "Done when"). Mean JCT ratio by penalty.
MEAN_JCT_RATIO = {"on": 0.70, "off": 0.85}
GANG_OVER_SMALL_P95 = 2.0       # 16+ GPU p95 wait <= 2 x 1-GPU p95 wait
SIZE_P95_JCT_WORSE = 1.10       # no class's p95 JCT more than 10 % over stock's
ALLOC_BELOW_STOCK = 0.02        # mean GPUs allocated >= stock's - 2 %
SIZE_CLASSES = ("1", "2-8", "16+")


def run_setting(run, key):
    """The value of a one-word Key=Value setting in the mlsched.conf a run kept (the
    last line wins, as in mlsched's parser; report.conf_settings reads it), or None:
    no such line, or no mlsched.conf."""
    try:
        with open(os.path.join(run, "mlsched.conf")) as f:
            lines = report.conf_settings(f.read())
    except OSError:
        return None
    values = [l.partition("=")[2] for l in lines if l.partition("=")[0].lower() == key.lower() and " " not in l]
    return values[0] if values else None


def run_speed(run):
    """The GPU type speeds a run's trainer used, from the mlsched.conf it wrote
    (`GpuTypeSpeed=a100:1,h100:1.8` when --gpu-speed was on): {type: factor}."""
    value = run_setting(run, "GpuTypeSpeed")
    return {t: float(v) for t, _, v in (kv.partition(":") for kv in value.split(","))} if value else {}


def with_ideal(run, r, topo):
    """A run's results with the idealised schedules' means, computed from its job
    list and records when it was recorded before results.json carried them."""
    jobs = schedules = None   # the same job list for both clusters: read and scheduled once
    for side in ("stock", "mlsched"):
        if r[side].get("ideal_jct") is None or r[side].get("ideal_gang_over_small") is None:
            if jobs is None:
                with open(os.path.join(run, "jobs.json")) as f:
                    jobs = json.load(f)["jobs"]
            with open(os.path.join(run, "%s-records.json" % side)) as f:
                logical = metrics.jobs_from_attempts(json.load(f)["attempts"])
            if schedules is None:
                schedules = metrics.ideal_schedules(jobs, topo, run_speed(run))
            if r[side].get("ideal_jct") is None:
                r[side]["ideal_jct"] = metrics.ideal_mean_jct(jobs, topo, logical, schedules=schedules)
            if r[side].get("ideal_gang_over_small") is None:
                r[side]["ideal_gang_over_small"] = metrics.ideal_gang_over_small(jobs, topo, logical,
                                                                                 schedules=schedules)
    return r


def with_explained(run, r, topo):
    """A run's results with the figures that say where its mean JCT comes from
    (mean_jct_parts, small_waited_behind, mid_waited_behind and mid_took_room, and mlsched's
    reserved_units and gang_waited where the run
    kept mlsched-reservations.json), computed again from its job list and records:
    the same functions the replay uses at the end of a run, so a rewritten report
    uses their current definition, and runs recorded before them get them too."""
    if not all(os.path.exists(os.path.join(run, "%s-records.json" % side)) for side in ("stock", "mlsched")):
        return r
    with open(os.path.join(run, "jobs.json")) as f:
        jobs = {"r%d" % j["n"]: j for j in json.load(f)["jobs"]}
    path = os.path.join(run, "mlsched-reservations.json")
    kept = os.path.exists(path)
    logged = []
    if kept:
        with open(path) as f:
            logged = json.load(f)
    best_effort = lambda name: jobs.get(name, {}).get("best_effort", False)
    for side in ("stock", "mlsched"):
        with open(os.path.join(run, "%s-records.json" % side)) as f:
            records = json.load(f)
        logical = metrics.jobs_from_attempts(records["attempts"])
        # The run's length; a results.json without it ends with the last release.
        t_end = r.get("t_run") or max([s.get("release") or s["end"] for s in records["segments"]] or [0.0])
        reservations = metrics.reservations_until_start(logged, records["attempts"]) if side == "mlsched" else []
        x = r[side]
        x["jct_with_cut"] = metrics.mean_jct_with_cut(logical, t_end)
        x["mean_jct_parts"] = metrics.mean_jct_parts(
            logical, lambda name: (metrics.size_class(jobs[name]["gpus"]), best_effort(name)))
        # Jobs that may not be preempted, by size: 1 GPU, and 2-8 GPUs (on one node).
        for key, gpus in (("small_waited_behind", (1, 1)), ("mid_waited_behind", (2, 8))):
            x[key] = metrics.what_jobs_waited_behind(
                topo, records["segments"], records["attempts"], lambda name: metrics.gpu_types_of(jobs[name]),
                best_effort, reservations, t_end, 2.0, gpus)
        # Who started on a node with room for a waiting 2-8 GPU job that may not be preempted.
        x["mid_took_room"] = metrics.took_room_by_kind(metrics.who_took_room(
            topo, records["segments"], records["attempts"], jobs, reservations, t_end))
        if side == "mlsched" and kept:
            # How the gangs' waits split between their own reservation, another gang's
            # (one at a time), and none.
            total, per_gang = metrics.gangs_waited_for_reservations(reservations, records["attempts"], t_end,
                                                                    reserve_for_gang_wait(run))
            x["gang_waited"] = dict(total, most_behind_other=max([g["other"] for g in per_gang.values()] or [0.0]))
            x["reserved_units"] = metrics.reserved_unit_use(topo, reservations, records["segments"], best_effort,
                                                            t_end)
    return r


def reserve_for_gang_wait(run):
    """ReserveForGangWait in seconds, as the run's mlsched.conf set it (600, mlsched's
    default, where it has none). The replay writes plain seconds; the suffixes are
    mlsched.conf(5)'s (300s, 5m, 2h)."""
    value = run_setting(run, "ReserveForGangWait")
    if not value:
        return 600.0
    return float(value.rstrip("smhSMH")) * {"s": 1, "m": 60, "h": 3600}.get(value[-1:].lower(), 1)


def seed_dir(out_dir, seed, seed_list):
    """Where a seed's runs and report go: OUT itself for one seed, OUT/seed<N> for several."""
    return out_dir if len(seed_list) == 1 else os.path.join(out_dir, "seed%d" % seed)


def run_dir(seed_dir_, index, load, penalty):
    """Where one run of a seed keeps its job list, records and results.json."""
    return os.path.join(seed_dir_, "replay-data", "run%d-load%s-penalty-%s" % (index, load, penalty))


def load_run(run, topo=None):
    """One run directory's results.json; with topo, the idealised schedules filled in
    where missing and the figures of with_explained computed from the records. Raises
    OSError, ValueError or KeyError for what is not a run."""
    with open(os.path.join(run, "results.json")) as f:
        r = json.load(f)
    return with_explained(run, with_ideal(run, r, topo), topo) if topo else r


def load(out_dir, topo=None):
    """Every run's results.json under a replay output dir (its replay-data/run*/);
    with topo, the idealised schedules filled in where missing."""
    data = os.path.join(out_dir, "replay-data")
    return [load_run(os.path.join(data, name), topo)
            for name in (sorted(os.listdir(data)) if os.path.isdir(data) else [])
            if os.path.exists(os.path.join(data, name, "results.json"))]


def load_pooled(out_dir, build=None):
    """For bench/replay/pool: each run under out_dir as (out_dir's name, results,
    its mlsched settings (report.conf_settings of the mlsched.conf it kept), a digest
    of its job list, which plugins it loaded). The plugins: `build` when given (for
    runs recorded before results.json carried mlsched_plugins), else the run's
    mlsched_plugins, else None. Runs that kept no mlsched.conf are left out: what
    mlsched ran with is not known for them."""
    out = []
    data = os.path.join(out_dir, "replay-data")
    for name in sorted(os.listdir(data)) if os.path.isdir(data) else []:
        run = os.path.join(data, name)
        if not all(os.path.exists(os.path.join(run, f)) for f in ("results.json", "mlsched.conf", "jobs.json")):
            continue
        with open(os.path.join(run, "jobs.json")) as f:
            digest = hashlib.sha256(json.dumps(json.load(f)["jobs"], sort_keys=True).encode()).hexdigest()
        with open(os.path.join(run, "mlsched.conf")) as f:
            conf = report.conf_settings(f.read())
        r = load_run(run)
        out.append((os.path.basename(os.path.normpath(out_dir)), r, conf, digest, build or r.get("mlsched_plugins")))
    return out


def pooled_table(entries):
    """Markdown lines for `bench/replay/pool`: runs of one job list (same seed, load,
    penalty and jobs) pooled. Stock's mean JCT over all its runs of that list, and
    mlsched's per configuration (its plugins and its mlsched.conf settings), each as
    mean (min-max) and over stock's pooled mean, and each run's ratio to the stock run
    beside it. One run's ratio carries stock's run-to-run spread; where both clusters'
    means moved together (the same machine, the same minutes), the ratio to the run
    beside it is the steadier figure, else the pooled one: both are shown. Every
    stock run is taken to have had the same settings: the caller vouches for that.
    entries: (label, results, settings, job-list digest, plugins or None)."""
    groups = {}
    for label, r, conf, digest, plugins in entries:
        key = (r["meta"]["seed"], str(r["load"]), r["penalty"], digest)
        groups.setdefault(key, []).append((label, r, (plugins, conf)))
    lines = []
    mean = lambda xs: sum(xs) / len(xs)
    spread = lambda xs: "%.1f (%.1f-%.1f)" % (mean(xs), min(xs), max(xs)) if len(xs) > 1 else "%.1f" % xs[0]
    for (seed, load, penalty, digest), rs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        stock = [r["stock"]["jct"]["mean"] for _, r, _ in rs]
        base = mean(stock)
        configs = {}    # (plugins, settings) -> [(label, mlsched mean, its own stock's mean)], in order seen
        for label, r, config in rs:
            configs.setdefault(config, []).append((label, r["mlsched"]["jct"]["mean"], r["stock"]["jct"]["mean"]))
        # The configuration with the most runs is the one the others are told apart from.
        ref = max(configs.items(), key=lambda kv: len(kv[1]))[0][1]
        lines += ["### Seed %s, load %s, penalty %s (job list %s)" % (seed, load, penalty, digest[:12]), "",
                  "| cluster | plugins | runs | mean JCT (s): mean (min-max) | over stock's pooled mean | "
                  "each run over its own stock run: mean (min-max) |", "|---|---|---|---|---|---|",
                  "| stock | - | %s (%d) | %s | 1.00 | - |" % (", ".join(l for l, _, _ in rs), len(stock), spread(stock))]
        for (plugins, conf), members in configs.items():
            diff = sorted("+ `%s`" % l for l in conf - ref) + sorted("- `%s`" % l for l in ref - conf)
            vals = [v for _, v, _ in members]
            ratios = [v / own for _, v, own in members]
            lines.append("| mlsched%s | %s | %s (%d) | %s | %.2f | %s |" % (
                ": " + ", ".join(diff) if diff else "", plugins or "not recorded",
                ", ".join(l for l, _, _ in members), len(vals), spread(vals), mean(vals) / base,
                "%.2f (%.2f-%.2f)" % (mean(ratios), min(ratios), max(ratios)) if len(ratios) > 1
                else "%.2f" % ratios[0]))
        lines.append("")
    return lines


def ideal_table(runs):
    """Markdown lines for `bench/replay/ideal`: for each (label, results) both
    clusters' measured mean JCT and their idealised FIFO, SJF and SRPT means, each
    also as a ratio to stock's measured mean."""
    lines = ["| run | cluster | measured mean JCT (s) | ideal FIFO / SJF / SRPT (s) | "
             "measured / FIFO / SJF / SRPT over stock's measured mean |", "|---|---|---|---|---|"]
    for label, r in runs:
        stock_mean = r["stock"]["jct"]["mean"]
        for side in ("stock", "mlsched"):
            ideal = r[side].get("ideal_jct") or {}
            vals = [r[side]["jct"]["mean"]] + [ideal.get(o) for o in metrics.IDEAL_ORDERS]
            lines.append("| %s | %s | %s | %s | %s |" % (
                label, side, _f(vals[0], 1), " / ".join(_f(v, 1) for v in vals[1:]),
                " / ".join(_f(_ratio(v, stock_mean)) for v in vals)))
    return lines


def _ratio(a, b):
    return a / b if a is not None and b else None


def per_seed(r):
    """The target figures of one run (one seed): {name: value or None}."""
    s, m = r["stock"], r["mlsched"]
    p95 = lambda side, cls, key: side["by_size"][cls][key]["p95"]
    out = {
        "mean_jct_ratio": _ratio(m["jct"]["mean"], s["jct"]["mean"]),
        # Jobs cut at the drain cap counted up to it (None for runs without records).
        "mean_jct_ratio_with_cut": _ratio((m.get("jct_with_cut") or {}).get("mean"),
                                          (s.get("jct_with_cut") or {}).get("mean")),
        "cut": ((s.get("jct_with_cut") or {}).get("cut"), (m.get("jct_with_cut") or {}).get("cut")),
        "gang_p95_wait": (p95(s, "16+", "wait"), p95(m, "16+", "wait")),
        "gang_over_small": _ratio(p95(m, "16+", "wait"), p95(m, "1", "wait")),
        "p95_jct_ratio": {c: _ratio(p95(m, c, "jct"), p95(s, c, "jct")) for c in SIZE_CLASSES},
        "alloc": (s["alloc_mean_window"], m["alloc_mean_window"]),
        "jain": (s["jain"], m["jain"]),
        "lost": (s["gpu_hours_lost"], m["gpu_hours_lost"]),
        "preemptions": (s["preemptions"], m["preemptions"]),
        "load": (r.get("loadavg_mean"), r.get("loadavg_max")),
    }
    ideal = m.get("ideal_jct") or {}
    out["ideal_ratio"] = {o: _ratio(ideal.get(o), s["jct"]["mean"]) for o in metrics.IDEAL_ORDERS}
    out["ideal_gang_over_small"] = m.get("ideal_gang_over_small") or {}
    return out


def _f(v, d=2):
    return "-" if v is None else ("%." + str(d) + "f") % v


def _spread(vals, d=2):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return "%s (%s-%s)" % (_f(sum(vals) / len(vals), d), _f(min(vals), d), _f(max(vals), d))


def _verdict(misses, n, unit="", d=2):
    """'met in every seed' or 'missed in k of n, by up to X' (d decimals: seconds
    and GPUs are shown to one, as in the table's cells)."""
    misses = [x for x in misses if x is not None]
    if not misses:
        return "met in all %d" % n
    return "**missed** in %d of %d, by up to %s%s" % (len(misses), n, _f(max(misses), d), unit)


def table(runs):
    """Markdown lines: one table per (load, penalty), a column per seed."""
    groups = {}
    for r in runs:
        groups.setdefault((str(r["load"]), r["penalty"]), []).append(r)
    lines = []
    for (load, penalty), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r["meta"]["seed"])
        figs = [per_seed(r) for r in rs]
        n = len(rs)
        lines += ["### Load %s, penalty %s: %d seed%s (%s)" % (load, penalty, n, "" if n == 1 else "s",
                                                              ", ".join(str(r["meta"]["seed"]) for r in rs)), ""]
        head = "| | " + " | ".join("seed %d" % r["meta"]["seed"] for r in rs) + " | mean (min-max) | target |"
        lines += [head, "|---" * (n + 3) + "|"]

        def row(label, cells, spread, verdict):
            lines.append("| %s | %s | %s | %s |" % (label, " | ".join(cells), spread, verdict))

        # The job list first: a target met on an unrepresentative list says little.
        metas = [r["meta"] for r in rs]
        unrep = [m for m in metas if m.get("representative") is False]
        row("job list: jobs; 16+ GPU jobs; GPU-time mix gap to the trace (points)",
            ["%s; %s; %s" % (m.get("jobs", "-"), m.get("gangs_16_plus", "-"), _f(m.get("mix_gap_points"), 1))
             for m in metas], "", "representative: " + ("yes in all %d" % n if not unrep else
                                                          "**no** in %d of %d" % (len(unrep), n)))
        goal = MEAN_JCT_RATIO.get(penalty)
        ratios = [f["mean_jct_ratio"] for f in figs]
        row("mean JCT, mlsched / stock", [_f(v) for v in ratios], _spread(ratios),
            ("<= %.2f: " % goal + _verdict([v - goal for v in ratios if v is not None and v > goal], n))
            if goal is not None else "")
        vals = [f["mean_jct_ratio_with_cut"] for f in figs]
        if any(v is not None for v in vals):
            row("the same, jobs cut at the drain cap counted up to it (cut: stock / mlsched)",
                ["%s (%s / %s)" % (_f(v), f["cut"][0], f["cut"][1]) for v, f in zip(vals, figs)], _spread(vals),
                ("<= %.2f: " % goal + _verdict([v - goal for v in vals if v is not None and v > goal], n))
                if goal is not None else "")
        for o, label in (("fifo", "FIFO"), ("sjf", "SJF, oracle"), ("srpt", "SRPT, oracle, free preemption")):
            vals = [f["ideal_ratio"][o] for f in figs]
            if any(v is not None for v in vals):
                reach = "" if goal is None else "below %.2f in %d of %d" % (
                    goal, sum(1 for v in vals if v is not None and v <= goal), n)
                row("idealised %s / stock's measured" % label, [_f(v) for v in vals], _spread(vals), reach)
        row("16+ GPU p95 wait, stock / mlsched (s)", ["%s / %s" % (_f(a, 1), _f(b, 1)) for a, b in
                                                      (f["gang_p95_wait"] for f in figs)],
            _spread([_ratio(b, a) for a, b in (f["gang_p95_wait"] for f in figs)]) + " of stock's",
            "<= stock's: " + _verdict([b - a for a, b in (f["gang_p95_wait"] for f in figs)
                                       if a is not None and b is not None and b > a], n, " s", 1))
        vals = [f["gang_over_small"] for f in figs]
        row("mlsched 16+ GPU p95 wait / its 1-GPU p95 wait", [_f(v) for v in vals], _spread(vals),
            "<= %.0f: " % GANG_OVER_SMALL_P95 + _verdict([v - GANG_OVER_SMALL_P95 for v in vals
                                                         if v is not None and v > GANG_OVER_SMALL_P95], n, "x"))
        # The same ratio where no scheduler favours gangs: how far the target is from
        # what work-conserving order alone gives.
        for o, label in (("fifo", "FIFO"), ("sjf", "SJF, oracle")):
            vals = [f["ideal_gang_over_small"].get(o) for f in figs]
            if any(v is not None for v in vals):
                row("idealised %s: 16+ GPU p95 wait / 1-GPU p95 wait" % label, [_f(v) for v in vals], _spread(vals),
                    "below %.0f in %d of %d" % (GANG_OVER_SMALL_P95, sum(1 for v in vals if v is not None
                                                                        and v <= GANG_OVER_SMALL_P95), n))
        for c in SIZE_CLASSES:
            vals = [f["p95_jct_ratio"][c] for f in figs]
            row("p95 JCT, %s GPU%s, mlsched / stock" % (c, "" if c == "1" else "s"), [_f(v) for v in vals],
                _spread(vals), "<= %.2f: " % SIZE_P95_JCT_WORSE + _verdict(
                    [v - SIZE_P95_JCT_WORSE for v in vals if v is not None and v > SIZE_P95_JCT_WORSE], n))
        allocs = [f["alloc"] for f in figs]
        row("mean GPUs allocated, stock / mlsched", ["%s / %s" % (_f(a, 1), _f(b, 1)) for a, b in allocs],
            _spread([_ratio(b, a) for a, b in allocs], 3) + " of stock's",
            ">= stock's - 2 %: " + _verdict([(1 - ALLOC_BELOW_STOCK) * a - b for a, b in allocs
                                              if a and b is not None and b < (1 - ALLOC_BELOW_STOCK) * a], n,
                                             " GPUs", 1))
        jains = [f["jain"] for f in figs]
        row("Jain's index of team shares, stock / mlsched", ["%s / %s" % (_f(a, 3), _f(b, 3)) for a, b in jains],
            "", ">= stock's: " + _verdict([a - b for a, b in jains if a is not None and b is not None and b < a], n))
        row("preemptions; GPU-hours lost, stock / mlsched",
            ["%d; %s / %d; %s" % (f["preemptions"][0], _f(f["lost"][0], 3), f["preemptions"][1], _f(f["lost"][1], 3))
             for f in figs], "", "reported")
        row("machine load average, mean / max", ["%s / %s" % (_f(a, 1), _f(b, 1)) for a, b in
                                                 (f["load"] for f in figs)], "", "")
        lines.append("")
    return lines
