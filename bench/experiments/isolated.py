"""Does a GEMM's rank among its candidates depend on what runs beside it?

The corpus bench and the tuner time back-to-back GEMMs in one graph with PDL:
a grid that leaves SMs free lets the next GEMM start streaming early. Inside a
model the neighbours are other kernels (norms, attention) that neither trigger
nor wait programmatically. This times each candidate both ways over rotating
cold weights: "chain" = back-to-back calls; "isolated" = each call followed by
a one-element torch kernel (whose own time, measured alone the same way, is
subtracted). Prints per point the candidates' times in both modes and torch's.

  TGV_GEMM_LIBRARY=.../libtgv_gemm.so PYTHONPATH=python \
    python3 bench/experiments/isolated.py [--shapes N:K,...] [--m 1,8,32]
        [--corpus bench/corpus/decode.shapes --min-mb 4] [--csv out.csv]

--corpus takes the corpus's distinct N x K (weights of at least --min-mb MB);
--csv writes every candidate's pair of times (perf-notes §20 fits the ring
depth to such a sweep). --gated times the silu_mul epilogue: W holds [gate; up]
(N rows, N / 2 out columns), ours fused, torch's matmul then silu(gate) * up
(perf-notes §45: a gated launch's later waves paced or not).
"""

import argparse
import csv
import math
import os
import sys

os.environ.setdefault("TGV_TUNING_FILE", "/nonexistent/tgv-untuned.json")

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from corpus_bench import load_corpus  # noqa: E402 - bench/python: the corpus's reader
from tgv_gemm import _lib as L  # noqa: E402
from tgv_gemm import _ops  # noqa: E402
from tgv_gemm._tune import _spaced, _time_graph  # noqa: E402

SHAPES = [(5120, 2880), (1280, 2880), (4096, 4096), (6144, 4096), (2112, 7168), (28672, 4096), (4096, 14336),
          (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="")
    ap.add_argument("--m", default="1,16")
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--all", action="store_true", help="print every candidate's pair of times")
    ap.add_argument("--stages", default="0", help="ring depths to try, 0 = the deepest that fits (default 0)")
    ap.add_argument("--pdl", default="1", help="PDL settings to try, 0 and/or 1 (default 1)")
    ap.add_argument("--splits", default="1,2,3,4,5,6,8,-1", help="split-K factors to try (-1: stream-K)")
    ap.add_argument("--corpus", default="", help="a shapes file (tgv-bench --shapes format): its distinct N x K")
    ap.add_argument("--min-mb", type=float, default=0.0, help="with --corpus: weights of at least this many MB")
    ap.add_argument("--csv", default="", help="write every candidate's chain and isolated time here")
    ap.add_argument("--gated", action="store_true", help="the silu_mul epilogue (torch: matmul, silu, mul)")
    ap.add_argument("--calls", type=int, default=40, help="calls per captured graph (default 40)")
    ap.add_argument("--l2-factor", type=float, default=8.0, help="weight copies total >= this x L2 (default 8)")
    ap.add_argument("--chain-only", action="store_true",
                    help="time back to back only (isolated_us written as nan): half the device time, for a refit")
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split(":")) for s in a.shapes.split(",")] if a.shapes else SHAPES
    if a.corpus:
        shapes = []
        for s in load_corpus(a.corpus):
            nk = (s["n"], s["k"])
            if nk not in shapes and 2 * s["n"] * s["k"] >= a.min_mb * 1e6:
                shapes.append(nk)
    out_csv = None
    if a.csv:
        # Line by line: a run cut off at the device's time limit keeps the rows it measured.
        out_csv = csv.writer(open(a.csv, "w", newline="", buffering=1))
        out_csv.writerow(["n", "k", "m", "cand", "tactic", "cta_m", "cta_n", "cta_k", "split", "stages", "pdl",
                          "chain_us", "isolated_us"])
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    tactics = [t for t in (L.get_tactic(i) for i in range(L.num_tactics())) if t["arch"] == 90]
    spacer = torch.zeros(1, device=dev)
    calls = a.calls

    def timed(fn, copies, isolated):
        return _time_graph(_spaced(fn, spacer) if isolated else fn, calls, a.replays)

    alone = _time_graph(lambda i: spacer.add_(1.0), calls, a.replays)
    print("spacer kernel alone: %.2f us" % alone)
    print("N K M | candidate: chain us / isolated us (spacer subtracted)")
    for n, k in shapes:
        copies = max(2, math.ceil(a.l2_factor * props.L2_cache_size / (n * k * 2)))
        ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) / math.sqrt(k) for _ in range(copies)]
        for m in [int(v) for v in a.m.split(",")]:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            out = torch.empty(m, n // 2 if a.gated else n, device=dev, dtype=torch.bfloat16)
            full = torch.empty(m, n, device=dev, dtype=torch.bfloat16) if a.gated else out
            epi = L.EPILOGUES["silu_mul"] if a.gated else 0
            # (name, options, (tactic, cta_m, cta_n, cta_k, split, stages, pdl) for the CSV; None: not ours)
            cands = [("torch", None, None), ("auto", L.options("auto", None, None), None)]
            cta_n = min(t["cta_n"] for t in tactics if t["cta_n"] >= m)
            for t in tactics:
                if t["cta_n"] != cta_n:
                    continue
                for split in [int(v) for v in a.splits.split(",")]:
                    for stages in [int(v) for v in a.stages.split(",")]:
                        for pdl in [int(v) for v in a.pdl.split(",")]:
                            cands.append(("%dx%dx%d/%s%s%s" % (t["cta_m"], t["cta_n"], t["cta_k"],
                                                              "sk" if split < 0 else split,
                                                              "/s%d" % stages if stages else "", "" if pdl else "/nopdl"),
                                          L.options("tgv", t["id"], bool(pdl), split_k=split, stages=stages or None),
                                          (t["id"], t["cta_m"], t["cta_n"], t["cta_k"], split, stages, pdl)))
            results = []
            for name, opts, meta in cands:
                if opts is None:
                    def call(i):
                        torch.matmul(x, ws[i % copies].t(), out=full)
                        if a.gated:
                            torch.mul(torch.nn.functional.silu(full[:, : n // 2]), full[:, n // 2:], out=out)
                else:
                    try:
                        _ops.run_linear(x, ws[0], None, out, "tgv" if "/" in name else name, None, None, "iso",
                                        options=opts, epilogue=epi)
                    except L.TgvError:
                        continue

                    def call(i, opts=opts, backend="tgv" if "/" in name else name):
                        _ops.run_linear(x, ws[i % copies], None, out, backend, None, None, "iso", options=opts,
                                        epilogue=epi)
                chain = timed(call, copies, False)
                iso = float("nan") if a.chain_only else timed(call, copies, True) - alone
                results.append((name, chain, iso))
                if out_csv is not None:
                    out_csv.writerow([n, k, m, "tgv" if meta else name, *(meta or (-1, 0, 0, 0, 0, 0, 1)),
                                      "%.3f" % chain, "%.3f" % iso])
            best_chain = min(r[1] for r in results if r[0] not in ("torch", "auto"))
            best_iso = min((r[2] for r in results if r[0] not in ("torch", "auto")),
                           key=lambda v: math.inf if math.isnan(v) else v)
            pick_chain = [r[0] for r in results if r[1] == best_chain][0]
            pick_iso = ([r[0] for r in results if r[2] == best_iso] or [pick_chain])[0]
            d = {r[0]: r for r in results}
            if a.all:
                for name, chain, iso in sorted(results, key=lambda r: r[2]):
                    print("    %-16s chain %7.2f  isolated %7.2f" % (name, chain, iso))
            print("%d %d %d | torch %.2f/%.2f auto %.2f/%.2f | best chain %s %.2f (iso %.2f) | best isolated %s %.2f "
                  "(chain %.2f)" % (n, k, m, d["torch"][1], d["torch"][2], d["auto"][1], d["auto"][2], pick_chain,
                                    best_chain, d[pick_chain][2], pick_iso, best_iso, d[pick_iso][1]), flush=True)
        del ws
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
