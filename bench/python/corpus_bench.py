#!/usr/bin/env python3
"""tgv_gemm.linear (backends auto, cublas, tgv) against torch's F.linear over the
decode shape corpus (bench/corpus/decode.shapes) at M in 1..128, untuned.

    python3 bench/python/corpus_bench.py                     # the whole corpus
    python3 bench/python/corpus_bench.py --quick             # a 40-shape subset spread over the sizes
    python3 bench/python/corpus_bench.py --shapes 4096x4096 deepseek --m 1 8 --csv out.csv
    python3 bench/python/corpus_bench.py --list              # what would run (no GPU, no torch)

Untuned: before tgv_gemm is imported, TGV_TUNING_FILE is pointed at a file that does
not exist (in a fresh temporary folder), so `auto` follows the library's built-in
rules; --tuning-file PATH runs with a tuning file instead. Both are printed.

Method, per shape: weight copies totalling >= --l2-factor x L2 (at most 512 copies;
the CSV's rotation_mb says where the copies fit in L2), shared by every M and every
implementation; per (M, implementation) first one call on copy 0 checked against an
fp32 reference (F.linear on the fp32 upcasts, TF32 off) element-wise,
|out - ref| <= 1e-2 + 1e-2 |ref| (outputs ~N(0, 1): W ~ N(0, 1/K), x ~ N(0, 1)),
then `calls` back-to-back calls, call i on copy i % copies, captured in one CUDA
graph per implementation (thread-local capture mode); the point's graphs are
replayed in --replays interleaved rounds (each round replays every
implementation's graph once, in an order rotated round by round, so a drift of
the GPU lands on all of them), each replay between its own pair of events; an
implementation's median replay / calls is its time per call. `calls` makes a
replay last ~300 us, so a replay's own launch is ~1%.
--balanced-rounds replaces the rotation with the orders of a Williams design
(--replays rounded up to whole designs: 8 rounds of 4 implementations, not 5), so
each implementation holds each place in a round, and follows each other one,
equally often; under the rotation each follows the same neighbour every round.
--warm-replays N replays each graph N times untimed right before each timed
replay, so that it follows itself rather than another implementation's graph:
right after another graph our one-wave grids ran 7-30% slower for every call of
the replay (perf-notes §48); a model's decode graph follows itself.
Ratios vs torch are torch us / backend us: above 1 is faster than F.linear.

Stream floor: the time per launch of tgv-bench's read-only kernel over the same
weight bytes (one CTA per SM, launched as the GEMMs are, with PDL), from
`tgv-bench --mode floor` (found in build-gpu/carry, build/bench, build-gpu/bench or
build-dev/bench; --tgv-bench PATH or $TGV_BENCH to name it). Without tgv-bench the
floor is a torch reduction over W timed the same way, and the output says so.

Prints the provenance, then the summary: per backend the geometric mean of the ratio
vs torch at M <= 32 and M <= 128, the smallest ratio and its point, the points below
0.98x; the 15 worst `auto` points; for weights >= 8 MB at M <= 16 the median time /
stream floor. Writes every point to --csv (default corpus_bench.csv).
"""

import argparse
import csv
import datetime
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CORPUS = os.path.join(REPO, "bench", "corpus", "decode.shapes")
DEFAULT_MS = (1, 2, 4, 8, 16, 32, 64, 128)
BACKENDS = ("auto", "cublas", "tgv")  # tgv_gemm.linear(backend=...); "torch" is F.linear
IMPLS = BACKENDS + ("torch",)
ATOL, RTOL = 1e-2, 1e-2
QUICK_COUNT = 40
MAX_COPIES = 512
REPLAY_TARGET_S = 300e-6
DEVICE = "cuda"
BENCH_CANDIDATES = ("build-gpu/carry/tgv-bench", "build/bench/tgv-bench", "build-gpu/bench/tgv-bench",
                    "build-dev/bench/tgv-bench")


# ---- the corpus (no torch needed) ------------------------------------------------

def load_corpus(path):
    """[{label, n, k, producers}] from a tgv-bench shapes file, in file order."""
    shapes = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                n, k = int(fields[1]), int(fields[2])
            except (IndexError, ValueError):
                raise SystemExit("%s:%d: expected `label N K [producer ...]`" % (path, number))
            shapes.append({"label": fields[0], "n": n, "k": k, "producers": [fields[0]] + fields[3:]})
    return shapes


def quick_subset(shapes, count=QUICK_COUNT):
    """`count` shapes evenly spaced through the list (the corpus is sorted by weight size)."""
    if len(shapes) <= count:
        return list(shapes)
    picks = sorted({round(i * (len(shapes) - 1) / (count - 1)) for i in range(count)})
    return [shapes[i] for i in picks]


def select(shapes, filters):
    """Shapes matching any filter: `NxK` exactly, else a substring of a producer label."""
    if not filters:
        return shapes
    kept = []
    for s in shapes:
        for f in filters:
            nk = f.lower().split("x")
            if len(nk) == 2 and nk[0].isdigit() and nk[1].isdigit():
                hit = (s["n"], s["k"]) == (int(nk[0]), int(nk[1]))
            else:
                hit = any(f.lower() in p.lower() for p in s["producers"])
            if hit:
                kept.append(s)
                break
    return kept


def plan_calls(w_bytes, l2_bytes, l2_factor, read_bps=4.0e12):
    """(copies, calls): copies totalling >= l2_factor x L2 (2..MAX_COPIES), and enough
    calls (a multiple of nothing: call i reads copy i % copies) for a ~300 us replay."""
    copies = min(MAX_COPIES, max(2, math.ceil(l2_factor * l2_bytes / w_bytes)))
    t_est = w_bytes / read_bps + 3e-6
    calls = min(MAX_COPIES, max(copies, 4, math.ceil(REPLAY_TARGET_S / t_est)))
    return copies, calls


# ---- timing (torch) ---------------------------------------------------------------

def alignment_classes(tensors):
    """Indices of the first tensor of each pointer alignment (16 .. 256 bytes)."""
    first = {}
    for i, t in enumerate(tensors):
        ptr, align = t.data_ptr(), 256
        while align > 16 and ptr % align:
            align //= 2
        first.setdefault(align, i)
    return sorted(first.values())


def capture_graph(torch, fn, calls, warm=(0,)):
    """fn(0) .. fn(calls - 1) captured in one CUDA graph on a side stream, replayed
    once (upload, first touch). fn(i) for i in `warm` runs first, outside capture:
    plans, workspaces and first loads (the cuBLASLt backend picks its algorithm per
    pointer alignment and must not do so while capturing)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in warm:
            fn(i)
        side.synchronize()
        graph = torch.cuda.CUDAGraph()
        # Not torch.cuda.graph(): it runs gc.collect() and empty_cache() per capture,
        # which over ~8000 captures costs minutes. Thread-local: other threads' CUDA
        # calls stay legal while this one captures.
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            for i in range(calls):
                fn(i)
        finally:
            graph.capture_end()
    torch.cuda.current_stream().wait_stream(side)
    graph.replay()
    return graph


def time_interleaved(torch, graphs, calls, rounds, reps=1, sync=False, side=False, warm=0, balanced=False):
    """{key: [round][rep] us per call} for the graphs of `graphs` ({key: graph}, each
    of `calls` calls): round r replays them in an order rotated by r (balanced: the
    Williams design's order r, balanced_orders), each `reps`
    times, every replay between its own events and no host sync between, so that a
    drift of the GPU's clocks or of the memory lands on all of them alike."""
    if side:  # --side-stream: replayed on a stream of its own, not the legacy default stream
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            times = time_interleaved(torch, graphs, calls, rounds, reps, sync, warm=warm, balanced=balanced)
        torch.cuda.current_stream().wait_stream(stream)
        return times
    names = list(graphs)
    events = {name: [] for name in names}
    orders = balanced_orders(len(names)) if balanced else None
    for r in range(rounds):
        if balanced:
            order = [names[i] for i in orders[r % len(orders)]]
        else:
            order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            # --warm-replays: untimed replays of the same graph first, so that the timed
            # one follows itself, as a model's decode graph follows the previous step's
            # (perf-notes §48: right after another graph our small grids ran 5-30% slower).
            for _ in range(warm):
                graphs[name].replay()
            pairs = []
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graphs[name].replay()
                end.record()
                if sync:  # --sync-replays: each replay starts on an idle GPU, as the tuners time
                    end.synchronize()
                pairs.append((start, end))
            events[name].append(pairs)
    torch.cuda.synchronize()
    return {name: [[s.elapsed_time(e) * 1e3 / calls for s, e in rnd] for rnd in events[name]] for name in names}


def balanced_orders(n):
    """The orders of a Williams design over n implementations: n orders (2n for odd n)
    in which each implementation holds each place of a round equally often and, within
    a round, follows each other one directly equally often (a round's first follows the
    previous round's last: a quarter of the pairs at n = 4 stay unbalanced, against
    three quarters fixed under the rotation). The plain rotation keeps every
    implementation behind the same neighbour in every round, and what ran just before a
    replay moves its time (perf-notes §48), so a rotation can bias one implementation
    against another; this cannot."""
    if n == 1:
        return [[0]]
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    orders = [[(v + i) % n for v in first] for i in range(n)]
    return orders + [o[::-1] for o in orders] if n % 2 else orders


def balanced_rounds(replays, implementations):
    """--balanced-rounds: --replays rounded up to whole Williams designs."""
    size = len(balanced_orders(implementations))
    return -(-replays // size) * size


def time_graphs(torch, fns, calls, replays, warm=(0,), sync=False, side=False, warm_replays=0, balanced=False):
    """The median us per call of each of `fns` (in their order), each captured as
    capture_graph does and replayed in `replays` interleaved rounds
    (time_interleaved)."""
    graphs = {}
    for j, fn in enumerate(fns):
        try:
            graphs[j] = capture_graph(torch, fn, calls, warm)
        except Exception as e:  # a CUDA error surfaces at the next synchronize
            before = "the replay of implementation %d or " % (j - 1) if j else ""
            raise RuntimeError("while capturing implementation %d (%sits warm-up call ran last): %s"
                               % (j, before, e)) from e
    if balanced:
        replays = balanced_rounds(replays, len(fns))
    times = time_interleaved(torch, graphs, calls, replays, sync=sync, side=side, warm=warm_replays,
                             balanced=balanced)
    return [statistics.median(rep for rnd in times[j] for rep in rnd) for j in range(len(fns))]


def time_graph(torch, fn, calls, replays, warm=(0,)):
    """time_graphs of one implementation."""
    return time_graphs(torch, [fn], calls, replays, warm)[0]


def stream_floors_from_bench(bench, shapes, replays):
    """{(n, k): us} from `tgv-bench --mode floor` (with PDL), or (None, why)."""
    with tempfile.TemporaryDirectory() as tmp:
        shapes_file = os.path.join(tmp, "corpus.shapes")
        with open(shapes_file, "w") as f:
            for s in shapes:
                f.write("%s %d %d\n" % (s["label"], s["n"], s["k"]))
        csv_file = os.path.join(tmp, "floor.csv")
        cmd = [bench, "--mode", "floor", "--shapes", shapes_file, "--reps", str(replays), "--csv", csv_file]
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        except OSError as e:
            return None, "%s: %s" % (bench, e)
        if done.returncode != 0:
            return None, "%s exited %d: %s" % (" ".join(cmd), done.returncode, done.stderr.strip()[-300:])
        with open(csv_file, newline="") as f:
            return {(int(r["n"]), int(r["k"])): float(r["stream_floor_pdl_us"]) for r in csv.DictReader(f)}, None


def find_bench(explicit):
    if explicit:
        return explicit
    if os.environ.get("TGV_BENCH"):
        return os.environ["TGV_BENCH"]
    for rel in BENCH_CANDIDATES:
        path = os.path.join(REPO, rel)
        if os.access(path, os.X_OK):
            return path
    return None


def check(torch, out, ref):
    bad = (out.float() - ref).abs() > ATOL + RTOL * ref.abs()
    bad |= torch.isnan(out)
    return int(bad.sum().item())


def plan_text(tgv_gemm, tactics, x, w):
    p = tgv_gemm.get_plan(x, w, backend="auto")
    if p["backend"] != "tgv":
        return str(p["backend"])
    t = tactics[p["tactic"]]
    return "tgv %d %dx%dx%d split %d stages %d" % (p["tactic"], t["cta_m"], t["cta_n"], t["cta_k"], p["split_k"],
                                                   p["stages"])


# ---- the run ----------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=DEFAULT_CORPUS, help="shapes file (default bench/corpus/decode.shapes)")
    p.add_argument("--quick", action="store_true", help="a %d-shape subset spread over the sizes" % QUICK_COUNT)
    p.add_argument("--shapes", nargs="+", default=[], metavar="NxK|TEXT",
                   help="only these shapes: NxK, or text in a producer label (e.g. deepseek, lm_head, tp8)")
    p.add_argument("--m", type=int, nargs="+", default=list(DEFAULT_MS), help="token counts (default 1 2 4 ... 128)")
    p.add_argument("--csv", default="corpus_bench.csv", help="every point (default corpus_bench.csv)")
    p.add_argument("--replays", type=int, default=5, help="timed graph replays per point (median; default 5)")
    p.add_argument("--l2-factor", type=float, default=4.0, help="weight copies total >= this x L2 (default 4)")
    p.add_argument("--tuning-file", default=None, help="run with this tuning file (default: untuned)")
    p.add_argument("--tgv-bench", default=None, help="tgv-bench binary for the stream floor (default: found)")
    p.add_argument("--list", action="store_true", help="print the selected shapes and the plan; run nothing")
    p.add_argument("--isolated", action="store_true",
                   help="each timed call followed by a one-element torch kernel, as between a model's norms and "
                        "attention (no PDL neighbour); that kernel's own time, measured alone, is subtracted "
                        "(docs/perf-notes.md sections 16 and 18)")
    # Harness switches (perf-notes §47): each one as the sweeps (isolated.py) and the
    # tuners time, to find which of their differences moves our small grids.
    p.add_argument("--sync-replays", action="store_true", help="a host sync after each timed replay")
    p.add_argument("--separate-copies", action="store_true", help="each weight copy its own allocation")
    p.add_argument("--out-buffer", action="store_true", help="our backends write a preallocated out")
    p.add_argument("--side-stream", action="store_true", help="replays on a stream of their own, not the legacy one")
    p.add_argument("--balanced-rounds", action="store_true",
                   help="rounds in the orders of a Williams design, --replays rounded up to whole designs (each "
                        "implementation in each place, and after each other one, equally often)")
    p.add_argument("--warm-replays", type=int, default=0,
                   help="untimed replays of a graph right before each of its timed ones (default 0)")
    p.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS),
                   help="time only these implementations (default all; the summary needs torch)")
    args = p.parse_args(argv)
    if args.replays < 3:
        p.error("--replays must be >= 3")
    if any(m < 1 for m in args.m):
        p.error("--m: token counts are >= 1")
    return args


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def point_name(r):
    return "%s %dx%d M=%d" % (r["label"], r["n"], r["k"], r["m"])


def summarize(rows, floor_kind, out):
    timed = [r for r in rows if r["torch_us"]]
    print("\n## Summary (ratio = torch us / backend us; > 1 is faster than F.linear)\n", file=out)
    print("| backend | points | geomean M <= 32 | geomean M <= 128 | min ratio (point) | points < 0.98x | "
          "failed / n/s |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for b in BACKENDS:
        pts = [r for r in timed if r[b + "_us"]]
        ratios = [(r["torch_us"] / r[b + "_us"], r) for r in pts]
        g32 = geomean([q for q, r in ratios if r["m"] <= 32])
        g128 = geomean([q for q, r in ratios if r["m"] <= 128])
        worst = min(ratios, key=lambda qr: qr[0]) if ratios else (float("nan"), None)
        below = sum(1 for q, _ in ratios if q < 0.98)
        failed = sum(1 for r in rows if r[b + "_status"] == "FAIL" or r[b + "_status"].startswith("error"))
        ns = sum(1 for r in rows if r[b + "_status"] == "n/s")
        print("| %s | %d | %.3fx | %.3fx | %.3fx (%s) | %d | %d / %d |"
              % (b, len(pts), g32, g128, worst[0], point_name(worst[1]) if worst[1] else "-", below, failed, ns),
              file=out)

    worst_auto = sorted((r for r in timed if r["auto_us"]), key=lambda r: r["torch_us"] / r["auto_us"])[:15]
    print("\n## The 15 worst auto points\n", file=out)
    print("| shape | N×K | M | weight MB | auto µs | torch µs | auto / torch | cublas µs | tgv µs | plan |", file=out)
    print("|---|---|---|---|---|---|---|---|---|---|", file=out)
    for r in worst_auto:
        print("| %s | %d×%d | %d | %.1f | %.2f | %.2f | %.3fx | %s | %s | %s |"
              % (r["label"], r["n"], r["k"], r["m"], r["weight_mb"], r["auto_us"], r["torch_us"],
                 r["torch_us"] / r["auto_us"], fmt(r["cublas_us"]), fmt(r["tgv_us"]), r["plan"]), file=out)

    big = [r for r in rows if r["weight_mb"] >= 8 and r["m"] <= 16 and r["floor_us"]]
    print("\n## Weights >= 8 MB at M <= 16: time / stream floor (%s)\n" % floor_kind, file=out)
    print("| impl | points | median | min | max |", file=out)
    print("|---|---|---|---|---|", file=out)
    for b in IMPLS:
        v = [r[b + "_us"] / r["floor_us"] for r in big if r[b + "_us"]]
        if v:
            print("| %s | %d | %.3fx | %.3fx | %.3fx |" % (b, len(v), statistics.median(v), min(v), max(v)), file=out)
    # H100s of one peak bandwidth stream at two rates (~2920 and ~3070 GB/s, perf-notes
    # §44) and our kernel trails the floor more on the faster: compare runs of one rate.
    large = [r["weight_mb"] * 1e3 / r["floor_us"] for r in rows if r["weight_mb"] >= 64 and r["floor_us"]]
    if large:
        print("\nstream floor on weights >= 64 MB: median %.0f GB/s over %d points (%s)"
              % (statistics.median(large), len(large), floor_kind), file=out)
    warm = sum(1 for r in rows if r["rotation_mb"] * 1e6 < 2 * r["l2_bytes"])
    if warm:
        print("\nnote: %d points rotate < 2x L2 of weight copies (weights < %.2f MB at %d copies): partly L2-warm."
              % (warm, 2 * rows[0]["l2_bytes"] / MAX_COPIES / 1e6, MAX_COPIES), file=out)


def fmt(v):
    return "%.2f" % v if v else "-"


def main(argv=None):
    args = parse_args(argv)
    shapes = load_corpus(args.corpus)
    if args.quick:
        shapes = quick_subset(shapes)
    shapes = select(shapes, args.shapes)
    if not shapes:
        raise SystemExit("corpus_bench: no corpus shape matches --shapes %s" % " ".join(args.shapes))
    if args.list:
        for s in shapes:
            print("%s %d %d (%.1f MB) %s" % (s["label"], s["n"], s["k"], s["n"] * s["k"] * 2 / 1e6,
                                             " ".join(s["producers"][1:])))
        print("# %d shapes x %d M x %d implementations = %d points" % (len(shapes), len(args.m), len(IMPLS),
                                                                      len(shapes) * len(args.m) * len(IMPLS)))
        return 0

    if args.tuning_file:
        os.environ["TGV_TUNING_FILE"] = os.path.abspath(args.tuning_file)
        tuning_note = "tuned: TGV_TUNING_FILE=%s" % os.environ["TGV_TUNING_FILE"]
    else:
        untuned_dir = tempfile.mkdtemp(prefix="tgv-untuned-")
        os.environ["TGV_TUNING_FILE"] = os.path.join(untuned_dir, "no-such-tuning.json")
        tuning_note = "untuned: TGV_TUNING_FILE=%s (does not exist), set before importing tgv_gemm" % (
            os.environ["TGV_TUNING_FILE"])
    t_start = time.perf_counter()

    bench = find_bench(args.tgv_bench)
    floors, why = (None, "no tgv-bench found (--tgv-bench PATH or $TGV_BENCH)")
    if bench:
        print("stream floor: %s --mode floor over %d shapes ..." % (bench, len(shapes)), file=sys.stderr, flush=True)
        floors, why = stream_floors_from_bench(bench, shapes, args.replays)
    if floors is not None:
        floor_kind = "tgv-bench stream floor, PDL (%s)" % bench
    else:
        floor_kind = "FALLBACK torch.sum over W, not the stream-floor kernel (%s)" % why
        print("stream floor: %s" % floor_kind, file=sys.stderr, flush=True)

    import torch
    import torch.nn.functional as F
    import tgv_gemm

    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference is fp32
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    tactics = {t["id"]: t for t in tgv_gemm.list_tactics()}
    impl_fns = {b: (lambda x, w, b=b: tgv_gemm.linear(x, w, backend=b)) for b in BACKENDS}
    impl_fns["torch"] = F.linear

    spacer = torch.zeros(1, device=DEVICE)
    spacer_us = time_graph(torch, lambda i: spacer.add_(1.0), 200, args.replays) if args.isolated else 0.0
    if args.isolated:
        print("isolated: each call followed by a one-element kernel of %.2f us (subtracted)" % spacer_us,
              file=sys.stderr, flush=True)
    rows = []
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(0)
    for index, s in enumerate(shapes):
        n, k = s["n"], s["k"]
        w_bytes = n * k * 2
        copies, calls = plan_calls(w_bytes, l2, args.l2_factor)
        def draw(*lead):
            return torch.empty(*lead, n, k, device=DEVICE, dtype=torch.bfloat16).normal_(0, 1 / math.sqrt(k),
                                                                                        generator=gen)
        # --separate-copies: one allocation per copy, as the tuners and isolated.py hold them.
        weights = [draw() for _ in range(copies)] if args.separate_copies else draw(copies)
        w_ref = weights[0].float()
        warm = alignment_classes(weights)
        floor_us = floors.get((n, k)) if floors is not None else None
        if floors is None:
            floor_us = time_graph(torch, lambda i: weights[i % copies].sum(dtype=torch.float32), calls, args.replays,
                                  warm)
        print("[%d/%d] %s %dx%d (%.1f MB, %d copies, %d calls)" % (index + 1, len(shapes), s["label"], n, k,
                                                                  w_bytes / 1e6, copies, calls),
              file=sys.stderr, flush=True)
        for m in args.m:
            x = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16, generator=gen)
            ref = x.float() @ w_ref.t()
            if args.out_buffer:  # our backends write one preallocated out per point, as the tuners' calls do
                out_buf = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
                impl_fns.update({b: (lambda x, w, b=b: tgv_gemm.linear(x, w, out=out_buf, backend=b))
                                 for b in BACKENDS})
            row = {"label": s["label"], "producers": " ".join(s["producers"]), "n": n, "k": k, "m": m,
                   "weight_mb": w_bytes / 1e6, "rotation_mb": copies * w_bytes / 1e6, "copies": copies,
                   "calls": calls, "l2_bytes": l2, "floor_us": floor_us, "plan": plan_text(tgv_gemm, tactics, x,
                                                                                           weights[0])}
            timed = []
            for name in IMPLS:
                fn = impl_fns[name]
                row[name + "_us"] = None
                if name not in args.impls:  # --impls: not timed (no graph beside the others')
                    row[name + "_status"] = "skipped"
                    continue
                try:
                    bad = check(torch, fn(x, weights[0]), ref)
                except tgv_gemm.TgvNotSupportedError:
                    row[name + "_status"] = "n/s"
                    continue
                except tgv_gemm.TgvError as e:
                    row[name + "_status"] = "error: %s" % e
                    continue
                if bad:
                    row[name + "_status"] = "FAIL"
                    print("FAIL %s %s: %d of %d elements outside |out - ref| <= %g + %g |ref|"
                          % (name, point_name(row), bad, m * n, ATOL, RTOL), file=sys.stderr, flush=True)
                    continue
                row[name + "_status"] = "ok"
                def call(i, fn=fn):
                    fn(x, weights[i % copies])
                    if args.isolated:
                        spacer.add_(1.0)
                timed.append((name, call))
            # Every implementation of the point in interleaved rounds (time_graphs).
            try:
                times = time_graphs(torch, [c for _, c in timed], calls, args.replays, warm, args.sync_replays,
                                    args.side_stream, args.warm_replays, args.balanced_rounds)
            except Exception:
                print("CUDA error at %s, implementations in order: %s (plan: %s)"
                      % (point_name(row), " ".join(name for name, _ in timed), row["plan"]), file=sys.stderr, flush=True)
                raise
            for (name, _), us in zip(timed, times):
                row[name + "_us"] = us - spacer_us
            rows.append(row)
        del weights, w_ref
        torch.cuda.empty_cache()
    elapsed = time.perf_counter() - t_start

    with open(args.csv, "w", newline="") as f:
        out = csv.writer(f)
        head = ["label", "n", "k", "m", "weight_mb", "rotation_mb", "copies", "calls", "plan"]
        head += ["%s_us" % b for b in IMPLS] + ["%s_vs_torch" % b for b in BACKENDS]
        head += ["stream_floor_us", "stream_floor_kind"] + ["%s_vs_stream_floor" % b for b in IMPLS]
        head += ["%s_status" % b for b in IMPLS] + ["producers"]
        out.writerow(head)
        for r in rows:
            line = [r["label"], r["n"], r["k"], r["m"], "%.3f" % r["weight_mb"], "%.1f" % r["rotation_mb"],
                    r["copies"], r["calls"], r["plan"]]
            line += ["%.3f" % r[b + "_us"] if r[b + "_us"] else "" for b in IMPLS]
            line += ["%.4f" % (r["torch_us"] / r[b + "_us"]) if r[b + "_us"] and r["torch_us"] else ""
                     for b in BACKENDS]
            line += ["%.3f" % r["floor_us"] if r["floor_us"] else "", "tgv-bench" if floors is not None else
                     "torch.sum fallback"]
            line += ["%.4f" % (r[b + "_us"] / r["floor_us"]) if r[b + "_us"] and r["floor_us"] else "" for b in IMPLS]
            line += [r[b + "_status"] for b in IMPLS] + [r["producers"]]
            out.writerow(line)

    version = tgv_gemm.library_version()
    print("# tgv_gemm.linear (auto, cublas, tgv) vs F.linear over the decode shape corpus\n")
    print("- date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    print("- GPU: %s (sm_%d%d, %d SMs, L2 %.0f MiB); torch %s, CUDA %s; tgv-gemm %s"
          % (props.name, props.major, props.minor, props.multi_processor_count, l2 / 2**20, torch.__version__,
             torch.version.cuda, version))
    print("- command: `%s`" % " ".join([os.path.basename(sys.executable)] + sys.argv))
    print("- %s" % tuning_note)
    print("- corpus: %s, %d shapes x M in %s; %d points, %.0f s" % (os.path.relpath(args.corpus, REPO),
                                                                   len(shapes), ",".join(map(str, args.m)),
                                                                   len(rows), elapsed))
    print("- method: per shape weight copies totalling >= %.0fx L2 (<= %d), calls of ~%d us per replay in one CUDA "
          "graph per implementation, median of %d interleaved rounds of replays%s%s, us per call; each output "
          "checked first against fp32, "
          "|out - ref| <= %g + %g |ref|" % (args.l2_factor, MAX_COPIES, REPLAY_TARGET_S * 1e6, args.replays,
                                            " (in the orders of a Williams design, rounded up to whole designs)"
                                            if args.balanced_rounds
                                            else "",
                                            " (each after %d untimed replay(s) of its own graph)" % args.warm_replays
                                            if args.warm_replays else "", ATOL, RTOL))
    print("- stream floor: %s" % floor_kind)
    print("- CSV: %s" % args.csv)
    summarize(rows, floor_kind, sys.stdout)
    failed = sum(1 for r in rows for b in IMPLS if r[b + "_status"] == "FAIL" or r[b + "_status"].startswith("error"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
