#!/usr/bin/env python3
"""Compares planner builds on timings already measured: each corpus run of a
same-session pair (or more) is read with the tgv-plan binary of the build it
ran, and each candidate build's plan at a point takes the time of a run whose
build planned the same (its `cublas_us` where the candidate picks cuBLASLt, its
`tgv_us` where both planned the same tactic and split); a plan no run timed
takes its candidate's time from a sweep of every candidate (isolated.py /
sweep.py CSV, ratio to that sweep's torch), if given; else the point is left
out. Every candidate is scored on the points all candidates have timings for.

  python3 scripts/emulate_ab.py --gpu h100 \\
      --run docs/data/2026-12-06-h100-d/call2-pf0/corpus-b2b-A.csv.gz=/tmp/plan-main \\
      --run docs/data/2026-12-06-h100-d/call4-E/corpus-b2b.csv.gz=/tmp/plan-E \\
      --sweep docs/data/2026-12-06-h100-b/sweep.csv.gz \\
      /tmp/plan-E /tmp/plan-candidate

(tgv-plan binaries: build tools/tgv-plan at each commit and copy it out.) Where
several runs timed a plan, their torch ratios are averaged.
"""

import argparse
import collections
import math
import sys

from emulate_corpus import load, plans


def sweep_ratios(path):
    """{(n, k, m): {(cta_m, cta_n, cta_k, split): torch us / candidate us}} at the deepest ring."""
    us = collections.defaultdict(dict)
    for r in load(path):
        if r.get("stages") not in ("0", "", None):
            continue
        key = (int(r["n"]), int(r["k"]), int(r["m"]))
        t = float(r["chain_us"] if "chain_us" in r else r["us"])
        us[key][(int(r["cta_m"]), int(r["cta_n"]), int(r["cta_k"]), int(r["split"])) if r["cand"] == "tgv"
                else r["cand"]] = t
    return {k: {c: d["torch"] / t for c, t in d.items() if c != "torch" and not isinstance(c, str)}
            for k, d in us.items() if "torch" in d}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="+", help="tgv-plan binaries of the builds to compare")
    ap.add_argument("--gpu", required=True, choices=("h200", "h100"))
    ap.add_argument("--run", action="append", required=True, metavar="CSV=PLAN_BIN",
                    help="a corpus run and the tgv-plan binary of the build it ran (repeatable)")
    ap.add_argument("--sweep", help="a sweep CSV for plans no run timed")
    a = ap.parse_args()
    runs = []
    for spec in a.run:
        path, plan_bin = spec.split("=", 1)
        rows = {(int(r["n"]), int(r["k"]), int(r["m"])): r for r in load(path)
                if all(r[c + "_status"] == "ok" for c in ("tgv", "cublas", "torch"))}
        runs.append((rows, plan_bin))
    keys = sorted(set.intersection(*(set(rows) for rows, _ in runs)))
    timed = [(rows, plans(plan_bin, a.gpu, keys, full=True)) for rows, plan_bin in runs]
    sweep = sweep_ratios(a.sweep) if a.sweep else {}
    ratios = {}
    for cand in a.candidates:
        got = {}
        for key, (auto, tactic, cta_m, cta_n, cta_k, split) in plans(cand, a.gpu, keys, full=True).items():
            vals = []
            for rows, ran in timed:
                r = rows[key]
                if auto == "cublas":
                    vals.append(float(r["torch_us"]) / float(r["cublas_us"]))
                elif ran[key][1] == tactic and ran[key][5] == split:  # the run's tgv backend planned the same
                    vals.append(float(r["torch_us"]) / float(r["tgv_us"]))
            if not vals and auto == "tgv" and (cta_m, cta_n, cta_k, split) in sweep.get(key, {}):
                vals.append(sweep[key][(cta_m, cta_n, cta_k, split)])
            if vals:
                got[key] = sum(vals) / len(vals)
        ratios[cand] = got
    common = [k for k in keys if all(k in got for got in ratios.values())]
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    print("%d corpus points in every run; %d with a timing for every candidate's plan" % (len(keys), len(common)))
    for cand, got in ratios.items():
        print("  %s: auto vs torch geomean M <= 32 %.3f, all %.3f, points under 0.98x %d (timed: %d)" % (
            cand, geo([got[k] for k in common if k[2] <= 32]), geo([got[k] for k in common]),
            sum(got[k] < 0.98 for k in common), len(got)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
