#!/usr/bin/env python3
"""A tuning file's entries beside the plans the library makes untuned: for each
(N, K, M bucket) the tuner's choice and its measured time (and cuBLASLt's, as
the tuner timed it), then tools/tgv-plan's untuned plan for that point and its
predicted times. Where a tuned model ran slower than untuned (perf-notes §47),
the rows marked `differs` are where to look.

  python3 scripts/tuning_vs_plan.py TUNING.json --plan-bin build/tools/tgv-plan --gpu h100
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sm90_tiles():
    """{tactic id: "cta_mxcta_nxcta_k"} of the sm_90 tactics, in the library's order
    (src/tactics/tactics.cpp: every tile of TGV_SM90_TILES for each cta_k of kSm90CtaKs)."""
    text = open(os.path.join(ROOT, "src/tactics/tactics.hpp")).read()
    block = re.search(r"#define TGV_SM90_TILES\(X\)(.*?)\n\n", text, re.S).group(1)
    tiles = [(int(a), int(b)) for a, b in re.findall(r"X\((\d+),\s*(\d+)\)", block)]
    cta_ks = [int(v) for v in re.search(r"kSm90CtaKs\[\]\s*=\s*\{([^}]*)\}", text).group(1).split(",")]
    return {i * len(tiles) + j: "%dx%dx%d" % (m, n, k) for i, k in enumerate(cta_ks) for j, (m, n) in enumerate(tiles)}


def split_name(split):
    return "sk" if split == -1 else str(split)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tuning_file")
    ap.add_argument("--plan-bin", default=os.path.join(ROOT, "build/tools/tgv-plan"))
    ap.add_argument("--gpu", choices=("h100", "h200"), required=True)
    a = ap.parse_args()
    entries = json.load(open(a.tuning_file))["entries"]
    if not entries:
        print("no entries")
        return 0
    tiles = sm90_tiles()
    stdin = "".join("%d %d %d\n" % (e["n"], e["k"], e["m"]) for e in entries)
    done = subprocess.run([a.plan_bin, "--gpu", a.gpu], input=stdin, stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    plans = {}
    for line in done.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        n, k, m = int(f[0]), int(f[1]), int(f[2])
        plan = "cublas" if f[3] == "cublas" else "%sx%sx%s/%s/s%s" % (f[5], f[6], f[7], split_name(int(f[8])), f[9])
        plans[(n, k, m)] = (plan, "%sx%sx%s/%s" % (f[5], f[6], f[7], split_name(int(f[8]))), float(f[10]),
                            float(f[11]))
    print("| N | K | M | tuned | tuned us | cuBLASLt us (tuner) | untuned plan | predicted us (ours / cuBLASLt) | |")
    print("|---|---|---|---|---|---|---|---|---|")
    differ = 0
    for e in sorted(entries, key=lambda e: (e["n"], e["k"], e["m"])):
        key = (e["n"], e["k"], e["m"])
        if e["backend"] == "cublas":
            tuned, tuned_tile = "cublas", "cublas"
        else:
            tile = tiles.get(e["tactic"], "tactic %d" % e["tactic"])
            tuned = "%s/%s/s%s" % (tile, split_name(e["split_k"]), e.get("stages") or "deepest")
            tuned_tile = "%s/%s" % (tile, split_name(e["split_k"]))
        plan, plan_tile, pred_us, pred_cublas = plans[key]
        same = tuned_tile == (plan if plan == "cublas" else plan_tile)
        differ += not same
        print("| %d | %d | %d | %s | %.2f | %.2f | %s | %.2f / %.2f | %s |" % (
            *key, tuned, e["us"], e["cublas_us"], plan, pred_us, pred_cublas, "" if same else "differs"))
    print("\n%d of %d entries differ from the untuned plan (tile and split; the ring depth aside)"
          % (differ, len(entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
