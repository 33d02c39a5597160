"""The gated-MLP fuser of tgv_gemm.patch(model): which modules it fuses and
why it refuses the others (each refusal's message), that the merged weight is
the linears' storage (data_ptr checks) and is reused by a second patch, that
the fused forward falls back where it must, that unpatch() restores; and (on a
GPU) fused outputs against an fp32 reference of the module, eager and inside a
CUDA graph, with no memory added by the merge.

On the CPU the launches are the stand-ins of test_patch.cpu_launch (the
module's own ops on the merged weight's halves), so the routing and the
storage are what is checked; the kernels are the GPU tests'.

GPU tolerance, element-wise: |out - ref| <= 2e-2 * (RMS(ref) + |ref|), ref the
MLP in fp32 (fp32 weights, fp32 activation) on the same bf16 input. The fused
path rounds twice (the [M, I] activation product and the output to bf16, up to
2^-9 relative each); the first propagates through down_proj as noise of about
2^-9 / sqrt(3) of RMS(ref), hence the RMS term. That arithmetic emulated on the
CPU at these shapes peaks at 0.73 of a 1e-2 bound (0.36 of this one); the
unfused bf16 torch MLP reaches 1.4 of 1e-2; a wrong activation or a swapped
half is off by more than 10%.
"""

import copy

import pytest

torch = pytest.importorskip("torch")
try:
    import tgv_gemm
    from tgv_gemm import _fusers
except ImportError as e:  # no built library, or no CUDA runtime to load it with
    pytest.skip(str(e), allow_module_level=True)

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from test_patch import captured_third_step, cpu_launch, hooked_decode, snapshot, tiny_llama  # noqa: E402, F401 - cpu_launch is a fixture

BF16 = torch.bfloat16
ELT = 2  # bytes per bf16 element


class GatedMLP(nn.Module):
    """As transformers' LlamaMLP, built here (no transformers needed)."""

    def __init__(self, hidden, inter, act=None, bias=False, up_bias=None):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=bias)
        self.up_proj = nn.Linear(hidden, inter, bias=bias if up_bias is None else up_bias)
        self.down_proj = nn.Linear(inter, hidden, bias=bias)
        self.act_fn = nn.SiLU() if act is None else act

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class SwappedMLP(GatedMLP):
    def forward(self, x):
        """The factors the other way round, returned directly."""
        return self.down_proj(self.up_proj(x) * self.act_fn(self.gate_proj(x)))


class AddMLP(GatedMLP):
    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) + self.up_proj(x))


class ScaledMLP(GatedMLP):
    def forward(self, x, scale=1.0):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x)) * scale


def traced(fn):
    return fn


class DecoratedMLP(GatedMLP):
    @traced
    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class SiLUActivation(nn.Module):
    """Named like transformers' class, but not it: refused by type."""

    def forward(self, x):
        return F.silu(x)


class ShiftedSiLU(nn.SiLU):
    def forward(self, x):
        return F.silu(x) + 1


class Net(nn.Module):
    def __init__(self, mlps):
        super().__init__()
        self.mlps = nn.ModuleList(mlps)
        self.head = nn.Linear(64, 32, bias=False)

    def forward(self, x):
        for mlp in self.mlps:
            x = x + mlp(x)
        return self.head(x)


def make(*mlps, device="cpu"):
    torch.manual_seed(3)
    mlps = mlps or (GatedMLP(64, 128), GatedMLP(64, 128))
    return Net(list(mlps)).to(device, BF16).eval()


def with_reference(*mlps):
    """(net, x, net(x) before any patch)."""
    net = make(*mlps)
    x = torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        return net, x, net(x)


def fused_launches(calls):
    return [c for c in calls if len(c) == 3]


# ---- CPU: matching, storage, refusals, fallbacks ---------------------------------


def test_fuses_gated_mlps_and_computes_the_same(cpu_launch):
    net = make()
    x = torch.randn(3, 5, 64).to(BF16)
    with torch.no_grad():
        ref = net(x)
    handle = tgv_gemm.patch(net)
    assert handle.fused == {
        "mlps.%d" % i: "gate_proj+up_proj+silu: silu_mul_linear over one 256x64 weight" for i in (0, 1)}
    assert handle.covered == ["mlps.0.gate_proj", "mlps.0.up_proj", "mlps.1.gate_proj", "mlps.1.up_proj"]
    assert sorted(handle.patched) == ["head", "mlps.0.down_proj", "mlps.1.down_proj"]
    assert handle.skipped == {} and handle.not_fused == {}
    assert handle.counts() == {"patched": 3, "fused": 2, "covered": 4, "not_fused": {}, "skipped": {}}
    assert "2 modules fused (4 linears)" in handle.summary()
    assert "fused 2: gate_proj+up_proj+silu" in handle.summary()
    with torch.no_grad():
        got = net(x)
    assert torch.equal(got, ref)
    merged = [net.mlps[i].__dict__[_fusers.STATE].weight.data_ptr() for i in (0, 1)]
    assert [c[0] for c in fused_launches(cpu_launch)] == merged, "one fused launch per MLP, on its merged weight"
    assert len(cpu_launch) == 2 * 2 + 1


def test_the_linears_weights_become_views_of_the_merged_weight(cpu_launch):
    net = make(GatedMLP(64, 128, bias=True))
    mlp = net.mlps[0]
    gate, up = mlp.gate_proj, mlp.up_proj
    params = {n: p for n, p in net.named_parameters()}
    values = {n: p.detach().clone() for n, p in params.items()}
    keys = list(net.state_dict())
    tgv_gemm.patch(net)
    st = mlp.__dict__[_fusers.STATE]
    w, b = st.weight, st.bias
    assert st.copied and w.shape == (256, 64) and w.is_contiguous() and b.shape == (256,)
    assert gate.weight.data_ptr() == w.data_ptr() and up.weight.data_ptr() == w.data_ptr() + 128 * 64 * ELT
    assert gate.bias.data_ptr() == b.data_ptr() and up.bias.data_ptr() == b.data_ptr() + 128 * ELT
    for p in (gate.weight, up.weight):
        assert p.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
        assert p.untyped_storage().nbytes() == 256 * 64 * ELT, "one storage: the weight is held once"
    assert {n: p for n, p in net.named_parameters()} == params, "the same Parameter objects"
    assert all(torch.equal(p, values[n]) for n, p in net.named_parameters()), "the same values"
    assert all(p.requires_grad for p in params.values())
    assert list(net.state_dict()) == keys
    # load_state_dict copies into the views: the merged weight follows.
    sd = {k: v.clone() + 1 for k, v in net.state_dict().items()}
    net.load_state_dict(sd)
    assert torch.equal(w[:128], sd["mlps.0.gate_proj.weight"]) and torch.equal(w[128:], sd["mlps.0.up_proj.weight"])


def test_unpatch_restores_and_a_second_patch_reuses_the_merge(cpu_launch):
    net = make()
    before = snapshot(net)
    first = tgv_gemm.patch(net)
    w = net.mlps[0].__dict__[_fusers.STATE].weight
    first.unpatch()
    assert snapshot(net) == before, "forwards and the fusion's attribute gone"
    assert net.mlps[0].gate_proj.weight.data_ptr() == w.data_ptr(), "the weights stay views (documented)"
    x = torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        ref = net(x)
    assert cpu_launch == []
    second = tgv_gemm.patch(net)
    st = net.mlps[0].__dict__[_fusers.STATE]
    assert not st.copied and st.weight.data_ptr() == w.data_ptr(), "already one tensor: nothing copied"
    with torch.no_grad():
        assert torch.equal(net(x), ref)
    second.unpatch()
    assert snapshot(net) == before


def test_patching_twice_does_not_fuse_twice(cpu_launch):
    net = make()
    first = tgv_gemm.patch(net)
    second = tgv_gemm.patch(net)
    assert second.fused == {} and second.patched == []
    assert second.skipped["mlps.0.gate_proj"] == "already fused (into mlps.0)"
    assert second.skipped["mlps.1.up_proj"] == "already fused (into mlps.1)"
    assert second.skipped["mlps.0.down_proj"] == "already patched"
    nofuse = tgv_gemm.patch(net, fuse=False)  # the covered linears stay covered
    assert nofuse.patched == [] and nofuse.skipped["mlps.0.gate_proj"] == "already fused (into mlps.0)"
    with torch.no_grad():
        net(torch.randn(2, 64).to(BF16))
    assert len(fused_launches(cpu_launch)) == 2
    second.unpatch()
    first.unpatch()
    assert all("forward" not in m.__dict__ and _fusers.STATE not in m.__dict__ for m in net.modules())


def test_fuse_false_copies_nothing(cpu_launch):
    net = make()
    ptrs = [p.data_ptr() for p in net.parameters()]
    handle = tgv_gemm.patch(net, fuse=False)
    assert handle.fused == {} and len(handle.patched) == 7
    assert [p.data_ptr() for p in net.parameters()] == ptrs


def test_gelu_tanh_and_the_other_forward_shapes(cpu_launch):
    net = make(GatedMLP(64, 128, act=nn.GELU(approximate="tanh")), SwappedMLP(64, 128))
    x = torch.randn(4, 64).to(BF16)
    with torch.no_grad():
        ref = net(x)
    handle = tgv_gemm.patch(net)
    assert handle.fused["mlps.0"].startswith("gate_proj+up_proj+gelu_tanh: gelu_tanh_mul_linear")
    assert handle.fused["mlps.1"].startswith("gate_proj+up_proj+silu: silu_mul_linear")
    with torch.no_grad():
        assert torch.equal(net(x), ref)
    assert [c[2] for c in fused_launches(cpu_launch)] == ["gelu_tanh", "silu"]


def refusal(mlp, cpu_launch):
    net, x, ref = with_reference(mlp)
    handle = tgv_gemm.patch(net)
    assert handle.fused == {} and handle.covered == []
    assert "mlps.0.gate_proj" in handle.patched or "mlps.0.gate_proj" in handle.skipped
    with torch.no_grad():
        assert torch.equal(net(x), ref), "refused: the module's own forward, its linears patched one by one"
    assert fused_launches(cpu_launch) == []
    assert handle.summary().count("not fused 1: ") == 1
    handle.unpatch()
    return handle.not_fused["mlps.0"]


@pytest.mark.parametrize("mlp, why", [
    (lambda: GatedMLP(64, 128, bias=True, up_bias=False), "gate_proj has a bias and up_proj has none"),
    (lambda: GatedMLP(64, 128, bias=False, up_bias=True), "up_proj has a bias and gate_proj has none"),
    (lambda: GatedMLP(64, 128, act=nn.ReLU()), "act_fn is ReLU: only SiLU and GELU (tanh) have a fused epilogue"),
    (lambda: GatedMLP(64, 128, act=nn.GELU()),
     "act_fn is GELU(approximate='none'): only SiLU and GELU (tanh) have a fused epilogue"),
    (lambda: GatedMLP(64, 128, act=SiLUActivation()),
     "act_fn is SiLUActivation: only SiLU and GELU (tanh) have a fused epilogue"),
    (lambda: GatedMLP(64, 128, act=ShiftedSiLU()),
     "act_fn is ShiftedSiLU: only SiLU and GELU (tanh) have a fused epilogue"),
    (lambda: AddMLP(64, 128),
     "AddMLP: its forward is not `return down_proj(act_fn(gate_proj(x)) * up_proj(x))`"),
    (lambda: ScaledMLP(64, 128), "ScaledMLP: its forward takes other arguments than (self, x)"),
    (lambda: DecoratedMLP(64, 128), "DecoratedMLP: its forward is decorated"),
])
def test_refusals_say_why(mlp, why, cpu_launch):
    assert refusal(mlp(), cpu_launch) == why


def test_more_refusals(cpu_launch):
    mlp = GatedMLP(64, 128)
    mlp.gate_proj = nn.Linear(64, 96, bias=False)  # the module cannot run: only the verdict
    assert tgv_gemm.patch(make(mlp)).not_fused == {
        "mlps.0": "gate_proj 96x64 and up_proj 128x64 differ in shape or device"}
    mlp = GatedMLP(64, 128)
    mlp.gate_proj.register_forward_hook(lambda *a: None)
    assert refusal(mlp, cpu_launch) == "gate_proj has hooks (fusion would skip them)"
    mlp = GatedMLP(64, 128)
    mlp.act_fn.register_forward_pre_hook(lambda *a: None)
    assert refusal(mlp, cpu_launch) == "act_fn has hooks (fusion would skip them)"
    mlp = GatedMLP(64, 128)
    mlp.act_fn.forward = lambda t: F.silu(t)
    assert refusal(mlp, cpu_launch) == "act_fn (SiLU) has an instance forward of its own"
    net = make()
    other = net.mlps[0].forward
    net.mlps[0].forward = lambda x: other(x)  # as accelerate's hooks do
    assert tgv_gemm.patch(net).not_fused == {"mlps.0": "forward already replaced by another wrapper"}
    net = make()  # make() casts to bf16: the fp32 weight comes after
    net.mlps[0].up_proj.weight.data = net.mlps[0].up_proj.weight.data.float()
    assert tgv_gemm.patch(net).not_fused == {"mlps.0": "up_proj: weight dtype float32 (bf16 only)"}


def test_training_mode_is_refused(cpu_launch):
    net = make().train()
    handle = tgv_gemm.patch(net)
    assert handle.not_fused == {
        "mlps.%d" % i: "GatedMLP is in training mode: fusion is for inference (model.eval() first)" for i in (0, 1)}
    assert len(handle.patched) == 7
    handle.unpatch()


def test_include_keeps_a_fusion_from_covering_an_excluded_linear(cpu_launch):
    net = make()
    handle = tgv_gemm.patch(net, include=lambda name, m: name != "mlps.0.up_proj")
    assert handle.not_fused == {"mlps.0": "excluded: mlps.0.up_proj"}
    assert handle.skipped == {"mlps.0.up_proj": "excluded"}
    assert list(handle.fused) == ["mlps.1"] and "mlps.0.gate_proj" in handle.patched
    assert net.mlps[0].gate_proj.weight.untyped_storage().nbytes() == 128 * 64 * ELT, "not merged"


def test_global_hooks_are_refused(cpu_launch):
    h = torch.nn.modules.module.register_module_forward_hook(lambda *a: None)
    try:
        handle = tgv_gemm.patch(make())
    finally:
        h.remove()
    assert set(handle.not_fused.values()) == {
        "global forward hooks are registered (fusion would skip them for gate_proj and up_proj)"}


def test_the_numeric_probe_can_refuse(monkeypatch):
    assert _fusers.activation_kind(nn.SiLU(), "cpu") == ("silu", None)
    assert _fusers.activation_kind(F.silu, "cpu") == ("silu", None)
    assert _fusers.activation_kind(nn.GELU(approximate="tanh"), "cpu") == ("gelu_tanh", None)
    monkeypatch.setitem(_fusers._REFERENCE, "silu", torch.sigmoid)
    assert _fusers.activation_kind(nn.SiLU(), "cpu") == (None, "act_fn (SiLU) does not compute silu on the numeric probe")


def test_transformers_activations():
    acts = pytest.importorskip("transformers.activations")
    kind = _fusers.activation_kind
    assert kind(acts.SiLUActivation(), "cpu") == ("silu", None)
    for act in (acts.GELUTanh(), acts.GELUTanh(use_gelu_tanh_python=True), acts.PytorchGELUTanh(),
                acts.NewGELUActivation(), acts.FastGELUActivation(), acts.ACT2FN["gelu_pytorch_tanh"]):
        assert kind(act, "cpu") == ("gelu_tanh", None), act
    assert kind(acts.ACT2FN["silu"], "cpu")[0] == "silu" and kind(acts.ACT2FN["swish"], "cpu")[0] == "silu"
    for name in ("gelu", "quick_gelu", "gelu_python", "relu", "gelu_accurate"):
        k, why = kind(acts.ACT2FN[name], "cpu")
        assert k is None and "only SiLU and GELU (tanh)" in why, (name, why)


def test_the_fused_forward_falls_back_where_it_must(cpu_launch):
    net, x, ref = with_reference()
    tgv_gemm.patch(net)
    out = net(x)  # grad enabled and the weights require grad: the module's own forward
    assert fused_launches(cpu_launch) == [] and out.requires_grad
    out.float().sum().backward()
    assert net.mlps[0].gate_proj.weight.grad is not None, "autograd through the views"
    with torch.inference_mode():
        assert torch.equal(net(x), ref)
        assert len(fused_launches(cpu_launch)) == 2
    # A weight rebound after patching breaks the aliasing: the module's own forward, still right.
    mlp = net.mlps[0]
    mlp.gate_proj.weight.data = mlp.gate_proj.weight.data.clone()
    del cpu_launch[:]
    with torch.inference_mode():
        assert torch.equal(net(x), ref)
    assert [c[2] for c in fused_launches(cpu_launch)] == ["silu"], "only the intact MLP fused"


def test_a_deepcopy_of_a_fused_model_computes_the_same(cpu_launch):
    net, x, ref = with_reference()
    tgv_gemm.patch(net)
    twin = copy.deepcopy(net)  # Parameter.__deepcopy__ clones: the copy's merge no longer aliases
    del cpu_launch[:]
    with torch.inference_mode():
        assert torch.equal(twin(x), ref)
    assert fused_launches(cpu_launch) == [], "the copy runs its MLPs' own forwards"
    assert twin.mlps[0].__dict__[_fusers.STATE].weight is None, "and holds no merged weight of its own"


def test_a_saved_fused_model_loads_fused(cpu_launch):
    from test_patch import saved_and_loaded

    net, x, ref = with_reference()
    tgv_gemm.patch(net)
    twin = saved_and_loaded(net)
    mlp = twin.mlps[0]
    st = mlp.__dict__[_fusers.STATE]
    assert mlp.up_proj.weight.data_ptr() == st.weight.data_ptr() + 128 * 64 * ELT, "still views of one weight"
    with torch.inference_mode():
        assert torch.equal(twin(x), ref)
    assert len(fused_launches(cpu_launch)) == 2, "each loaded MLP runs its fused forward"


def test_torch_compile_traces_the_fused_forward(cpu_launch):
    net, x, ref = with_reference()
    tgv_gemm.patch(net)
    compiled = torch.compile(net, backend="eager", fullgraph=True)  # fullgraph: no break at data_ptr()
    with torch.inference_mode():
        assert torch.equal(compiled(x), ref)
    assert len(fused_launches(cpu_launch)) == 2


def test_forward_sources():
    fm = _fusers.forward_mismatch
    assert fm(GatedMLP.forward) is None and fm(SwappedMLP.forward) is None
    assert "is not `return" in fm(AddMLP.forward)
    assert "is not `return" in fm(nn.Linear.forward)
    assert fm(lambda self, x: x) == "its forward is not a plain function"


def test_transformers_mlps_are_recognized():
    pytest.importorskip("transformers")
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen2 import modeling_qwen2

    assert _fusers.forward_mismatch(modeling_llama.LlamaMLP.forward) is None
    assert _fusers.forward_mismatch(modeling_qwen2.Qwen2MLP.forward) is None


# ---- on a GPU: the fused kernels -----------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

HIDDEN, INTER = 1024, 2816  # INTER a multiple of 8: the sm_90 kernel serves the gated epilogue


def ref_mlp(mlp, x, kind):
    """The MLP in fp32 (weights, activation, products) on the same bf16 input."""

    def lin(m, t):
        return F.linear(t, m.weight.float(), None if m.bias is None else m.bias.float())

    act = F.silu if kind == "silu" else (lambda t: F.gelu(t, approximate="tanh"))
    x = x.float()
    return lin(mlp.down_proj, act(lin(mlp.gate_proj, x)) * lin(mlp.up_proj, x))


def check_mlp(out, ref, what=""):
    assert out.dtype == BF16 and out.shape == ref.shape, (what, out.dtype, out.shape)
    bound = 2e-2 * (ref.pow(2).mean().sqrt() + ref.abs())
    bad = ~((out.float() - ref).abs() <= bound)  # NaN counts as bad
    assert not bool(bad.any()), "%s: %d of %d elements off; first at %s: %g vs %g" % (
        what, int(bad.sum()), bad.numel(), bad.nonzero()[0].tolist(), out.float()[bad][0].item(), ref[bad][0].item())


def gpu_mlp(kind, bias):
    torch.manual_seed(4)
    act = nn.SiLU() if kind == "silu" else nn.GELU(approximate="tanh")
    return GatedMLP(HIDDEN, INTER, act=act, bias=bias).to("cuda", BF16).eval()


@cuda
@pytest.mark.parametrize("kind", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("m", [1, 7, 64, 300])
def test_fused_mlp_matches_the_fp32_reference(kind, bias, m, monkeypatch):
    from tgv_testutil import rand

    mlp = gpu_mlp(kind, bias)
    launches = []
    real = _fusers.LAUNCH[kind]

    def counting(*args, **kw):
        launches.append(1)
        return real(*args, **kw)

    monkeypatch.setitem(_fusers.LAUNCH, kind, counting)
    handle = tgv_gemm.patch(mlp)
    assert list(handle.fused) == [""] and handle.patched == ["down_proj"], handle.summary()
    x = rand(m, HIDDEN)
    with torch.inference_mode():
        out = mlp(x)
    assert launches == [1], "the fused launch ran"
    check_mlp(out, ref_mlp(mlp, x, kind), "%s bias=%s m=%d" % (kind, bias, m))
    with torch.inference_mode():
        assert torch.equal(mlp(x), out), "bitwise repeatable"
    handle.unpatch()


@cuda
def test_a_compiled_fused_mlp_runs_the_same_kernels():
    from tgv_testutil import rand

    mlp = gpu_mlp("silu", False)
    tgv_gemm.patch(mlp)
    x = rand(4, HIDDEN)
    with torch.inference_mode():
        eager = mlp(x)
        compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)(x)  # the ops' fake kernels
    check_mlp(eager, ref_mlp(mlp, x, "silu"), "eager")
    assert torch.equal(compiled, eager)


@cuda
def test_the_merge_adds_no_memory():
    mlp = gpu_mlp("silu", True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()  # sizes are multiples of 512 B: no allocator rounding differs
    handle = tgv_gemm.patch(mlp)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before, "the originals were freed: the weight is held once"
    st = mlp.__dict__[_fusers.STATE]
    assert mlp.up_proj.weight.data_ptr() == st.weight.data_ptr() + INTER * HIDDEN * ELT
    handle.unpatch()


@cuda
def test_a_fused_hugging_face_llama_decode_step_in_a_cuda_graph():
    from tgv_testutil import assert_close, ref_linear

    transformers, model = tiny_llama("cuda")
    handle = tgv_gemm.patch(model)
    assert sorted(handle.fused) == ["model.layers.%d.%s" % (i, m) for i in (0, 1) for m in ("mlp", "self_attn")], \
        handle.summary()
    assert len(handle.patched) == 5 and handle.not_fused == {} and handle.skipped == {}
    prompt = torch.randint(0, 256, (4, 6), device="cuda")
    tok = torch.randint(0, 256, (4, 1), device="cuda")
    checked = []

    def mlp_hook(module, args, out):
        check_mlp(out, ref_mlp(module, args[0], "silu"), "fused mlp")
        checked.append("mlp")

    def linear_hook(module, args, out):
        assert_close(out, ref_linear(args[0], module.weight, module.bias), "linear")
        checked.append("linear")

    hooks = {n: mlp_hook for n in handle.fused if n.endswith("mlp")}
    qkv = [n for n in handle.covered if n.rsplit(".", 1)[1] in ("q_proj", "k_proj", "v_proj")]
    assert len(qkv) == 6
    hooks.update({n: linear_hook for n in handle.patched + qkv})  # q, k, v: their columns of the one GEMM
    eager = hooked_decode(transformers, model, prompt, tok, hooks)
    assert checked.count("mlp") == 4 * 2 and checked.count("linear") == 4 * 11
    logits = captured_third_step(transformers, model, prompt, tok)
    assert torch.equal(logits, eager), "the captured fused step computes what the eager one does"
    handle.unpatch()
