"""Writes report.md and its PNG plots (gnuplot) from the replay's results.
Every number comes from the run's results; nothing is typed in by hand."""

import datetime
import glob
import hashlib
import os
import platform
import shlex
import subprocess

import metrics
import topology

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


# Keys of etc/mlsched-ml-profile.conf whose values are times or GPU-times, which a
# compressed replay sets itself (bench/replay/run profile_lines) and the report states
# scaled.
SCALED_PROFILE_KEYS = ("attainedservicethresholds", "attainedservicepromoteafter", "reserveforgangwait")
# The line bench/replay/run writes before the profile's lines in a run's mlsched.conf,
# and the start of every line it adds.
PROFILE_MARK = "# bench/replay: the ML cluster profile"
# The line before the --mlsched-set lines of an experiment, last in the file.
SET_MARK = "# bench/replay: --mlsched-set"
REPLAY_MARK = "# bench/replay:"


def profile_levers(conf_text=None):
    """The ML profile's lines a run gave mlsched (the trace-clock ones aside, which the
    report states scaled): from the run's own mlsched.conf when it is kept, so a report
    written later names what ran, else from etc/mlsched-ml-profile.conf (the profile's
    one owner)."""
    if conf_text is not None and PROFILE_MARK in conf_text:
        lines = conf_text.split(PROFILE_MARK, 1)[1].splitlines()[1:]
        end = next((i for i, l in enumerate(lines) if l.startswith(REPLAY_MARK)), len(lines))
        lines = lines[:end]
    else:
        with open(os.path.join(REPO, "etc", "mlsched-ml-profile.conf")) as f:
            lines = f.read().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.lstrip().startswith("#")
            and not l.strip().lower().startswith(SCALED_PROFILE_KEYS)]


def run_conf_text(out_dir):
    """The mlsched.conf of the first run kept under out_dir, or None."""
    for conf in sorted(glob.glob(os.path.join(out_dir, "replay-data", "*", "mlsched.conf"))):
        with open(conf) as f:
            return f.read()
    return None


def conf_settings(conf_text):
    """What an mlsched.conf sets, as a set of lines (comments and blanks dropped): a
    one-word Key=Value line by its last occurrence (a later line wins, as in mlsched's
    parser: --mlsched-set after the profile), lines of several words as they are
    (JobType=..., NvlinkDomain=..., each a record of its own)."""
    single, records = {}, set()
    for line in conf_text.splitlines():
        text = line.split("#", 1)[0].strip()
        if not text or "=" not in text:
            continue
        if len(text.split()) == 1:
            single[text.split("=", 1)[0].lower()] = text
        else:
            records.add(" ".join(text.split()))
    return frozenset(records | set(single.values()))


def mlsched_profile_text(args, conf_text=None):
    """What mlsched ran with: from the run's own mlsched.conf when it is kept (so a
    report rewritten later, with other arguments, still says what ran), else from the
    arguments."""
    scaled = ("; both: PriorityMaxAge %d s (as stock's), PreemptForLargeGangWait %d s (2 h of trace time)"
              % (max(1, args.half_life_minutes) * 60, max(1, round(7200 / args.compression))))
    ml = PROFILE_MARK in conf_text if conf_text is not None else getattr(args, "mlsched_profile", "default") == "ml"
    if not ml:
        return ("default: `etc/mlsched.conf` as shipped (attained service and its preemption off)" + scaled
                + extra_text(args, conf_text))
    levers = profile_levers(conf_text)
    return ("ML cluster profile: `etc/mlsched-ml-profile.conf` appended (%s), levels at %s real GPU-seconds, "
            "promoted after %d s, ReserveForGangWait %d s (10 min of trace time)"
            % (", ".join("`%s`" % l for l in levers), args.attained_thresholds, args.attained_promote_after,
               max(1, round(600 / args.compression)))) + scaled + extra_text(args, conf_text)


def extra_text(args, conf_text=None):
    """The --mlsched-set lines of an experiment, after the profile's: the run's own
    (after SET_MARK in its mlsched.conf) when it is kept, else the arguments'."""
    if conf_text is not None:
        tail = conf_text.split(SET_MARK, 1)[1].splitlines()[1:] if SET_MARK in conf_text else []
        extra = [l.strip() for l in tail if l.strip() and not l.lstrip().startswith("#")]
    else:
        extra = getattr(args, "mlsched_set", None) or []
    return ("; then, for this experiment (`--mlsched-set`): %s" % ", ".join("`%s`" % kv for kv in extra)) if extra else ""


def speed_text(args):
    speed = getattr(args, "gpu_speed", {}) or {}
    if not speed:
        return "off: every GPU type runs a job's work at 1.0"
    text = ", ".join("%s %gx" % kv for kv in sorted(speed.items()))
    if speed == topology.MLPERF_SPEED:
        text += " (MLPerf Training v3.0 ResNet-50, Dell 16-GPU H100 vs A100 submissions; see topology.py)"
    return text + ("; both clusters; time limits assume the slowest type; mlsched is told them "
                   "(`GpuTypeSpeed`), stock Slurm has no such setting")


def fmt(v, digits=1, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("%." + str(digits) + "f%s") % (v, unit)
    return "%s%s" % (v, unit)


def pct(v):
    return "-" if v is None else "%.0f %%" % (100.0 * v)


def checkout_commit():
    """The checkout's short commit, "(with local changes)" when tracked files differ."""
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return commit + (" (with local changes)" if dirty else "")


def machine(started_commit=None):
    """This machine, its load now, and the checkout's commit. A run passes the commit
    its checkout had when it started: its plugins and scripts are that commit's, and a
    checkout that moved on during the run must not be credited with its figures."""
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        mem = "%.1f GiB" % (kb / 1024.0 / 1024.0)
    except (OSError, ValueError, IndexError):
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    try:
        slurm = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True).stdout.strip()
    except OSError:   # a rewrite on a machine without Slurm
        slurm = "not installed here"
    commit = checkout_commit()
    if started_commit and started_commit != commit:
        commit = "%s at the start (the checkout was at %s when this was written)" % (started_commit, commit)
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    return {"nproc": os.cpu_count(), "memory": mem, "cpu": cpu, "kernel": platform.release(),
            "os": platform.platform(), "slurm": slurm, "commit": commit,
            "loadavg": " ".join(load)}


def trace_digest(meta):
    """The trace's sha256 as prepare recorded it (older job lists: hash the file)."""
    return meta.get("trace_sha256") or sha256(meta["trace"])


def window_choice(meta):
    if meta.get("representative") is None:
        return "--window-start, or a job list from before the size-mix check"
    if meta["representative"]:
        return ("the busiest stretch whose job list is within %s points of the trace's size mix with >= %d gangs"
                % (fmt(meta["mix_tolerance"], 1), meta["min_gangs"]))
    return ("NOT representative: no stretch met the %s-point size-mix and %d-gang rule; the closest was taken"
            % (fmt(meta["mix_tolerance"], 1), meta["min_gangs"]))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gnuplot(script, cwd):
    p = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, cwd=cwd)
    if p.returncode != 0:
        raise RuntimeError("gnuplot failed: %s" % p.stderr[-1000:])


def plots(out_dir, res, tag):
    """Four PNGs of one run; returns their file names."""
    data = os.path.join(out_dir, "replay-data", tag)
    os.makedirs(data, exist_ok=True)
    names = {}
    for cfg in ("stock", "mlsched"):
        r = res[cfg]
        vals = r["jct_values"]
        with open(os.path.join(data, "jct-%s.dat" % cfg), "w") as f:
            for i, v in enumerate(vals, 1):
                f.write("%.3f %.5f\n" % (v, i / float(len(vals))))
        with open(os.path.join(data, "alloc-%s.dat" % cfg), "w") as f:
            for t, v in r["alloc_series"]:
                f.write("%.1f %d\n" % (t, v))
        teams = sorted(res["meta"]["team_entitlement"])
        with open(os.path.join(data, "share-%s.dat" % cfg), "w") as f:
            f.write("# t " + " ".join(teams) + "\n")
            for t, shares in r["share_series"]:
                f.write("%.1f %s\n" % (t, " ".join("%.4f" % shares.get(tm, 0.0) for tm in teams)))
        with open(os.path.join(data, "frag-%s.dat" % cfg), "w") as f:
            for t, v in r["frag_series"]:
                f.write("%.1f %.4f\n" % (t, v))
    with open(os.path.join(data, "wait-by-size.dat"), "w") as f:
        f.write("size stock_p50 mlsched_p50 stock_p95 mlsched_p95\n")
        for cls in ("1", "2-8", "16+"):
            row = [res[c]["by_size"][cls]["wait"][p] for p in ("p50", "p95") for c in ("stock", "mlsched")]
            f.write("%s %s\n" % (cls, " ".join("%.2f" % (v or 0.0) for v in row)))
    cap = res["meta"]["cluster_gpus"]
    common = "set terminal pngcairo size 800,450 font 'sans,10'\nset grid\nset key top left\n"
    pre = "replay-%s-" % tag.split("-")[0]
    names["jct"] = pre + "jct-cdf.png"
    gnuplot(common + """set output '%s'
set title 'Job completion time CDF (%s)'
set xlabel 'JCT (s, real time)'; set ylabel 'fraction of finished jobs'; set logscale x
set key bottom right
plot '%s/jct-stock.dat' with steps lw 2 title 'stock', '%s/jct-mlsched.dat' with steps lw 2 title 'mlsched'
""" % (names["jct"], tag, data, data), out_dir)
    names["wait"] = pre + "wait-by-size.png"
    gnuplot(common + """set output '%s'
set title 'Queue wait by job size (%s)'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set ylabel 'wait (s, real time)'; set xlabel 'GPUs per job'; set xrange [-0.6:2.6]
plot '%s/wait-by-size.dat' using 2:xtic(1) title 'stock p50', '' using 3 title 'mlsched p50', \
     '' using 4 title 'stock p95', '' using 5 title 'mlsched p95'
""" % (names["wait"], tag, data), out_dir)
    names["alloc"] = pre + "allocation.png"
    gnuplot(common + """set output '%s'
set title 'GPUs allocated over time (%s)'
set xlabel 'time since first submission (s)'; set ylabel 'GPUs'; set yrange [0:%d]
set arrow from %f, graph 0 to %f, graph 1 nohead dt 2
plot '%s/alloc-stock.dat' with lines lw 2 title 'stock', '%s/alloc-mlsched.dat' with lines lw 2 title 'mlsched', \
     %f with lines dt 3 title 'offered-load bound'
""" % (names["alloc"], tag, cap + 8, res["meta"]["minutes"] * 60.0, res["meta"]["minutes"] * 60.0,
       data, data, min(1.0, res["meta"]["load_offered"]) * cap), out_dir)
    teams = sorted(res["meta"]["team_entitlement"])
    names["share"] = pre + "team-share.png"
    lines = []
    for cfg, dash in (("stock", 2), ("mlsched", 1)):
        for i, tm in enumerate(teams):
            lines.append("'%s/share-%s.dat' using 1:%d with lines lw 2 dt %d lc %d title '%s %s'"
                         % (data, cfg, i + 2, dash, i + 1, cfg, tm))
    for i, tm in enumerate(teams):
        lines.append("%f with lines lw 1 dt 3 lc %d title '%s entitlement'"
                     % (res["meta"]["team_entitlement"][tm], i + 1, tm))
    gnuplot(common + """set output '%s'
set title 'Share of allocated GPUs per team, 20-s windows (%s)'
set xlabel 'time since first submission (s)'; set ylabel 'share'; set yrange [0:1]; set key outside right
plot %s
""" % (names["share"], tag, ", \\\n     ".join(lines)), out_dir)
    names["frag"] = pre + "fragmentation.png"
    gnuplot(common + """set output '%s'
set title 'Fragmentation index over time (%s): free GPUs on partly used nodes / free GPUs'
set xlabel 'time since first submission (s)'; set ylabel 'index'; set yrange [0:1]
plot '%s/frag-stock.dat' with lines lw 2 title 'stock', '%s/frag-mlsched.dat' with lines lw 2 title 'mlsched'
""" % (names["frag"], tag, data, data), out_dir)
    return names


def run_table(res):
    s, m = res["stock"], res["mlsched"]
    rows = []

    def row(label, a, b):
        rows.append("| %s | %s | %s |" % (label, a, b))

    row("jobs submitted / finished / cut at the cap", "%d / %d / %d" % (s["submitted"], s["finished"], s["unfinished"]),
        "%d / %d / %d" % (m["submitted"], m["finished"], m["unfinished"]))
    for key, label in (("jct", "JCT"), ("wait", "queue wait")):
        for st in ("mean", "p50", "p95", "p99"):
            row("%s %s (s)" % (label, st), fmt(s[key][st]), fmt(m[key][st]))
    if s.get("jct_floor") is not None:
        row("JCT floor: mean work of the finished jobs at full speed (s)", fmt(s["jct_floor"]), fmt(m.get("jct_floor")))
    if s.get("ideal_jct"):
        ideal = lambda r: " / ".join(fmt(r["ideal_jct"].get(o)) for o in ("fifo", "sjf", "srpt"))
        row("idealised schedules of the same jobs, mean JCT: FIFO / SJF (oracle) / SRPT (oracle, free preemption) (s)",
            ideal(s), ideal(m))
    if s.get("ideal_gang_over_small"):
        gang = lambda r: " / ".join(fmt(r["ideal_gang_over_small"].get(o), 2) for o in ("fifo", "sjf"))
        row("idealised schedules, 16+ GPU p95 wait / 1-GPU p95 wait: FIFO / SJF (oracle)", gang(s), gang(m))
    for cls in ("1", "2-8", "16+"):
        for key, label in (("wait", "wait"), ("jct", "JCT")):
            a, b = s["by_size"][cls][key], m["by_size"][cls][key]
            row("%s, %s GPUs: mean / p50 / p95 (s), n" % (label, cls),
                "%s / %s / %s, %d" % (fmt(a["mean"]), fmt(a["p50"]), fmt(a["p95"]), a["n"]),
                "%s / %s / %s, %d" % (fmt(b["mean"]), fmt(b["p50"]), fmt(b["p95"]), b["n"]))
    for kind in sorted(set(s.get("wait_1gpu_by_kind", {})) | set(m.get("wait_1gpu_by_kind", {}))):
        a, b = (x.get("wait_1gpu_by_kind", {}).get(kind) for x in (s, m))
        show = lambda w: "-" if not w else "%s / %s, %d" % (fmt(w["mean"]), fmt(w["p95"]), w["n"])
        row("wait, 1 GPU, %s: mean / p95 (s), n" % kind, show(a), show(b))
    # The mean JCT split by kind of job: the parts add up to the mean, so the rows say
    # which jobs make the difference between the two clusters.
    for kind in sorted(set(s.get("mean_jct_parts", {})) | set(m.get("mean_jct_parts", {})), key=metrics.part_order):
        a, b = (x.get("mean_jct_parts", {}).get(kind) for x in (s, m))
        show = lambda p: "-" if not p else "%s (wait %s), %d of %d finished" % (
            fmt(p["jct"]), fmt(p["wait"]), p["finished"], p["jobs"])
        size, what = kind.split(", ", 1)
        row("part of the mean JCT (s): %s GPU%s, %s" % (size, "" if size == "1" else "s", what), show(a), show(b))
    row("longest wait of a 16+ GPU job (s); never started", "%s; %d" % (fmt(s["longest_large_wait"]), s["large_never_started"]),
        "%s; %d" % (fmt(m["longest_large_wait"]), m["large_never_started"]))
    row("mean GPUs allocated during submissions (bound: offered load)",
        "%s (%s)" % (fmt(s["alloc_mean_window"]), fmt(s["alloc_bound"])),
        "%s (%s)" % (fmt(m["alloc_mean_window"]), fmt(m["alloc_bound"])))
    row("mean GPUs allocated from first submission to the end", fmt(s["alloc_mean_run"]), fmt(m["alloc_mean_run"]))
    row("GPU-hours allocated (real time, penalty stretch included)", fmt(s["gpu_hours_allocated"], 2),
        fmt(m["gpu_hours_allocated"], 2))
    row("saturated time (s: waiting demand >= free GPUs)", fmt(s["saturated_seconds"], 0), fmt(m["saturated_seconds"], 0))
    for team in sorted(s["team_shares"]):
        a, b = s["team_shares"][team], m["team_shares"][team]
        row("team %s GPU share when saturated / entitlement %s" % (team, fmt(a["entitlement"], 2)),
            "%s (x%s)" % (fmt(a["share"], 3), fmt(a["ratio"], 2)), "%s (x%s)" % (fmt(b["share"], 3), fmt(b["ratio"], 2)))
    row("Jain's index of share/entitlement when saturated", fmt(s["jain"], 3), fmt(m["jain"], 3))
    row("multi-GPU starts at the narrowest scope free at that moment",
        "%s of %d" % (pct(s["at_best_level"]), s["multi_gpu_starts"]),
        "%s of %d" % (pct(m["at_best_level"]), m["multi_gpu_starts"]))
    row("... in one NVLink clique/domain when one was free",
        "%s of %d" % (pct(s["narrow_when_possible"]), s["narrow_possible_n"]),
        "%s of %d" % (pct(m["narrow_when_possible"]), m["narrow_possible_n"]))
    row("multi-GPU starts by scope", levels(s["levels"]), levels(m["levels"]))
    row("mean communication penalty (GPU-time weighted)", fmt(s["mean_penalty"], 3), fmt(m["mean_penalty"], 3))
    if "either_type_gpu_time" in s:
        share = lambda d: ", ".join("%s %s" % (t, pct(v)) for t, v in d.items()) or "-"
        row("jobs accepting either type: their GPU-time by type", share(s["either_type_gpu_time"]),
            share(m["either_type_gpu_time"]))
    row("fragmentation index, mean during submissions", fmt(s["frag_mean_window"], 3), fmt(m["frag_mean_window"], 3))
    if "gang_wait_idle_gpu_seconds" in s:
        idle = lambda d: "%s GPU-s over %s s (%s idle on average)" % (
            fmt(d["gang_wait_idle_gpu_seconds"], 0), fmt(d["gang_wait_seconds"], 0),
            fmt(d["gang_wait_idle_gpu_seconds"] / d["gang_wait_seconds"] if d["gang_wait_seconds"] else None))
        row("GPUs idle on their types while 16+ GPU jobs waited", idle(s), idle(m))
    # What held the GPUs while jobs that may not be preempted waited (WAITED_BEHIND order):
    # 1-GPU jobs by GPU, 2-8 GPU jobs node by node.
    waited_rows = (
        ("small_waited_behind", "while 1-GPU jobs that may not be preempted waited, the GPUs of their types",
         "%s s: a GPU idle %s, idle only on reserved units %s; none idle: a preemptible job held one %s, "
         "preemptible jobs only on reserved units %s, %sjobs that may not be preempted held all %s"),
        ("mid_waited_behind", "while 2-8 GPU jobs that may not be preempted waited, the nodes of their types",
         "%s s: a node with room %s, room only on reserved units %s; no room: preempting best effort "
         "would make room %s, only on reserved units %s; not even that, but enough GPUs free in all, spread "
         "over nodes %s, too few free in all %s"))
    for key, label, text in waited_rows:
        if key in s and key in m:
            def behind(w):
                total = sum(w.values())
                # "scattered" never holds for one GPU: its place in that row's text is empty.
                shares = tuple("" if key == "small_waited_behind" and k == "scattered" else pct(w.get(k, 0.0) / total)
                               for k in metrics.WAITED_BEHIND)
                return text % ((fmt(total, 0),) + shares) if total else "-"
            row(label, behind(s[key]), behind(m[key]))
    if "reserved_units" in m:
        u = m["reserved_units"]
        share = lambda k: pct(u[k] / u["unit_gpu_seconds"]) if u["unit_gpu_seconds"] else "-"
        row("large gangs' reservations (select/mlsched's log): units held while their gangs waited", "-",
            "%d, %s s; of their GPU-seconds: preemptible jobs %s (%d started there), not preemptible %s "
            "(%d started there: limit ended by the ready time), idle %s" % (
                u["reservations"], fmt(u["seconds"], 0), share("preemptible_gpu_seconds"), u["preemptible_started"],
                share("not_preemptible_gpu_seconds"), u["not_preemptible_started"], share("idle_gpu_seconds")))
    if "small_wait_gang_gpu_seconds" in s:
        held = lambda d: "%s GPU-s over %s s (%s held on average)" % (
            fmt(d["small_wait_gang_gpu_seconds"], 0), fmt(d["small_wait_seconds"], 0),
            fmt(d["small_wait_gang_gpu_seconds"] / d["small_wait_seconds"] if d["small_wait_seconds"] else None))
        row("GPUs held by 16+ GPU jobs on the types waiting 1-GPU jobs accept, while they waited", held(s), held(m))
    row("preemptions; GPU-hours lost (real time)", "%d; %s" % (s["preemptions"], fmt(s["gpu_hours_lost"], 3)),
        "%d; %s" % (m["preemptions"], fmt(m["gpu_hours_lost"], 3)))
    row("requeues (runs after the first)", s["requeues"], m["requeues"])
    row("final states", states(s["states"]), states(m["states"]))
    if "started_by" in s:
        by = lambda d: ", ".join("%s %d" % (k, v) for k, v in sorted(d.items())) or "-"
        row("runs started by (sacct Flags)", by(s["started_by"]), by(m["started_by"]))
    if s.get("sdiag") or m.get("sdiag"):
        def cyc(d):
            if not d:
                return "-"
            ms = lambda us: fmt(us / 1000.0 if us is not None else None)
            return "main %s x %s / %s ms; backfill %s x %s / %s ms, depth %s" % (
                d.get("main_cycles", "-"), ms(d.get("main_mean_us")), ms(d.get("main_max_us")),
                d.get("backfill_cycles", "-"), ms(d.get("backfill_mean_us")), ms(d.get("backfill_max_us")),
                d.get("backfill_depth_mean", "-"))
        row("scheduler cycles (sdiag): count x mean / max", cyc(s.get("sdiag")), cyc(m.get("sdiag")))
    row("sbatch refusals; submit lag p99 (s)", "%d; %s" % (s["sbatch_failed"], fmt(s["submit_lag_p99"], 2)),
        "%d; %s" % (m["sbatch_failed"], fmt(m["submit_lag_p99"], 2)))
    return "| metric | stock | mlsched |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def levels(d):
    order = [l for l in topology.LEVELS if l in d]
    return ", ".join("%s %d" % (l, d[l]) for l in order) or "-"


def states(d):
    return ", ".join("%s %d" % (k, v) for k, v in sorted(d.items()))


def shown_args(argv, meta):
    """The command line as a committed report shows it: the trace by file name and
    checksum, this machine's directories by their role, never a local path."""
    out, prev = [], None
    for a in argv:
        if prev == "--trace" and meta.get("trace"):
            a = "%s (sha256 %s...)" % (os.path.basename(a), trace_digest(meta)[:16])
        elif prev == "--trace":
            a = shlex.quote(os.path.basename(a))
        elif prev in ("--out", "--build-dir", "--dir-prefix", "--plugin-dir"):
            a = "<%s>" % prev[2:]
        else:
            a = shlex.quote(a)
        out.append(a)
        prev = argv[len(out) - 1]
    return out


def write(out_dir, results, args, argv, started, sched_cost, topo, failed=()):
    rewrite = "--report-only" in argv
    # A rewrite shows the machine its run recorded (runs before 2026-12-07 did not).
    mach = (results[0].get("machine") if rewrite and results else None) or machine(getattr(args, "started_commit",
                                                                                              None))
    now = datetime.datetime.utcnow()
    meta = results[0]["meta"] if results else {}
    lines = ["# Trace replay: stock Slurm vs mlsched", ""]
    cmd = "bench/replay/run" + ("" if not argv else " " + " ".join(shown_args(argv, meta)))
    if rewrite:
        recorded = bool(results and results[0].get("machine"))
        lines += ["Rewritten by `%s` on %s UTC from the results.json files an earlier run of the same command "
                  "(without --report-only) recorded. Every number below comes from that run; stock and mlsched "
                  "columns of a table come from the same run, side by side on one machine. %s" % (
                      cmd, now.strftime("%Y-%m-%d %H:%M"),
                      "The machine table is the run's." if recorded else
                      "The run recorded no machine table: the one below is the rewrite's (its commit and load "
                      "average are not the run's); the run's load average is in the tables below."), ""]
    else:
        lines += ["Written by `%s` on %s UTC after %.0f minutes. Every number below comes from that run; "
                  "stock and mlsched columns of a table come from the same run, side by side on this machine."
                  % (cmd, now.strftime("%Y-%m-%d %H:%M"), (now.timestamp() - started) / 60.0), ""]
    lines += ["## Machine", "",
              "| | |", "|---|---|",
              "| CPUs (nproc) | %s (%s) |" % (mach["nproc"], mach["cpu"]),
              "| memory | %s |" % mach["memory"], "| kernel | %s (%s) |" % (mach["kernel"], mach["os"]),
              "| Slurm | %s |" % mach["slurm"], "| mlsched commit | %s |" % mach["commit"],
              "| load average at the end | %s |" % mach["loadavg"], ""]
    if meta:
        window_h = meta["window_length_s"] / 3600.0
        lines += ["## Trace, scaling, compression", "",
                  "| | |", "|---|---|",
                  "| trace | `%s` (%s format, sha256 %s) |" % (os.path.basename(meta["trace"]), meta["format"],
                                                              trace_digest(meta)[:16]),
                  "| window | trace seconds %.0f to %.0f (%.2f h of trace; %s) |"
                  % (meta["window_start_s"], meta["window_start_s"] + meta["window_length_s"], window_h,
                     window_choice(meta)),
                  "| GPU-time by job size (1 / 2-8 / 16+ GPUs) | whole trace %s; this job list %s |"
                  % tuple(" / ".join("%.1f %%" % mix[c] for c in ("1", "2-8", "16+"))
                          for mix in (meta.get("gpu_time_mix_trace"), meta.get("gpu_time_mix_jobs")))
                  if meta.get("gpu_time_mix_trace") else "| GPU-time by job size | not recorded (older job list) |",
                  "| jobs of 16+ GPUs | %s |" % meta.get("gangs_16_plus", "not recorded"),
                  "| jobs at the duration cap | %s |" % meta.get("jobs_at_max_seconds", "not recorded"),
                  "| compression | %sx: %s real minutes of submissions, then up to %s minutes to drain |"
                  % (fmt(meta["compression"], 0), fmt(meta["minutes"], 1), fmt(args.drain_minutes, 1)),
                  "| cluster | %d GPUs (`%s`) |" % (meta["cluster_gpus"], os.path.relpath(args.shape, REPO)),
                  "| seed | %d |" % meta["seed"],
                  "| jobs in window | %d (0-GPU jobs dropped; sizes capped at %d GPUs, above 8 whole nodes) |"
                  % (meta["jobs_in_window"], meta["max_gpus"]),
                  "| GPU type mix | h100-only, a100-only, either: %s |" % meta["type_mix"],
                  "| time limits | duration x %s x worst penalty %s, rounded up to minutes |"
                  % (fmt(meta["overestimate"], 1), fmt(meta["max_penalty"], 2)),
                  "| job durations | trace duration / compression, clipped to [%s, %s] s |"
                  % (fmt(meta["min_seconds"], 0), fmt(meta["max_job_seconds"], 0)),
                  "| restart cost | %s s per resume (loading the checkpoint) |" % fmt(args.restart_cost, 1),
                  "| preemption | best-effort trace jobs are preemptible (stock: QOS scavenger, preempted by QOS normal, "
                  "which also sorts every normal job ahead of every scavenger job in stock's queue, whatever "
                  "their priorities; mlsched: `preemptible=yes`); checkpoint signal %d s before requeue; no preemption before %s s of run |"
                  % (args.checkpoint_grace, fmt(args.preempt_min_run, 0)),
                  "| GPU type speed in the trainer | %s |" % speed_text(args),
                  "| mlsched configuration | %s |" % mlsched_profile_text(args, run_conf_text(out_dir)),
                  "| fair share | PriorityDecayHalfLife %d min, PriorityCalcPeriod 1 min on both |" % args.half_life_minutes,
                  "| requeue delay | launch credentials expire after %d s (`AuthInfo=...,cred_expire=`), both |"
                  % args.cred_expire,
                  "| teams (entitlement) | %s |" % ", ".join("%s %.2f" % kv for kv in sorted(meta["team_entitlement"].items())),
                  "| trace groups -> teams | %s |" % ", ".join("%s->%s" % kv for kv in sorted(meta["team_of_group"].items())),
                  ""]
        lines += ["Communication penalty factors (runtime multipliers; `off` runs use 1.0 everywhere):", "",
                  "| scope | " + " | ".join(topology.LEVELS) + " |",
                  "|---" * (len(topology.LEVELS) + 1) + "|",
                  "| factor | " + " | ".join("%.2f" % topology.DEFAULT_PENALTY[l] for l in topology.LEVELS) + " |", ""]
    lines += ["## Main table", "",
              "One row per run: load (offered GPU demand / 128 GPUs), penalty on/off; real seconds.", "",
              "| run | jobs | JCT mean stock / mlsched | JCT p95 | wait mean | wait p95 | wait p95, 16+ GPUs | "
              "GPUs allocated (bound) | Jain | at narrowest free scope | preemptions | unfinished |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, m = r["stock"], r["mlsched"]
        two = lambda a, b, d=1: "%s / %s" % (fmt(a, d), fmt(b, d))
        lines.append("| %d: load %s (offered %.2f), penalty %s | %d | %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |" % (
            r["index"], r["load"], r["meta"]["load_offered"], r["penalty"], r["meta"]["jobs"],
            two(s["jct"]["mean"], m["jct"]["mean"]), two(s["jct"]["p95"], m["jct"]["p95"]),
            two(s["wait"]["mean"], m["wait"]["mean"]), two(s["wait"]["p95"], m["wait"]["p95"]),
            two(s["by_size"]["16+"]["wait"]["p95"], m["by_size"]["16+"]["wait"]["p95"]),
            two(s["alloc_mean_window"], m["alloc_mean_window"]), fmt(s["alloc_bound"]),
            two(s["jain"], m["jain"], 3), "%s / %s" % (pct(s["at_best_level"]), pct(m["at_best_level"])),
            "%d / %d" % (s["preemptions"], m["preemptions"]), "%d / %d" % (s["unfinished"], m["unfinished"])))
    lines.append("")
    for r in results:
        s, m = r["stock"], r["mlsched"]
        if m.get("jct_floor") is not None and s["jct"]["mean"]:
            lines += ["Run %d: no scheduler's mean JCT on this job list goes below %s s (the finished jobs' "
                      "work at full speed, with no wait, penalty or restart), so mlsched/stock's mean JCT "
                      "can be no lower than %.2f here (measured: %.2f)." % (
                          r["index"], fmt(m["jct_floor"]), m["jct_floor"] / s["jct"]["mean"],
                          m["jct"]["mean"] / s["jct"]["mean"]), ""]
        ideal = m.get("ideal_jct") or {}
        if ideal.get("fifo") and s["jct"]["mean"]:
            lines += ["Run %d, idealised schedules of the jobs mlsched finished (no scheduling cycle, no "
                      "communication penalty, best-fit placement; bench/replay/metrics.py `ideal_jcts`): "
                      "starting every job that fits in submission order gives a mean JCT of %s s (%.2f of "
                      "stock's); least GPU-time first, knowing every duration, %s s (%.2f); and also "
                      "preempting and migrating for free, %s s (%.2f). They are references, not bounds." % (
                          r["index"], fmt(ideal["fifo"]), ideal["fifo"] / s["jct"]["mean"],
                          fmt(ideal["sjf"]), ideal["sjf"] / s["jct"]["mean"],
                          fmt(ideal["srpt"]), ideal["srpt"] / s["jct"]["mean"]), ""]
    for f in failed:
        lines += ["Run %d (load %s, penalty %s) FAILED and is not in this report: `%s`"
                  % (f["index"], f["load"], f["penalty"], f["error"].replace("`", "'").replace("\n", " ")), ""]
    for r in results:
        tag = "run%d-load%s-penalty-%s" % (r["index"], r["load"], r["penalty"])
        names = plots(out_dir, r, tag)
        lines += ["## Run %d: load %s, penalty %s" % (r["index"], r["load"], r["penalty"]), "",
                  "%d jobs (offered load %.2f x %d GPUs, %.1f %% of the window's jobs); run took %.0f s; "
                  "left at the cap: stock %d, mlsched %d; machine load average during the run: mean %s, max %s "
                  "(on %d CPUs)." % (
                      r["meta"]["jobs"], r["meta"]["load_offered"], r["meta"]["cluster_gpus"],
                      100.0 * r["meta"]["kept_fraction"], r["t_run"], r["left_at_cap"]["stock"],
                      r["left_at_cap"]["mlsched"], fmt(r.get("loadavg_mean")), fmt(r.get("loadavg_max")),
                      os.cpu_count()), "",
                  run_table(r),
                  "![JCT CDF](%s) ![wait by size](%s)" % (names["jct"], names["wait"]), "",
                  "![allocation](%s) ![team share](%s)" % (names["alloc"], names["share"]), "",
                  "![fragmentation](%s)" % names["frag"], ""]
    lines += ["## How the numbers are made", "",
              "- Submit, start, end, nodes, state and GPU count of every Slurm run of a job: `sacct -D -X -P` "
              "from each cluster's slurmdbd. GPU indices: Slurm 22.05's accounting stores GPU counts "
              "(`AllocTRES`), not indices, so they come from `scontrol show job -d` (`GRES=gpu:a100:4(IDX:0-3)`), "
              "read by the bench trainer at each start and printed into the job's output file.",
              "- JCT = end of the final run - first submission; wait = first start - submission. "
              "Jobs cut at the drain cap have no JCT and count as unfinished.",
              "- Saturated = sample times (every 2 s) when waiting jobs ask for at least as many GPUs as are free.",
              "- Narrowest free scope: at each multi-GPU start, the GPUs free at that moment (plus the job's own) "
              "are rebuilt from all trainer starts and ends; scopes are clique < node < NVLink domain < switch < cluster.",
              "- Preemption = a run that got the checkpoint signal and was stopped before finishing; GPU-time lost = "
              "its GPUs x (its wall time - the work its checkpoint kept x its penalty), plus, for each resumed run, "
              "its GPUs x the time it spent loading the checkpoint (`--restart-cost`).",
              "- Fragmentation index = free GPUs on partly used nodes / all free GPUs, sampled every 10 s.",
              "- JCT floor = the mean, over a cluster's finished jobs, of each job's work at the fastest GPU type it "
              "accepts: a job's JCT is never below its work, whatever the scheduler does, so no ratio of mean JCTs "
              "goes below floor / stock's mean JCT on the same job list.",
              "- Scheduler cycles: `sdiag` of each controller when the last job ended or the drain cap came "
              "(main scheduler and backfill: cycles, mean and longest cycle, backfill's mean depth).", ""]
    if sched_cost is not None:
        lines += ["## Scheduler cost", ""]
        if "markdown" in sched_cost:
            # Its headings go one level down, under this report's section.
            body = "\n".join("#" + l if l.startswith("#") else l
                             for l in sched_cost["markdown"].strip().splitlines())
            lines += ["From `%s`:" % sched_cost["command"], "", body, ""]
        else:
            lines += ["Not included: %s." % sched_cost["error"], ""]
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
