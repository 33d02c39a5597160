#!/usr/bin/env python3
"""Checks that scripts/fit_cost_model.py's model of the dispatcher decides as
the library does: for every point of a committed sweep, the Python model's
pick (fit_cost_model.decide over the candidates the library plans, with the
constants it reads from src/plan/cost_model.cpp) against tools/tgv-plan's
(the library's own planner on the same GPU profile): cuBLASLt or ours, and
which tile and split. The fits are only as good as this agreement; a change
to one side alone fails here.

  python3 scripts/check_model_sync.py --plan-bin build/tools/tgv-plan
      [--gpu h100 SWEEP.csv.gz] [--gpu h200 SWEEP.csv.gz]

Exit 0 when every pick agrees, 1 otherwise (the disagreements listed), 77
(ctest's skip) when numpy, which the fitting script needs, is missing.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEPS = {  # the sweeps each GPU's constants were fitted to or checked on (a point swept more than once: the mean)
    "h100": ["docs/data/2026-12-06-h100-b/sweep.csv.gz", "docs/data/2026-12-06-h100-i/call3-sweep/sweep.csv.gz",
             "docs/data/2026-12-06-h100-j/call2-probe-e2e-sweep/sweep.csv.gz",
             "docs/data/2026-12-06-h100-c/sweep-m64.csv.gz"],
    "h200": ["docs/data/2026-12-04-h200-eve/sweep-m1-4-16-32.csv.gz"],
}
PEAK_GBPS = {"h100": 3352.0, "h200": 4814.0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan-bin", required=True)
    ap.add_argument("--gpu", nargs=2, action="append", metavar=("GPU", "SWEEP"),
                    help="a GPU profile and a sweep of its points (default: both committed sweeps)")
    a = ap.parse_args()
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("numpy is missing: fit_cost_model.py cannot run; skipped")
        return 77
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import fit_cost_model as F
    from emulate_corpus import plans

    cpp = os.path.join(ROOT, "src/plan/cost_model.cpp")
    occ = F.load_occupancy(os.path.join(ROOT, "bench/experiments/data/cluster-occupancy-h200.txt"))
    failed = 0
    runs = [(gpu, [sweep]) for gpu, sweep in a.gpu] if a.gpu else sorted(SWEEPS.items())
    for gpu, sweeps in runs:
        sweeps = [os.path.join(ROOT, p) for p in sweeps]
        _, (c, prices, cub, margins, _) = F.committed_fit(cpp, PEAK_GBPS[gpu])
        prices[256] = prices[max(prices)]
        planned = F.library_points(F.load(sweeps, occ), cpp)
        keys = [k for k, d in planned.items() if d["tgv"] and F.CUBLAS_COLUMN in d]
        library = {}
        for key, (auto, _, *tile_split) in plans(a.plan_bin, gpu, keys, full=True).items():
            plan = tuple(tile_split)  # the tgv backend's plan, printed whatever auto picks
            library[key] = ("cublas" if auto == "cublas" else plan, plan)
        wrong, apart = [], 0
        for key in keys:
            pick, plan = library[key]
            # A sweep that did not time the library's own plan (the H200's times
            # splits 1, 2 and 4) cannot show what the model would pick there.
            if plan[:3] + (1 if plan[3] == -1 else plan[3],) not in planned[key]["tgv"]:
                apart += 1
                continue
            # The sweep times each candidate; the pick does not depend on the times.
            model = F.decide(c, key, planned[key], occ, prices, cub, margins)[0]
            if model != pick:
                wrong.append((key, model, pick))
        print("%s: %d points of %s (%d whose library plan it did not time left out), %d picks differ" % (
            gpu, len(keys) - apart, ", ".join(os.path.relpath(p, ROOT) for p in sweeps), apart, len(wrong)))
        for key, model, lib in wrong[:20]:
            print("  N=%d K=%d M=%d: fit_cost_model.py %s, the library %s" % (*key, model, lib))
        failed += len(wrong)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
