#!/usr/bin/env python3
"""A planner switch (TGV_EXP_* read by tools/tgv-plan) emulated on corpus runs
already timed: each point's plan under the switch takes the time the runs
measured for it, backend=cublas's where it picks cuBLASLt and backend=tgv's
where it picks the tile and split that backend=tgv ran (tgv-plan without the
switch); a plan no run timed is left out. Medians over the runs; one line per
setting: the geomean over torch, points under 0.98x, and the moved points'
gain over what auto ran. In sample, one card: a lead for a device A/B, not a
result.

  python3 scripts/emulate_switch.py --gpu h100 --m 64 --runs 'r/corpus-b2b-main-*.csv' \\
      TGV_EXP_H100_WIDE_PART=0.75 TGV_EXP_H100_WIDE_PART=0.15 [--show TGV_EXP_H100_WIDE_PART=0.15]
"""
import argparse
import csv
import glob
import math
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--runs", required=True, help="glob of corpus_bench.py CSVs of one build, one setting")
    ap.add_argument("--plan-bin", default=os.path.join(ROOT, "build", "tools", "tgv-plan"))
    ap.add_argument("--show", help="list the moved points of this setting")
    ap.add_argument("settings", nargs="+", help="VAR=value[,VAR=value...]")
    args = ap.parse_args()
    runs = []
    for path in sorted(glob.glob(args.runs)):
        with open(path) as f:
            runs.append({(r["label"], r["m"]): r for r in csv.DictReader(f) if int(r["m"]) == args.m})
    if not runs:
        raise SystemExit("no CSV matches %s" % args.runs)
    keys = sorted(runs[0])
    shapes = sorted({(int(runs[0][k]["n"]), int(runs[0][k]["k"])) for k in keys})
    stdin = "\n".join("%d %d %d" % (n, k, args.m) for n, k in shapes)

    def plans(setting):
        env = dict(os.environ)
        for assignment in (setting or "").split(","):
            if assignment:
                var, value = assignment.split("=", 1)
                env[var] = value
        out = subprocess.run([args.plan_bin, "--gpu", args.gpu], input=stdin, capture_output=True, text=True,
                             env=env, check=True).stdout
        return {(int(f[0]), int(f[1])): (f[3], f[4], f[8]) for f in (l.split() for l in out.splitlines())
                if f and not f[0].startswith("#")}

    def med(k, col):
        return statistics.median(float(r[k][col]) for r in runs)

    base = plans(None)
    for setting in args.settings:
        new = plans(setting)
        logs, moved, left, under = [], [], 0, 0
        for k in keys:
            s = (int(runs[0][k]["n"]), int(runs[0][k]["k"]))
            backend, tactic, split = new[s]
            if backend == "cublas":
                t = med(k, "cublas_us")
            elif (tactic, split) == base[s][1:]:
                t = med(k, "tgv_us")
            else:
                left += 1
                continue
            torch = med(k, "torch_us")
            logs.append(math.log(torch / t))
            under += torch / t < 0.98
            if new[s] != base[s]:
                moved.append(math.log(med(k, "auto_us") / t))
                if setting == args.show:
                    print("  %s %dx%d: %s -> %s, auto/torch %.3f -> %.3f" % (k[0], s[0], s[1], " ".join(base[s]),
                                                                            " ".join(new[s]),
                                                                            torch / med(k, "auto_us"), torch / t))
        print("%s: %d points (%d left out: plan not timed), %.4fx torch, %d under 0.98x, %d moved (%.3fx on them)" %
              (setting, len(logs), left, math.exp(statistics.mean(logs)), under, len(moved),
               math.exp(statistics.mean(moved)) if moved else 1.0))


if __name__ == "__main__":
    main()
