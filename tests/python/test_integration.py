"""torch integration: opcheck, torch.compile(fullgraph=True), CUDA-graph capture.

Tolerance, element-wise: |out - ref| <= 1e-2 + 1e-2 * |ref| (tgv_testutil.ATOL/RTOL).
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import tgv_gemm  # noqa: E402
from tgv_testutil import assert_close, rand, ref_linear, skip_unless_device_cannot_serve  # noqa: E402


# ---- opcheck ---------------------------------------------------------------------


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("m,n,k", [(1, 1000, 136), (7, 4096, 64), (64, 1000, 4096)])
def test_opcheck_linear(m, n, k, bias):
    x, w = rand(m, k), rand(n, k)
    b = rand(n) if bias else None
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, b))
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, b), {"backend": "cublas", "pdl": False})
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tgv.linear_out.default, (x, w, b, out))


def test_opcheck_linear_views():
    k, n, m = 136, 1000, 64
    x = rand(k, m).t()
    w = rand(k, n).t()
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, None))
    torch.library.opcheck(torch.ops.tgv.linear.default, (rand(2, 3, k), rand(n, k), rand(n)))


@pytest.mark.parametrize("l,m,n,k", [(1, 7, 1000, 136), (3, 64, 4096, 64)])
def test_opcheck_bmm(l, m, n, k):
    a, b = rand(l, m, k), rand(l, k, n)
    torch.library.opcheck(torch.ops.tgv.bmm.default, (a, b))
    out = torch.empty(l, m, n, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tgv.bmm_out.default, (a, b, out))


# ---- torch.compile ---------------------------------------------------------------


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph(fresh_dynamo, dynamic):
    def f(x, w, b):
        y = tgv_gemm.linear(x, w, b)
        return torch.relu(y) * 2.0

    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic)
    for m in (1, 7, 64):
        x, w, b = rand(m, 4096), rand(1000, 4096), rand(1000)
        ref = torch.relu(ref_linear(x, w, b)) * 2.0
        assert_close(compiled(x, w, b), ref, "compiled m=%d" % m)


def test_compile_fullgraph_out_and_bmm(fresh_dynamo):
    def f(x, w, out, a, b):
        tgv_gemm.linear(x, w, out=out)
        return out + 1.0, tgv_gemm.bmm(a, b)

    compiled = torch.compile(f, fullgraph=True)
    x, w = rand(7, 136), rand(1000, 136)
    a, b = rand(3, 7, 136), rand(3, 136, 1000)
    out = torch.empty(7, 1000, device="cuda", dtype=torch.bfloat16)
    y, z = compiled(x, w, out, a, b)
    ref = ref_linear(x, w)
    assert_close(out, ref, "compiled out=")
    assert_close(y, ref + 1.0, "compiled out + 1")
    assert_close(z, torch.bmm(a.float(), b.float()), "compiled bmm")


def test_compile_traces_without_graph_break(fresh_dynamo):
    def f(x, w):
        return tgv_gemm.linear(x, w) + 1.0

    x, w = rand(7, 136), rand(1000, 136)
    explanation = torch._dynamo.explain(f)(x, w)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


# ---- CUDA graphs -----------------------------------------------------------------


def _warm_up(fn, iters=3):
    """Run outside capture first (the cuBLASLt backend caches its algorithm), on a
    side stream as torch's CUDA-graph recipe does."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(iters):
            fn()
    torch.cuda.current_stream().wait_stream(s)


@pytest.mark.parametrize("backend", ["auto", "cublas", "tgv"])
@pytest.mark.parametrize("m,n,k", [(1, 4096, 4096), (7, 1000, 136), (64, 4096, 4096), (200, 1000, 8)])
def test_cuda_graph_capture_and_replay(m, n, k, backend):
    x, w, b = rand(m, k), rand(n, k), rand(n)

    def run():
        return tgv_gemm.linear(x, w, b, backend=backend)

    try:
        run()
    except tgv_gemm.TgvNotSupportedError as e:
        skip_unless_device_cannot_serve(e)
    _warm_up(run)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = run()
    for _ in range(3):  # new inputs each replay, written in place
        x.copy_(rand(m, k))
        w.copy_(rand(n, k))
        b.copy_(rand(n))
        g.replay()
        eager = run()
        torch.cuda.synchronize()
        assert_close(y, ref_linear(x, w, b), "graph replay vs fp32 reference")
        assert_close(y, eager.float(), "graph replay vs eager")


def test_cuda_graph_out_and_bmm():
    x, w = rand(64, 136), rand(1000, 136)
    a, bb = rand(3, 7, 136), rand(3, 136, 1000)
    out = torch.empty(64, 1000, device="cuda", dtype=torch.bfloat16)
    outb = torch.empty(3, 7, 1000, device="cuda", dtype=torch.bfloat16)

    def run():
        tgv_gemm.linear(x, w, out=out)
        tgv_gemm.bmm(a, bb, out=outb)

    run()
    _warm_up(run)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    out.fill_(7.0)
    outb.fill_(7.0)
    x.copy_(rand(64, 136))
    a.copy_(rand(3, 7, 136))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, ref_linear(x, w), "graph out=")
    assert_close(outb, torch.bmm(a.float(), bb.float()), "graph bmm out=")


def test_cuda_graph_of_compiled(fresh_dynamo):
    compiled = torch.compile(lambda x, w, b: tgv_gemm.linear(x, w, b), fullgraph=True)
    x, w, b = rand(7, 4096), rand(4096, 4096), rand(4096)
    compiled(x, w, b)
    _warm_up(lambda: compiled(x, w, b))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = compiled(x, w, b)
    x.copy_(rand(7, 4096))
    g.replay()
    torch.cuda.synchronize()
    assert_close(y, ref_linear(x, w, b), "graph of compiled")


# ---- the eager shortcut and the dispatcher agree -----------------------------------


def test_dispatcher_paths_agree():
    x, w, b = rand(7, 4096), rand(1000, 4096), rand(1000)
    ref = ref_linear(x, w, b)
    direct = tgv_gemm.linear(x, w, b)
    via_op = torch.ops.tgv.linear(x, w, b)
    p = torch.nn.Parameter(w.clone())  # requires grad: goes through the dispatcher
    via_param = tgv_gemm.linear(x, p, b)
    with torch.no_grad():
        via_param_no_grad = tgv_gemm.linear(x, p, b)  # direct again
    for y, what in [(direct, "direct"), (via_op, "op"), (via_param, "parameter"), (via_param_no_grad, "no_grad")]:
        assert_close(y, ref, what)


def test_profiler_sees_the_op():
    x, w = rand(7, 136), rand(1000, 136)
    tgv_gemm.linear(x, w)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        tgv_gemm.linear(x, w)
        tgv_gemm.bmm(x[None], w.t()[None])
    names = {e.name for e in prof.events()}
    assert "tgv::linear" in names and "tgv::bmm" in names, sorted(names)[:50]


def test_fake_tensor_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 3, 136, device="cuda", dtype=torch.bfloat16)
        w = torch.empty(1000, 136, device="cuda", dtype=torch.bfloat16)
        y = tgv_gemm.linear(x, w)
        assert y.shape == (2, 3, 1000) and y.dtype == torch.bfloat16 and y.device.type == "cuda"
        z = tgv_gemm.bmm(torch.empty(2, 7, 136, device="cuda", dtype=torch.bfloat16),
                         torch.empty(2, 136, 8, device="cuda", dtype=torch.bfloat16))
        assert z.shape == (2, 7, 8)
        with pytest.raises(ValueError, match="weight.shape"):
            tgv_gemm.linear(x, torch.empty(1000, 144, device="cuda", dtype=torch.bfloat16))
