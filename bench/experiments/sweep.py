"""Times every tgv candidate beside cuBLASLt, auto and torch's F.linear over a
set of decode shapes: the data scripts/fit_cost_model.py fits the dispatcher's
cost model to. Untuned (TGV_TUNING_FILE points nowhere). One CSV row per
(shape, M, candidate); split -1 is stream-K.

  TGV_GEMM_LIBRARY=.../libtgv_gemm.so PYTHONPATH=python \
    python3 bench/experiments/sweep.py --csv sweep.csv [--shapes N:K,...] [--m 1,16,...]

Each candidate's output is checked against an fp32 reference before it is
timed; timing is tgv_gemm.tune's: back-to-back calls over rotating weight
copies (>= 8x L2) captured in one CUDA graph, median of the replays.
"""

import argparse
import csv
import math
import os
import sys
import time

os.environ.setdefault("TGV_TUNING_FILE", "/nonexistent/tgv-untuned.json")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tgv_gemm  # noqa: E402
from tgv_gemm import _lib as L  # noqa: E402
from tgv_gemm import _ops  # noqa: E402
from tgv_gemm._tune import _time_graph  # noqa: E402

# (N, K): model projections across families and TP degrees, and the shapes the
# issue reports as slow.
SHAPES = [
    (6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (1024, 4096), (14336, 4096),
    (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584), (2560, 8192), (8192, 2048),
    (14336, 8192), (8192, 7168), (4608, 3584), (3584, 3584), (3584, 18944), (2304, 3584),
    (3584, 1792), (18944, 3584), (7168, 5120), (5120, 5120), (5120, 27648), (1792, 5120),
    (5120, 1280), (13824, 5120), (2112, 7168), (1536, 7168), (576, 7168), (3072, 1536),
    (7168, 2048), (4096, 7168), (256, 7168), (512, 7168), (5120, 2880), (2880, 4096),
    (5760, 2880), (1280, 2880), (9216, 3072), (3072, 8192), (3072, 2048), (16384, 2048),
    (128, 4096), (4097, 4104), (8192, 6144), (2048, 8192),
]


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--m", default="1,16,32,64,128")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--max-split", type=int, default=8)
    ap.add_argument("--no-stream-k", action="store_true", help="leave out the stream-K candidates (split -1)")
    ap.add_argument("--pdl", type=int, choices=(0, 1), default=None, help="PDL off or on (default: the library's)")
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=400.0, help="stop starting new shapes after this")
    return ap.parse_args()


def main():
    a = parse_args()
    ms = [int(v) for v in a.m.split(",")]
    shapes = [tuple(int(v) for v in s.split(":")) for s in a.shapes.split(",")] if a.shapes else SHAPES
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    tactics = [L.get_tactic(i) for i in range(L.num_tactics())]
    mine = [t for t in tactics if t["arch"] == 90]
    t0 = time.time()
    rows = []
    with open(a.csv, "w", newline="") as f:
        out_csv = csv.writer(f)
        out_csv.writerow(["n", "k", "m", "cand", "tactic", "cta_m", "cta_n", "cta_k", "split", "stages", "us",
                          "plan"])
        for si, (n, k) in enumerate(shapes):
            if time.time() - t0 > a.budget_s:
                print("budget spent: stopped before shape %d of %d" % (si, len(shapes)), flush=True)
                break
            w_bytes = n * k * 2
            copies = max(2, math.ceil(8 * props.L2_cache_size / w_bytes))
            calls = max(copies, 20)
            ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) / math.sqrt(k) for _ in range(copies)]
            for m in ms:
                x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
                ref = F.linear(x.float(), ws[0].float())
                plan = tgv_gemm.get_plan(x, ws[0])
                plan_s = "%s/t%s/s%s/st%s" % (plan.get("backend"), plan.get("tactic"), plan.get("split_k"),
                                              plan.get("stages"))
                cands = [("torch", None), ("cublas", L.options("cublas", None, a.pdl)),
                         ("auto", L.options("auto", None, a.pdl))]
                cta_n = min(t["cta_n"] for t in mine if t["cta_n"] >= min(m, 256))
                for t in mine:
                    if t["cta_n"] != cta_n:
                        continue
                    tiles = -(-n // t["cta_m"]) * -(-m // t["cta_n"])
                    kb = -(-k // t["cta_k"])
                    for split in range(1, a.max_split + 1):
                        if split > kb or (split > 1 and tiles * split > 2 * sms):
                            continue
                        cands.append(("tgv", L.options("tgv", t["id"], a.pdl, split_k=split), t, split))
                    if not a.no_stream_k:  # the library refuses (skipped below) what it cannot share out
                        cands.append(("tgv", L.options("tgv", t["id"], a.pdl, split_k=-1), t, -1))
                for c in cands:
                    name, opts = c[0], c[1]
                    if name == "torch":
                        def call(i):
                            torch.matmul(x, ws[i % copies].t(), out=out)
                        call(0)
                    else:
                        backend = "tgv" if name == "tgv" else name
                        try:
                            out.fill_(float("nan"))
                            _ops.run_linear(x, ws[0], None, out, backend, None, None, "sweep", options=opts)
                            torch.cuda.synchronize()
                        except L.TgvError as e:
                            if e.status == L.ERROR_NOT_SUPPORTED:
                                continue
                            raise

                        def call(i, opts=opts, backend=backend):
                            _ops.run_linear(x, ws[i % copies], None, out, backend, None, None, "sweep",
                                            options=opts)
                    if not bool(((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all()):
                        print("WRONG: N=%d K=%d M=%d %s %s" % (n, k, m, name, c[2:] and c[2]["id"]), flush=True)
                        continue
                    us = _time_graph(call, calls, a.replays)
                    t = c[2] if name == "tgv" else None
                    out_csv.writerow([n, k, m, name, t["id"] if t else -1, t["cta_m"] if t else 0,
                                      t["cta_n"] if t else 0, t["cta_k"] if t else 0, c[3] if t else 0, 0,
                                      "%.3f" % us, plan_s])
                f.flush()
            del ws
            torch.cuda.empty_cache()
            print("shape %d/%d %dx%d done at %.0fs" % (si + 1, len(shapes), n, k, time.time() - t0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
