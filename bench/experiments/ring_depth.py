#!/usr/bin/env python3
"""Reads a sweep of `isolated.py --csv` (every candidate timed back to back and
between spacer kernels) and asks how a ring-depth rule would do (perf-notes §20):
for each rule, the picked candidate's time against torch in both arrangements.

  python3 bench/experiments/ring_depth.py stage-sweep.csv.gz

A rule maps the candidate the dispatcher ranks first at its deepest ring
(here: the fastest deepest candidate back to back, i.e. a perfect ranking)
to a ring depth; the oracles show the headroom.
"""
import collections
import csv
import gzip
import math
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    pts = collections.defaultdict(dict)
    for r in csv.DictReader(opener(path, "rt")):
        key = (int(r["n"]), int(r["k"]), int(r["m"]))
        if r["cand"] == "tgv":
            name = (int(r["tactic"]), int(r["cta_m"]), int(r["cta_n"]), int(r["cta_k"]), int(r["split"]),
                    int(r["stages"]))
        else:
            name = r["cand"]
        pts[key][name] = (float(r["chain_us"]), float(r["isolated_us"]))
    return pts


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def ctas_of(n, cand):
    return -(-n // cand[1]) * cand[4]


def main():
    pts = load(sys.argv[1])
    rules = {
        "deepest (today's ring)": lambda n, c, g: 0,
        "6 stages when 67..132 CTAs": lambda n, c, g: 6 if 66 < ctas_of(n, c) <= 132 else 0,
        "6 stages when 67..100 CTAs": lambda n, c, g: 6 if 66 < ctas_of(n, c) <= 100 else 0,
        "6 stages always": lambda n, c, g: 6,
    }
    pol = collections.defaultdict(lambda: ([], []))
    for (n, k, m), d in pts.items():
        if "torch" not in d:
            continue
        tc, ti = d["torch"]
        tg = {c: v for c, v in d.items() if isinstance(c, tuple)}
        if not tg:
            continue
        deep = {c: v for c, v in tg.items() if c[5] == 0}
        first = min(deep, key=lambda c: deep[c][0])
        for name, rule in rules.items():
            s = rule(n, first, tg)
            c = first[:5] + (s,)
            v = tg.get(c, tg[first])
            pol[name][0].append(tc / v[0])
            pol[name][1].append(ti / v[1])
        for name, key in (("oracle back to back", 0), ("oracle between kernels", 1)):
            c = min(tg, key=lambda c: tg[c][key])
            pol[name][0].append(tc / tg[c][0])
            pol[name][1].append(ti / tg[c][1])
        c = min(tg, key=lambda c: tg[c][0] / tc + tg[c][1] / ti)
        pol["oracle on both"][0].append(tc / tg[c][0])
        pol["oracle on both"][1].append(ti / tg[c][1])
        if "auto" in d:
            pol["auto (the library's pick)"][0].append(tc / d["auto"][0])
            pol["auto (the library's pick)"][1].append(ti / d["auto"][1])
    print("rule | points | vs torch back to back: geomean, < 0.98x | between kernels: geomean, < 0.98x")
    for name, (a, b) in pol.items():
        print("%-30s %4d | %.3f %4d | %.3f %4d" % (name, len(a), gm(a), sum(x < 0.98 for x in a), gm(b),
                                                   sum(x < 0.98 for x in b)))


if __name__ == "__main__":
    main()
