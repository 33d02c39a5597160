#!/usr/bin/env python3
"""Stress for the unspecified launch failure of perf-notes §34 / §38: the corpus
bench's replay pattern (CUDA graphs of back-to-back calls over rotating cold
weight copies, PDL on our side, implementations interleaved with torch's
F.linear and our cuBLASLt path) held on the points where the fault surfaced,
for a fixed time, until a CUDA error or the end.

  TGV_SPLIT_K_PULL=0|1 python3 bench/experiments/split_stress.py \
      [--points 2048x4096x32 3840x4096x64 ...] [--seconds 60] [--pdl 0|1] [--split 2 [--tactic 2]]

Per point: the weight copies and calls of corpus_bench.py (>= 4x L2), graphs of
auto, cublas, tgv and torch, replayed round after round in rotated order with a
host synchronize every --sync rounds (where the fault surfaced first); at every
heartbeat (2 s) and at the end, every implementation's last output must equal its
eager output bitwise.
Prints one line per point: rounds, replays, calls of ours, and the verdict;
exit status 1 on a CUDA error or a mismatch.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import corpus_bench as cb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", nargs="+", default=["2048x4096x32", "3840x4096x64", "3840x4096x128"])
    ap.add_argument("--seconds", type=float, default=60.0, help="stress time over all points")
    ap.add_argument("--sync", type=int, default=5, help="rounds between host synchronizes")
    ap.add_argument("--pdl", type=int, choices=(0, 1), default=None,
                    help="our calls' PDL (default: the library's, on)")
    ap.add_argument("--split", type=int, default=0,
                    help="also a graph of the tgv kernel at this split_k, passed explicitly (the library's own plans "
                         "use no split-K clusters since perf-notes §38), with --tactic")
    ap.add_argument("--tactic", type=int, default=2, help="the tactic of --split's graph (default 2: 64x32x128)")
    ap.add_argument("--graphs", nargs="+", default=None,
                    help="replay only these graphs (of auto, cublas, tgv, torch, split): which kernel faults")
    a = ap.parse_args()
    import torch
    import tgv_gemm
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per_point = a.seconds / len(a.points)
    print("split_stress: TGV_SPLIT_K_PULL=%s, pdl %s, %s, %.0f s per point" % (
        os.environ.get("TGV_SPLIT_K_PULL", "(unset)"), "default" if a.pdl is None else a.pdl,
        torch.cuda.get_device_name(0), per_point), flush=True)
    pdl = None if a.pdl is None else bool(a.pdl)
    fns = {b: (lambda x, w, b=b: tgv_gemm.linear(x, w, backend=b, pdl=pdl)) for b in ("auto", "cublas", "tgv")}
    fns["torch"] = lambda x, w: torch.nn.functional.linear(x, w)
    if a.split:
        from tgv_gemm import _lib, _ops
        forced = _lib.options("tgv", a.tactic, pdl, split_k=a.split)
        fns["split"] = lambda x, w: _ops.run_linear(x, w, None, None, "tgv", None, None, "split_stress", options=forced)
    if a.graphs:
        fns = {name: fn for name, fn in fns.items() if name in a.graphs}
    failed = False
    for point in a.points:
        n, k, m = map(int, point.split("x"))
        copies, calls = cb.plan_calls(n * k * 2, l2, 4.0)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(n * 131 + k * 7 + m)
        weights = torch.empty(copies, n, k, device="cuda", dtype=torch.bfloat16).normal_(0, k ** -0.5, generator=gen)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        warm = cb.alignment_classes(weights)
        p = tgv_gemm.get_plan(x, weights[0], backend="auto")
        outs, graphs = {}, {}
        for name, fn in fns.items():
            eager = fn(x, weights[(calls - 1) % copies]).clone()
            holder = {}

            def call(i, fn=fn, holder=holder, weights=weights, x=x):
                holder["out"] = fn(x, weights[i % copies])
            graphs[name] = cb.capture_graph(torch, call, calls, warm)
            outs[name] = (eager, holder)
        names = list(graphs)
        torch.cuda.synchronize()
        # A hang shows where it stalled: after the captures, or after how many rounds.
        print("  %s: %d graphs of %d calls captured and replayed once" % (point, len(names), calls), flush=True)
        rounds = replays = 0
        start = beat = time.perf_counter()
        verdict = "ok"
        try:
            while time.perf_counter() - start < per_point:
                for _ in range(a.sync):
                    for name in names[rounds % len(names):] + names[:rounds % len(names)]:
                        graphs[name].replay()
                        replays += 1
                    rounds += 1
                torch.cuda.synchronize()
                if time.perf_counter() - beat > 2.0:
                    beat = time.perf_counter()
                    print("  ... %d rounds" % rounds, flush=True)
                    # Wrong sums need not fault (perf-notes §39): each graph's last
                    # output against its eager one at every heartbeat, not only at the end.
                    bad = [name for name, (eager, holder) in outs.items() if not torch.equal(holder["out"], eager)]
                    if bad:
                        verdict = "MISMATCH in %s's last output after %d rounds" % (", ".join(bad), rounds)
                        break
            for name, (eager, holder) in outs.items():
                if verdict == "ok" and not torch.equal(holder["out"], eager):
                    verdict = "MISMATCH in %s's last output" % name
        except Exception as e:  # a fault: the context is gone, report and stop
            verdict = "CUDA ERROR after %d rounds: %s" % (rounds, str(e).splitlines()[0])
        asked = ", forced tactic %d split %d" % (a.tactic, a.split) if a.split else ""
        print("%s plan %s split %s%s: %d rounds, %d replays, %d calls of auto/tgv each: %s" % (
            point, p["backend"], p.get("split_k"), asked, rounds, replays, rounds * calls, verdict), flush=True)
        if verdict != "ok":
            failed = True
            if verdict.startswith("CUDA"):
                break
        del graphs, outs, weights
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
