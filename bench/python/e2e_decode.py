#!/usr/bin/env python3
"""End to end: one decode step of a Hugging Face Llama model, torch against
tgv_gemm.patch(model) (linears one by one, and with the gated MLPs and the
q/k/v projections fused),
untuned and tuned, in a CUDA graph with a static KV cache.

Models (transformers' LlamaForCausalLM built from a config: random bf16 weights,
nothing downloaded):
  8b       Llama-3.1-8B shapes: hidden 4096, intermediate 14336, 32 heads of 128,
           8 KV heads, vocab 128256 (q 4096x4096, k/v 1024x4096, o 4096x4096,
           gate/up 14336x4096, down 4096x14336, lm_head 128256x4096).
  70b-tp8  one tensor-parallel rank of Llama-3.1-70B (TP 8): hidden 8192, 8 heads
           of 128, 1 KV head, intermediate 3584, vocab 16032 (q 1024x8192, k/v
           128x8192, o 8192x1024, gate/up 3584x8192, down 8192x3584, the vocab-
           parallel lm_head 16032x8192). The all-reduces of a real TP rank are absent.
  tiny     a 2-layer toy (hidden 64) for --device cpu smoke runs.

For each model, layer count and batch B: a StaticCache, a prefill of --prompt
tokens, one eager decode step (for tgv: with a hook on every patched linear
comparing its output to F.linear in fp32 on the same bf16 input,
|out - ref| <= 1e-2 + 1e-2 |ref| element-wise; the prefill is checked the same
way; for the fused columns also a hook on every fused MLP comparing its output
with the MLP in fp32 (fp32 weights and activation, same bf16 input),
|out - ref| <= 2e-2 (RMS(ref) + |ref|): the fused path rounds the [M, I]
activation product to bf16 before down_proj, noise of ~2^-9/sqrt(3) of the
output's RMS), two eager warm-up steps, then one decode step (B tokens) captured in a
torch.cuda.CUDAGraph and replayed --rounds x --replays times between CUDA
events: ms per step is the median round / replays, tokens/s is B / that. Each
replay is a real next step: the cache's position advances on the device, so
attention reads a few more keys each step (a short context: the GEMMs dominate).
Columns (torch, tgv, torch merged and tgv fused alternate batch by batch; the tuned
columns are compared with the same torch times): torch (F.linear: cuBLAS, the model as
written), torch merged (the engine baseline: the same q/k/v and gate/up merges as tgv
fused, with F.linear over the merged weights and torch's activation and product: what
an engine that merges weights gets from cuBLAS; "vs torch merged" in the CSV and after
the table), tgv untuned
(patch(model, fuse=False): every linear on its own; no tuning file: the benchmark
points TGV_TUNING_FILE at a fresh temporary file unless --tuning-file is given),
tgv fused (patch(model): gate_proj + up_proj + SiLU of every MLP in one
silu_mul_linear over a merged [gate; up] weight, q_proj + k_proj + v_proj of
every attention in one GEMM over a merged [q; k; v] weight, o_proj, down_proj
and lm_head one by one), then tgv tuned and tgv fused tuned: `with tgv_gemm.autotune():` around
one eager decode step per batch, unfused and fused (so the merged 2I x K shape
is recorded too), records the decode shapes, tunes them on exit and writes the
file, in effect at once; the graphs are captured again. --no-fuse drops the
fused columns. logits_diff is the largest
|logit| difference between the tgv and torch graphs' first replay (same inputs;
rounding differs, so it is information, not a check).

    PYTHONPATH=python TGV_GEMM_LIBRARY=build/libtgv_gemm.so python3 bench/python/e2e_decode.py --quick
    python3 bench/python/e2e_decode.py --device cpu --tiny      # plumbing only: no GPU, no graphs

Writes a CSV (--csv) and prints a markdown summary. Exits 1 if any checked
output missed its tolerance.
"""

import argparse
import datetime
import inspect
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ATOL = 1e-2
RTOL = 1e-2
# Fused MLPs: |out - ref| <= MLP_RTOL (RMS(ref) + |ref|). Two bf16 roundings (the
# [M, I] product, then the output); the first reaches the output through down_proj
# as noise of ~2^-9/sqrt(3) RMS(ref). Emulated on the CPU at these shapes (M up to
# 300), the worst element was 0.73 of a 1e-2 bound; a wrong activation or a swapped
# half is off by more than 10%.
MLP_RTOL = 2e-2

SPECS = {
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
               head_dim=128, vocab_size=128256),
    "70b-tp8": dict(hidden_size=8192, intermediate_size=3584, num_attention_heads=8, num_key_value_heads=1,
                    head_dim=128, vocab_size=16032),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, vocab_size=256),
}
LAYERS = {"8b": [8, 32], "70b-tp8": [20, 80], "tiny": [1, 2]}
QUICK_LAYERS = {"8b": [32], "70b-tp8": [80], "tiny": [2]}
BATCHES = [1, 2, 4, 8, 16, 32, 64]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=sorted(SPECS), default=None,
                   help="models (default: 8b 70b-tp8; tiny with --tiny)")
    p.add_argument("--layers", type=int, nargs="+", default=None,
                   help="layer counts for every model (default: 8b 8 32, 70b-tp8 20 80; --quick: 32 and 80)")
    p.add_argument("--batches", type=int, nargs="+", default=None,
                   help="decode batches (default 1 2 4 8 16 32 64; --tiny: 1 4)")
    p.add_argument("--quick", action="store_true", help="one layer count per model (the full depth): ~3 min")
    p.add_argument("--tiny", action="store_true", help="the tiny model only (smoke run)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: plumbing only (tgv side is F.linear through the patch, no graphs, no tuning)")
    p.add_argument("--prompt", type=int, default=32, help="prefill tokens per sequence (default 32)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (median; default 5, --tiny 2)")
    p.add_argument("--replays", type=int, default=None, help="graph replays per round (default 10, --tiny 2)")
    p.add_argument("--no-tune", action="store_true", help="skip the tuned columns")
    p.add_argument("--no-fuse", action="store_true", help="skip the fused columns")
    p.add_argument("--tune-budget", type=float, default=None, help="seconds of tuning per model (autotune budget_s)")
    p.add_argument("--tune-replays", type=int, default=7, help="the tuner's replays per candidate (default 7)")
    p.add_argument("--tune-neighbours", default="both", choices=["both", "kernels", "self"],
                   help="how the tuner times each candidate (tgv_gemm.autotune's neighbours; default both)")
    p.add_argument("--tuning-file", default=None,
                   help="tuning file to start from and write (default: a fresh temporary one, so untuned is untuned)")
    p.add_argument("--tuned-from", default=None, metavar="FILE",
                   help="the tuned columns read this tuning file as it is (no autotune; the untuned columns stay "
                        "untuned): a tuner's file, edited, to find which of its entries a model loses on")
    p.add_argument("--csv", default="e2e_decode.csv", help="CSV output (default e2e_decode.csv)")
    p.add_argument("--verbose", action="store_true", help="print the tuner's choices")
    args = p.parse_args(argv)
    if args.models is None:
        args.models = ["tiny"] if args.tiny else ["8b", "70b-tp8"]
    if args.batches is None:
        args.batches = [1, 4] if args.tiny else BATCHES
    if args.rounds is None:
        args.rounds = 2 if args.tiny else 5
    if args.replays is None:
        args.replays = 2 if args.tiny else 10
    if args.device == "cpu" and args.models != ["tiny"]:
        p.error("--device cpu runs only the tiny model (pass --tiny)")
    if args.tuned_from and (args.tuning_file or args.no_tune):
        p.error("--tuned-from replaces the tuning step: not with --tuning-file or --no-tune")
    if min(args.batches) < 1 or args.prompt < 1 or args.rounds < 1 or args.replays < 1:
        p.error("--batches, --prompt, --rounds and --replays must be >= 1")
    return args


# The tuning file must be chosen before tgv_gemm first plans on a device.
def set_tuning_file(args):
    if args.tuning_file is None:
        folder = tempfile.mkdtemp(prefix="tgv-e2e-")
        args.tuning_file = os.path.join(folder, "tuning.json")
    os.environ["TGV_TUNING_FILE"] = os.path.abspath(args.tuning_file)


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Bench:
    def __init__(self, args):
        import torch

        self.torch = torch
        self.args = args
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"

    # ---- the model -------------------------------------------------------------

    def build(self, name, layers):
        import transformers

        torch = self.torch
        config = transformers.LlamaConfig(num_hidden_layers=layers, max_position_embeddings=4096,
                                          tie_word_embeddings=False, attn_implementation="sdpa",
                                          **SPECS[name])
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            torch.manual_seed(0)
            with torch.device(self.device):
                model = transformers.LlamaForCausalLM(config)
        finally:
            torch.set_default_dtype(old)
        model.eval()
        self.cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        return model

    @staticmethod
    def truncate(model, full_layers, layers):
        import torch.nn as nn

        model.model.layers = nn.ModuleList(list(full_layers)[:layers])
        model.config.num_hidden_layers = layers

    def new_cache(self, model, batch):
        import transformers

        max_len = self.args.prompt + 4 + 1 + self.args.rounds * self.args.replays + 8
        return transformers.StaticCache(config=model.config, max_cache_len=max_len)

    def step(self, model, cache, ids, **kw):
        return model(input_ids=ids, use_cache=True, **{self.cache_kw: cache}, **kw).logits

    # ---- one (implementation, batch) measurement ------------------------------

    def run(self, model, batch, checker=None):
        """Prefill, one (checked) eager step, warm-up, capture, time. Returns
        (ms per step, logits of the first replay in fp32)."""
        torch = self.torch
        args = self.args
        vocab = model.config.vocab_size
        gen = torch.Generator(device="cpu").manual_seed(batch)
        prompt = torch.randint(0, vocab, (batch, args.prompt), generator=gen).to(self.device)
        tok = torch.randint(0, vocab, (batch, 1), generator=gen).to(self.device)
        cache = self.new_cache(model, batch)
        with torch.inference_mode():
            if checker is not None:
                checker.arm()
            self.step(model, cache, prompt, logits_to_keep=1)
            self.step(model, cache, tok)
            if checker is not None:
                checker.disarm()
            if not self.cuda:  # CPU smoke: eager steps timed by the host clock
                self.step(model, cache, tok)
                times = []
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    for _ in range(args.replays):
                        logits = self.step(model, cache, tok)
                    times.append((time.perf_counter() - t0) * 1e3 / args.replays)
                return statistics.median(times), logits.float()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.step(model, cache, tok)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                logits = self.step(model, cache, tok)
            logits.fill_(float("nan"))
            graph.replay()
            first = logits.float().clone()
            if not bool(torch.isfinite(first).all()):
                raise RuntimeError("the captured decode step produced non-finite logits (batch %d)" % batch)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(args.rounds):
                start.record()
                for _ in range(args.replays):
                    graph.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / args.replays)
            del graph
        return statistics.median(times), first

    def run_torch_merged(self, model, batch):
        """The engine baseline: the merges tgv fused makes (q/k/v, gate/up), with
        torch's ops: F.linear over the merged weight (cuBLAS), then for the MLP
        torch's activation and product on the two halves; down_proj, o_proj and
        the rest F.linear. patch()'s fusers with their launches swapped for
        those (nothing of tgv_gemm's kernels runs)."""
        import torch.nn.functional as F
        import tgv_gemm
        from tgv_gemm import _fusers, _patch

        def merged(act):
            def launch(x, w, b=None, **kw):
                y = F.linear(x, w, b)
                i = w.shape[0] // 2
                return act(y[..., :i]) * y[..., i:]
            return launch

        saved = (_patch._tgv_linear, dict(_fusers.LAUNCH))
        _patch._tgv_linear = lambda x, w, b=None, **kw: F.linear(x, w, b)
        _fusers.LAUNCH["silu"] = merged(F.silu)
        _fusers.LAUNCH["gelu_tanh"] = merged(lambda t: F.gelu(t, approximate="tanh"))
        handle = tgv_gemm.patch(model)
        try:
            return self.run(model, batch)
        finally:
            handle.unpatch()
            _patch._tgv_linear = saved[0]
            _fusers.LAUNCH.update(saved[1])

    def measure(self, model, full_layers, name, columns, layers, results, failed):
        """Columns at one depth, batch by batch (torch and tgv alternate, so a
        drift of the clocks does not favour one); torch's logits are the
        reference of the tgv columns' logits_diff."""
        import tgv_gemm
        from tgv_gemm import _fusers

        for batch in self.args.batches:
            self.truncate(model, full_layers, layers)
            for column in columns:
                if column == "torch":
                    ms, logits = self.run(model, batch)
                    results[(layers, batch, "torch")] = (ms, None, None)
                    results[(layers, batch, "logits")] = logits
                    continue
                if column == "torch merged":
                    ms, logits = self.run_torch_merged(model, batch)
                    results[(layers, batch, column)] = (ms, float((logits - results[(layers, batch, "logits")])
                                                                  .abs().max()), None)
                    continue
                handle = tgv_gemm.patch(model, fuse="fused" in column)
                # q/k/v of a fused attention are checked as linears (each returns its
                # columns of the one GEMM); the fused MLPs as MLPs.
                qkv = [n for n in handle.covered if n.rsplit(".", 1)[-1] in _fusers.PROJECTIONS]
                mlps = [n for n in handle.fused if _fusers.STATE in model.get_submodule(n).__dict__]
                checker = Checker(model, handle.patched + qkv, mlps)
                try:
                    ms, logits = self.run(model, batch, checker)
                finally:
                    handle.unpatch()
                diff = float((logits - results[(layers, batch, "logits")]).abs().max())
                results[(layers, batch, column)] = (ms, diff, checker)
                if checker.bad:
                    failed.append("%s L=%d B=%d %s: %d of %d outputs off; first %s" % (
                        name, layers, batch, column, checker.bad, checker.checked, checker.first_bad))


class Checker:
    """Forward hooks on the patched linears comparing each output with F.linear
    in fp32 on the same bf16 input, and on the fused MLPs comparing each output
    with the MLP in fp32, while armed."""

    def __init__(self, model, names, fused=()):
        import torch.nn.functional as F

        self.F = F
        self.modules = [(n, model.get_submodule(n)) for n in names]
        self.mlps = [(n, model.get_submodule(n)) for n in fused]
        self.hooks = []
        self.checked = 0  # linears
        self.checked_mlps = 0
        self.bad = 0
        self.worst = 0.0  # max |out - ref| / bound over everything checked
        self.first_bad = None

    def arm(self):
        for name, m in self.modules:
            self.hooks.append(m.register_forward_hook(self._hook(name)))
        for name, m in self.mlps:
            self.hooks.append(m.register_forward_hook(self._mlp_hook(name)))

    def disarm(self):
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def _hook(self, name):
        def hook(module, args, out):
            x = args[0]
            ref = self.F.linear(x.float(), module.weight.float(), None if module.bias is None else module.bias.float())
            bound = ATOL + RTOL * ref.abs()
            self._count(name, x, out, ref, bound)
            self.checked += 1

        return hook

    def _mlp_hook(self, name):
        F = self.F

        def lin(m, t):
            return F.linear(t, m.weight.float(), None if m.bias is None else m.bias.float())

        def hook(module, args, out):
            import tgv_gemm._fusers as fusers

            kind = module.__dict__[fusers.STATE].kind
            act = F.silu if kind == "silu" else (lambda t: F.gelu(t, approximate="tanh"))
            x = args[0]
            xf = x.float()
            ref = lin(module.down_proj, act(lin(module.gate_proj, xf)) * lin(module.up_proj, xf))
            bound = MLP_RTOL * (ref.pow(2).mean().sqrt() + ref.abs())
            self._count(name, x, out, ref, bound)
            self.checked_mlps += 1

        return hook

    def _count(self, name, x, out, ref, bound):
        ratio = float(((out.float() - ref).abs() / bound).max())
        if ratio != ratio:  # NaN
            ratio = float("inf")
        self.worst = max(self.worst, ratio)
        if ratio > 1.0:
            self.bad += 1
            if self.first_bad is None:
                self.first_bad = "%s (M=%d): max |diff|/bound %.2f" % (name, x.numel() // x.shape[-1], ratio)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    set_tuning_file(args)
    import torch
    import transformers

    import tgv_gemm

    bench = Bench(args)
    if bench.cuda and not torch.cuda.is_available():
        sys.exit("e2e_decode: no CUDA device (use --device cpu --tiny for a smoke run)")
    if not bench.cuda:
        # No GPU: CPU weights count as eligible and the "tgv" side is F.linear
        # reached through the patched forwards: the plumbing, not the kernels.
        import torch.nn.functional as F
        from tgv_gemm import _patch

        from tgv_gemm import _fusers

        _patch._DEVICE_TYPES = ("cuda", "cpu")
        _patch._tgv_linear = lambda x, w, b=None, **kw: F.linear(x, w, b)

        def gated(act):  # the fused kernel's arithmetic: fp32 throughout, one rounding
            def launch(x, w, b=None, **kw):
                i = w.shape[0] // 2
                xf, wf, bf = x.float(), w.float(), None if b is None else b.float()
                return (act(F.linear(xf, wf[:i], None if bf is None else bf[:i])) * F.linear(
                    xf, wf[i:], None if bf is None else bf[i:])).to(x.dtype)

            return launch

        _fusers.LAUNCH["silu"] = gated(F.silu)
        _fusers.LAUNCH["gelu_tanh"] = gated(lambda t: F.gelu(t, approximate="tanh"))
    gpu = torch.cuda.get_device_name() if bench.cuda else "cpu"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = git_commit()
    print("# e2e_decode: %s, %s, commit %s, torch %s, transformers %s" % (
        stamp, gpu, commit, torch.__version__, transformers.__version__))
    print("command: %s" % " ".join([os.path.basename(sys.argv[0])] + (sys.argv[1:] if argv is None else argv)))
    print("tuning file: %s" % os.environ["TGV_TUNING_FILE"])

    rows = []
    failed = []
    t_start = time.monotonic()
    for name in args.models:
        counts = args.layers or (QUICK_LAYERS if args.quick else LAYERS)[name]
        t0 = time.monotonic()
        model = bench.build(name, max(counts))
        full_layers = list(model.model.layers)
        handle = tgv_gemm.patch(model, fuse=False)
        handle.unpatch()
        print("\n## %s (built in %.1f s); %s" % (name, time.monotonic() - t0, handle.summary()))
        if not args.no_fuse:
            t0 = time.monotonic()
            handle = tgv_gemm.patch(model)  # the merge, once: later patches find the weights merged
            handle.unpatch()
            if bench.cuda:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()  # the originals' blocks, freed by the merge
            print("fused (merged in %.1f s): %s" % (time.monotonic() - t0, handle.summary()))
        results = {}  # (layers, batch, column) -> (ms, logits_diff, checker); (layers, batch, "logits")
        untuned = ["torch", "tgv"] + ([] if args.no_fuse else ["torch merged", "tgv fused"])
        tuned = ["tgv tuned"] + ([] if args.no_fuse else ["tgv fused tuned"])

        for layers in counts:
            bench.measure(model, full_layers, name, untuned, layers, results, failed)
        if args.tuned_from:
            shutil.copyfile(args.tuned_from, os.environ["TGV_TUNING_FILE"])
            tgv_gemm.reload_tuning()
            print("tuned columns: %s as it is (copied to %s; no autotune)" % (args.tuned_from,
                                                                            os.environ["TGV_TUNING_FILE"]))
            for layers in counts:
                bench.measure(model, full_layers, name, tuned, layers, results, failed)
            os.remove(os.environ["TGV_TUNING_FILE"])  # the next model's untuned columns are untuned
            tgv_gemm.reload_tuning()
        elif not args.no_tune:
            t0 = time.monotonic()
            bench.truncate(model, full_layers, min(counts))
            # The warm-up an engine would run before capturing its decode graphs:
            # one decode step per batch (M = B for every linear), no cache; unfused
            # and fused, so both the gate/up and the merged shapes are recorded.
            with tgv_gemm.autotune(budget_s=args.tune_budget, replays=args.tune_replays,
                                   neighbours=args.tune_neighbours, verbose=args.verbose) as block:
                for fuse in [False] + ([] if args.no_fuse else [True]):
                    h = tgv_gemm.patch(model, fuse=fuse)
                    with torch.inference_mode():
                        for batch in args.batches:
                            ids = torch.zeros(batch, 1, dtype=torch.long, device=bench.device)
                            model(input_ids=ids, use_cache=False)
                    h.unpatch()
            print("autotune (neighbours=%s): %d shapes x %d buckets recorded, %d points tuned in %.1f s%s" % (
                args.tune_neighbours, len(block.shapes), len({m for ms in block.shapes.values() for m in ms}), len(block.entries),
                time.monotonic() - t0, "; not tuned: %s" % block.skipped if block.skipped else ""))
            for layers in counts:
                bench.measure(model, full_layers, name, tuned, layers, results, failed)
        for layers in counts:
            for batch in args.batches:
                torch_ms = results[(layers, batch, "torch")][0]
                merged_ms = results.get((layers, batch, "torch merged"), (None,))[0]
                for column in ("torch", "torch merged", "tgv", "tgv fused", "tgv tuned", "tgv fused tuned"):
                    if (layers, batch, column) not in results:
                        continue
                    ms, diff, checker = results[(layers, batch, column)]
                    rows.append({
                        "model": name, "layers": layers, "batch": batch, "impl": column,
                        "ms_per_step": ms, "tokens_per_s": batch / (ms / 1e3), "speedup_vs_torch": torch_ms / ms,
                        "speedup_vs_torch_merged": merged_ms / ms if merged_ms else "",
                        "linears_checked": checker.checked if checker else "",
                        "mlps_checked": checker.checked_mlps if checker else "",
                        "outputs_off": checker.bad if checker else "",
                        "worst_diff_over_bound": checker.worst if checker else "",
                        "logits_diff_vs_torch": diff if diff is not None else "",
                    })
        del model, full_layers, results
        if bench.cuda:
            torch.cuda.empty_cache()

    write_csv(args.csv, rows, stamp, gpu, commit)
    print_summary(rows)
    print("\ntotal %.1f s; CSV: %s" % (time.monotonic() - t_start, args.csv))
    if failed:
        print("\nCHECK FAILED:\n  " + "\n  ".join(failed))
        return 1
    checked = sum(r["linears_checked"] for r in rows if r["linears_checked"] != "")
    mlps = sum(r["mlps_checked"] for r in rows if r["mlps_checked"] != "")
    print("check: %d linear outputs compared with F.linear in fp32 (|diff| <= %g + %g |ref|), %d fused MLP "
          "outputs with the MLP in fp32 (|diff| <= %g (RMS(ref) + |ref|)): all within" % (
              checked, ATOL, RTOL, mlps, MLP_RTOL))
    return 0


def write_csv(path, rows, stamp, gpu, commit):
    import csv

    if not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["date", "gpu", "commit"] + list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow(dict(date=stamp, gpu=gpu, commit=commit, **{
                k: ("%.4f" % v if isinstance(v, float) else v) for k, v in r.items()}))


def print_summary(rows):
    table = {}
    for r in rows:
        table.setdefault((r["model"], r["layers"], r["batch"]), {})[r["impl"]] = r
    columns = [c for c in ("torch merged", "tgv", "tgv fused", "tgv tuned", "tgv fused tuned")
               if any(c in t for t in table.values())]
    head = "| model | layers | batch | torch ms |"
    for c in columns:
        head += " %s ms | %s / torch |" % (c, c)
    print("\n" + head + " torch tok/s | best tgv tok/s | worst diff/bound |")
    print("|---|---:|---:|---:|" + "---:|---:|" * len(columns) + "---:|---:|---:|")
    for (model, layers, batch), cols in table.items():
        t = cols["torch"]
        ours = [cols[c] for c in columns if c in cols and c.startswith("tgv")]
        line = "| %s | %d | %d | %.3f |" % (model, layers, batch, t["ms_per_step"])
        for c in columns:
            r = cols.get(c)
            line += " %s | %s |" % (("%.3f" % r["ms_per_step"], "%.3fx" % r["speedup_vs_torch"]) if r else ("-", "-"))
        best = max((r["tokens_per_s"] for r in ours), default=None)
        worst = max((r["worst_diff_over_bound"] for r in ours), default=None)
        print(line + " %.0f | %s | %s |" % (t["tokens_per_s"], "%.0f" % best if best is not None else "-",
                                             "%.2f" % worst if worst is not None else "-"))
    if any("torch merged" in t for t in table.values()):
        print("\nAgainst the engine baseline (torch over the same merged weights):")
        for (model, layers, batch), cols in table.items():
            fused = [c for c in ("tgv fused", "tgv fused tuned") if c in cols and "torch merged" in cols]
            if fused:
                print("  %s L=%d B=%d: %s" % (model, layers, batch, ", ".join(
                    "%s %.3fx" % (c, cols[c]["speedup_vs_torch_merged"]) for c in fused)))


if __name__ == "__main__":
    sys.exit(main())
