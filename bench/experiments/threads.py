#!/usr/bin/env python3
"""tests/python/test_linear.py::test_threads in a fresh process, so that the
threads' calls are the process's first (first kernel loads, the self-check
probe, the cuBLASLt handle and workspaces all race). Prints OK or the errors.

    python3 bench/experiments/threads.py [threads-per-shape [mode]]

mode: mixed (default: M = 1, 7 run the tgv kernels, M = 64 cuBLASLt), cublas
(M = 64 only; -warm: each shape run once before the threads; -nobias: no bias),
tgv (M = 1, 7 only), nopdl (mixed, tgv without PDL), streams
(mixed, each thread on its own stream).
"""
import sys
import threading

import torch

import tgv_gemm


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    mode = sys.argv[2] if len(sys.argv) > 2 else "mixed"
    ms = {"cublas": (64,), "cublas-warm": (64,), "cublas-nobias": (64,), "tgv": (1, 7)}.get(mode, (1, 7, 64))
    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape):
        return (torch.rand(*shape, device="cuda", generator=g) - 0.5).to(torch.bfloat16)

    cases = [(m, n, 136) for m in ms for n in (1000, 4096)] * reps
    data = [(rand(m, k), rand(n, k), rand(n)) for m, n, k in cases]
    if mode == "cublas-nobias":
        data = [(x, w, None) for x, w, _ in data]
    if mode == "cublas-warm":  # every distinct shape once, before the threads
        for x, w, b in data[: len(data) // reps]:
            tgv_gemm.linear(x, w, b)
    torch.cuda.synchronize()
    errors = []

    def work(i):
        try:
            x, w, b = data[i]
            stream = torch.cuda.Stream() if mode == "streams" else torch.cuda.current_stream()
            with torch.cuda.stream(stream):
                for _ in range(20):
                    out = tgv_gemm.linear(x, w, b, pdl=False if mode == "nopdl" else None)
                stream.synchronize()
            ref = torch.nn.functional.linear(x.float(), w.float(), None if b is None else b.float())
            if not ((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all():
                errors.append("case %d %s: wrong result" % (i, cases[i]))
        except Exception as e:
            errors.append("case %d %s: %s" % (i, cases[i], e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("OK" if not errors else "FAILED\n  " + "\n  ".join(errors))


if __name__ == "__main__":
    main()
