#!/usr/bin/env python3
"""Replays a corpus run's timings against the plans this build's dispatcher makes
(tools/tgv-plan, no GPU needed): what `auto` would have measured in that run.

  python3 scripts/emulate_corpus.py --gpu h100 docs/data/2026-12-06-h100-c/corpus-b2b.csv.gz
      [--plan-bin build/tools/tgv-plan] [--m 64 ...] [--strict]

A corpus run (bench/python/corpus_bench.py --csv) timed, at every point, auto,
our cuBLASLt path and the `tgv` backend's plan, beside torch. Where this build's
auto picks cuBLASLt, the point takes the run's `cublas_us`; where it picks our
kernel, the run's `tgv_us`, which is that plan's time only if the run's `tgv`
backend planned the same: a point whose run planned our kernel differently
(its auto plan names another tactic or split) is left out and counted as
unmeasured; a point whose run gave auto to cuBLASLt cannot show the `tgv`
backend's plan and is assumed unchanged (valid for a change to the cuBLASLt
price or margin, not to the ranking; --strict leaves those out too).

  --fallback RUN (repeatable): another run of the same corpus, consulted in order
  for a point whose plan the first run did not time; that point then takes the
  fallback run's `tgv_us` against the fallback run's torch. For two runs of one
  build under different plans (perf-notes §50: the stream-K hybrid everywhere,
  then main's plans), list the run whose stream-K launches are the build's first.
"""

import argparse
import csv
import gzip
import math
import re
import statistics
import subprocess
import sys


def load(path):
    f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    return list(csv.DictReader(f))


def plans(plan_bin, gpu, keys, full=False):
    """{(n, k, m): (auto, tgv tactic, tgv split)}, or with `full` (auto, tactic,
    cta_m, cta_n, cta_k, split): tgv-plan's answers for the keys."""
    out = subprocess.run([plan_bin, "--gpu", gpu], input="".join("%d %d %d\n" % k for k in keys),
                         capture_output=True, text=True, check=True).stdout
    got = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        v = line.split()
        got[tuple(map(int, v[:3]))] = ((v[3],) + tuple(map(int, v[4:9]))) if full else (v[3], int(v[4]), int(v[8]))
    return got


def run_plan(row):
    """(tactic, split) of the `tgv` backend's plan a run timed at this row, or None
    where auto's plan there was cuBLASLt's."""
    run = re.match(r"tgv (\d+) \S+ split (-?\d+)", row["plan"])
    return (int(run.group(1)), int(run.group(2))) if run else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--gpu", required=True, choices=("h200", "h100"))
    ap.add_argument("--plan-bin", default="build/tools/tgv-plan")
    ap.add_argument("--m", type=int, action="append", help="only this token count (repeatable)")
    ap.add_argument("--strict", action="store_true", help="leave out points whose run gave auto to cuBLASLt")
    ap.add_argument("--fallback", action="append", default=[],
                    help="another run of the corpus, for points whose plan the first run did not time")
    a = ap.parse_args()
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    for path in a.csv:
        rows = [r for r in load(path) if not a.m or int(r["m"]) in a.m]
        rows = [r for r in rows if all(r[c + "_status"] == "ok" for c in ("tgv", "cublas", "torch"))]
        keys = sorted({(int(r["n"]), int(r["k"]), int(r["m"])) for r in rows})
        emulated = plans(a.plan_bin, a.gpu, keys)
        fallbacks = [{(r["label"], r["n"], r["k"], r["m"]): r for r in load(f)} for f in a.fallback]
        kept, unmeasured, changed, from_fallback = [], 0, 0, 0
        for r in rows:
            auto, tactic, split = emulated[(int(r["n"]), int(r["k"]), int(r["m"]))]
            run = run_plan(r)
            if auto == "tgv" and run and run != (tactic, split):
                other = None
                for fb in fallbacks:
                    o = fb.get((r["label"], r["n"], r["k"], r["m"]))
                    if o and run_plan(o) == (tactic, split) and all(o[c + "_status"] == "ok" for c in ("tgv", "torch")):
                        other = o
                        break
                if other is None:
                    unmeasured += 1
                    continue
                from_fallback += 1
                kept.append((other, float(other["tgv_us"])))
                continue
            if auto == "tgv" and not run and a.strict:
                unmeasured += 1
                continue
            changed += (auto == "cublas") != (r["plan"] == "cublas")
            us = float(r["cublas_us"] if auto == "cublas" else r["tgv_us"])
            kept.append((r, us))
        ratio = lambda r, us: float(r["torch_us"]) / us  # noqa: E731
        small = [ratio(r, us) for r, us in kept if int(r["m"]) <= 32]
        print("%s (%s): %d points, %d left out as unmeasured, %d changed route, %d timed by a fallback run" % (
            path, a.gpu, len(rows), unmeasured, changed, from_fallback))
        print("  emulated auto vs torch: geomean M <= 32 %.3f, all %.3f, points under 0.98x %d" % (
            geo(small), geo([ratio(r, us) for r, us in kept]), sum(ratio(r, us) < 0.98 for r, us in kept)))
        run_small = [float(r["torch_us"]) / float(r["auto_us"]) for r, _ in kept if int(r["m"]) <= 32]
        print("  the run's auto on the same points: geomean M <= 32 %.3f, all %.3f" % (
            geo(run_small), geo([float(r["torch_us"]) / float(r["auto_us"]) for r, _ in kept])))
        floor = [us / float(r["stream_floor_us"]) for r, us in kept
                 if int(r["m"]) <= 16 and float(r["weight_mb"]) >= 8 and r.get("stream_floor_us")]
        if floor:
            print("  median time / stream floor, M <= 16, >= 8 MB: %.3f" % statistics.median(floor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
