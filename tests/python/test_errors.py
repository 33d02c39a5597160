"""Every error: raised before any launch, of the documented type, naming the argument.

CPU tensors, tensors on different devices, mismatched shapes, K % 8 != 0, bad
layouts -> ValueError; a dtype other than bf16/fp16 (mixed, or an out_dtype
other than the input type or fp32) -> TypeError; library statuses:
INVALID_ARGUMENT -> ValueError, NOT_SUPPORTED -> NotImplementedError (a
RuntimeError), others -> RuntimeError, each with tgv_last_error() in the message.
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import tgv_gemm  # noqa: E402
from tgv_gemm import _lib  # noqa: E402
from tgv_testutil import rand  # noqa: E402

M, N, K = 7, 1000, 136


def linear_entry_points():
    """tgv_gemm.linear and the raw custom op (errors cross the dispatcher intact)."""
    return [
        pytest.param(lambda *a, **kw: tgv_gemm.linear(*a, **kw), id="tgv_gemm.linear"),
        pytest.param(lambda *a, **kw: torch.ops.tgv.linear(*a, **kw), id="torch.ops.tgv.linear"),
    ]


@pytest.fixture
def xwb():
    return rand(M, K), rand(N, K), rand(N)


def _expect(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, tgv_gemm.TgvError), type(info.value)
    return info.value


# ---- devices -------------------------------------------------------------------


@pytest.mark.parametrize("call", linear_entry_points())
def test_cpu_tensors(call, xwb):
    x, w, b = xwb
    _expect(ValueError, r"x must be a CUDA tensor", call, x.cpu(), w)
    _expect(ValueError, r"x must be a CUDA tensor", call, x.cpu(), w.cpu())
    _expect(ValueError, r"x must be a CUDA tensor", call, x.cpu(), w.cpu(), b.cpu())
    _expect(ValueError, r"weight must be a CUDA tensor", call, x, w.cpu())
    _expect(ValueError, r"bias must be a CUDA tensor", call, x, w, b.cpu())


def test_cpu_out(xwb):
    x, w, b = xwb
    _expect(ValueError, r"out must be a CUDA tensor", tgv_gemm.linear, x, w, b, out=torch.empty(M, N, dtype=torch.bfloat16))


def test_cpu_bmm():
    a, b = rand(2, M, K), rand(2, K, N)
    _expect(ValueError, r"a must be a CUDA tensor", tgv_gemm.bmm, a.cpu(), b.cpu())
    _expect(ValueError, r"b must be a CUDA tensor", tgv_gemm.bmm, a, b.cpu())
    _expect(ValueError, r"a must be a CUDA tensor", torch.ops.tgv.bmm, a.cpu(), b)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("call", linear_entry_points())
def test_different_gpus(call, xwb):
    x, w, b = xwb
    _expect(ValueError, r"weight is on cuda:1 but x is on cuda:0", call, x, w.to("cuda:1"))
    _expect(ValueError, r"bias is on cuda:1 but x is on cuda:0", call, x, w, b.to("cuda:1"))
    _expect(ValueError, r"b is on cuda:1 but a is on cuda:0", tgv_gemm.bmm, rand(1, M, K), rand(1, K, N, device="cuda:1"))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_non_current_gpu():
    from tgv_testutil import assert_close, ref_linear

    x, w, b = rand(M, K, device="cuda:1"), rand(N, K, device="cuda:1"), rand(N, device="cuda:1")
    assert torch.cuda.current_device() == 0
    out = tgv_gemm.linear(x, w, b)
    assert out.device == torch.device("cuda:1")
    assert_close(out, ref_linear(x, w, b), "cuda:1")


# ---- dtypes --------------------------------------------------------------------


@pytest.mark.parametrize("call", linear_entry_points())
def test_wrong_dtype(call, xwb):
    x, w, b = xwb
    _expect(TypeError, r"x\.dtype must be torch\.bfloat16 or torch\.float16", call, x.float(), w)
    _expect(TypeError, r"weight\.dtype must be torch\.bfloat16", call, x, w.half())
    _expect(TypeError, r"weight\.dtype must be torch\.float16", call, x.half(), w)
    _expect(TypeError, r"bias\.dtype must be torch\.bfloat16", call, x, w, b.half())
    _expect(TypeError, r"bias\.dtype must be torch\.float16", call, x.half(), w.half(), b)


def test_wrong_dtype_out_and_bmm(xwb):
    x, w, b = xwb
    # out's dtype is the output type: bf16 inputs give bf16 or fp32, not fp16.
    out16 = torch.empty(M, N, device="cuda", dtype=torch.float16)
    _expect(TypeError, r"out_dtype=torch\.float16", tgv_gemm.linear, x, w, out=out16)
    _expect(TypeError, r"out\.dtype must be torch\.float32", tgv_gemm.linear, x, w, out=out16,
            out_dtype=torch.float32)
    _expect(TypeError, r"b\.dtype", tgv_gemm.bmm, rand(1, M, K), rand(1, K, N, dtype=torch.float16))


# ---- shapes --------------------------------------------------------------------


@pytest.mark.parametrize("call", linear_entry_points())
def test_k_not_multiple_of_8(call):
    x, w = rand(M, 12), rand(N, 12)
    e = _expect(ValueError, r"k=12", call, x, w)
    assert "multiple of 8" in str(e) and "TGV_ERROR_INVALID_ARGUMENT" in str(e)
    assert e.status == _lib.ERROR_INVALID_ARGUMENT


@pytest.mark.parametrize("call", linear_entry_points())
def test_mismatched_shapes(call, xwb):
    x, w, b = xwb
    _expect(ValueError, r"weight\.shape\[1\]=144 must equal x\.shape\[-1\]=136", call, x, rand(N, K + 8))
    _expect(ValueError, r"bias must have shape \[N\]", call, x, w, rand(N + 8))
    _expect(ValueError, r"bias must have shape \[N\]", call, x, w, rand(1, N))
    _expect(ValueError, r"weight must be 2-D", call, x, rand(1, N, K))


def test_mismatched_out(xwb):
    x, w, b = xwb
    _expect(ValueError, r"out must have shape", tgv_gemm.linear, x, w, out=rand(M, N + 8))
    _expect(ValueError, r"out must have shape", tgv_gemm.linear, x, w, out=rand(1, M, N))


def test_mismatched_bmm():
    _expect(ValueError, r"b\.shape\[1\]=144 must equal a\.shape\[2\]=136", tgv_gemm.bmm, rand(2, M, K), rand(2, K + 8, N))
    _expect(ValueError, r"b\.shape\[0\]=3 must equal a\.shape\[0\]=2", tgv_gemm.bmm, rand(2, M, K), rand(3, K, N))
    _expect(ValueError, r"a must be 3-D", tgv_gemm.bmm, rand(M, K), rand(2, K, N))
    _expect(ValueError, r"out must have shape", tgv_gemm.bmm, rand(2, M, K), rand(2, K, N), out=rand(2, M, N + 8))


# ---- layouts: errors, never a silent copy ------------------------------------------


def test_unflattenable_leading_dims(xwb):
    _, w, _ = xwb
    x = rand(3, 2, K).transpose(0, 1)  # [2, 3, K], strides (K, 2K, 1): no view merges dims 0, 1
    with pytest.raises(RuntimeError):
        x.view(6, K)
    _expect(ValueError, r"leading dims cannot be viewed as one dim M without a copy", tgv_gemm.linear, x, w)
    out = rand(3, 2, N).transpose(0, 1)
    _expect(ValueError, r"out of shape", tgv_gemm.linear, rand(2, 3, K), w, out=out)


def test_layout_the_library_cannot_take(xwb):
    _, w, _ = xwb
    _expect(ValueError, r"x strides .* match no supported layout", tgv_gemm.linear, rand(M, 2 * K)[:, ::2], w)
    # M-major x whose leading dimension (M = 7) is not a multiple of 8
    _expect(ValueError, r"x_stride_k=7", tgv_gemm.linear, rand(K, 7).t(), w)
    _expect(ValueError, r"bias must be contiguous", tgv_gemm.linear, rand(M, K), w, rand(2 * N)[::2])


def test_misaligned_pointer(xwb):
    _, w, _ = xwb
    x = rand(M * K + 1)[1:].view(M, K)  # base 2 bytes past a 16-byte boundary
    _expect(ValueError, r"x=0x[0-9a-f]+: not 16-byte aligned", tgv_gemm.linear, x, w)


def test_out_aliasing_an_input():
    x = rand(M, 1000)
    w = rand(1000, 1000)
    _expect(ValueError, r"overlaps x", tgv_gemm.linear, x, w, out=x)


def test_nothing_written_on_error(xwb):
    x, w, b = xwb
    out = torch.full((M, N), 7.0, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError):
        tgv_gemm.linear(x, w, b, out=out, tactic=10**6)
    torch.cuda.synchronize()
    assert bool((out == 7.0).all())


# ---- options -------------------------------------------------------------------


@pytest.mark.parametrize("call", linear_entry_points())
def test_bad_options(call, xwb):
    x, w, b = xwb
    _expect(ValueError, r"backend='fast'", call, x, w, b, backend="fast")
    _expect(ValueError, r"tactic=1000000", call, x, w, b, tactic=10**6)
    _expect(ValueError, r"tactic=0 names a tgv kernel, but backend=cublas", call, x, w, b, backend="cublas", tactic=0)


# ---- the status -> exception mapping -------------------------------------------------


def test_status_mapping():
    cases = [
        (_lib.ERROR_INVALID_ARGUMENT, ValueError, "TGV_ERROR_INVALID_ARGUMENT"),
        (_lib.ERROR_NOT_SUPPORTED, NotImplementedError, "TGV_ERROR_NOT_SUPPORTED"),
        (_lib.ERROR_CUDA, RuntimeError, "TGV_ERROR_CUDA"),
        (_lib.ERROR_CUBLAS, RuntimeError, "TGV_ERROR_CUBLAS"),
        (_lib.ERROR_INTERNAL, RuntimeError, "TGV_ERROR_INTERNAL"),
    ]
    for status, exc, name in cases:
        e = _lib.error_from_status(status, "where")
        assert isinstance(e, exc) and isinstance(e, tgv_gemm.TgvError), (status, type(e))
        assert e.status == status
        assert str(e).startswith("where: ") and name in str(e)
    assert issubclass(tgv_gemm.TgvNotSupportedError, RuntimeError)


def test_message_is_the_librarys():
    # a failing validate on this thread leaves its message in tgv_last_error()
    p = _lib.Problem()
    _lib.lib.tgv_default_problem_(p, 4, 8, 12, 1)
    status = _lib.c_validate(p, None)
    assert status == _lib.ERROR_INVALID_ARGUMENT
    assert "k=12" in _lib.last_error()
    assert "k=12" in str(_lib.error_from_status(status, "where"))
