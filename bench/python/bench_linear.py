#!/usr/bin/env python3
"""Time tgv_gemm.linear against F.linear (cuBLAS) and torch.compile(F.linear,
mode="max-autotune-no-cudagraphs"), cold weights, and the per-call eager overhead.

Cold-weight CUDA-graph method, per shape and implementation: `calls` back-to-back
calls, call i reading weight copy i % copies, where the copies total >= 8x the
L2 cache (so no call finds its weight in L2), are captured in one CUDAGraph;
the graph is replayed `--replays` (>= 7) times between CUDA events and the
median replay time / calls is the time per call (us). Launch overhead is gone
(a graph), the weights are streamed from HBM as in decoding.

Then the eager overhead: --overhead-calls (1000) eager calls on a tiny shape
(M=1, N=64, K=64) timed with the host clock (synchronize before and after),
for tgv_gemm.linear, torch.ops.tgv.linear and F.linear, and the same tgv calls
captured in a graph and replayed, per call.

    python3 bench/python/bench_linear.py                # default shapes, M in 1 8 64
    python3 bench/python/bench_linear.py --m 1 16 --shapes 4096x4096 --no-compile

Prints markdown: the date, GPU, command, then the tables.
"""

import argparse
import datetime
import math
import sys
import time

import torch
import torch.nn.functional as F

import tgv_gemm
from tgv_gemm._tune import _time_graph

DEFAULT_SHAPES = [
    (6144, 4096),
    (4096, 4096),
    (28672, 4096),
    (4096, 14336),
    (1280, 8192),
    (8192, 1024),
    (7168, 8192),
    (8192, 3584),
    (7168, 2048),
    (3072, 1536),
    (1280, 2880),
    (2880, 1024),
]


def parse_shape(s):
    n, k = s.lower().split("x")
    return int(n), int(k)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, nargs="+", default=[1, 8, 64], help="token counts M (default: 1 8 64)")
    p.add_argument("--shapes", type=parse_shape, nargs="+", default=DEFAULT_SHAPES, metavar="NxK",
                   help="weight shapes N x K (default: the 12 decoding shapes)")
    p.add_argument("--replays", type=int, default=9, help="timed graph replays per measurement (>= 7; median)")
    p.add_argument("--l2-factor", type=float, default=8.0, help="weight copies total >= this x L2 (default 8)")
    p.add_argument("--min-calls", type=int, default=20, help="at least this many calls per graph (default 20)")
    p.add_argument("--bias", action="store_true", help="add a bias [N] (all implementations)")
    p.add_argument("--backend", default="auto", choices=["auto", "tgv", "cublas"], help="tgv_gemm backend")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (max-autotune is slow to tune)")
    p.add_argument("--overhead-calls", type=int, default=1000, help="calls in the eager-overhead measurement")
    p.add_argument("--no-overhead", action="store_true", help="skip the eager-overhead measurement")
    args = p.parse_args(argv)
    if args.replays < 7:
        p.error("--replays must be >= 7")
    return args


def time_graph(fn, weights, x, bias, calls, replays):
    """Median us per call of `calls` calls of fn(x, weights[i % copies], bias)
    captured in one CUDA graph (the method of tgv_gemm.tune, shared)."""
    copies = len(weights)
    return _time_graph(lambda i: fn(x, weights[i % copies], bias), calls, replays)


def check(out, ref):
    """Same tolerance as the tests: |out - ref| <= 1e-2 + 1e-2 |ref|."""
    return bool(((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all())


def bench_shapes(args, l2_bytes):
    backend = args.backend
    impls = [
        ("tgv_gemm", lambda x, w, b: tgv_gemm.linear(x, w, b, backend=backend)),
        ("cuBLAS", F.linear),
    ]
    if not args.no_compile:
        # Every (M, N, K) is its own static-shape compile. Dynamo's default limit
        # of recompiles per function would otherwise silently fall back to eager
        # F.linear after a few shapes, and the "compile" column would be cuBLAS.
        for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                      "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, 4096)
        if hasattr(torch._dynamo.config, "fail_on_recompile_limit_hit"):
            torch._dynamo.config.fail_on_recompile_limit_hit = True  # never a silent eager fallback
        impls.append(("compile", torch.compile(F.linear, mode="max-autotune-no-cudagraphs", dynamic=False)))

    rows = []
    for n, k in args.shapes:
        w_bytes = n * k * 2
        copies = max(2, math.ceil(args.l2_factor * l2_bytes / w_bytes))
        calls = max(copies, args.min_calls)
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) if args.bias else None
        for m in args.m:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            ref = F.linear(x.float(), weights[0].float(), None if bias is None else bias.float())
            ok = check(tgv_gemm.linear(x, weights[0], bias, backend=backend), ref)
            us = {}
            for name, fn in impls:
                t0 = time.perf_counter()
                us[name] = time_graph(fn, weights, x, bias, calls, args.replays)
                if name == "compile":
                    print("  compile + autotune + timing: %.1f s" % (time.perf_counter() - t0),
                          file=sys.stderr, flush=True)
            moved = w_bytes + m * k * 2 + m * n * 2 + (n * 2 if bias is not None else 0)
            rows.append((n, k, m, us, moved / (us["tgv_gemm"] * 1e-6) / 1e9, copies, calls, ok))
            print("  N=%d K=%d M=%d: %s" % (n, k, m, "  ".join("%s %.2f us" % kv for kv in us.items())),
                  file=sys.stderr, flush=True)
        del weights
        torch.cuda.empty_cache()
    return [name for name, _ in impls], rows


def bench_overhead(calls):
    m, n, k = 1, 64, 64
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    op = torch.ops.tgv.linear.default

    def host_time(fn):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
        return best / calls * 1e6

    results = [
        ("tgv_gemm.linear eager", host_time(lambda: tgv_gemm.linear(x, w))),
        ("torch.ops.tgv.linear eager", host_time(lambda: op(x, w, None))),
        ("F.linear eager (cuBLAS)", host_time(lambda: F.linear(x, w))),
    ]

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            tgv_gemm.linear(x, w)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            tgv_gemm.linear(x, w)
    g.replay()
    torch.cuda.synchronize()
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    results.append(("tgv_gemm.linear, CUDA-graph replay", best / calls * 1e6))
    return results


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    l2_bytes = props.L2_cache_size
    print("# tgv_gemm.linear vs F.linear (cuBLAS) vs torch.compile(F.linear)\n")
    print("- date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    print("- GPU: %s (sm_%d%d, %d SMs, L2 %.0f MiB)" % (props.name, props.major, props.minor,
                                                        props.multi_processor_count, l2_bytes / 2**20))
    print("- torch %s, CUDA %s, tgv-gemm library %s (%s)" % (torch.__version__, torch.version.cuda,
                                                            tgv_gemm.library_version(), tgv_gemm.library_path()))
    print("- command: `%s`" % " ".join([sys.executable.split("/")[-1]] + sys.argv))
    print("- method: cold weights (copies totalling >= %.0fx L2, rotated), calls captured in one CUDA graph, "
          "median of %d replays, us per call; bias: %s; tgv_gemm backend: %s\n"
          % (args.l2_factor, args.replays, "yes" if args.bias else "no", args.backend))

    names, rows = bench_shapes(args, l2_bytes)
    head = ["N", "K", "M"] + ["%s us" % n for n in names] + ["cuBLAS / tgv"]
    if "compile" in names:
        head.append("compile / tgv")
    head += ["tgv GB/s", "copies x calls", "check"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n, k, m, us, gbs, copies, calls, ok in rows:
        cells = [str(n), str(k), str(m)] + ["%.2f" % us[name] for name in names]
        cells.append("%.2f" % (us["cuBLAS"] / us["tgv_gemm"]))
        if "compile" in us:
            cells.append("%.2f" % (us["compile"] / us["tgv_gemm"]))
        cells += ["%.0f" % gbs, "%d x %d" % (copies, calls), "ok" if ok else "MISMATCH"]
        print("| " + " | ".join(cells) + " |")

    if not args.no_overhead:
        print("\n## Per-call overhead (M=1, N=64, K=64, %d calls, host clock, best of 5)\n" % args.overhead_calls)
        print("| path | us / call |")
        print("|---|---|")
        for name, us in bench_overhead(args.overhead_calls):
            print("| %s | %.2f |" % (name, us))


if __name__ == "__main__":
    main()
