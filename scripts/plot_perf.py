#!/usr/bin/env python3
"""Plots a tgv-bench CSV: one panel per shape, microseconds against M for each
backend, with the bandwidth floor drawn. Writes one PNG.

    python3 scripts/plot_perf.py bench.csv docs/perf-h200.png [--title "..."]
"""
import argparse
import collections
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    shapes = collections.OrderedDict()  # (model, shape, n, k) -> {backend: {m: us}, "floor": {m: us}}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["model"], row["shape"], int(row["n"]), int(row["k"]))
            entry = shapes.setdefault(key, collections.defaultdict(dict))
            m = int(row["m"])
            entry["floor"][m] = float(row["floor_us"])
            if row["status"] == "ok":
                entry[row["backend"]][m] = float(row["us"])
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    shapes = load(args.csv)
    cols = 4
    rows = math.ceil(len(shapes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (key, series) in zip(axes.flat, shapes.items()):
        model, shape, n, k = key
        for name, points in series.items():
            ms = sorted(points)
            style = dict(color="black", linestyle="--", label="floor") if name == "floor" else dict(marker="o", label=name)
            ax.plot(ms, [points[m] for m in ms], **style)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{model} {shape} ({n}x{k})", fontsize=9)
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("us per GEMM")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
