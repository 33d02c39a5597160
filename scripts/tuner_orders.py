#!/usr/bin/env python3
"""How a tuner's timing order decides what it picks (perf-notes §48).

Reads sweeps that timed every candidate both ways (isolated.py --csv without
--chain-only: chain_us back to back, isolated_us between spacer kernels) and, per
point, picks the candidate (ours or torch's cuBLAS call, as the tuner's cuBLASLt
stand-in) by each policy: the back-to-back time ("self"), the between-kernels
time ("kernels"), their mean ("both"), and what `auto` ran. Each pick is judged in
both orders against the best of that order: the geometric mean of pick / best
and the points more than 5% off. In sample: the same timings pick and judge, so
a policy looks perfect in its own order; the other order is the test.

  python3 scripts/tuner_orders.py docs/data/2026-12-04-h200-eve/sweep-m1-4-16-32.csv.gz [...]
  python3 scripts/tuner_orders.py SWEEP --shapes 8192x1024,8192x3584 --m 1,4   # the picks point by point
"""

import argparse
import csv
import gzip
import math
from collections import defaultdict

POLICIES = {
    "self": lambda r: r["chain"],
    "kernels": lambda r: r["iso"],
    "both": lambda r: r["chain"] + r["iso"],
}


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    points = defaultdict(list)
    with opener(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            if r["isolated_us"] in ("", "nan"):
                continue
            name = r["cand"] if r["cand"] != "tgv" else "%sx%sx%s/%s" % (r["cta_m"], r["cta_n"], r["cta_k"], r["split"])
            if r["cand"] == "tgv" and r["stages"] not in ("", "0"):
                name += "/s" + r["stages"]
            points[(int(r["n"]), int(r["k"]), int(r["m"]))].append(
                {"cand": r["cand"], "name": name, "chain": float(r["chain_us"]), "iso": float(r["isolated_us"])})
    return points


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--shapes", default="", help="NxK,... : print these points' picks")
    ap.add_argument("--m", default="", help="with --shapes: only these M")
    a = ap.parse_args()
    show = {tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",") if s}
    show_m = {int(v) for v in a.m.split(",") if v}
    for path in a.sweeps:
        points = read(path)
        stats = defaultdict(lambda: {"n": 0, "chain": 0.0, "iso": 0.0, "chain_off": 0, "iso_off": 0, "cublas": 0})
        for key, rows in sorted(points.items()):
            cands = [r for r in rows if r["cand"] in ("tgv", "torch")]
            auto = [r for r in rows if r["cand"] == "auto"]
            if not auto or len(cands) < 2:
                continue
            best_chain = min(r["chain"] for r in cands)
            best_iso = min(r["iso"] for r in cands)
            picks = {p: min(cands, key=f) for p, f in POLICIES.items()}
            picks["auto"] = auto[0]
            for p, r in picks.items():
                s = stats[p]
                s["n"] += 1
                s["chain"] += math.log(r["chain"] / best_chain)
                s["iso"] += math.log(r["iso"] / best_iso)
                s["chain_off"] += r["chain"] > 1.05 * best_chain
                s["iso_off"] += r["iso"] > 1.05 * best_iso
                s["cublas"] += r["cand"] == "torch"
            if key[:2] in show and (not show_m or key[2] in show_m):
                print("%d x %d M=%d: " % key + "; ".join(
                    "%s %s (%.2f / %.2f us)" % (p, r["name"], r["chain"], r["iso"]) for p, r in picks.items()))
        print("\n%s" % path)
        print("| pick by | points | back to back: pick / best | > 5% off | between kernels: pick / best | "
              "> 5% off | cuBLAS picked |")
        print("|---|---|---|---|---|---|---|")
        for p in ("self", "kernels", "both", "auto"):
            s = stats[p]
            if not s["n"]:
                continue
            print("| %s | %d | %.4f | %d | %.4f | %d | %d |" % (
                p, s["n"], math.exp(s["chain"] / s["n"]), s["chain_off"], math.exp(s["iso"] / s["n"]),
                s["iso_off"], s["cublas"] if p != "auto" else 0))


if __name__ == "__main__":
    main()
