#!/usr/bin/env python3
"""Which bandwidth class of GPU each corpus run ran on, beside its headline numbers.

H100s of one peak bandwidth (2619 MHz x 5120 bits) stream large weights at one of two
rates in our runs, ~2920 or ~3070 GB/s (the stream floor's median over weights >= 64 MB at
M 1 and 4), and on the faster our kernel trails the floor by more and torch's cuBLAS does
not: the same build counts 7-9 points under 0.98x torch on one class and 19-37 on the other
(perf-notes §44). Compare runs of one class only.

  python3 scripts/machine_class.py docs/data/2026-12-06-h100-*/**/corpus-b2b*.csv.gz

Prints per run: the floor's GB/s, the median time / floor of our kernel (tgv) and of torch
on those weights, auto's points under 0.98x torch (M <= 128) and auto's geomean over torch
at M <= 32.
"""

import csv
import gzip
import math
import statistics
import sys


def summary(path):
    rows = list(csv.DictReader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
    big = [r for r in rows if float(r["weight_mb"]) >= 64 and r["m"] in ("1", "4") and r["stream_floor_us"]]
    if not big:
        return None
    gbps = statistics.median(float(r["weight_mb"]) * 1e3 / float(r["stream_floor_us"]) for r in big)
    over = lambda col: statistics.median(float(r[col]) / float(r["stream_floor_us"]) for r in big)  # noqa: E731
    auto = [(int(r["m"]), float(r["auto_vs_torch"])) for r in rows if r["auto_vs_torch"]]
    under = sum(q < 0.98 for m, q in auto if m <= 128)
    small = [math.log(q) for m, q in auto if m <= 32]
    return gbps, over("tgv_us"), over("torch_us"), under, math.exp(sum(small) / len(small))


def main(paths):
    print("| run | floor GB/s (>= 64 MB) | tgv / floor | torch / floor | auto < 0.98x | auto geomean M <= 32 |")
    print("|---|---|---|---|---|---|")
    for p in paths:
        s = summary(p)
        if s is None:
            print("| %s | no stream floor on weights >= 64 MB | | | | |" % p)
        else:
            print("| %s | %.0f | %.3f | %.3f | %d | %.3fx |" % ((p,) + s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
