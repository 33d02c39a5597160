"""tgv_gemm.tune: `tgv-bench --tune` from Python -- a timer over the library's
tuner pieces, the same ones tgv-bench uses.

For each weight shape (N, K) and M bucket (powers of two up to 256) it times
every candidate of the library's list (tgv_tune_candidates: each tgv tactic of
the device's family whose token tile is the smallest covering M, at each
split-K factor of the tuner's list whose grid stays within two waves, with the
deepest ring and, on sm_90, a shallower one; then cuBLASLt) the way tgv-bench
does: weight copies totalling 8x the L2 cache, rotated through calls
captured (thread-locally) in one CUDA graph, the median of the replays.
neighbours="both" (the default) scores each candidate by the mean of two
timings: back to back ("self") and each call followed by a one-element kernel
that neither waits nor triggers programmatically, its own time (measured the
same way) subtracted ("kernels"). Inside a model a GEMM has both kinds of
neighbour: q/k/v or gate/up then down run back to back, where each GEMM's
weight stream starts under the previous one's tail (PDL), and o_proj sits
between attention and a residual add, where PDL has no earlier GEMM to
overlap. The two orders rank candidates differently (docs/perf-notes.md §16,
§48): on the H200's 892-point sweep the "kernels" winner was more than 5%
slower back to back at 251 points, the "self" winner more than 5% slower
between kernels at 190, the mean's winner at 48 and 61. neighbours="kernels"
or "self" times one order only (half the tuning time).
A candidate the library refuses is skipped; one whose output misses the fp32
reference is reported and never chosen. The library's writer
(tgv_write_tuning_file) writes the winners to the tuning file the library
reads, which backend "auto" then follows: at once in this process (the library
re-reads it) and in processes started afterwards.
"""

import math
import os
import statistics

import torch
import torch.nn.functional as F

from . import _lib as L
from . import _ops

BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
NEIGHBOURS = ("both", "kernels", "self")


def tuning_file_path():
    """Where the library looks for the tuning file (tgv_tuning_file_path):
    $TGV_TUNING_FILE, else $XDG_CACHE_HOME/tgv-gemm/tuning.json, else
    ~/.cache/tgv-gemm/tuning.json."""
    return L.tuning_file_path()


def candidates(n, k, m, device):
    """The (backend, tactic, split_k, stages) tuples tried for one point,
    cuBLASLt last: the library's list (tgv_tune_candidates), the one
    `tgv-bench --tune` times. `device`: a CUDA ordinal, or an _lib.DeviceDesc
    (a real or simulated device)."""
    desc = device if isinstance(device, L.DeviceDesc) else L.describe_device(device)
    return L.tune_candidates(desc, n, k, m)


def candidate_options(backend, tactic, split_k, stages):
    """The Options that run exactly one candidate. Split-K is passed even when
    it is 1: left unset, the library would choose its own factor and the file
    would record a measurement of something else."""
    if backend == "cublas":
        return L.options("cublas", None, None)
    return L.options("tgv", tactic, None, split_k=split_k, stages=stages or None)


def _time_graph(fn, calls, replays):
    """Median us per call of `calls` calls of fn(i) captured in one CUDA graph,
    on the current stream (a side stream of tune()'s own: the warm-up calls give
    it its cuBLASLt workspace before capture, as tgv-bench does on its stream).

    The capture is thread-local: only this thread's calls are checked for
    capture safety, so threads serving beside the tuner on their own streams
    keep allocating and synchronizing (in torch's default global mode their
    calls failed with "operation not permitted when stream is capturing")."""
    stream = torch.cuda.current_stream()
    if stream == torch.cuda.default_stream():
        # A graph cannot be captured on the legacy default stream: time on a
        # side stream ordered after the caller's work.
        side = torch.cuda.Stream()
        side.wait_stream(stream)
        with torch.cuda.stream(side):
            return _time_graph(fn, calls, replays)
    for i in range(3):  # outside capture: plans, workspaces, first loads
        fn(i)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
        for i in range(calls):
            fn(i)
    graph.replay()
    stream.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record(stream)
        graph.replay()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    return statistics.median(times)


def check_neighbours(neighbours, who):
    if neighbours not in NEIGHBOURS:
        raise L.TgvValueError("%s: neighbours=%r: expected 'both' (the mean of the two orders), 'kernels' (each "
                              "call between other kernels) or 'self' (calls back to back)" % (who, neighbours),
                              L.ERROR_INVALID_ARGUMENT)


def _spaced(fn, spacer):
    def call(i):
        fn(i)
        spacer.add_(1.0)
    return call


def tune(shapes, ms=BUCKETS, *, path=None, bias=False, replays=7, l2_factor=8.0, device=None, verbose=True,
         neighbours="both"):
    """Times the candidates for every (N, K) in `shapes` and M in `ms` (powers of
    two: the file's buckets; M in (m/2, m] uses bucket m), each scored by the
    mean of its time back to back and between other kernels (neighbours="both",
    the default), or by one of them ("self", "kernels"; see the file's
    docstring), and writes the winners to
    `path` (default: tuning_file_path(); "" or False: write nothing). Returns the
    entries as dicts (n, k, m, backend, tactic, split_k, stages, us, cublas_us).
    When `path` is the file the library reads (tuning_file_path()), the library
    re-reads it, so the tuned choices take effect at once in this process, as in
    processes started afterwards; a file written elsewhere takes effect once
    TGV_TUNING_FILE names it, in new processes or after reload_tuning()."""
    for m in ms:
        if m < 1 or m > 256 or m & (m - 1):
            raise L.TgvValueError("tgv_gemm.tune: ms=%r: every M must be a power of two in [1, 256]" % (ms,),
                                  L.ERROR_INVALID_ARGUMENT)
    check_neighbours(neighbours, "tgv_gemm.tune")
    device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
    props = torch.cuda.get_device_properties(device)
    desc = L.describe_device(device.index)
    entries = []
    # One stream of the tuner's own for every call it makes, never the legacy
    # default stream, which would order itself after other threads' blocking
    # streams.
    with torch.cuda.device(device), torch.cuda.stream(torch.cuda.Stream(device)):
        spacer, spacer_us = None, 0.0
        if neighbours in ("kernels", "both"):
            spacer = torch.zeros(1, device=device)
            spacer_us = _time_graph(lambda i: spacer.add_(1.0), 40, replays)
        for n, k in shapes:
            w_bytes = n * k * 2
            copies = max(2, math.ceil(l2_factor * props.L2_cache_size / w_bytes))
            calls = max(copies, 20)
            weights = [torch.randn(n, k, device=device, dtype=torch.bfloat16) / math.sqrt(k) for _ in range(copies)]
            b = torch.randn(n, device=device, dtype=torch.bfloat16) if bias else None
            for m in ms:
                x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
                out = torch.empty(m, n, device=device, dtype=torch.bfloat16)
                ref = F.linear(x.float(), weights[0].float(), None if b is None else b.float())
                best, cublas_us = None, 0.0
                for backend, tactic, split, stages in candidates(n, k, m, desc):
                    opts = candidate_options(backend, tactic, split, stages)
                    name = "cublas" if backend == "cublas" else "tactic %d split %d stages %s" % (
                        tactic, split, stages or "deepest")
                    try:
                        out.fill_(float("nan"))
                        _ops.run_linear(x, weights[0], b, out, backend, None, None, "tgv_gemm.tune", options=opts)
                        torch.cuda.current_stream().synchronize()
                    except L.TgvError as e:
                        if e.status == L.ERROR_NOT_SUPPORTED:
                            continue  # refused up front: never a choice
                        raise
                    if not bool(((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all()):
                        if verbose:
                            print("tgv_gemm.tune: N=%d K=%d M=%d %s: output misses the fp32 reference; skipped"
                                  % (n, k, m, name))
                        continue

                    def call(i, opts=opts, backend=backend):
                        _ops.run_linear(x, weights[i % copies], b, out, backend, None, None, "tgv_gemm.tune",
                                        options=opts)

                    times = []
                    if neighbours in ("self", "both"):
                        times.append(_time_graph(call, calls, replays))
                    if neighbours in ("kernels", "both"):
                        times.append(max(_time_graph(_spaced(call, spacer), calls, replays) - spacer_us, 0.0))
                    us = sum(times) / len(times)
                    if backend == "cublas":
                        cublas_us = us
                    if best is None or us < best["us"]:
                        best = {"n": n, "k": k, "m": m, "backend": backend, "tactic": tactic,
                                "split_k": split, "stages": stages, "us": us, "name": name}
                if best is None:
                    continue
                best["cublas_us"] = cublas_us
                if verbose:
                    print("tgv_gemm.tune: N=%d K=%d M=%d: %s %.2f us (cuBLASLt %.2f us)"
                          % (n, k, m, best["name"], best["us"], cublas_us))
                entries.append({key: best[key] for key in best if key != "name"})
            weights.clear()  # free the copies before the next shape
    if path is None:
        path = tuning_file_path()
    if path:
        reloaded = write_tuning_file(path, props.name, props.multi_processor_count, entries)
        if verbose:
            print("tgv_gemm.tune: wrote %s (%d entries)%s"
                  % (path, len(entries), "; in effect now" if reloaded else ""))
    return entries


def write_tuning_file(path, gpu, sm_count, entries):
    """Writes `entries` as the tuning file `path` through the library's writer
    (the whole file at once: a reader never sees half of it); when that is the
    file the library reads, has it re-read the file. True if it did."""
    L.write_tuning_file(path, gpu, sm_count, entries)
    library_reads = tuning_file_path()
    if not library_reads or os.path.abspath(path) != os.path.abspath(library_reads):
        return False
    L.reload_tuning()
    return True
