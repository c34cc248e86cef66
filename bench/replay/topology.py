"""Cluster topology for the replay: which NVLink clique, domain and switch each GPU
sits in (from a shape file, etc/cluster/default.shape), and the communication
penalty of an allocation. Used by the bench trainer (to stretch its runtime) and
by the metrics (placement quality); no Slurm here, so it is unit-testable.
"""

import os
import sys

# Placement scopes, narrowest first: a job's level is the narrowest scope holding
# all its GPUs. One-node jobs are "clique" or "node"; multi-node jobs
# "nvlink-domain", "switch" or "cluster".
LEVELS = ("single", "clique", "node", "nvlink-domain", "switch", "cluster")

# Runtime multipliers per level (see bench/replay/README.md for where they come
# from). "node" = one node but GPUs in several NVLink cliques (PCIe between
# them); "nvlink-domain" = several nodes joined by a multi-node NVLink domain;
# "switch" = several NVLink domains under one leaf switch (InfiniBand);
# "cluster" = across leaf switches (through the spine).
DEFAULT_PENALTY = {"single": 1.0, "clique": 1.0, "nvlink-domain": 1.05, "node": 1.15,
                   "switch": 1.30, "cluster": 1.50}
NO_PENALTY = {level: 1.0 for level in LEVELS}

# Training throughput per GPU type, relative to the slowest (a job's work runs
# `speed` times faster on that type). `--gpu-speed mlperf` uses H100 = 1.8 x A100:
# MLPerf Training v3.0 (closed division, June 2023), Dell's two ResNet-50 submissions
# with the same CPUs and 16 GPUs each, 7.8 min on H100-SXM5-80GB against 14.4 min on
# A100-SXM-80GB (the same round's 3D-UNet pair gave 1.4x, DLRM 2.0x), as compared at
# silvertonconsulting.com, 2023-07-12. Every report is also run with NO_SPEED.
MLPERF_SPEED = {"h100": 1.8, "a100": 1.0}
NO_SPEED = {}


def parse_speed(text):
    """'off' -> {}; 'mlperf' -> MLPERF_SPEED; 'h100=1.8,a100=1' -> that. Raises
    ValueError with a message for the user. Factors are relative to the slowest
    type, so none is below 1.0 (time limits assume the slowest type runs at 1.0)."""
    if text in ("off", ""):
        return dict(NO_SPEED)
    if text == "mlperf":
        return dict(MLPERF_SPEED)
    out = {}
    for item in text.split(","):
        gtype, sep, value = item.partition("=")
        try:
            factor = float(value)
        except ValueError:
            factor = None
        if not sep or not gtype or factor is None:
            raise ValueError("GPU speed %r: expected type=factor (e.g. h100=1.8,a100=1.0), off or mlperf" % item)
        if factor < 1.0:
            raise ValueError("GPU speed %s=%s: factors are relative to the slowest type, so at least 1.0"
                             % (gtype, value))
        out[gtype] = factor
    return out


def format_speed(speed):
    return ",".join("%s=%g" % kv for kv in sorted(speed.items())) or "off"

# The one Python hostlist implementation (scripts/mlsched_hostlist.py), shared with
# scripts/cluster, which wrote the files this module reads.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts"))
from mlsched_hostlist import hostlist_expand as expand_hostlist  # noqa: E402


def expand_indices(spec):
    """'0-2,5' -> [0, 1, 2, 5]."""
    out = []
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


class Topology:
    def __init__(self):
        self.nodes = {}     # node -> dict(gpu_type, gpus, clique_of: [clique per GPU], domain, switch)

    @classmethod
    def from_shape(cls, path):
        topo = cls()
        with open(path) as f:
            for raw in f:
                fields = raw.split("#", 1)[0].split()
                if not fields or not fields[0].startswith("Nodes="):
                    continue
                kv = dict(t.split("=", 1) for t in fields)
                gpus = int(kv["Gpus"])
                sizes = [int(s) for s in kv.get("NvlinkCliques", ",".join(["1"] * gpus)).split(",")]
                clique_of = [c for c, size in enumerate(sizes) for _ in range(size)]
                for node in expand_hostlist(kv["Nodes"]):
                    topo.nodes[node] = {"gpu_type": kv["GpuType"], "gpus": gpus, "clique_of": clique_of,
                                        "domain": kv.get("NvlinkDomain"), "switch": kv.get("Switch", "sw0")}
        return topo

    @property
    def total_gpus(self):
        return sum(n["gpus"] for n in self.nodes.values())

    def _spans_cliques(self, alloc):
        return any(len({self.nodes[n]["clique_of"][i] for i in idx}) > 1 for n, idx in alloc.items())

    def level(self, alloc):
        """Narrowest scope of an allocation {node: [gpu index, ...]} (see LEVELS)."""
        alloc = {n: list(idx) for n, idx in alloc.items() if idx}
        if sum(len(idx) for idx in alloc.values()) <= 1:
            return "single"
        if len(alloc) == 1:
            return "node" if self._spans_cliques(alloc) else "clique"
        domains = {self.nodes[n]["domain"] for n in alloc}
        if len(domains) == 1 and None not in domains:
            return "nvlink-domain"
        switches = {self.nodes[n]["switch"] for n in alloc}
        return "switch" if len(switches) == 1 else "cluster"

    def penalty(self, alloc, factors=None):
        """Runtime multiplier of an allocation: the factor of its level, and for a
        multi-node job never less than the cross-clique factor when some node's
        GPUs span cliques (its slowest link decides)."""
        factors = factors or DEFAULT_PENALTY
        level = self.level(alloc)
        value = factors[level]
        if level in ("nvlink-domain", "switch", "cluster") and self._spans_cliques(alloc):
            value = max(value, factors["node"])
        return value

    def speed(self, alloc, speed):
        """Throughput factor of an allocation: its GPU type's (jobs never mix types);
        1.0 for a type without a factor."""
        types = {self.nodes[n]["gpu_type"] for n in alloc if n in self.nodes}
        return min((speed.get(t, 1.0) for t in types), default=1.0)

    def best_level(self, gpus, nodes, gpu_types, free):
        """Narrowest level a job of `gpus` GPUs (`nodes` nodes when > 1) of one of
        `gpu_types` could get, given free GPU indices {node: set(idx)}. None if
        it cannot start at all on the free GPUs."""
        if gpus <= 1:
            return "single"
        order = ("clique", "node") if nodes <= 1 else ("nvlink-domain", "switch", "cluster")
        for level in order:
            if self._fits(level, gpus, nodes, gpu_types, free):
                return level
        return None

    def _fits(self, level, gpus, nodes, gpu_types, free):
        cands = [n for n, info in self.nodes.items() if info["gpu_type"] in gpu_types]
        if nodes <= 1:
            per_node = gpus
            for n in cands:
                f = free.get(n, set())
                if len(f) < per_node:
                    continue
                if level == "clique":
                    cl = self.nodes[n]["clique_of"]
                    for c in set(cl):
                        if len([i for i in f if cl[i] == c]) >= per_node:
                            return True
                else:
                    return True
            return False
        if level in ("clique", "node"):
            return False
        per_node = gpus // nodes
        key = {"nvlink-domain": "domain", "switch": "switch", "cluster": None}[level]
        groups = {}
        for n in cands:
            if len(free.get(n, ())) >= per_node:
                g = self.nodes[n][key] if key else "all"
                if g is None:
                    continue
                groups.setdefault(g, []).append(n)
        return any(len(ns) >= nodes for ns in groups.values())


def parse_job_alloc(scontrol_text):
    """{node: [gpu idx]} from `scontrol show job -d` lines such as
    '  Nodes=gpu[01-02] CPU_IDs=0 Mem=4000 GRES=gpu:h100:8(IDX:0-7)'."""
    alloc = {}
    for line in scontrol_text.splitlines():
        line = line.strip()
        if not line.startswith("Nodes=") or "GRES=" not in line:
            continue
        fields = dict(t.split("=", 1) for t in line.split() if "=" in t)
        gres = fields.get("GRES", "")
        idx = []
        for part in gres.split("),"):
            if "(IDX:" in part:
                idx += expand_indices(part.split("(IDX:", 1)[1].rstrip(")"))
        for node in expand_hostlist(fields["Nodes"]):
            alloc[node] = sorted(set(idx))
    return alloc


def format_alloc(alloc):
    return ";".join("%s:%s" % (n, ",".join(str(i) for i in idx)) for n, idx in sorted(alloc.items()))


def parse_alloc(text):
    alloc = {}
    for part in filter(None, text.split(";")):
        node, _, idx = part.partition(":")
        alloc[node] = [int(i) for i in idx.split(",") if i != ""]
    return alloc
