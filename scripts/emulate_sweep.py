#!/usr/bin/env python3
"""Replays a candidate sweep's timings against the plans a build's dispatcher
makes (tools/tgv-plan, no GPU needed): what `auto` would have measured at each
of the sweep's points, and how often its pick lands within 5% of the best.

  python3 scripts/emulate_sweep.py --gpu h100 docs/data/2026-12-06-h100-f/call3/sweep.csv.gz \
      [--plan-bin build/tools/tgv-plan ...]

A sweep (bench/experiments/isolated.py --csv, or h200-round.sh PART=5) times,
at every (N, K, M), torch's F.linear and our candidates (tactic, split; split
-1 is stream-K) back to back. Where tgv-plan picks cuBLASLt the point takes
torch's time (the same library); where it picks our kernel, that candidate's
time, if the sweep timed it (else the point is counted as unmeasured). Each
--plan-bin (several compare builds) gets a line per M: the pick against torch
(geomean), the picks within 5% of the best timed (any candidate or torch), and
the picks under 0.98x torch.
"""

import argparse
import collections
import csv
import gzip
import math
import sys

from emulate_corpus import plans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--gpu", required=True, choices=("h200", "h100"))
    ap.add_argument("--plan-bin", action="append", help="a tgv-plan build (repeatable; default build/tools/tgv-plan)")
    a = ap.parse_args()
    f = gzip.open(a.csv, "rt") if a.csv.endswith(".gz") else open(a.csv)
    by = collections.defaultdict(list)
    for r in csv.DictReader(f):
        if int(r.get("stages") or 0) == 0:  # the library's own ring depth
            by[(int(r["n"]), int(r["k"]), int(r["m"]))].append(r)
    keys = sorted(by)
    us = lambda r: float(r["chain_us"] if "chain_us" in r else r["us"])  # noqa: E731
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    for plan_bin in a.plan_bin or ["build/tools/tgv-plan"]:
        picks, unmeasured, routes = [], 0, collections.Counter()
        for key, (auto, tactic, split) in sorted(plans(plan_bin, a.gpu, keys).items()):
            tactic, split = str(tactic), str(split)  # as the sweep's CSV spells them
            rows = by[key]
            torch = [us(r) for r in rows if r["cand"] == "torch"]
            if not torch:
                continue
            if auto == "cublas":
                got = torch[0]
                routes["cublas"] += 1
            else:
                timed = [us(r) for r in rows if r["cand"] == "tgv" and r["tactic"] == tactic and r["split"] == split]
                if not timed:
                    unmeasured += 1
                    continue
                got = timed[0]
                routes["stream-K" if split == "-1" else "split %s" % split] += 1
            best = min(us(r) for r in rows if r["cand"] in ("tgv", "torch"))
            picks.append((key[2], torch[0] / got, got <= 1.05 * best))
        print("%s (%s): %d points, %d unmeasured; routes %s" % (plan_bin, a.gpu, len(picks), unmeasured,
                                                                 dict(sorted(routes.items()))))
        for m in sorted({p[0] for p in picks}) + [None]:
            sel = [p for p in picks if m is None or p[0] == m]
            print("  %-6s pick vs torch %.3f, within 5%% of the best %d of %d, under 0.98x torch %d" % (
                "all" if m is None else "M=%d" % m, geo([p[1] for p in sel]), sum(p[2] for p in sel), len(sel),
                sum(p[1] < 0.98 for p in sel)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
