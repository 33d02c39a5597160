#!/usr/bin/env python3
"""Which cuBLAS algorithm torch's F.linear gets and which our backend="cublas" gets,
and whether the time between them is the algorithm or the run (issue 10 item 3).

The corpus run of 2026-12-03 (docs/PERFORMANCE.md) had our cuBLASLt call < 0.98x
torch at 40 points, mostly weights >= 100 MB at one M of a shape (27648x5120 M = 2:
76.1 vs 68.5 us, at M = 1 and 4 both 69.5). In the same CSV torch is the slower one,
by the same ~9% step, at as many large-weight points (27648x5120 M = 16: 75.3 vs
69.0), while auto and cublas (the same call, timed one after the other) agree
within 2% at 640 of the 645 large-weight points where auto took cuBLASLt (once
8% apart: 43008x5376 M = 32). So either each API's heuristic has its own slow
(shape, M) choices, or the GPU drifted between the measurements. One run of this script tells
which, per point:

1. The kernels each implementation launches (torch.profiler over one eager call:
   name, grid, block) -- always available -- and what the API loggers print, each
   implementation in its own subprocess because the loggers read their environment
   when the library loads: cuBLASLt (CUBLASLT_LOG_LEVEL=5, CUBLASLT_LOG_FILE) logs
   every cublasLt*Matmul call with its descriptors and, at the trace level, the
   algorithm's configuration; legacy cuBLAS (CUBLAS_LOGINFO_DBG=1,
   CUBLAS_LOGDEST_DBG) logs cublasGemmEx's arguments, the handle's math mode and
   cublasSetWorkspace's size (torch's workspace). Whether legacy cuBLAS's internal
   cuBLASLt call shows in the cuBLASLt log is read off the log, not assumed: the
   summary says per implementation which log lines matched.
2. The time of each, interleaved: every implementation's CUDA graph (`calls` calls
   back to back, call i on cold weight copy i % copies, as bench/python/corpus_bench.py
   times) is replayed in rounds, round r in rotated order, so a slow spell of the
   GPU lands on all of them; per point the median us per call of each and the
   median of the per-round ratios torch / ours (>= 1: ours is faster).
3. Variants that separate the causes: `torch` (default: legacy cuBLAS, bf16
   reduced-precision split-K reduction allowed), `torch_noreduce` (the same with
   allow_bf16_reduced_precision_reduction = False: math mode
   DISALLOW_REDUCED_PRECISION_REDUCTION, the accuracy our path keeps),
   `torch_lt` (torch's own cuBLASLt call, preferred_blas_library("cublaslt"), every
   reduction scheme allowed), `torch_lt_noreduce` (that call with the reduction mask
   NONE | COMPUTE_TYPE, which is ours since src/cublas excludes INPLACE: the same
   preference but torch's workspace), `ours` (tgv_gemm.linear backend="cublas" on
   cuBLASLt: TGV_CUBLAS_API=lt, whichever the library's default), and `ours_legacy`
   (the same with TGV_CUBLAS_API=legacy, src/cublas/cublas_legacy.hpp, when the
   library has that path; skipped otherwise).
   Outputs are compared bitwise with ours (`bits != ours`: 0 means the same
   algorithm, summing in the same order).
   Each output is checked against an fp32 reference first (max error in bf16
   ulps of the reference, and how many elements exceed 1 ulp).

Run from the repository root against the staged build (scripts/build-gpu.sh puts the
library in build-gpu/carry/bin), into $OUT; the whole run starts no new shape after
--budget-s (140 s) and ends within 3 minutes:

    TGV_GEMM_LIBRARY=$PWD/build-gpu/carry/bin/libtgv_gemm.so PYTHONPATH=$PWD/python \\
        PYTHONUNBUFFERED=1 python3 bench/experiments/cublas_algo_log.py --out "$OUT/algo"

Prints one block per point; writes into --out three files (the device tool brings
back 8): report.txt (what it printed), summary.json, and logs.tar.gz holding the raw
logs (lt-<impl>.log, cublas-<impl>.log), the workers' output, summary.csv and per-point
log excerpts (excerpts.txt).
"""

import argparse
import bisect
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from corpus_bench import capture_graph, time_interleaved  # noqa: E402 - bench/python: the corpus bench's timer

# The corpus misses of 2026-12-03, worst first, and (marked) three shapes where ours
# matched torch at every M, spread through the list so that a run cut short by
# --budget-s still has one.
SHAPES = [(27648, 5120), (14336, 8192), (28672, 3584), (12288, 4096),  # match
          (28672, 8192), (28672, 4096), (43008, 5376), (14336, 4096), (4096, 14336),  # match
          (5760, 2880), (13824, 1152), (16000, 4096), (1024, 4096)]  # match
MS = (1, 2, 4, 8, 16, 32, 64, 128)
IMPLS = ("torch", "torch_noreduce", "torch_lt", "torch_lt_noreduce", "ours", "ours_legacy")
REPLAY_TARGET_S = 300e-6  # a replay of ~300 us: its own launch is ~1%
MAX_COPIES = 256
MARK_ROWS = 7777777  # a cuBLASLt layout of this many rows marks where a point starts in the log


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "cublas_algo_log"),
                   help="output folder (default: $OUT/cublas_algo_log)")
    p.add_argument("--shapes", nargs="+", metavar="NxK", help="weight shapes instead of the list")
    p.add_argument("--m", type=int, nargs="+", default=list(MS), help="token counts (default: %s)" % " ".join(
        str(m) for m in MS))
    p.add_argument("--rounds", type=int, default=8, help="interleaved rounds per point (default 8)")
    p.add_argument("--reps", type=int, default=3, help="replays per implementation per round (default 3)")
    p.add_argument("--l2-factor", type=float, default=4.0, help="weight copies total this many L2 sizes (as "
                   "corpus_bench)")
    p.add_argument("--budget-s", type=float, default=140.0, help="start no new shape after this many seconds of "
                   "the run (default 140, so that it ends within 3 minutes); what was measured is reported")
    p.add_argument("--worker", choices=("log", "time"), help=argparse.SUPPRESS)
    p.add_argument("--impl", choices=IMPLS, help=argparse.SUPPRESS)
    p.add_argument("--impls", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def shapes_of(args):
    if args.shapes:
        return [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes]
    return SHAPES


def points_of(args):
    return [(n, k, m) for n, k in shapes_of(args) for m in args.m]


# ---- the implementations (in a worker) ----------------------------------------

class Impls:
    """fn(name, x, w) -> out, each with the process-wide settings its variant needs set
    around the call (they are read when the call is made, so also at graph capture)."""

    def __init__(self, torch, tgv_gemm):
        self.torch, self.tgv = torch, tgv_gemm
        self.F = torch.nn.functional
        self.matmul = torch.backends.cuda.matmul
        self.default_reduce = self.matmul.allow_bf16_reduced_precision_reduction
        self.default_blas = torch.backends.cuda.preferred_blas_library()

    def call(self, name, x, w):
        if name == "torch":
            return self.F.linear(x, w)
        if name == "torch_noreduce":
            self.matmul.allow_bf16_reduced_precision_reduction = False
            try:
                return self.F.linear(x, w)
            finally:
                self.matmul.allow_bf16_reduced_precision_reduction = self.default_reduce
        if name in ("torch_lt", "torch_lt_noreduce"):
            self.torch.backends.cuda.preferred_blas_library("cublaslt")
            if name == "torch_lt_noreduce":
                self.matmul.allow_bf16_reduced_precision_reduction = False
            try:
                return self.F.linear(x, w)
            finally:
                self.torch.backends.cuda.preferred_blas_library(self.default_blas)
                self.matmul.allow_bf16_reduced_precision_reduction = self.default_reduce
        if name in ("ours", "ours_legacy"):
            # Read by the library at each call (src/cublas/cublas_legacy.hpp); a
            # library without the legacy path ignores it and runs cuBLASLt.
            os.environ["TGV_CUBLAS_API"] = "legacy" if name == "ours_legacy" else "lt"
            try:
                return self.tgv.linear(x, w, backend="cublas")
            finally:
                os.environ.pop("TGV_CUBLAS_API", None)
        raise ValueError(name)


def import_libs():
    import torch
    import tgv_gemm
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference is fp32
    return torch, tgv_gemm


def lt_marker():
    """A function that puts a line naming a point into the cuBLASLt log: a layout of
    MARK_ROWS rows created and destroyed through the cuBLASLt instance already loaded
    (torch's and ours are one: the same soname). None if that library is not found."""
    import ctypes
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcublasLt.so" in line:
                path = line.split()[-1]
                break
    if path is None:
        return None
    lt = ctypes.CDLL(path)

    def mark(index):
        layout = ctypes.c_void_p()
        if lt.cublasLtMatrixLayoutCreate(ctypes.byref(layout), 0, ctypes.c_uint64(MARK_ROWS),
                                         ctypes.c_uint64(index), ctypes.c_int64(MARK_ROWS)) == 0:
            lt.cublasLtMatrixLayoutDestroy(layout)
    return mark


def bf16_ulp_error(torch, out, ref):
    """(max error in bf16 ulps, elements beyond 1 ulp): |out - ref| less 1e-3 x the
    RMS of ref (the fp32 sums' own error, which only matters near zero), over the
    ulp of max(|out|, |ref|) -- as tests/gpu/test_cublas_rounding.cpp checks."""
    out = out.float()
    big = torch.maximum(out.abs(), ref.abs()).clamp_min(2.0 ** -126)
    ulp = torch.exp2(torch.floor(torch.log2(big)) - 7)
    atol = 1e-3 * ref.pow(2).mean().sqrt()
    err = ((out - ref).abs() - atol).clamp_min(0) / ulp
    return float(err.max().item()), int((err > 1.0).sum().item())


def worker_log(args):
    """One implementation, every point, one eager call each, under the loggers."""
    torch, tgv_gemm = import_libs()
    impls = Impls(torch, tgv_gemm)
    mark = lt_marker()
    gen = torch.Generator(device="cuda").manual_seed(0)
    done = 0
    for index, (n, k, m) in enumerate(points_of(args)):
        w = (torch.rand(n, k, device="cuda", generator=gen) - 0.5).to(torch.bfloat16)
        x = (torch.rand(m, k, device="cuda", generator=gen) - 0.5).to(torch.bfloat16)
        torch.cuda.synchronize()
        if mark:
            mark(index)
        impls.call(args.impl, x, w)
        torch.cuda.synchronize()
        done += 1
    if mark:
        mark(len(points_of(args)))
    print(json.dumps({"impl": args.impl, "points": done, "marker": mark is not None}))
    return 0


def profile_kernels(torch, runs):
    """runs: [(key, fn)] -> {key: [{name, grid, block, us}]}, the GPU kernels each fn
    launched (one eager call, synchronized inside its own profiler range)."""
    from torch.profiler import ProfilerActivity, profile, record_function
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for key, fn in runs:
            with record_function("algo:" + key):
                fn()
                torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    windows = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"][5:]) for e in events
                     if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("algo:"))
    starts = [w[0] for w in windows]
    # A kernel belongs to the range its launch (same correlation id) happened in;
    # its own start is the fallback (the range ends after a synchronize).
    launches = {}
    for e in events:
        a = e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in a:
            launches[a["correlation"]] = e["ts"]
    found = {key: [] for key, _ in runs}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args") or {}
        t = launches.get(a.get("correlation"), e["ts"])
        i = bisect.bisect_right(starts, t) - 1
        if i < 0 or not (windows[i][0] <= t <= windows[i][1] + 1e3):
            continue
        found.setdefault(windows[i][2], []).append(
            {"name": e.get("name", "?"), "grid": a.get("grid"), "block": a.get("block"),
             "smem": a.get("shared memory"), "us": e.get("dur")})
    return found


def worker_time(args):
    torch, tgv_gemm = import_libs()
    impls = Impls(torch, tgv_gemm)
    names = args.impls.split(",")
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    gen = torch.Generator(device="cuda").manual_seed(1)
    t0 = time.time()
    rows = []
    profile_runs = []
    for n, k in shapes_of(args):
        if time.time() - t0 > args.budget_s:
            print("budget: %dx%d and later shapes skipped" % (n, k), file=sys.stderr, flush=True)
            break
        w_bytes = n * k * 2
        copies = min(MAX_COPIES, max(2, math.ceil(args.l2_factor * l2 / w_bytes)))
        calls = min(MAX_COPIES, max(copies, 4, math.ceil(REPLAY_TARGET_S / (w_bytes / 4.0e12 + 3e-6))))
        weights = torch.empty(copies, n, k, device="cuda", dtype=torch.bfloat16).normal_(
            0, 1 / math.sqrt(k), generator=gen)
        w_ref = weights[0].float()
        for m in args.m:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
            ref = x.float() @ w_ref.t()
            row = {"n": n, "k": k, "m": m, "weight_mb": w_bytes / 1e6, "copies": copies, "calls": calls}
            graphs, outs = {}, {}
            for name in names:
                try:
                    got = outs[name] = impls.call(name, x, weights[0])
                    row[name + "_ulp_max"], row[name + "_ulp_over1"] = bf16_ulp_error(torch, got, ref)
                    graphs[name] = capture_graph(torch, lambda i, name=name, x=x, ws=weights: impls.call(
                        name, x, ws[i % copies]), calls, warm=(0, 1))
                    row[name + "_status"] = "ok"
                except Exception as e:  # one variant failing must not lose the others
                    row[name + "_status"] = "error: %s" % str(e).splitlines()[0][:200]
            # Bitwise the same output as ours: the same algorithm (a different one
            # sums in another order and differs somewhere).
            for name in outs:
                if "ours" in outs:
                    row[name + "_bits_differ"] = int((outs[name].view(torch.int16) != outs["ours"].view(
                        torch.int16)).sum().item())
            del outs
            times = time_interleaved(torch, graphs, calls, args.rounds, args.reps)
            for name, per_round in times.items():
                row[name + "_us"] = statistics.median(t for rnd in per_round for t in rnd)
                row[name + "_round_us"] = [statistics.median(rnd) for rnd in per_round]
            del graphs
            rows.append(row)
            for name in names:
                if row.get(name + "_status") == "ok":
                    profile_runs.append(("%d,%d,%d,%s" % (n, k, m, name),
                                         lambda name=name, x=x, w0=weights[0]: impls.call(name, x, w0)))
            print("[time] %dx%d M=%d %s" % (n, k, m, " ".join(
                "%s=%.2f" % (nm, row[nm + "_us"]) for nm in names if nm + "_us" in row)), file=sys.stderr, flush=True)
        # Profile this shape's calls while its weights exist.
        try:
            kernels = profile_kernels(torch, profile_runs)
        except Exception as e:
            kernels = {}
            print("profiler failed: %s" % e, file=sys.stderr, flush=True)
        for row in rows:
            if row["n"] == n and row["k"] == k:
                for name in names:
                    row[name + "_kernels"] = kernels.get("%d,%d,%d,%s" % (n, k, row["m"], name), [])
        profile_runs = []
        del weights, w_ref
        torch.cuda.empty_cache()
        write_result(args, torch, tgv_gemm, impls, props, rows)  # after each shape: a crash keeps what was measured
    return 0


def write_result(args, torch, tgv_gemm, impls, props, rows):
    env = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "device": props.name,
        "tgv_gemm": tgv_gemm.library_version(),
        "allow_bf16_reduced_precision_reduction": str(impls.default_reduce),
        "preferred_blas_library": str(impls.default_blas),
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "cublasLt_version": lt_version(),
    }
    path = os.path.join(args.out, "time-worker.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"env": env, "rows": rows}, f)
    os.replace(path + ".tmp", path)


def lt_version():
    import ctypes
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcublasLt.so" in line:
                lib = ctypes.CDLL(line.split()[-1])
                lib.cublasLtGetVersion.restype = ctypes.c_size_t
                return "%s (%d)" % (line.split()[-1], lib.cublasLtGetVersion())
    return None


# ---- the logs (in the driver) -------------------------------------------------

LT_LINE = re.compile(r"^\[(?P<ts>[^\]]*)\]\[cublasLt\]\[(?P<pid>\d+)\]\[(?P<level>[^\]]*)\]\[(?P<func>[^\]]*)\]\s?"
                     r"(?P<msg>.*)$")


def bracket(msg, key):
    """The text of key=[...] in msg (nested brackets kept), or None."""
    i = msg.find(key + "=[")
    if i < 0:
        return None
    depth, j = 0, i + len(key) + 1
    for pos in range(j, len(msg)):
        if msg[pos] == "[":
            depth += 1
        elif msg[pos] == "]":
            depth -= 1
            if depth == 0:
                return msg[j + 1:pos]
    return msg[j + 1:]


def lt_sections(path, count):
    """Split a cuBLASLt log at the marker layouts: {point index: [lines]}, lines before
    the first marker under -1. Without a marker in the log (another line format),
    every point gets all lines: lt_summary still picks its calls by their sizes."""
    sections, current, marked = {}, -1, False
    if not os.path.exists(path):
        return sections
    with open(path, errors="replace") as f:
        lines = [line.rstrip("\n") for line in f]
    for line in lines:
        if str(MARK_ROWS) in line:
            hit = re.search(r"cols=(\d+)", line.split(str(MARK_ROWS), 1)[1])
            if hit:
                current, marked = int(hit.group(1)), True
                continue
        if current < count:
            sections.setdefault(current, []).append(line)
    return sections if marked else {i: lines for i in range(count)}


def lt_summary(lines, n, k, m):
    """What the cuBLASLt lines of a point say: the matmul calls (function, algo config,
    workspace size) whose descriptors have this point's sizes."""
    want = {frozenset((n, k)), frozenset((k, m)), frozenset((n, m))}
    calls = []
    for line in lines:
        hit = LT_LINE.match(line)
        func, msg = (hit.group("func"), hit.group("msg")) if hit else ("?", line)
        if "Matmul" not in func or "desc=[" not in msg:
            continue
        dims = {frozenset((int(r), int(c))) for r, c in re.findall(r"rows=(\d+) cols=(\d+)", msg)}
        if not want <= dims:
            continue
        ws = re.search(r"workSpaceSizeInBytes=(\d+)", msg) or re.search(r"[Ww]ork[Ss]pace\w*=(\d+)", msg)
        calls.append({"func": func, "algo": bracket(msg, "algo"), "workspace": int(ws.group(1)) if ws else None,
                      "compute": bracket(msg, "computeDesc")})
    info = [line for line in lines if "Matmul" in line and ("[Info]" in line or "[Hints]" in line or
                                                           "heur" in line.lower())]
    return calls, info


def cublas_blocks(path):
    """The legacy cuBLAS log as [(function, {param: value}, header line)]."""
    blocks = []
    if not os.path.exists(path):
        return blocks
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("I! "):
                name = re.search(r"(\w+)\(", line)
                blocks.append([name.group(1) if name else line.strip()[:60], {}, line.strip()])
            elif blocks:
                p = re.match(r"i!\s+(\w+): type=[^;]*; val=(.*)$", line.strip())
                if p:
                    blocks[-1][1][p.group(1)] = p.group(2).strip()
                elif "MathMode=" in line:
                    blocks[-1][1]["MathMode"] = line.split("MathMode=")[1].split(";")[0].strip()
    return [tuple(b) for b in blocks]


def cublas_for_point(blocks, n, k, m):
    """The legacy GEMM calls with this point's sizes (m = N, n = M as torch calls it,
    or the other way), and their math modes."""
    out = []
    for func, params, _ in blocks:
        if "gemm" not in func.lower():
            continue
        vals = {key: params.get(key, "").split()[0] if params.get(key) else "" for key in ("m", "n", "k")}
        try:
            mm, nn, kk = int(vals["m"]), int(vals["n"]), int(vals["k"])
        except ValueError:
            continue
        if kk == k and {mm, nn} == {n, m}:
            out.append({"func": func, "math": params.get("MathMode"), "transa": params.get("transa"),
                        "transb": params.get("transb"), "algo": params.get("algo")})
    return out


def workspaces(blocks):
    sizes = set()
    for func, params, _ in blocks:
        if "workspace" in func.lower():
            for key, val in params.items():
                if "size" in key.lower():
                    sizes.add(val.split()[0])
    return sorted(sizes)


def short(name, width=78):
    name = re.sub(r"^void ", "", name.split("(")[0])
    return name if len(name) <= width else name[:width - 3] + "..."


def kernel_sig(kernels):
    """The comparable part of a call's kernels: names and grids, in launch order."""
    return tuple((k["name"], tuple(k["grid"] or ())) for k in kernels)


# ---- the driver ----------------------------------------------------------------

def run_worker(args, role, impl=None, impls=None, env_extra=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", role, "--out", args.out,
           "--rounds", str(args.rounds), "--reps", str(args.reps), "--l2-factor", str(args.l2_factor),
           "--budget-s", str(args.budget_s), "--m"] + [str(m) for m in args.m]
    if args.shapes:
        cmd += ["--shapes"] + args.shapes
    if impl:
        cmd += ["--impl", impl]
    if impls:
        cmd += ["--impls", ",".join(impls)]
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def library_reads(name):
    """Whether $TGV_GEMM_LIBRARY holds the string `name` (an environment variable it reads)."""
    path = os.environ.get("TGV_GEMM_LIBRARY")
    try:
        with open(path, "rb") as f:
            return name in f.read()
    except (OSError, TypeError):
        return False


def log_env(out, impl):
    env = {"CUBLASLT_LOG_LEVEL": "5", "CUBLASLT_LOG_FILE": os.path.join(out, "lt-%s.log" % impl),
           "CUBLAS_LOGINFO_DBG": "1", "CUBLAS_LOGDEST_DBG": os.path.join(out, "cublas-%s.log" % impl)}
    if impl in ("ours", "ours_legacy"):
        env["TGV_CUBLAS_API"] = "legacy" if impl == "ours_legacy" else "lt"
    return env


def main(argv):
    args = parse_args(argv)
    if args.worker == "log":
        return worker_log(args)
    if args.worker == "time":
        return worker_time(args)
    # The device tool brings back at most 8 files from $OUT: report.txt (what is
    # printed), summary.json and logs.tar.gz (raw logs, worker output, CSV,
    # per-point excerpts) go there; the workers write into a folder of their own.
    final = args.out
    os.makedirs(final, exist_ok=True)
    args.out = tempfile.mkdtemp(prefix="cublas_algo_log.")
    sys.stdout = Tee(sys.stdout, open(os.path.join(final, "report.txt"), "w"))
    points = points_of(args)
    t0 = time.time()
    # 1. Under the loggers, every implementation at once (nothing is timed there).
    procs = {impl: run_worker(args, "log", impl=impl, env_extra=log_env(args.out, impl)) for impl in IMPLS}
    log_ok = {}
    for impl, p in procs.items():
        out, err = p.communicate()
        log_ok[impl] = p.returncode == 0
        with open(os.path.join(args.out, "log-worker-%s.txt" % impl), "w") as f:
            f.write(out + "\n--- stderr ---\n" + err)
        if p.returncode != 0:
            print("log worker %s failed (rc %d): %s" % (impl, p.returncode, err.strip().splitlines()[-1:]))
    print("# logs: %.1f s" % (time.time() - t0), flush=True)
    blocks = {impl: cublas_blocks(os.path.join(args.out, "cublas-%s.log" % impl)) for impl in IMPLS}
    sections = {impl: lt_sections(os.path.join(args.out, "lt-%s.log" % impl), len(points)) for impl in IMPLS}
    # ours_legacy only where the library has that path: its process called cublas*Gemm*,
    # or the library reads TGV_CUBLAS_API (if cuBLAS's logger printed nothing).
    has_legacy = log_ok["ours_legacy"] and (any("gemm" in b[0].lower() for b in blocks["ours_legacy"]) or
                                            library_reads(b"TGV_CUBLAS_API"))
    timed = [i for i in IMPLS if i != "ours_legacy" or has_legacy]
    if not has_legacy:
        print("# ours_legacy: this library has no legacy cuBLAS path (or it failed): not timed")

    # 2. Timing and kernels, alone on the GPU.
    t1 = time.time()
    # The budget is the whole run's: what the logs took is the timing's less.
    args.budget_s = max(20.0, args.budget_s - (time.time() - t0))
    p = run_worker(args, "time", impls=timed)
    out, err = p.communicate()
    with open(os.path.join(args.out, "time-worker.txt"), "w") as f:
        f.write(out + "\n--- stderr ---\n" + err)
    path = os.path.join(args.out, "time-worker.json")
    if p.returncode != 0:
        print("time worker failed (rc %d): reporting what it wrote, and the logs; its last words:\n%s" % (
            p.returncode, "\n".join(err.strip().splitlines()[-8:])))
    if os.path.exists(path):
        with open(path) as f:
            result = json.load(f)
    else:
        result = {"env": {}, "rows": []}
    measured = {(r["n"], r["k"], r["m"]) for r in result["rows"]}
    result["rows"] += [{"n": n, "k": k, "m": m, "weight_mb": n * k * 2 / 1e6} for n, k, m in points
                       if (n, k, m) not in measured]
    print("# timing: %.1f s" % (time.time() - t1), flush=True)
    report(args, final, points, timed, sections, blocks, result)
    with tarfile.open(os.path.join(final, "logs.tar.gz"), "w:gz") as tar:
        tar.add(args.out, arcname="cublas_algo_log")
    shutil.rmtree(args.out, ignore_errors=True)
    print("# total %.1f s; report.txt, summary.json, logs.tar.gz in %s" % (time.time() - t0, final))
    sys.stdout.flush()
    return 0


class Tee:
    """Writes to the terminal and to a file."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for st in self.streams:
            st.write(text)

    def flush(self):
        for st in self.streams:
            st.flush()


def report(args, final, points, timed, sections, blocks, result):
    """Prints per point the kernels, logged algorithms and times of each implementation
    and the summary table; writes summary.json into `final`, summary.csv and
    excerpts.txt beside the logs."""
    env = result["env"]
    for impl in IMPLS:
        env["workspace_sizes_" + impl] = workspaces(blocks.get(impl, []))
    print("# %s" % json.dumps(env))

    # Per point: kernels, logged algorithms, times.
    index_of = {pt: i for i, pt in enumerate(points)}
    summary, excerpts = [], []
    for row in result["rows"]:
        n, k, m = row["n"], row["k"], row["m"]
        i = index_of.get((n, k, m))
        print("\n== %dx%d M=%d (%.0f MB, %s copies, %s calls)" % (n, k, m, row["weight_mb"], row.get("copies", "-"),
                                                                 row.get("calls", "-")))
        excerpts.append("==== %dx%d M=%d" % (n, k, m))
        rec = {"n": n, "k": k, "m": m, "weight_mb": round(row["weight_mb"], 1)}
        for impl in timed:
            ks = row.get(impl + "_kernels", [])
            lt_calls, info = lt_summary(sections[impl].get(i, []), n, k, m) if i is not None else ([], [])
            legacy = cublas_for_point(blocks[impl], n, k, m)
            algo = "; ".join(sorted({c["algo"] or "(no algo= field)" for c in lt_calls})) or "-"
            funcs = ",".join(sorted({c["func"] for c in lt_calls} | {c["func"] for c in legacy})) or "-"
            ws = sorted({c["workspace"] for c in lt_calls if c["workspace"] is not None})
            math_modes = sorted({c["math"] for c in legacy if c["math"]})
            status = row.get(impl + "_status", "-")
            us = row.get(impl + "_us")
            print("  %-15s %8s us  ulp max %-5s >1ulp %-6s bits != ours %-7s %s" % (
                impl, "%.2f" % us if us else "-", "%.2f" % row[impl + "_ulp_max"] if impl + "_ulp_max" in row
                else "-", row.get(impl + "_ulp_over1", "-"), row.get(impl + "_bits_differ", "-"),
                "" if status == "ok" else status))
            for kern in ks:
                print("      kernel %s grid %s block %s" % (short(kern["name"]), kern["grid"], kern["block"]))
            print("      api %s  lt-ws %s  math %s" % (funcs, ws or "-", math_modes or "-"))
            print("      algo %s" % algo[:300])
            rec.update({impl + "_us": us, impl + "_status": status, impl + "_kernels": " | ".join(
                "%s grid=%s" % (short(kk["name"], 200), kk["grid"]) for kk in ks),
                impl + "_api": funcs, impl + "_algo": algo, impl + "_lt_workspace": ws,
                impl + "_math": math_modes, impl + "_ulp_max": row.get(impl + "_ulp_max"),
                impl + "_ulp_over1": row.get(impl + "_ulp_over1"), impl + "_bits_differ": row.get(impl + "_bits_differ"),
                impl + "_round_us": row.get(impl + "_round_us")})
            excerpts.append("--- %s" % impl)
            excerpts += sections[impl].get(i, [])[:200] if i is not None else []
        ours_sig = kernel_sig(row.get("ours_kernels", []))
        for other in timed:
            if other == "ours" or "ours_us" not in row or other + "_us" not in row:
                continue
            rounds = [t / o for t, o in zip(row[other + "_round_us"], row["ours_round_us"])]
            other_sig = kernel_sig(row.get(other + "_kernels", []))
            same = other_sig == ours_sig if ours_sig and other_sig else None  # None: the profiler saw nothing
            rec[other + "_vs_ours"] = statistics.median(rounds)
            rec[other + "_same_kernels"] = same
            print("  %s / ours: median of rounds %.3f (rounds %.3f..%.3f)  kernels %s" % (
                other, statistics.median(rounds), min(rounds), max(rounds),
                {True: "SAME", False: "DIFFERENT", None: "? (no profile)"}[same]))
        summary.append(rec)

    # The answer, in one table.
    print("\n%-12s %4s %9s %9s %7s %6s %s" % ("N x K", "M", "torch_us", "ours_us", "t/ours", "same", "vs ours: torch_noreduce "
                                              "torch_lt torch_lt_noreduce ours_legacy"))
    for rec in summary:
        print("%-12s %4d %9s %9s %7s %6s %s" % (
            "%dx%d" % (rec["n"], rec["k"]), rec["m"], "%.2f" % rec["torch_us"] if rec.get("torch_us") else "-",
            "%.2f" % rec["ours_us"] if rec.get("ours_us") else "-",
            "%.3f" % rec["torch_vs_ours"] if "torch_vs_ours" in rec else "-",
            {True: "yes", False: "NO"}.get(rec.get("torch_same_kernels"), "-"),
            "  ".join("%.3f" % rec[o + "_vs_ours"] if o + "_vs_ours" in rec else "-"
                      for o in ("torch_noreduce", "torch_lt", "torch_lt_noreduce", "ours_legacy"))))
    ratios = [rec["torch_vs_ours"] for rec in summary if "torch_vs_ours" in rec]
    if ratios:
        differ = [rec for rec in summary if rec.get("torch_same_kernels") is False]
        print("\ntorch / ours over %d points: geomean %.3f, min %.3f, points < 0.98: %d; kernels differ at %d "
              "points%s" % (len(ratios), math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios),
                            sum(r < 0.98 for r in ratios), len(differ),
                            (": " + ", ".join("%dx%d M=%d (%.3f)" % (r["n"], r["k"], r["m"], r["torch_vs_ours"])
                                              for r in differ)) if differ else ""))
        def geo(rs):
            return "%.3f over %d" % (math.exp(sum(map(math.log, rs)) / len(rs)), len(rs)) if rs else "- over 0"
        for other in ("torch", "torch_noreduce", "torch_lt", "torch_lt_noreduce", "ours_legacy"):
            same = [r[other + "_vs_ours"] for r in summary if r.get(other + "_same_kernels") is True]
            diff = [r[other + "_vs_ours"] for r in summary if r.get(other + "_same_kernels") is False]
            if same or diff:
                print("%s / ours: where the kernels are the same %s points, where they differ %s" % (
                    other, geo(same), geo(diff)))
        # What a choice of the faster of our two paths per point would give.
        best = [max(r["torch_vs_ours"], r["torch_vs_ours"] / r["ours_legacy_vs_ours"]) for r in summary
                if "torch_vs_ours" in r and r.get("ours_legacy_vs_ours")]
        if best:
            print("torch / (faster of ours, ours_legacy) per point: geomean %.3f, min %.3f, points < 0.98: %d of %d"
                  % (math.exp(sum(map(math.log, best)) / len(best)), min(best), sum(b < 0.98 for b in best),
                     len(best)))
    with open(os.path.join(final, "summary.json"), "w") as f:
        json.dump({"env": env, "points": summary, "raw": result["rows"]}, f, indent=1)
    keys = sorted({key for rec in summary for key in rec if not key.endswith("_round_us")},
                  key=lambda s: ((("n", "k", "m", "weight_mb") + (s,)).index(s), s))
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for rec in summary:
            w.writerow({key: json.dumps(v) if isinstance(v, (list, dict)) else v for key, v in rec.items()})
    with open(os.path.join(args.out, "excerpts.txt"), "w") as f:
        f.write("\n".join(excerpts) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
