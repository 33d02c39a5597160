#!/usr/bin/env python3
"""Markdown tables for docs/PERFORMANCE.md from one tgv-bench CSV (tgv, auto and
cublas rows): the full table, and a summary against the speed targets.

    python3 scripts/perf_table.py bench.csv            # both, to stdout
"""
import collections
import csv
import math
import sys


def load(path):
    points = collections.OrderedDict()  # (model, shape, n, k, m) -> {backend: row}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok":
                continue
            key = (row["model"], row["shape"], int(row["n"]), int(row["k"]), int(row["m"]))
            points.setdefault(key, {})[row["backend"]] = row
    return points


def us(row):
    return float(row["us"])


def full_table(points):
    out = ["| model | shape | N×K | M | floor µs | tgv µs | auto µs | cuBLASLt µs | tgv / floor | auto / floor "
           "| cuBLASLt / tgv | cuBLASLt / auto |", "|" + "---|" * 12]
    for (model, shape, n, k, m), b in points.items():
        fl = float(b["cublas"]["floor_us"])
        t, a, c = us(b["tgv"]), us(b["auto"]), us(b["cublas"])
        out.append("| %s | %s | %d×%d | %d | %.2f | %.2f | %.2f | %.2f | %.2f× | %.2f× | %.2f× | %.2f× |"
                   % (model, shape, n, k, m, fl, t, a, c, t / fl, a / fl, c / t, c / a))
    return "\n".join(out)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(points, max_m=64):
    """Per shape over M <= max_m: weight MB, auto / floor range, auto / cuBLASLt range."""
    shapes = collections.OrderedDict()
    for (model, shape, n, k, m), b in points.items():
        if m <= max_m:
            shapes.setdefault((model, shape, n, k), []).append(b)
    out = ["| model | shape | N×K | weights MB | target | auto / floor (M ≤ %d) | cuBLASLt / auto |" % max_m,
           "|---|---|---|---|---|---|---|"]
    speedups = []
    for (model, shape, n, k), rows in shapes.items():
        mb = n * k * 2 / 1e6
        target = "≤ 1.15× floor" if mb >= 32 else ("≤ 1.3× floor" if mb >= 8 else "≥ 1.2× cuBLASLt")
        ratios = [us(r["auto"]) / float(r["cublas"]["floor_us"]) for r in rows]
        sp = [us(r["cublas"]) / us(r["auto"]) for r in rows]
        speedups += sp
        out.append("| %s | %s | %d×%d | %.1f | %s | %.2f–%.2f× | %.2f–%.2f× |"
                   % (model, shape, n, k, mb, target, min(ratios), max(ratios), min(sp), max(sp)))
    allsp = [us(b["cublas"]) / us(b["auto"]) for b in points.values()]
    tgvsp = [us(b["cublas"]) / us(b["tgv"]) for key, b in points.items() if key[4] <= max_m]
    out.append("")
    out.append("Geometric mean over M ≤ %d: auto %.3f×, tgv %.3f× cuBLASLt. Worst auto / cuBLASLt at any M: %.3f×."
               % (max_m, geomean(speedups), geomean(tgvsp), min(allsp)))
    return "\n".join(out)


def main():
    points = load(sys.argv[1])
    print(summary(points))
    print()
    print(full_table(points))


if __name__ == "__main__":
    main()
