"""The q/k/v fuser of tgv_gemm.patch(model): which attentions it fuses and why
it refuses the others, that the three weights become views of one merged
weight, that one launch serves the three projections when they are called on
one tensor and each runs its own GEMM otherwise (another input, a rebound
weight, another thread's call in between), that unpatch() restores; and (on a
GPU) each projection's columns against an fp32 reference, eager and in a CUDA
graph.

On the CPU the launch is test_patch.cpu_launch's stand-in (F.linear, recording
the weight pointer of each call), so the routing and the storage are checked;
the kernels are the GPU tests'. GPU tolerance, element-wise, as every linear:
|out - ref| <= 1e-2 + 1e-2 |ref| (tgv_testutil), ref F.linear in fp32 on the
same bf16 input.
"""

import threading

import pytest

torch = pytest.importorskip("torch")
try:
    import tgv_gemm
    from tgv_gemm import _fusers
except ImportError as e:  # no built library, or no CUDA runtime to load it with
    pytest.skip(str(e), allow_module_level=True)

import torch.nn as nn  # noqa: E402

from test_patch import cpu_launch  # noqa: E402, F401 - a fixture

BF16 = torch.bfloat16
ELT = 2
HIDDEN, NQ, NKV = 64, 64, 32


class Attention(nn.Module):
    """The projections as transformers' attentions call them (no attention
    arithmetic: the fuser only looks at the three calls)."""

    def __init__(self, hidden=HIDDEN, nq=NQ, nkv=NKV, bias=False, k_in=None, v_bias=None):
        super().__init__()
        self.q_proj = nn.Linear(hidden, nq, bias=bias)
        self.k_proj = nn.Linear(hidden if k_in is None else k_in, nkv, bias=bias)
        self.v_proj = nn.Linear(hidden, nkv, bias=bias if v_bias is None else v_bias)
        self.o_proj = nn.Linear(nq, hidden, bias=False)

    def forward(self, hidden_states, scale=1.0):
        shape = (*hidden_states.shape[:-1], -1, 16)
        q = self.q_proj(hidden_states).view(shape)
        k = self.k_proj(hidden_states).view(shape)
        v = self.v_proj(hidden_states).view(shape)
        mixed = q * k.sum(-2, keepdim=True) + v.mean(-2, keepdim=True)
        return self.o_proj(mixed.flatten(-2)) * scale


class CrossAttention(Attention):
    def forward(self, h, context):
        return self.o_proj(self.q_proj(h) + self.k_proj(context).sum(-1, keepdim=True) + self.v_proj(context)[..., :1])


class Rebinding(Attention):
    def forward(self, h):
        q = self.q_proj(h)
        h = h * 2
        return self.o_proj(q + self.k_proj(h).sum(-1, keepdim=True) + self.v_proj(h)[..., :1])


class InPlace(Attention):
    def forward(self, h):
        q = self.q_proj(h)
        h.mul_(2)
        return self.o_proj(q + self.k_proj(h).sum(-1, keepdim=True) + self.v_proj(h)[..., :1])


class Twice(Attention):
    def forward(self, h):
        q = self.q_proj(h) + self.q_proj(h)
        return self.o_proj(q + self.k_proj(h).sum(-1, keepdim=True) + self.v_proj(h)[..., :1])


class NotAnArgument(Attention):
    def forward(self, x):
        h = x + 1
        return self.o_proj(self.q_proj(h) + self.k_proj(h).sum(-1, keepdim=True) + self.v_proj(h)[..., :1])


class Net(nn.Module):
    def __init__(self, attns):
        super().__init__()
        self.attns = nn.ModuleList(attns)

    def forward(self, x):
        for a in self.attns:
            x = x + a(x)
        return x


def make(*attns, device="cpu"):
    torch.manual_seed(5)
    return Net(list(attns or (Attention(), Attention()))).to(device, BF16).eval()


def launches_over(calls, weight):
    return sum(c[0] == weight.data_ptr() for c in calls)


def test_fuses_and_computes_the_same(cpu_launch):
    net = make()
    x = torch.randn(3, 64).to(BF16)
    with torch.no_grad():
        ref = net(x)
        handle = tgv_gemm.patch(net)
        assert sorted(handle.fused) == ["attns.0", "attns.1"], handle.summary()
        assert handle.fused["attns.0"] == "q_proj+k_proj+v_proj: one GEMM over a 128x64 weight"
        assert sorted(handle.patched) == ["attns.0.o_proj", "attns.1.o_proj"]
        assert len(handle.covered) == 6 and handle.skipped == {} and handle.not_fused == {}
        got = net(x)
    torch.testing.assert_close(got, ref, rtol=2e-2, atol=2e-2)
    assert len(cpu_launch) == 2 * 2, "one merged launch and o_proj per attention"
    for a in net.attns:
        st = a.q_proj.__dict__[_fusers.QKV]
        assert launches_over(cpu_launch, st.weight) == 1
        assert a.k_proj.__dict__[_fusers.QKV] is st and a.v_proj.__dict__[_fusers.QKV] is st
        assert st.local.x is None and st.local.y is None, "nothing held past the attention"
    handle.unpatch()
    for a in net.attns:
        for p in (a.q_proj, a.k_proj, a.v_proj):
            assert "forward" not in p.__dict__ and _fusers.QKV not in p.__dict__


def test_each_projection_returns_its_columns_as_a_view(cpu_launch):
    a = make(Attention(bias=True)).attns[0]
    x = torch.randn(2, 5, 64).to(BF16)
    with torch.no_grad():
        ref = [p(x) for p in (a.q_proj, a.k_proj, a.v_proj)]
        tgv_gemm.patch(a)
        q, k, v = (p(x) for p in (a.q_proj, a.k_proj, a.v_proj))
    assert len(cpu_launch) == 1
    base = q.data_ptr()
    assert k.data_ptr() == base + NQ * ELT and v.data_ptr() == base + (NQ + NKV) * ELT
    assert q.stride() == (5 * (NQ + 2 * NKV), NQ + 2 * NKV, 1) and q.shape == (2, 5, NQ)
    for got, want in zip((q, k, v), ref):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


def test_the_weights_become_views_of_the_merged_weight_and_a_second_patch_reuses_it(cpu_launch):
    a = make(Attention(bias=True)).attns[0]
    values = [t.detach().clone() for t in (a.q_proj.weight, a.k_proj.weight, a.v_proj.weight, a.v_proj.bias)]
    params = [a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]
    handle = tgv_gemm.patch(a)
    st = a.q_proj.__dict__[_fusers.QKV]
    assert st.copied and st.weight.shape == (NQ + 2 * NKV, HIDDEN) and st.bias.shape == (NQ + 2 * NKV,)
    assert [a.q_proj.weight, a.k_proj.weight, a.v_proj.weight] == params, "the same Parameter objects"
    assert a.k_proj.weight.data_ptr() == st.weight.data_ptr() + NQ * HIDDEN * ELT
    assert a.v_proj.weight.data_ptr() == st.weight.data_ptr() + (NQ + NKV) * HIDDEN * ELT
    assert a.v_proj.bias.data_ptr() == st.bias.data_ptr() + (NQ + NKV) * ELT
    for t, want in zip((a.q_proj.weight, a.k_proj.weight, a.v_proj.weight, a.v_proj.bias), values):
        assert torch.equal(t, want)
    again = tgv_gemm.patch(a)
    assert again.fused == {} and again.not_fused == {}
    assert again.skipped == {"%s_proj" % p: "already fused (into the model)" for p in "qkv"} | {
        "o_proj": "already patched"}
    handle.unpatch()
    tgv_gemm.patch(a)
    st2 = a.q_proj.__dict__[_fusers.QKV]
    assert not st2.copied and st2.weight.data_ptr() == st.weight.data_ptr(), "merged in place: nothing copied"


def test_another_input_computes_the_merged_output_anew(cpu_launch):
    a = make().attns[0]
    x, y = torch.randn(2, 64).to(BF16), torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        ref_k = a.k_proj(y)
        tgv_gemm.patch(a)
        st = a.q_proj.__dict__[_fusers.QKV]
        a.q_proj(x)
        k = a.k_proj(y)  # not the tensor the merged output was computed from
        assert len(cpu_launch) == 2 and launches_over(cpu_launch, st.weight) == 2
        torch.testing.assert_close(k, ref_k, rtol=2e-2, atol=2e-2)
        a.q_proj(y)  # y's merged output is held for q and v now
        a.v_proj(y)
        assert len(cpu_launch) == 2 and st.local.x is None
        a.k_proj(x)
        a.k_proj(x)  # twice: the second computes anew
        assert len(cpu_launch) == 4 and launches_over(cpu_launch, st.weight) == 4


def test_a_modified_input_is_not_taken_for_the_same(cpu_launch):
    a = make().attns[0]
    x = torch.randn(2, 64).to(BF16)
    with torch.no_grad():
        tgv_gemm.patch(a)
        a.q_proj(x)
        x.mul_(2)  # the version counter moves (no inference mode here)
        want = nn.functional.linear(x, a.k_proj.weight)
        torch.testing.assert_close(a.k_proj(x), want, rtol=2e-2, atol=2e-2)
    assert len(cpu_launch) == 2, "computed anew for the modified tensor"


def test_a_rebound_weight_runs_its_own_gemm(cpu_launch):
    a = make().attns[0]
    x = torch.randn(2, 64).to(BF16)
    tgv_gemm.patch(a)
    st = a.q_proj.__dict__[_fusers.QKV]
    with torch.no_grad():
        a.k_proj.weight.data = torch.randn(NKV, HIDDEN).to(BF16)
        q, k, v = (p(x) for p in (a.q_proj, a.k_proj, a.v_proj))
        for got, p in zip((q, k, v), (a.q_proj, a.k_proj, a.v_proj)):
            torch.testing.assert_close(got, nn.functional.linear(x, p.weight), rtol=2e-2, atol=2e-2)
    assert [c[0] for c in cpu_launch] == [st.weight.data_ptr(), a.k_proj.weight.data_ptr()]


def test_threads_keep_their_own_outputs(cpu_launch):
    a = make().attns[0]
    tgv_gemm.patch(a)
    xs = [torch.randn(4, 64).to(BF16) for _ in range(2)]
    refs = [[nn.functional.linear(x, p.weight) for p in (a.q_proj, a.k_proj, a.v_proj)] for x in xs]
    got = [None, None]
    gate = threading.Barrier(2)

    def run(i):
        with torch.no_grad():
            q = a.q_proj(xs[i])
            gate.wait()  # both have computed their merged output before either takes k and v
            got[i] = (q, a.k_proj(xs[i]), a.v_proj(xs[i]))

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in (0, 1):
        for g, r in zip(got[i], refs[i]):
            torch.testing.assert_close(g, r, rtol=2e-2, atol=2e-2)
    assert len(cpu_launch) == 2, "one merged launch per thread"


def test_autograd_and_other_dtypes_run_f_linear(cpu_launch):
    a = make().attns[0]
    tgv_gemm.patch(a)
    x = torch.randn(2, 64).to(BF16)
    out = a.q_proj(x)  # grad mode, weights require grad: F.linear
    assert out.requires_grad and cpu_launch == []
    with torch.no_grad():
        a.float()
        a.q_proj(torch.randn(2, 64))
    assert cpu_launch == []


def patched_with_reference():
    """(net fused by patch(), x, net(x) before the patch)."""
    net = make()
    x = torch.randn(3, 64).to(BF16)
    with torch.no_grad():
        ref = net(x)
    tgv_gemm.patch(net)
    return net, x, ref


def test_a_deepcopy_runs_each_projection_alone(cpu_launch):
    import copy

    net, x, ref = patched_with_reference()
    twin = copy.deepcopy(net)
    assert twin.attns[0].q_proj.__dict__[_fusers.QKV].weight is None, "the copy holds no merged weight"
    with torch.no_grad():
        torch.testing.assert_close(twin(x), ref, rtol=0, atol=0)
    assert len(cpu_launch) == 2 * 4, "the copy's linears are not the merged weight's views: each runs its own"
    del cpu_launch[:]
    with torch.no_grad():
        net(x)
    assert len(cpu_launch) == 2 * 2, "the original is still fused"


def test_a_saved_fused_model_loads_fused(cpu_launch):
    from test_patch import saved_and_loaded

    net, x, ref = patched_with_reference()
    twin = saved_and_loaded(net)
    a = twin.attns[0]
    assert a.k_proj.weight.data_ptr() == a.q_proj.weight.data_ptr() + NQ * HIDDEN * ELT, "still one storage"
    assert a.q_proj.__dict__[_fusers.QKV] is a.v_proj.__dict__[_fusers.QKV], "one state for the three"
    with torch.no_grad():
        torch.testing.assert_close(twin(x), ref, rtol=0, atol=0)
    assert len(cpu_launch) == 2 * 2, "one merged launch and o_proj per loaded attention"
    again = tgv_gemm.patch(twin)
    assert again.not_fused == {} and again.skipped["attns.0.q_proj"] == "already fused (into attns.0)"


def test_an_unpatched_model_saves_with_its_merged_weights(cpu_launch):
    from test_patch import saved_and_loaded

    net = make()
    x = torch.randn(3, 64).to(BF16)
    handle = tgv_gemm.patch(net)
    with torch.no_grad():
        ref = net(x)
    handle.unpatch()
    twin = saved_and_loaded(net)
    a = twin.attns[0]
    assert a.k_proj.weight.data_ptr() == a.q_proj.weight.data_ptr() + NQ * HIDDEN * ELT, "still one storage"
    tgv_gemm.patch(twin)
    assert not a.q_proj.__dict__[_fusers.QKV].copied, "the loaded views are merged in place"
    with torch.no_grad():
        torch.testing.assert_close(twin(x), ref, rtol=0, atol=0)


def test_torch_compile_runs_each_projection_alone(cpu_launch):
    net, x, ref = patched_with_reference()
    compiled = torch.compile(net, backend="eager", fullgraph=True)
    with torch.inference_mode():
        torch.testing.assert_close(compiled(x), ref, rtol=0, atol=0)
    assert len(cpu_launch) == 2 * 4


@pytest.mark.parametrize("attn, why", [
    (CrossAttention(), "CrossAttention: its forward calls q_proj, k_proj and v_proj on different inputs (context, h)"),
    (Rebinding(), "Rebinding: its forward rebinds h"),
    (InPlace(), "InPlace: its forward modifies h in place (h.mul_)"),
    (Twice(), "Twice: its forward uses self.q_proj 2 times (fused: once each)"),
    (NotAnArgument(), "NotAnArgument: its forward calls the projections on h, not one of its arguments"),
    (Attention(k_in=32), "q_proj and k_proj differ in in_features or device (64, 32)"),
    (Attention(bias=True, v_bias=False), "q_proj and k_proj have a bias and v_proj none"),
])
def test_refusals_say_why(attn, why, cpu_launch):
    net = make(attn)
    handle = tgv_gemm.patch(net)
    assert handle.not_fused == {"attns.0": why}, handle.summary()
    assert handle.fused == {} and len(handle.patched) == 4, "each linear patched on its own"


def test_training_mode_hooks_and_include_are_refused(cpu_launch):
    net = make(Attention(), Attention(), Attention()).train()
    net.attns[1].eval()
    net.attns[2].eval()
    net.attns[1].k_proj.register_forward_hook(lambda m, a, o: None)
    handle = tgv_gemm.patch(net, include=lambda n, m: n != "attns.2.v_proj")
    assert handle.not_fused == {
        "attns.0": "Attention is in training mode: fusion is for inference (model.eval() first)",
        "attns.1": "k_proj has hooks (fusion would skip them)",
        "attns.2": "excluded: attns.2.v_proj",
    }


def test_forward_sources_of_transformers_attentions():
    transformers = pytest.importorskip("transformers")
    import importlib

    for mod, cls in [("llama", "LlamaAttention"), ("mistral", "MistralAttention"), ("qwen2", "Qwen2Attention"),
                     ("qwen3", "Qwen3Attention")]:
        try:
            m = importlib.import_module("transformers.models.%s.modeling_%s" % (mod, mod))
        except ImportError:
            continue
        assert _fusers.attention_mismatch(getattr(m, cls).forward) is None, (cls, transformers.__version__)


# ---- on a GPU --------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("m", [1, 7, 64])
def test_each_projection_matches_the_fp32_reference(bias, m):
    from tgv_testutil import assert_close, rand, ref_linear

    torch.manual_seed(11)
    a = Attention(hidden=1024, nq=2048, nkv=512, bias=bias).to("cuda", BF16).eval()
    tgv_gemm.patch(a)
    x = rand(m, 1024)
    with torch.inference_mode():
        outs = [p(x) for p in (a.q_proj, a.k_proj, a.v_proj)]
    for out, p in zip(outs, (a.q_proj, a.k_proj, a.v_proj)):
        assert_close(out, ref_linear(x, p.weight, p.bias), p is a.q_proj and "q" or "k/v")


@cuda
def test_the_fused_projections_in_a_cuda_graph():
    from tgv_testutil import rand

    torch.manual_seed(12)
    a = Attention(hidden=1024, nq=2048, nkv=512).to("cuda", BF16).eval()
    x = rand(4, 1024)
    with torch.inference_mode():
        plain = a(x)  # torch's
    handle = tgv_gemm.patch(a)
    assert sorted(handle.fused) == [""] and handle.patched == ["o_proj"], handle.summary()
    with torch.inference_mode():
        eager = a(x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = a(x)
        captured.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
    assert torch.equal(captured, eager), "the captured fused projections compute what the eager ones do"
    torch.testing.assert_close(eager.float(), plain.float(), rtol=3e-2, atol=3e-2)
