#!/usr/bin/env python3
"""How far cuBLAS's price (src/plan/cost_model.cpp, bytes and flops only) is from
torch's cuBLAS call timed in corpus runs, and how much a shape term would take back
(perf-notes §48). Fits log(measured / priced) at M <= 32 on weights >= --min-mb to
a log-linear form in log N, log K, log N log K, the waves of 128-row tiles over the
SMs (capped at 3) and the last wave's fraction, on the first run; reports the
median and 90th percentile of |log error| before and after on every run given (the
others out of sample), and the points the price misses most.

  python3 scripts/cublas_price_shape.py TRAIN.csv.gz [TEST.csv.gz ...] [--gpu h200]
"""

import argparse
import csv
import gzip
import math
import os
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return list(csv.DictReader(f))


def priced(plan_bin, gpu, keys):
    out = subprocess.run([plan_bin, "--gpu", gpu], input="".join("%d %d %d\n" % k for k in keys),
                         capture_output=True, text=True, check=True).stdout
    got = {}
    for line in out.splitlines():
        if not line.startswith("#"):
            f = line.split()
            got[(int(f[0]), int(f[1]), int(f[2]))] = float(f[11])  # cublas_us
    return got


def features(n, k, sms):
    waves = n / 128.0 / sms
    last = waves - math.floor(waves) if waves > 1 else waves
    return [1.0, math.log(n), math.log(k), min(waves, 3.0), last, math.log(n) * math.log(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="corpus_bench CSVs; the first is fitted")
    ap.add_argument("--gpu", default="h200", choices=("h100", "h200"))
    ap.add_argument("--plan-bin", default=os.path.join(ROOT, "build/tools/tgv-plan"))
    ap.add_argument("--min-mb", type=float, default=4.0)
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    runs = [load(p) for p in a.runs]
    keys = sorted({(int(r["n"]), int(r["k"]), int(r["m"])) for rows in runs for r in rows})
    price = priced(a.plan_bin, a.gpu, keys)

    def data(rows):
        xs, ys, pts = [], [], []
        for r in rows:
            n, k, m = int(r["n"]), int(r["k"]), int(r["m"])
            if m > 32 or float(r["weight_mb"]) < a.min_mb or not r["torch_us"]:
                continue
            xs.append(features(n, k, a.sms))
            ys.append(math.log(float(r["torch_us"]) / price[(n, k, m)]))
            pts.append((n, k, m))
        return np.array(xs), np.array(ys), pts

    x0, y0, pts0 = data(runs[0])
    beta = np.linalg.lstsq(x0, y0, rcond=None)[0]
    print("| run | points | median abs log error, priced -> with the shape term | 90th percentile |")
    print("|---|---|---|---|")
    for path, rows in zip(a.runs, runs):
        x, y, _ = data(rows)
        before, after = np.abs(y), np.abs(y - x @ beta)
        print("| %s%s | %d | %.3f -> %.3f | %.3f -> %.3f |" % (
            os.path.relpath(path, ROOT), " (fitted)" if path == a.runs[0] else "", len(y), np.median(before),
            np.median(after), np.percentile(before, 90), np.percentile(after, 90)))
    print("\nshape term (1, log N, log K, waves, last wave, log N log K): %s" % " ".join("%.4f" % b for b in beta))
    print("\nthe fitted run's largest misses (measured / priced):")
    for i in np.argsort(-np.abs(y0))[:12]:
        n, k, m = pts0[i]
        print("  %6d x %6d M = %2d: %.3f (with the shape term %.3f)" % (n, k, m, math.exp(y0[i]),
                                                                        math.exp(y0[i] - x0[i] @ beta)))


if __name__ == "__main__":
    main()
