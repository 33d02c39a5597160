"""Epilogues through the PyTorch API: residual (also in place), fp32 out, the
gated activations, fp16 inputs, on every backend, eager and under
torch.compile (the fake kernels), against an fp32 reference of the same
rounded inputs; and their argument errors.

Tolerance, element-wise |out - ref| <= rtol * (RMS(ref) + |ref|): bf16 out
rtol 1e-2 (rounding to bf16 is up to 2^-9 relative), fp16 out 2e-3 (2^-11),
fp32 out 1e-4 (fp32 summation order over K <= 7168 products).
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import tgv_gemm  # noqa: E402
from tgv_testutil import rand  # noqa: E402

BACKENDS = ["auto", "tgv", "cublas"]
RTOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-4}
IS_SM90 = torch.cuda.get_device_capability() == (9, 0)


def check(out, ref, dtype):
    assert out.dtype == dtype, out.dtype
    assert out.shape == ref.shape, (out.shape, ref.shape)
    rtol = RTOL[dtype]
    ref = ref.float()
    bound = rtol * (ref.pow(2).mean().sqrt() + ref.abs())
    bad = ~((out.float() - ref).abs() <= bound)  # NaN counts as bad
    assert not bool(bad.any()), "%d of %d elements off; first at %s: %s vs %s" % (
        int(bad.sum()), bad.numel(), bad.nonzero()[0].tolist(), out.float()[bad][0].item(), ref[bad][0].item())


def skip_tgv(backend):
    if backend == "tgv" and not IS_SM90:
        pytest.skip("the tgv kernel serves epilogues on sm_90 only")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m", [1, 7, 48])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_residual(backend, m, dtype):
    skip_tgv(backend)
    x, w, b = rand(m, 1024, dtype=dtype), rand(512, 1024, dtype=dtype) / 32, rand(512, dtype=dtype)
    h = rand(m, 512, dtype=dtype)
    ref = F.linear(x.float(), w.float(), b.float()) + h.float()
    check(tgv_gemm.linear(x, w, b, residual=h, backend=backend), ref, dtype)
    h0 = h.clone()
    y = tgv_gemm.linear(x, w, b, residual=h, out=h, backend=backend)  # in place
    assert y is h
    check(h, ref, dtype)
    again = h0.clone()
    tgv_gemm.linear(x, w, b, residual=again, out=again, backend=backend)
    assert torch.equal(again, h), "in-place residual is not bitwise repeatable"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m", [1, 16, 64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fp32_out_router(backend, m, dtype):
    skip_tgv(backend)
    x, w = rand(m, 7168, dtype=dtype), rand(256, 7168, dtype=dtype) / 84
    ref = F.linear(x.float(), w.float())
    check(tgv_gemm.linear(x, w, out_dtype=torch.float32, backend=backend), ref, torch.float32)
    out = torch.full((m, 256), float("nan"), device="cuda")
    tgv_gemm.linear(x, w, out=out, backend=backend)  # out's dtype decides
    check(out, ref, torch.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("act", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("m", [1, 9, 40])
@pytest.mark.parametrize("bias", [False, True])
def test_gated(backend, act, m, bias):
    skip_tgv(backend)
    n, k = 2 * 704, 512
    x, w = rand(m, k), rand(n, k) / 22
    b = rand(n) if bias else None
    g = F.linear(x.float(), w[: n // 2].float(), None if b is None else b[: n // 2].float())
    u = F.linear(x.float(), w[n // 2:].float(), None if b is None else b[n // 2:].float())
    if act == "silu":
        ref = F.silu(g) * u
        out = tgv_gemm.silu_mul_linear(x, w, b, backend=backend)
    else:
        ref = F.gelu(g, approximate="tanh") * u
        out = tgv_gemm.gelu_tanh_mul_linear(x, w, b, backend=backend)
    check(out, ref, torch.bfloat16)
    check(tgv_gemm.silu_mul_linear(x, w, b, out_dtype=torch.float32, backend=backend) if act == "silu"
          else tgv_gemm.gelu_tanh_mul_linear(x, w, b, out_dtype=torch.float32, backend=backend), ref, torch.float32)


def test_gated_tgv_refuses_what_it_cannot_serve():
    if not IS_SM90:
        pytest.skip("sm_90 only")
    x, w = rand(4, 256), rand(2 * 250, 256)  # n / 2 = 250, not a multiple of 8
    with pytest.raises(NotImplementedError, match=r"n/2 \(250\)"):
        tgv_gemm.silu_mul_linear(x, w, backend="tgv")
    ref = F.silu(F.linear(x.float(), w[:250].float())) * F.linear(x.float(), w[250:].float())
    check(tgv_gemm.silu_mul_linear(x, w), ref, torch.bfloat16)  # auto serves it


def test_compile_with_epilogues():
    x, w, h = rand(4, 512), rand(1024, 512) / 22, rand(4, 512)
    wd = rand(512, 512) / 22

    def layer(x, h):
        a = tgv_gemm.silu_mul_linear(x, w)  # [4, 512]
        tgv_gemm.linear(a, wd, residual=h, out=h)  # h += a @ wd.T
        return tgv_gemm.linear(h, wd, out_dtype=torch.float32)

    h_eager = h.clone()
    want = layer(x, h_eager)
    compiled = torch.compile(layer, fullgraph=True)
    h_comp = h.clone()
    got = compiled(x, h_comp)
    assert torch.equal(h_comp, h_eager)
    assert torch.equal(got, want)


def test_errors():
    x, w = rand(4, 256), rand(512, 256)
    with pytest.raises(ValueError, match=r"weight.shape\[0\]=511 must be even"):
        tgv_gemm.silu_mul_linear(x, rand(511, 256))
    with pytest.raises(ValueError, match=r"residual must have shape \(4, 512\)"):
        tgv_gemm.linear(x, w, residual=rand(4, 511))
    with pytest.raises(TypeError, match=r"residual.dtype must be torch.float32"):
        tgv_gemm.linear(x, w, residual=rand(4, 512), out_dtype=torch.float32)
    with pytest.raises(TypeError, match=r"out_dtype=torch.float16"):
        tgv_gemm.linear(x, w, out_dtype=torch.float16)
    buf = torch.empty(4 * 512 + 8, device="cuda", dtype=torch.bfloat16)
    out, shifted = buf[: 4 * 512].view(4, 512), buf[8:].view(4, 512)  # 8 elements apart
    with pytest.raises(ValueError, match=r"partially overlaps out"):
        tgv_gemm.linear(x, w, residual=shifted, out=out)


def test_get_plan_epilogues():
    x, w = rand(4, 256), rand(512, 256)
    plan = tgv_gemm.get_plan(x, w, epilogue="silu_mul")
    assert plan["backend"] in ("tgv", "cublas")
    if IS_SM90:
        assert plan["backend"] == "tgv"
    with pytest.raises(ValueError, match=r"epilogue='relu'"):
        tgv_gemm.get_plan(x, w, epilogue="relu")


def test_opcheck_epilogue_ops():
    x, w, b = rand(7, 512), rand(1024, 512) / 22, rand(1024)
    h = rand(7, 1024)
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, b), {"residual": h})
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, None), {"out_dtype": torch.float32})
    torch.library.opcheck(torch.ops.tgv.linear.default, (x, w, b), {"epilogue": 1})
    out = torch.empty(7, 1024, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tgv.linear_out.default, (x, w, b, out), {"residual": h})
    torch.library.opcheck(torch.ops.tgv.linear_residual_.default, (x, w, b, h.clone()))
