#!/usr/bin/env python3
"""One kernel at a time: torch's F.linear beside tgv_gemm.linear (auto, or a
fixed plan) on the same shapes, for Nsight Compute, which serializes kernels
and flushes the caches between them, so each kernel's duration is its own,
with no neighbour overlapping it (perf-notes §20).

  ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,... \
      --csv python3 bench/experiments/ncu_pair.py 5120:2880 3072:2048 --m 1

Each shape runs torch then ours (auto, then each `--plans` entry
tactic/split/stages, 0 = deepest), `--reps` times each; a one-element torch
kernel separates them so the kernels of interest are easy to tell apart.
"""
import argparse

import torch
import torch.nn.functional as F

import tgv_gemm
from tgv_gemm import _lib as L
from tgv_gemm import _ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="+", help="N:K")
    ap.add_argument("--m", default="1")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--plans", default="", help="tactic/split/stages,... run after auto")
    a = ap.parse_args()
    torch.manual_seed(0)
    mark = torch.zeros(1, device="cuda")
    for s in a.shapes:
        n, k = map(int, s.split(":"))
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for m in map(int, a.m.split(",")):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            for _ in range(a.reps):
                F.linear(x, w)
                mark.add_(1)
                tgv_gemm.linear(x, w)
                mark.add_(1)
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            for plan in filter(None, a.plans.split(",")):
                t, split, stages = map(int, plan.split("/"))
                opts = L.options("tgv", t, True, split_k=split, stages=stages or None)
                for _ in range(a.reps):
                    try:
                        _ops.run_linear(x, w, None, out, "tgv", None, None, "ncu", options=opts)
                    except L.TgvError as e:
                        print("plan %s: %s" % (plan, e))
                        break
                    mark.add_(1)
            print("shape %d %d %d" % (n, k, m), flush=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
