#!/usr/bin/env python3
"""Where a launch-setting switch moves the corpus, by grid class (perf-notes §60).

Reads two corpus_bench.py CSVs of one call (main, then the switch), prints the
switch / main time of `auto` per class of tgv plan (one wave or more, split, weight
over 48 MB, CTAs in steps of 16) and the corpus summary (geomean over torch, points
under 0.98x, median time / stream floor at >= 8 MB) of main, the switch, and main
with the switch's time only on the grids sm90_paced_early picks (the rule of
TGV_EXP_EARLY_TRIGGER=5, mirrored here: one wave, and stream-K or at least 0.7 of
the SMs; the corpus's calls are all ungated):

    python3 bench/experiments/trigger_classes.py MAIN.csv SWITCH.csv [--sms 132]
"""
import argparse
import collections
import csv
import math
import re
import statistics


def load(path):
    return {(r["label"], r["m"]): r for r in csv.DictReader(open(path))}


def grid(row, sms):
    m = re.match(r"tgv \d+ (\d+)x\d+x\d+ split (-?\d+)", row["plan"])
    if not m:
        return None
    cta_m, split = int(m.group(1)), int(m.group(2))
    return (sms if split == -1 else -(-int(row["n"]) // cta_m) * split), split


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("main_csv")
    ap.add_argument("switch_csv")
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    base, var = load(a.main_csv), load(a.switch_csv)
    keys = [k for k in base if k in var]
    classes = collections.defaultdict(list)
    picked = set()
    for k in keys:
        g = grid(base[k], a.sms)
        if g is None:
            continue
        ctas, split = g
        mb = float(base[k]["weight_mb"])
        kind = "sk" if split == -1 else "split1" if split == 1 else "split>1"
        cls = ("one" if ctas <= a.sms else "multi", kind, ">=48MB" if mb >= 48 else "<48MB", ctas // 16 * 16)
        classes[cls].append(float(var[k]["auto_us"]) / float(base[k]["auto_us"]))
        if ctas <= a.sms and (split == -1 or ctas >= 0.7 * a.sms):
            picked.add(k)
    print("class (grid, split, weight, CTAs from), points, switch / main time: geomean, min, max")
    for cls in sorted(classes):
        v = classes[cls]
        print("  %-40s %4d  %.4f  %.3f  %.3f" % (cls, len(v), geomean(v), min(v), max(v)))
    for name, pick in (("main", lambda k: base[k]), ("switch", lambda k: var[k]),
                       ("main + switch on paced-early grids (%d points)" % len(picked),
                        lambda k: var[k] if k in picked else base[k])):
        ratios = [float(pick(k)["torch_us"]) / float(pick(k)["auto_us"]) for k in keys]
        floor = [float(pick(k)["auto_us"]) / float(pick(k)["stream_floor_us"]) for k in keys
                 if float(base[k]["weight_mb"]) >= 8 and int(k[1]) <= 16]
        print("%s: auto / torch geomean %.4f, %d points under 0.98x, time / stream floor median %.4f"
              % (name, geomean(ratios), sum(r < 0.98 for r in ratios), statistics.median(floor)))


if __name__ == "__main__":
    main()
