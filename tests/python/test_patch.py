"""tgv_gemm.patch(model): which linears it swaps and why it skips the others,
that the swap copies nothing and routes to tgv_gemm.linear, that unpatch()
restores every module exactly, idempotence, the fusion seam (the gated-MLP
fuser itself: test_fusion.py); and (on a GPU)
patched outputs against an fp32 reference, eager and inside a CUDA graph.

On the CPU the tests let CPU weights count as eligible and replace the launch
(tgv_gemm.linear) by a recorder that computes F.linear, so the routing is
what they check; the real kernels are the GPU tests'.
"""

import copy
import inspect

import pytest

torch = pytest.importorskip("torch")
try:
    import tgv_gemm
    from tgv_gemm import _fusers, _patch
except ImportError as e:  # no built library, or no CUDA runtime to load it with
    pytest.skip(str(e), allow_module_level=True)

import torch.nn as nn
import torch.nn.functional as F

BF16 = torch.bfloat16


class OwnForward(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 128, bias=False)
        self.down = nn.Linear(128, 64, bias=True)
        self.odd = nn.Linear(64, 60)  # K = 64: eligible; its output feeds nothing
        self.narrow = nn.Linear(60, 64)  # K = 60: not a multiple of 8
        self.own = OwnForward(64, 64)

    def forward(self, x):
        h = self.down(F.silu(self.up(x)))
        return h + self.own(h) + self.narrow(self.odd(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(64, 32, bias=False)
        self.shared = self.head  # the same module twice: patched once
        self.float_head = nn.Linear(64, 16)

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return self.head(x), self.float_head(x.float())


def make_model():
    torch.manual_seed(0)
    m = Model().to(BF16)
    m.float_head.float()
    return m.eval()


@pytest.fixture
def cpu_launch(monkeypatch):
    """CPU weights eligible; tgv_gemm.linear replaced by F.linear, and the fused
    gated launches by the unfused torch ops on the two halves of the merged
    weight (the same bf16 roundings as the module's own forward), each with a
    record of (weight pointer, backend) per call ((..., backend, kind) for the
    fused ones)."""
    calls = []

    def fake_linear(x, weight, bias=None, *, backend="auto"):
        calls.append((weight.data_ptr(), backend))
        return F.linear(x, weight, bias)

    def fake_gated(kind, act):
        def launch(x, weight, bias=None, *, backend="auto"):
            calls.append((weight.data_ptr(), backend, kind))
            i = weight.shape[0] // 2
            bg, bu = (None, None) if bias is None else (bias[:i], bias[i:])
            return act(F.linear(x, weight[:i], bg)) * F.linear(x, weight[i:], bu)

        return launch

    monkeypatch.setattr(_patch, "_DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setattr(_patch, "_tgv_linear", fake_linear)
    monkeypatch.setitem(_fusers.LAUNCH, "silu", fake_gated("silu", F.silu))
    monkeypatch.setitem(_fusers.LAUNCH, "gelu_tanh", fake_gated("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")))
    return calls


def snapshot(model):
    return {name: (type(m), dict(m.__dict__)) for name, m in model.named_modules()}


def test_patches_the_eligible_and_says_why_not(cpu_launch):
    model = make_model()
    handle = tgv_gemm.patch(model)
    assert sorted(handle.patched) == sorted(
        ["blocks.%d.%s" % (i, n) for i in (0, 1) for n in ("up", "down", "odd")] + ["head"])
    assert handle.skipped == {
        "blocks.0.narrow": "in_features=60 is not a multiple of 8",
        "blocks.1.narrow": "in_features=60 is not a multiple of 8",
        "blocks.0.own": "OwnForward overrides forward",
        "blocks.1.own": "OwnForward overrides forward",
        "float_head": "weight dtype float32 (bf16 only)",
    }
    assert handle.counts() == {"patched": 7, "fused": 0, "covered": 0, "not_fused": {}, "skipped": {
        "in_features=60 is not a multiple of 8": 2, "OwnForward overrides forward": 2,
        "weight dtype float32 (bf16 only)": 1}}
    text = handle.summary()
    assert "7 nn.Linear patched" in text and "5 skipped" in text and "2: OwnForward overrides forward" in text
    assert "7 patched" in repr(handle)


def test_routes_to_tgv_without_copies_and_computes_the_same(cpu_launch):
    model = make_model()
    x = torch.randn(3, 5, 64).to(BF16)
    with torch.no_grad():
        before = model(x)
    ptrs = {name: m.weight.data_ptr() for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    handle = tgv_gemm.patch(model)
    with torch.no_grad():
        after = model(x)
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    # Every patched linear called the launch once a block, with its own weight (not a copy).
    patched_ptrs = sorted(ptrs[n] for n in handle.patched)
    assert sorted(p for p, _ in cpu_launch) == patched_ptrs
    assert {b for _, b in cpu_launch} == {"auto"}
    assert {name: m.weight.data_ptr() for name, m in model.named_modules() if isinstance(m, nn.Linear)} == ptrs


def test_falls_back_where_tgv_cannot_compute_it(cpu_launch):
    model = make_model()
    tgv_gemm.patch(model)
    x = torch.randn(4, 64).to(BF16)
    model.head(x)  # grad enabled and the weight requires grad: F.linear (autograd needs it)
    with pytest.raises(RuntimeError, match="dtype"):
        model.head(x.to(torch.float16))  # not bf16: F.linear's own error, as before the patch
    assert cpu_launch == []
    with torch.inference_mode():
        model.head(x)
    assert len(cpu_launch) == 1
    y = model.head(x.requires_grad_())  # autograd still works through a patched module
    y.float().sum().backward()
    assert x.grad is not None and model.head.weight.grad is not None


def test_unpatch_restores_exactly_and_twice_is_harmless(cpu_launch):
    model = make_model()
    before = snapshot(model)
    handle = tgv_gemm.patch(model)
    assert "forward" in model.head.__dict__
    handle.unpatch()
    assert snapshot(model) == before
    assert all("forward" not in m.__dict__ for m in model.modules())
    handle.unpatch()
    assert snapshot(model) == before
    assert "undone" in repr(handle)
    x = torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        model(x)
    assert cpu_launch == [], "nothing routed to tgv after unpatch"


def test_patching_twice_does_not_wrap_twice(cpu_launch):
    model = make_model()
    first = tgv_gemm.patch(model)
    fwd = model.head.__dict__["forward"]
    second = tgv_gemm.patch(model)
    assert second.patched == []
    assert {second.skipped[n] for n in first.patched} == {"already patched"}
    assert model.head.__dict__["forward"] is fwd
    with torch.no_grad():
        model.head(torch.randn(2, 64).to(BF16))
    assert len(cpu_launch) == 1, "one launch a call: not wrapped twice"
    second.unpatch()  # owns nothing
    assert model.head.__dict__["forward"] is fwd
    first.unpatch()
    assert "forward" not in model.head.__dict__


def test_context_manager_and_someone_elses_wrapper(cpu_launch):
    model = make_model()
    before = snapshot(model)
    with tgv_gemm.patch(model) as handle:
        assert len(handle.patched) == 7
    assert snapshot(model) == before
    # A forward someone else put on the instance is left alone, before and after.
    other = model.blocks[0].up.forward
    model.blocks[0].up.forward = lambda x: other(x)
    handle = tgv_gemm.patch(model)
    assert handle.skipped["blocks.0.up"] == "forward already replaced by another wrapper"
    model.blocks[1].up.forward = lambda x: None  # replaced after patching: not ours to undo
    handle.unpatch()
    assert handle.not_restored == ["blocks.1.up"]
    assert "forward" in model.blocks[1].up.__dict__


def test_include_backend_and_bad_backend(cpu_launch):
    model = make_model()
    handle = tgv_gemm.patch(model, backend="cublas", include=lambda name, m: name != "head")
    assert handle.skipped["head"] == "excluded"
    with torch.no_grad():
        model.blocks[0].up(torch.randn(2, 64).to(BF16))
    assert cpu_launch[-1][1] == "cublas"
    with pytest.raises(ValueError, match="backend='fast'"):
        tgv_gemm.patch(model, backend="fast")


def test_default_devices_leave_cpu_weights_alone():
    model = make_model()
    handle = tgv_gemm.patch(model)
    assert handle.patched == []
    assert set(handle.skipped.values()) >= {"weight on cpu (CUDA only)"}


def test_a_patched_model_deepcopies_and_keeps_its_state_dict(cpu_launch):
    model = make_model()
    keys = list(model.state_dict())
    tgv_gemm.patch(model)
    assert list(model.state_dict()) == keys
    twin = copy.deepcopy(model)
    assert twin.head.forward.__self__ is twin.head, "the copy's forward is bound to the copy"
    with torch.no_grad():
        twin.head(torch.randn(2, 64).to(BF16))
    assert cpu_launch == [(twin.head.weight.data_ptr(), "auto")]


def saved_and_loaded(model):
    """torch.save of the whole module, then torch.load: a new model."""
    import io

    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def test_a_saved_patched_model_loads_patched(cpu_launch):
    model = make_model()
    handle = tgv_gemm.patch(model, backend="tgv")
    assert str(inspect.signature(model.head.forward)) == "(x)", "as the bound method it replaces"
    twin = saved_and_loaded(model)
    fwd = twin.head.__dict__["forward"]
    assert fwd.__self__ is twin.head and fwd.__func__ is model.head.__dict__["forward"].__func__
    assert tgv_gemm.patch(twin).skipped["head"] == "already patched"
    x = torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        twin.head(x)
    assert cpu_launch == [(twin.head.weight.data_ptr(), "tgv")], "the loaded forward routes as the saved one"
    handle.unpatch()
    del twin.head.forward  # a loaded model has no handle: taking the attribute away unpatches
    with torch.no_grad():
        twin.head(x)
    assert len(cpu_launch) == 1


def test_the_fusion_seam(cpu_launch, monkeypatch):
    seen = []

    def fused_forward(self, x):
        seen.append("fused")
        return self.down(F.silu(self.up(x))) + self.own(x) + self.narrow(self.odd(x))

    def fuser(name, module, backend):
        if isinstance(module, Block) and name == "blocks.0":
            return _patch.Fusion(fused_forward, ["up", "down"], "up+down (test)")
        return None

    monkeypatch.setattr(_patch, "FUSERS", [fuser])
    model = make_model()
    before = snapshot(model)
    handle = tgv_gemm.patch(model)
    assert handle.fused == {"blocks.0": "up+down (test)"}
    assert handle.covered == ["blocks.0.up", "blocks.0.down"]
    assert "blocks.0.up" not in handle.patched and "blocks.1.up" in handle.patched
    assert handle.counts()["fused"] == 1 and "1 modules fused (2 linears)" in handle.summary()
    with torch.no_grad():
        model(torch.randn(2, 64).to(BF16))
    assert seen == ["fused"]
    handle.unpatch()
    assert snapshot(model) == before
    nofuse = tgv_gemm.patch(model, fuse=False)
    assert nofuse.fused == {} and "blocks.0.up" in nofuse.patched
    nofuse.unpatch()


# ---- on a GPU: the real kernels ---------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def gpu_model():
    torch.manual_seed(1)
    layers = nn.Sequential(nn.Linear(1024, 4096, bias=False), nn.SiLU(), nn.Linear(4096, 1024, bias=True),
                           nn.Linear(1024, 1000))
    return layers.to("cuda", BF16).eval()


def check_each_linear(model, x):
    """Runs model(x) with a hook on every linear comparing its output to the
    fp32 F.linear of its (bf16) input; returns the number checked."""
    from tgv_testutil import assert_close, ref_linear

    checked = []

    def hook(module, args, out):
        assert_close(out, ref_linear(args[0], module.weight, module.bias), "linear %d" % len(checked))
        checked.append(1)

    hooks = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.inference_mode():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    return len(checked)


@cuda
@pytest.mark.parametrize("m", [1, 7, 64, 300])
def test_patched_linears_match_the_fp32_reference(m, monkeypatch):
    from tgv_testutil import rand

    model = gpu_model()
    launches = []
    real = _patch._tgv_linear

    def counting(*args, **kw):
        launches.append(1)
        return real(*args, **kw)

    handle = tgv_gemm.patch(model)
    assert handle.patched == ["0", "2", "3"] and handle.skipped == {}
    monkeypatch.setattr(_patch, "_tgv_linear", counting)
    assert check_each_linear(model, rand(m, 1024)) == 3
    assert len(launches) == 3, "each linear ran tgv_gemm.linear"
    handle.unpatch()


@cuda
def test_a_patched_model_in_a_cuda_graph():
    from tgv_testutil import rand

    model = gpu_model()
    handle = tgv_gemm.patch(model)
    static_x = rand(4, 1024)
    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            model(static_x)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(static_x)
        x = rand(4, 1024)
        static_x.copy_(x)
        static_out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        eager = model(x)
    # Eager is checked linear by linear against fp32; the replay runs the same kernels.
    assert check_each_linear(model, x) == 3
    assert torch.equal(static_out, eager), "replay and eager run the same kernels: bitwise equal"
    handle.unpatch()
    assert all("forward" not in m.__dict__ for m in model.modules())


# ---- a Hugging Face Llama (transformers), as bench/python/e2e_decode.py runs it ----


def tiny_llama(device):
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
                                      tie_word_embeddings=False, attn_implementation="sdpa")
    old = torch.get_default_dtype()
    torch.set_default_dtype(BF16)
    try:
        torch.manual_seed(2)
        with torch.device(device):
            model = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(old)
    return transformers, model.eval()


def decode(transformers, model, prompt, tok, steps):
    """Prefill then `steps` decode steps with a StaticCache; the last logits."""
    cache = transformers.StaticCache(config=model.config, max_cache_len=prompt.shape[1] + steps + 4)
    with torch.inference_mode():
        model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
        for _ in range(steps):
            logits = model(input_ids=tok, past_key_values=cache, use_cache=True).logits
    return cache, logits


def hooked_decode(transformers, model, prompt, tok, hooks):
    """Three eager steps (the reference) with hooks {module name: forward hook};
    the last logits."""
    handles = [model.get_submodule(n).register_forward_hook(h) for n, h in hooks.items()]
    try:
        return decode(transformers, model, prompt, tok, 3)[1]
    finally:
        for h in handles:
            h.remove()


def captured_third_step(transformers, model, prompt, tok):
    """Two eager steps, then the third captured in a CUDA graph and replayed
    (at the position the cache holds on the device); its logits."""
    cache, _ = decode(transformers, model, prompt, tok, 2)
    with torch.inference_mode():
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = model(input_ids=tok, past_key_values=cache, use_cache=True).logits
        logits.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
    return logits


def test_a_hugging_face_llama(cpu_launch):
    transformers, model = tiny_llama("cpu")
    before = snapshot(model)
    prompt = torch.randint(0, 256, (3, 5))
    tok = torch.randint(0, 256, (3, 1))
    _, ref = decode(transformers, model, prompt, tok, 2)
    handle = tgv_gemm.patch(model, fuse=False)
    assert len(handle.patched) == 2 * 7 + 1 and handle.skipped == {}, handle.summary()
    _, got = decode(transformers, model, prompt, tok, 2)
    assert torch.equal(got, ref)
    assert len(cpu_launch) == 3 * 15, "prefill and two steps, every linear through the patch"
    handle.unpatch()
    assert snapshot(model) == before
    # Fused (the default): gate_proj + up_proj + SiLU of each layer in one launch,
    # and q_proj + k_proj + v_proj in one.
    del cpu_launch[:]
    handle = tgv_gemm.patch(model)
    assert sorted(handle.fused) == ["model.layers.%d.%s" % (i, m) for i in (0, 1) for m in ("mlp", "self_attn")], \
        handle.summary()
    assert len(handle.patched) == 2 * 2 + 1 and len(handle.covered) == 2 * 5 and handle.skipped == {}
    assert handle.not_fused == {}
    _, got = decode(transformers, model, prompt, tok, 2)
    torch.testing.assert_close(got, ref, rtol=2e-2, atol=2e-2)  # CPU bf16 matmul over [q; k; v] vs each alone
    assert len(cpu_launch) == 3 * (2 * 4 + 1) and sum(len(c) == 3 for c in cpu_launch) == 3 * 2
    merged = {model.get_submodule("model.layers.%d.self_attn.q_proj" % i).weight.data_ptr() for i in (0, 1)}
    assert sum(c[0] in merged for c in cpu_launch) == 3 * 2, "one launch over the merged weight per layer"
    handle.unpatch()
    assert snapshot(model) == before


@cuda
def test_a_hugging_face_llama_decode_step_in_a_cuda_graph():
    from tgv_testutil import assert_close, ref_linear

    transformers, model = tiny_llama("cuda")
    handle = tgv_gemm.patch(model, fuse=False)  # the fused step: test_fusion.py
    assert len(handle.patched) == 15, handle.summary()
    prompt = torch.randint(0, 256, (4, 6), device="cuda")
    tok = torch.randint(0, 256, (4, 1), device="cuda")
    checked = []

    def hook(module, args, out):
        assert_close(out, ref_linear(args[0], module.weight, module.bias), "linear")
        checked.append(1)

    eager = hooked_decode(transformers, model, prompt, tok, {n: hook for n in handle.patched})
    assert len(checked) == 4 * 15
    logits = captured_third_step(transformers, model, prompt, tok)
    assert torch.equal(logits, eager), "the captured step computes what the eager one does"
    handle.unpatch()
