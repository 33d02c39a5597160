#!/usr/bin/env python3
"""Which plan of each decoder-layer GEMM is fastest inside the layer (perf-notes §30).

The corpus and the sweep time one GEMM back to back with itself; `tgv-bench --mode
chain` times the layer, where each GEMM's neighbours are other GEMMs and the small
kernels between them. This script runs the chain once per variant, a variant being a
tuning file that fixes the plan of one stage's shape (every other stage keeps the cost
model's plan), with the untuned chain run between variants as the baseline, and prints
the `tgv` column (us per layer) of each run. Run ON the device from the repository root
after scripts/build-gpu.sh (carry build-gpu/carry):

    python3 bench/experiments/chain_plans.py [--model llama3.1-8b] [--rounds 2] [--stage gate_up] [--out DIR]

A variant's entry is (cta_m, cta_k, split_k): the tactic at M = 1 and 4 is the 8-token
tile, at M = 16 the 16-token one; split_k -1 is stream-K. Tuning-file keys are (n, k, M
bucket), whatever the epilogue: the 8B and 70B-TP8 layers share no (n, k).
"""
import argparse
import os
import subprocess
import sys

CARRY = "build-gpu/carry"
sys.path.insert(0, os.path.join(CARRY, "python"))
os.environ.setdefault("TGV_GEMM_LIBRARY", os.path.join(CARRY, "bin", "libtgv_gemm.so"))

# (stage, n, k) of the chained layers, as tgv-bench's default shape set has them.
STAGES = {
    "llama3.1-8b": {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)},
    "llama3.1-70b-tp8": {"qkv": (1280, 8192), "o": (8192, 1024), "gate_up": (7168, 8192), "down": (8192, 3584)},
}
# Plans to try per stage, besides the cost model's (none of them is today's pick).
VARIANTS = {
    "llama3.1-8b": [
        ("o", (128, 64, 2)), ("o", (128, 128, 2)), ("o", (64, 128, 2)), ("o", (64, 64, 1)),
        ("gate_up", (64, 128, -1)), ("gate_up", (128, 128, 1)), ("gate_up", (128, 128, 2)), ("gate_up", (128, 64, 1)),
        ("gate_up", (128, 128, -1)),
        ("qkv", (128, 64, 1)), ("qkv", (64, 64, 1)), ("qkv", (64, 128, 2)),
        ("down", (64, 128, 2)), ("down", (128, 128, 2)), ("down", (64, 128, -1)),
    ],
    "llama3.1-70b-tp8": [
        ("qkv", (64, 128, 3)), ("qkv", (64, 128, 4)), ("qkv", (64, 64, 2)),
        ("o", (64, 64, 1)), ("gate_up", (64, 128, -1)), ("gate_up", (64, 64, 1)),
        ("down", (64, 64, 1)), ("down", (64, 128, 2)),
        # 128-row tiles: half the activation reads per weight byte, which the 16-token
        # tile's layer (+3.5 us over M = 1, perf-notes §60) may be paying for.
        ("qkv", (128, 64, 4)), ("o", (128, 64, 2)), ("gate_up", (128, 64, 2)), ("down", (128, 64, 1)),
        ("down", (128, 64, 2)),
    ],
}
MS = (1, 4, 16)


def tactic_ids():
    import tgv_gemm

    ids = {}
    for t in tgv_gemm.list_tactics():
        if t["arch"] == 90:
            ids[(t["cta_m"], t["cta_n"], t["cta_k"])] = t["id"]
    return ids


def run_chain(model, tuning):
    # TGV_EXP_TUNED_GATED: the gated gate_up takes its entry too (the library plans
    # gated calls by the cost model alone since perf-notes §47).
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(CARRY, "bin"), TGV_LOG_DISPATCH="1", TGV_EXP_TUNED_GATED="1")
    env["TGV_TUNING_FILE"] = tuning  # an empty file for the baseline: no entries, no stale cache
    out = subprocess.run([os.path.join(CARRY, "bin", "tgv-bench"), "--mode", "chain", "--model", model, "--m",
                          ",".join(map(str, MS))], env=env, capture_output=True, text=True, timeout=120)
    rows = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) > 5 and f[0] == model and f[1].isdigit():
            rows[int(f[1])] = (float(f[2]), float(f[4]), float(f[5]))  # tgv, auto, cublas
    if out.returncode != 0 or len(rows) != len(MS):
        print(out.stdout[-2000:], out.stderr[-2000:])
        raise SystemExit("chain run failed (rc %d)" % out.returncode)
    return rows, [l for l in out.stderr.splitlines() if l.startswith("[tgv]")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--stage", action="append", help="vary only these stages (default: every stage)")
    ap.add_argument("--out", default="/tmp/chain-plans")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from tgv_gemm import _autotune, _tune

    header = _autotune._device_header()  # (gpu, sm_count, version) as the library checks them
    write_file = lambda path, entries: _tune.write_tuning_file(path, header[0], header[1], entries)  # noqa: E731
    ids = tactic_ids()
    print("# %s, %d SMs, library %s" % header)
    print("# model, variant, then tgv us per layer at M = %s (auto, cublas in brackets)" % ",".join(map(str, MS)))
    base = os.path.join(a.out, "empty.json")
    write_file(base, [])
    for model in a.model or list(STAGES):
        for r in range(a.rounds):
            for v in [None] + [v for v in VARIANTS[model] if a.stage is None or v[0] in a.stage]:
                entries = []
                if v is not None:
                    stage, (cta_m, cta_k, split) = v
                    n, k = STAGES[model][stage]
                    for m in MS:
                        cta_n = 8 if m <= 8 else 16
                        entries.append({"n": n, "k": k, "m": m, "backend": "tgv", "tactic": ids[(cta_m, cta_n, cta_k)],
                                        "split_k": split, "stages": 0, "us": 0.0, "cublas_us": 0.0})
                path = base
                if entries:
                    path = os.path.join(a.out, "v.json")
                    write_file(path, entries)
                rows, log = run_chain(model, path)
                if v is not None:  # the plan the library took for the varied stage: the file was in effect
                    for line in log:
                        if " n=%d k=%d " % (n, k) in line:
                            print("#   " + line)
                name = "model" if v is None else "%s %dx%d/%d" % (v[0], v[1][0], v[1][1], v[1][2])
                cells = "  ".join("%7.2f (%6.2f %6.2f)" % rows[m] for m in MS)
                print("%-17s r%d %-22s %s" % (model, r, name, cells), flush=True)


if __name__ == "__main__":
    main()
