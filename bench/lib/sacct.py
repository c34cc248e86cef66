"""One reader for what the benchmarks take from `sacct -P` output, so the replay
(bench/replay/run) and the scheduler-cycle window (bench/lib/window_starts.py)
count GPUs and read times the same way."""
import datetime


def gpus_of(tres):
    """GPUs and the set of GPU types in an AllocTRES field
    (cpu=8,...,gres/gpu:h100=8,gres/gpu=8). A job that asked for no type has
    only gres/gpu=N: its type set is empty."""
    gpus, types = 0, set()
    for part in (tres or "").split(","):
        key, _, value = part.partition("=")
        if key == "gres/gpu" and value.isdigit():
            gpus = int(value)
        elif key.startswith("gres/gpu:"):
            types.add(key[len("gres/gpu:"):])
    return gpus, types


def time_of(text):
    """Epoch seconds of a Start/End/Submit field, or None for a job that has not
    reached it (Unknown, None, empty). Reads both forms sacct prints: epoch
    seconds (SLURM_TIME_FORMAT=%s) and its default ISO local time."""
    text = (text or "").strip()
    if not text or text in ("Unknown", "None"):
        return None
    if text.isdigit():
        return int(text)
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


# sacct's Flags field names the scheduler that started a job; on 22.05 it reads
# "SchedMain,StartRecieved" (Slurm's spelling).
SCHEDULER_OF_FLAG = (("SchedBackfill", "backfill"), ("SchedMain", "main"), ("SchedSubmit", "submit"))


def scheduler_of(flags):
    """Which scheduler started the job: "main", "backfill", "submit" (at submission)
    or "" (not started, or a Slurm that does not say)."""
    for flag, name in SCHEDULER_OF_FLAG:
        if flag in (flags or "").split(","):
            return name
    return ""
