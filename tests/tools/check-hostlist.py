#!/usr/bin/python3
"""The Python hostlist module (scripts/mlsched_hostlist.py, used by scripts/cluster
and bench/replay) expands every expression as Slurm itself does (`scontrol show
hostnames`), and its compressed form expands back to the same names.
Skips (exit 77) when Slurm's scontrol is not installed."""

import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from mlsched_hostlist import hostlist_compress, hostlist_expand  # noqa: E402

scontrol = shutil.which("scontrol")
if not scontrol:
    print("SKIP: scontrol not installed: no reference to compare with")
    sys.exit(77)

fixed = ["gpu[01-04,07]", "gpu[01-16],cpu01", "n[8-11]", "a[1-2]b[3-4]", "gpu[001-010]",
         "h100-[0-3],a100-[10-12]", "solo", "gpu[09-10]"]
rng = random.Random(20261204)
generated = []
for _ in range(60):
    parts = []
    for _ in range(rng.randint(1, 3)):
        prefix = rng.choice(["gpu", "n", "h100-", "rack1-node"])
        width = rng.choice([1, 2, 3])
        ranges = []
        for _ in range(rng.randint(1, 3)):
            lo = rng.randint(0, 40)
            hi = lo + rng.randint(0, 6)
            ranges.append(str(lo).zfill(width) if lo == hi else "%s-%s" % (str(lo).zfill(width), str(hi).zfill(width)))
        parts.append("%s[%s]" % (prefix, ",".join(ranges)))
    generated.append(",".join(parts))

with tempfile.TemporaryDirectory() as tmp:
    conf = os.path.join(tmp, "slurm.conf")
    with open(conf, "w") as f:
        f.write("ClusterName=hostlist-check\nSlurmctldHost=localhost\n")
    env = dict(os.environ, SLURM_CONF=conf)
    failures = 0
    for expr in fixed + generated:
        out = subprocess.run([scontrol, "show", "hostnames", expr], env=env, capture_output=True, text=True,
                             timeout=30)
        if out.returncode != 0:
            print("FAIL: scontrol refused %r: %s" % (expr, out.stderr.strip()))
            failures += 1
            continue
        slurm = out.stdout.split()
        ours = hostlist_expand(expr)
        if ours != slurm:
            print("FAIL: %r: Slurm %s, ours %s" % (expr, slurm[:8], ours[:8]))
            failures += 1
        back = hostlist_expand(hostlist_compress(ours))
        if sorted(set(back)) != sorted(set(ours)):
            print("FAIL: %r compressed to %r, which expands to other names" % (expr, hostlist_compress(ours)))
            failures += 1
    print("%d expressions compared with scontrol, %d failures" % (len(fixed) + len(generated), failures))
    sys.exit(1 if failures else 0)
