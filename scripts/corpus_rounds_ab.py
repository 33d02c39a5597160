#!/usr/bin/env python3
"""Rounds of two settings of one build timed on one card (corpus_bench.py CSVs,
e.g. h200-round.sh PART=65's corpus-b2b-main-<r>.csv and -margin-<r>.csv),
compared point by point on the median over rounds of auto / torch: the points
whose plan differs (each with both medians and its worst round), then, per
setting, the geometric mean, the points under 0.98x torch and backend=cublas's.
A single round's count of points under 0.98x moves by several from run to run
(perf-notes §63); a median over rounds does not. --groups adds, for the points
planned alike, B's time over A's (each over torch's in its own run) on geomean
per M, tile and split and weights under / over 8 and 48 MB: a setting that
moves no plan (a kernel switch, e.g. TGV_EXP_EARLY_TRIGGER=0) shows there.

  python3 scripts/corpus_rounds_ab.py --a 'r/corpus-b2b-main-*.csv' --b 'r/corpus-b2b-margin-*.csv'
"""
import argparse
import glob
import math
import statistics

from emulate_corpus import load as load_csv


def load(pattern):
    runs = [{(r["label"], r["n"], r["k"], r["m"]): r for r in load_csv(path)} for path in sorted(glob.glob(pattern))]
    if not runs:
        raise SystemExit("no CSV matches %s" % pattern)
    return runs


def median(runs, key, column):
    return statistics.median(float(r[key][column]) for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="glob of setting A's rounds")
    ap.add_argument("--b", required=True, help="glob of setting B's rounds")
    ap.add_argument("--floor", type=float, default=0.98, help="the ratio to torch a point must reach")
    ap.add_argument("--groups", action="store_true", help="B / A per M, tile, split and weight class")
    args = ap.parse_args()
    runs = {"A": load(args.a), "B": load(args.b)}
    keys = sorted(set.intersection(*(set(r) for rs in runs.values() for r in rs)))
    print("A: %d rounds, B: %d rounds, %d points in all of them" % (len(runs["A"]), len(runs["B"]), len(keys)))
    moved = [k for k in keys if runs["A"][0][k]["plan"] != runs["B"][0][k]["plan"]]
    logs = []
    for k in moved:
        a, b = (median(runs[s], k, "auto_vs_torch") for s in "AB")
        worst = [min(float(r[k]["auto_vs_torch"]) for r in runs[s]) for s in "AB"]
        logs.append(math.log(b / a))
        print("  %s %sx%s M=%s: %s -> %s, auto/torch %.3f -> %.3f (worst round %.3f -> %.3f)" %
              (k[0], k[1], k[2], k[3], runs["A"][0][k]["plan"], runs["B"][0][k]["plan"], a, b, *worst))
    if moved:
        print("%d points planned differently, B / A %.3f on geomean" % (len(moved), math.exp(sum(logs) / len(logs))))
    if args.groups:
        groups = {}
        for k in keys:
            plan = runs["A"][0][k]["plan"].split()
            if plan != runs["B"][0][k]["plan"].split():
                continue
            mb = float(runs["A"][0][k]["weight_mb"])
            tile = " ".join(plan[2:5]) if plan[0] == "tgv" else "cublas"
            g = (int(k[3]), tile, "<8" if mb < 8 else "<48" if mb < 48 else ">=48")
            ratio = median(runs["A"], k, "auto_vs_torch") / median(runs["B"], k, "auto_vs_torch")
            groups.setdefault(g, []).append(ratio)
        print("B / A time (over torch), points planned alike, by M, plan and weight MB:")
        for g, v in sorted(groups.items()):
            print("  M=%-4d %-22s %-5s %4d points  %.3f" % (g[0], g[1], g[2], len(v),
                                                            math.exp(statistics.mean(math.log(x) for x in v))))
    for s in "AB":
        ratios = {k: median(runs[s], k, "auto_vs_torch") for k in keys}
        under = sorted((v, k) for k, v in ratios.items() if v < args.floor)
        cublas_under = sum(median(runs[s], k, "cublas_vs_torch") < args.floor for k in keys)
        print("%s: auto %.3fx torch (geomean of medians), %d points under %.2fx, backend=cublas %d" %
              (s, math.exp(statistics.mean(math.log(v) for v in ratios.values())), len(under), args.floor,
               cublas_under))
        for v, k in under:
            print("    %.3f %s %sx%s M=%s (%s)" % (v, k[0], k[1], k[2], k[3], runs[s][0][k]["plan"]))


if __name__ == "__main__":
    main()
