"""tgv_gemm.tune: the tuner of `tgv-bench --tune`, from Python.

For each weight shape (N, K) and M bucket (powers of two up to 256) it times
every candidate -- each tgv tactic of the device's family whose token tile is
the smallest covering M, at each split-K factor whose grid stays within two
waves, with the deepest ring and with 8 stages where that is shallower, and
cuBLASLt -- the way tgv-bench does: weight copies totalling 8x the L2 cache,
rotated through back-to-back calls captured in one CUDA graph, the median of
the replays. A candidate the library refuses is skipped; one whose output
misses the fp32 reference is reported and never chosen. The winners go to
the tuning file the library reads (the same JSON as tgv-bench writes), which
backend "auto" then follows: at once in this process (the library re-reads
it) and in processes started afterwards.
"""

import json
import math
import os
import statistics

import torch
import torch.nn.functional as F

from . import _lib as L
from . import _ops

_SPLITS = (1, 2, 4, 8)
_SHALLOW_STAGES = (8,)
BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_FORMAT = "tgv-gemm-tuning/1"


def tuning_file_path():
    """Where the library looks for the tuning file: $TGV_TUNING_FILE, else
    $XDG_CACHE_HOME/tgv-gemm/tuning.json, else ~/.cache/tgv-gemm/tuning.json."""
    path = os.environ.get("TGV_TUNING_FILE")
    if path:
        return path
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "tgv-gemm", "tuning.json")
    home = os.environ.get("HOME")
    return os.path.join(home, ".cache", "tgv-gemm", "tuning.json") if home else ""


def _family(major):
    return {9: 90, 10: 100}.get(major)


def candidates(n, k, m, tactics, family, sm_count):
    """The (backend, tactic, split_k, stages) tuples tried for one point, cuBLASLt
    last; the rule of bench/tune.cpp. `tactics` as list_tactics() returns them."""
    mine = [t for t in tactics if t["arch"] == family]
    out = []
    if mine:
        cta_n = min((t["cta_n"] for t in mine if t["cta_n"] >= min(m, 256)), default=None)
        for t in mine:
            if t["cta_n"] != cta_n:
                continue
            tiles = -(-n // t["cta_m"]) * -(-m // t["cta_n"])
            depths = [0]
            if family == 90:  # SM100 tactics fix their depth
                depths += [s for s in _SHALLOW_STAGES if s < t["stages"]]
            for split in _SPLITS:
                if family != 90 and split > 1:
                    continue
                if split > -(-k // t["cta_k"]) or (split > 1 and tiles * split > 2 * sm_count):
                    continue
                for stages in depths:
                    out.append(("tgv", t["id"], split, stages))
    out.append(("cublas", -1, 1, 0))
    return out


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


def _entry_json(e):
    return (
        '{"n": %d, "k": %d, "m": %d, "backend": "%s", "tactic": %d, "split_k": %d, "stages": %d, '
        '"us": %.3f, "cublas_us": %.3f}' % (e["n"], e["k"], e["m"], e["backend"], e["tactic"], e["split_k"],
                                            e["stages"], e["us"], e["cublas_us"])
    )


def tuning_json(gpu, sm_count, version, entries):
    """The tuning file's text (the format src/plan/tuning.hpp reads)."""
    head = '{\n  "format": %s,\n  "library_version": %s,\n  "gpu": %s,\n  "sm_count": %d,\n  "entries": [\n' % (
        json.dumps(_FORMAT), json.dumps(version), json.dumps(gpu), sm_count)
    return head + ",\n".join("    " + _entry_json(e) for e in entries) + "\n  ]\n}\n"


def tune(shapes, ms=BUCKETS, *, path=None, bias=False, replays=7, l2_factor=8.0, device=None, verbose=True):
    """Times the candidates for every (N, K) in `shapes` and M in `ms` (powers of
    two: the file's buckets; M in (m/2, m] uses bucket m) and writes the winners to
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
    device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
    props = torch.cuda.get_device_properties(device)
    family = _family(props.major)
    tactics = [L.get_tactic(i) for i in range(L.num_tactics())]
    entries = []
    # One stream of the tuner's own for every call it makes, never the legacy
    # default stream, which would order itself after other threads' blocking
    # streams.
    with torch.cuda.device(device), torch.cuda.stream(torch.cuda.Stream(device)):
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
                for backend, tactic, split, stages in candidates(n, k, m, tactics, family, props.multi_processor_count):
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

                    us = _time_graph(call, calls, replays)
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
        reloaded = write_tuning_file(path, tuning_json(props.name, props.multi_processor_count, L.version(), entries))
        if verbose:
            print("tgv_gemm.tune: wrote %s (%d entries)%s"
                  % (path, len(entries), "; in effect now" if reloaded else ""))
    return entries


def write_tuning_file(path, text):
    """Writes `text` to `path` whole (a reader never sees half a file); when that
    is the file the library reads, has it re-read the file. True if it did."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    library_reads = tuning_file_path()
    if not library_reads or os.path.abspath(path) != os.path.abspath(library_reads):
        return False
    L.reload_tuning()
    return True
