#!/usr/bin/env python3
"""Markdown tables for docs/PERFORMANCE.md from one tgv-bench CSV (tgv, auto and
cublas rows): the full table, and a summary against the speed targets; or, for a
run over the shape corpus (bench/corpus/decode.shapes), the corpus summary.

    python3 scripts/perf_table.py bench.csv              # summary + full table, to stdout
    python3 scripts/perf_table.py --corpus corpus.csv    # geomeans, worst points, time / stream floor

CSVs from before the stream floor (no stream_floor_pdl_us column) still load; the
stream-floor cells are then left out.
"""
import collections
import csv
import math
import statistics
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


def stream_floor(row):
    """The stream floor the run's ratios divide by (None in CSVs without it)."""
    value = row.get("stream_floor_pdl_us") or ""
    if not value or not row.get("vs_stream_floor"):
        return None
    return us(row) / float(row["vs_stream_floor"])


def full_table(points):
    with_stream = any(stream_floor(b["cublas"]) for b in points.values())
    head = ["model", "shape", "N×K", "M", "floor µs"] + (["stream µs"] if with_stream else []) + [
        "tgv µs", "auto µs", "cuBLASLt µs", "tgv / floor", "auto / floor"] + (
        ["auto / stream"] if with_stream else []) + ["cuBLASLt / tgv", "cuBLASLt / auto"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, shape, n, k, m), b in points.items():
        fl = float(b["cublas"]["floor_us"])
        t, a, c = us(b["tgv"]), us(b["auto"]), us(b["cublas"])
        sf = stream_floor(b["auto"])
        cells = [model, shape, "%d×%d" % (n, k), "%d" % m, "%.2f" % fl]
        cells += ["%.2f" % sf if sf else "-"] if with_stream else []
        cells += ["%.2f" % t, "%.2f" % a, "%.2f" % c, "%.2f×" % (t / fl), "%.2f×" % (a / fl)]
        cells += ["%.2f×" % (a / sf) if sf else "-"] if with_stream else []
        cells += ["%.2f×" % (c / t), "%.2f×" % (c / a)]
        out.append("| " + " | ".join(cells) + " |")
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


def corpus_summary(points, worst=15):
    """For a corpus run: per backend vs cuBLASLt (geomean at M <= 32 and <= 128, the
    minimum, points below 0.98x), the worst auto points, and time / stream floor."""
    out = ["| backend | points | geomean vs cuBLASLt M ≤ 32 | M ≤ 128 | min (point) | points < 0.98× |",
           "|---|---|---|---|---|---|"]
    for backend in ("auto", "tgv"):
        pts = [(us(b["cublas"]) / us(b[backend]), key) for key, b in points.items()
               if backend in b and "cublas" in b and key[4] <= 128]
        if not pts:
            continue
        low = min(pts)
        out.append("| %s | %d | %.3f× | %.3f× | %.3f× (%s %s %d×%d M=%d) | %d |"
                   % ((backend, len(pts), geomean([r for r, key in pts if key[4] <= 32]), geomean([r for r, _ in pts]),
                       low[0]) + low[1] + (sum(1 for r, _ in pts if r < 0.98),)))
    ranked = sorted((us(b["cublas"]) / us(b["auto"]), key, b) for key, b in points.items()
                    if "auto" in b and "cublas" in b)
    out += ["", "Worst %d auto points (cuBLASLt / auto):" % worst, "",
            "| model | shape | N×K | M | auto µs | cuBLASLt µs | cuBLASLt / auto | plan |",
            "|---|---|---|---|---|---|---|---|"]
    for ratio, (model, shape, n, k, m), b in ranked[:worst]:
        out.append("| %s | %s | %d×%d | %d | %.2f | %.2f | %.3f× | %s |"
                   % (model, shape, n, k, m, us(b["auto"]), us(b["cublas"]), ratio, b["auto"].get("plan", "")))
    out += ["", "Weights ≥ 8 MB at M ≤ 16, time / stream floor (median, min–max):", ""]
    for backend in ("auto", "tgv", "cublas"):
        v = [us(b[backend]) / stream_floor(b[backend]) for (_, _, n, k, m), b in points.items()
             if backend in b and stream_floor(b[backend]) and n * k * 2 >= 8e6 and m <= 16]
        if v:
            out.append("- %s: %.3f× (%.3f–%.3f×) over %d points" % (backend, statistics.median(v), min(v), max(v),
                                                                    len(v)))
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--corpus":
        print(corpus_summary(load(args[1])))
        return
    if len(args) != 1:
        sys.exit(__doc__)
    points = load(args[0])
    print(summary(points))
    print()
    print(full_table(points))


if __name__ == "__main__":
    main()
