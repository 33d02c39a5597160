#!/usr/bin/env python3
"""Reads h200-round.sh PART=23's files (pacing as planned, off, first wave only; perf-notes
§44) and prints, per candidate timed in all three modes, each mode's time over the planned
one, back to back (chain) and between kernels (isolated), and the geomeans by whether the
candidate's grid fills more than one wave (the CTAs a first-wave-only rule stops pacing).
Then the chain's per-layer times by mode, from pace-chain.txt.

  python3 bench/experiments/pace_modes.py DIR      (DIR holds pace-iso-{planned,off,first}.csv[.gz])
"""

import collections
import csv
import gzip
import math
import os
import re
import sys

MODES = ("planned", "off", "first")
SMS = 132


def load(path):
    f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    out = {}
    for r in csv.DictReader(f):
        key = (int(r["n"]), int(r["k"]), int(r["m"]), r["cand"], int(r["cta_m"]), int(r["cta_n"]), int(r["cta_k"]),
               int(r["split"]))
        out[key] = (float(r["chain_us"]), float(r["isolated_us"]))
    return out


def waves(key):
    n, _, m, cand, cta_m, cta_n, _, split = key
    if cand != "tgv":
        return None
    return math.ceil(n / cta_m) * math.ceil(m / cta_n) * max(split, 1) / SMS


def geo(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(d):
    runs = {}
    for mode in MODES:
        for ext in (".csv.gz", ".csv"):
            p = os.path.join(d, "pace-iso-%s%s" % (mode, ext))
            if os.path.exists(p):
                runs[mode] = load(p)
                break
    if set(runs) != set(MODES):
        print("missing: %s" % ", ".join(m for m in MODES if m not in runs))
        return 1
    keys = [k for k in runs["planned"] if all(k in runs[m] for m in MODES)]
    print("| N x K | M | candidate | waves | planned chain / iso us | off / planned | first / planned |")
    print("|---|---|---|---|---|---|---|")
    groups = collections.defaultdict(list)
    for k in keys:
        p = runs["planned"][k]
        w = waves(k)
        name = k[3] if k[3] != "tgv" else "%dx%dx%d split %d" % k[4:]
        cells = []
        for mode in ("off", "first"):
            q = runs[mode][k]
            cells.append("%.3f / %.3f" % (q[0] / p[0], q[1] / p[1]))
            if w is not None:
                g = "more than one wave" if w > 1 else "one wave or less"
                groups[(mode, g, "chain")].append(q[0] / p[0])
                groups[(mode, g, "isolated")].append(q[1] / p[1])
        print("| %dx%d | %d | %s | %s | %.2f / %.2f | %s | %s |" % (
            k[0], k[1], k[2], name, "-" if w is None else "%.2f" % w, p[0], p[1], cells[0], cells[1]))
    print("\ngeomean of mode / planned (ours only):")
    for (mode, g, timing), v in sorted(groups.items()):
        print("  %-6s %-20s %-9s %.4f over %d" % (mode, g, timing, geo(v), len(v)))
    chain = os.path.join(d, "pace-chain.txt")
    if os.path.exists(chain):
        print("\nchain (tgv us per layer by mode and round):")
        mode = None
        for line in open(chain):
            m = re.match(r"### chain (\w+) round (\d+)", line)
            if m:
                mode = "%s r%s" % m.groups()
            elif line.startswith("llama") and mode:
                f = line.split()
                print("  %-12s %-18s M=%-3s tgv %s us, cublas %s us, gain %s" % (mode, f[0], f[1], f[2], f[5], f[6]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
