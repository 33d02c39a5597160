#!/usr/bin/env python3
"""Our cuBLASLt path (tgv_gemm.linear(backend="cublas")) against torch's cuBLAS
call (F.linear), untuned, on decode shapes: issue 10's done-when is
backend=cublas >= 0.98x torch at every point. (Written for a measured
choice among 16 cuBLASLt algorithms, which was not kept: perf-notes §13; the
path now takes the heuristic's first, as torch's call does.)

Each (N, K, M) point times both the same way, in the same run: `calls` calls,
call i reading weight copy i % copies (copies totalling >= 8x the L2 cache, so
no call finds its weight in L2), captured in one CUDA graph, the median of the
replays per call (python/tgv_gemm/_tune.py's _time_graph, imported).

    python3 bench/experiments/cublas_vs_torch.py                 # ~60 shapes x M in 1 8 32 64 128
    python3 bench/experiments/cublas_vs_torch.py --quick         # the issue's shapes only
    python3 bench/experiments/cublas_vs_torch.py --bias          # with a bias (torch: cublasLt's epilogue)
    TGV_LOG_DISPATCH=1 python3 bench/experiments/cublas_vs_torch.py --quick   # + the chosen algorithms
    python3 bench/experiments/cublas_vs_torch.py --shapes 5760x2880 --m 2 8 --torch-fp32-reduction

--torch-fp32-reduction turns off torch's allow_bf16_reduced_precision_reduction,
so that its cuBLAS call may not add split-K partial sums in bf16 either, as ours
never does (src/cublas/cublas_legacy.hpp): whether a gap that stays in every run
(gpt-oss-20b's 5760 x 2880 at M = 2 and 8, perf-notes §45) is that choice.

Prints one line per point (ratio = torch us / ours us; >= 1 means ours is
faster) and the minimum and geometric mean of the ratio, per M and overall.
"""

import argparse
import math
import sys
import time

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tgv_gemm  # noqa: E402
from tgv_gemm._tune import _time_graph  # noqa: E402

# The issue's points first (576x7168 ... 4097x4104), then decode shapes of
# public models (N x K as nn.Linear stores W), odd N among them.
ISSUE_SHAPES = [(576, 7168), (256, 7168), (1536, 7168), (128, 4096), (4097, 4104)]
SHAPES = ISSUE_SHAPES + [
    # Llama-3.1-8B: qkv, o, gate_up, down, k/v unfused
    (6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (1024, 4096), (14336, 4096),
    # Llama-3.1-70B TP8 shard: qkv, o, gate_up, down
    (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584),
    # Qwen2.5-7B: qkv, o, gate_up, down
    (4608, 3584), (3584, 3584), (37888, 3584), (3584, 18944),
    # Qwen3-30B-A3B / MoE routers and small experts
    (128, 2048), (1536, 2048), (2048, 768), (4096, 2048), (2048, 4096),
    # DeepSeek-V3: q_a+kv_a, q_b, o, router, shared expert gate_up and down
    (2112, 7168), (24576, 1536), (7168, 16384), (4096, 7168), (7168, 2048),
    # gpt-oss-20b: qkv, o, router
    (5120, 2880), (2880, 4096), (32, 2880),
    # Gemma-2-2B, Phi-3-mini
    (4096, 2304), (2304, 2048), (9216, 3072), (3072, 3072), (16384, 3072), (3072, 8192),
    # Mistral-7B TP2/TP4 shards
    (3072, 4096), (4096, 7168), (7168, 4096), (4096, 3584), (1536, 4096),
    # square and near-square sizes
    (1024, 1024), (2048, 2048), (5120, 5120), (8192, 8192), (512, 1024), (128, 1024),
    # odd N: vocabulary tails, unpadded fused projections
    (1001, 4096), (3001, 2048), (12289, 4096), (255, 7168), (129, 1024), (7681, 1536),
    (4097, 1024), (28673, 4096),
]
MS = (1, 8, 32, 64, 128)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, nargs="+", default=list(MS), help="token counts M (default: 1 8 32 64 128)")
    p.add_argument("--quick", action="store_true", help="only the issue's shapes")
    p.add_argument("--shapes", nargs="+", metavar="NxK", help="weight shapes N x K instead of the list")
    p.add_argument("--bias", action="store_true", help="with a bias vector")
    p.add_argument("--replays", type=int, default=7, help="graph replays per point (median; default 7)")
    p.add_argument("--l2-factor", type=float, default=8.0, help="weight copies total this many L2 sizes")
    p.add_argument("--check", action="store_true", help="also compare each output with F.linear")
    p.add_argument("--torch-fp32-reduction", action="store_true",
                   help="torch's cuBLAS call without bf16 split-K reductions, as ours")
    return p.parse_args(argv)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv):
    args = parse_args(argv)
    if args.torch_fp32_reduction:
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    shapes = ISSUE_SHAPES if args.quick else SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes]
    props = torch.cuda.get_device_properties(0)
    print("# cublas_vs_torch: %s, torch %s, tgv_gemm %s, %s, torch bf16 reductions %s" % (
        props.name, torch.__version__, tgv_gemm.library_version(), "bias" if args.bias else "no bias",
        "allowed" if torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction else "off"))
    print("%6s %6s %4s %10s %10s %7s" % ("N", "K", "M", "ours_us", "torch_us", "ratio"))
    start = time.time()
    ratios = {}  # M -> [ratio]
    worst = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for n, k in shapes:
        w_bytes = n * k * 2
        copies = max(2, math.ceil(args.l2_factor * props.L2_cache_size / w_bytes))
        calls = max(copies, 20)
        weights = [(torch.rand(n, k, device="cuda", generator=gen) - 0.5).to(torch.bfloat16) / math.sqrt(k)
                   for _ in range(copies)]
        b = (torch.rand(n, device="cuda", generator=gen) - 0.5).to(torch.bfloat16) if args.bias else None
        for m in args.m:
            x = (torch.rand(m, k, device="cuda", generator=gen) - 0.5).to(torch.bfloat16)

            def ours(i, x=x):
                return tgv_gemm.linear(x, weights[i % copies], b, backend="cublas")

            def theirs(i, x=x):
                return F.linear(x, weights[i % copies], b)

            if args.check:
                got, want = ours(0).float(), theirs(0).float()
                err = ((got - want).abs() / (want.abs() + 1e-2 * want.abs().mean())).max().item()
                if err > 2e-2:
                    print("  check: N=%d K=%d M=%d: max relative difference from F.linear %.3g" % (n, k, m, err))
            t_ours = _time_graph(ours, calls, args.replays)
            t_torch = _time_graph(theirs, calls, args.replays)
            r = t_torch / t_ours
            ratios.setdefault(m, []).append(r)
            worst.append((r, n, k, m, t_ours, t_torch))
            print("%6d %6d %4d %10.2f %10.2f %7.3f%s" % (n, k, m, t_ours, t_torch, r, "  < 0.98" if r < 0.98 else ""),
                  flush=True)
        weights.clear()
        torch.cuda.empty_cache()
    every = [r for rs in ratios.values() for r in rs]
    print("\n%4s %7s %7s %7s %s" % ("M", "points", "min", "geomean", "below 0.98"))
    for m in sorted(ratios):
        rs = ratios[m]
        print("%4d %7d %7.3f %7.3f %d" % (m, len(rs), min(rs), geomean(rs), sum(r < 0.98 for r in rs)))
    print("%4s %7d %7.3f %7.3f %d" % ("all", len(every), min(every), geomean(every), sum(r < 0.98 for r in every)))
    worst.sort()
    print("worst: " + ", ".join("%dx%d M=%d %.3f (%.2f vs %.2f us)" % (n, k, m, r, a, t)
                                for r, n, k, m, a, t in worst[:5]))
    print("elapsed %.1f s" % (time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
