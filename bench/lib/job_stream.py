#!/usr/bin/env python3
"""The seeded job stream every scheduler benchmark submits (bench/sched_cycle,
bench/sched_cost), so stock and mlsched always see the same queue.

    job_stream.py JOBS [--seed N] [--min-seconds S] [--max-seconds S] [--scale-nodes K]

One job per line: user team nodes gpus_per_node gpu_types locality seconds.
A mix of ML-shaped jobs: mostly 1-2 GPUs, some full nodes, some 2-4 node gangs.
--scale-nodes K (a cluster K times the 16-node default) lets the gangs grow with
the cluster: 2-4 node gangs become 2-4*K nodes at most (kept <= 16) so large
clusters still see large gangs.
"""
import argparse
import random

USERS = [("ml-alice", "vision"), ("ml-bob", "nlp"), ("ml-carol", "research"), ("ml-dave", "vision")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jobs", type=int)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--min-seconds", type=int, default=20)
    ap.add_argument("--max-seconds", type=int, default=90)
    ap.add_argument("--scale-nodes", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    gangs = [2, 3, 4] + ([8, 16] if a.scale_nodes >= 4 else [])
    for _ in range(a.jobs):
        user, team = rng.choice(USERS)
        r = rng.random()
        if r < 0.6:
            nodes, gpus = 1, rng.choice([1, 2])
        elif r < 0.85:
            nodes, gpus = 1, rng.choice([4, 8])
        else:
            nodes, gpus = rng.choice(gangs), 8
        typ = rng.choice(["h100", "a100", "h100,a100"])
        loc = rng.choice(["any", "nvlink-domain"]) if nodes > 1 else "any"
        print(user, team, nodes, gpus, typ, loc, rng.randint(a.min_seconds, a.max_seconds))


if __name__ == "__main__":
    main()
