#!/usr/bin/env python3
"""Two corpus runs (corpus_bench.py CSVs), possibly of different sessions or
machines, compared where auto planned the tgv kernel on the same tile and split in both
(the `plan` column; tgv_us then times that plan):
the ratio of (tgv / torch) in the new run to (tgv / torch) in the old one, so a
GPU's or a session's speed cancels through torch's own call timed beside ours.
Grouped by tile, split 1 or split-K, and whether the ring depth changed; one
line per group: points and the geometric mean (> 1: the new run is slower).

  python3 scripts/corpus_plan_delta.py OLD.csv.gz NEW.csv.gz [--column tgv_us]
"""
import argparse
import collections
import csv
import gzip
import math


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return {(r["label"], r["n"], r["k"], r["m"]): r for r in csv.DictReader(f)}


def parse(plan):
    """'tgv 2 64x32x128 split 2 stages 8' -> (tile, split, stages); None for cuBLASLt."""
    f = plan.split()
    if not f or f[0] != "tgv":
        return None
    return f[2], int(f[4]), int(f[6])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--column", default="tgv_us", help="the timing compared (tgv_us: the tgv backend's plan)")
    a = ap.parse_args()
    old, new = load(a.old), load(a.new)
    groups = collections.defaultdict(list)
    for key, r in new.items():
        o = old.get(key)
        if o is None:
            continue
        pn, po = parse(r["plan"]), parse(o["plan"])
        if pn is None or po is None or pn[:2] != po[:2]:
            continue
        ratio = (float(r[a.column]) / float(r["torch_us"])) / (float(o[a.column]) / float(o["torch_us"]))
        groups[(pn[0], "split 1" if pn[1] == 1 else "split-K", "ring %d -> %d" % (po[2], pn[2]))].append(ratio)
    print("| tile | split | ring | points | new / old (%s / torch), geomean |" % a.column)
    print("|---|---|---|---|---|")
    for (tile, split, ring), v in sorted(groups.items()):
        print("| %s | %s | %s | %d | %.3f |" % (tile, split, ring, len(v), math.exp(sum(map(math.log, v)) / len(v))))


if __name__ == "__main__":
    main()
