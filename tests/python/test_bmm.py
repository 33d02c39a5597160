"""tgv_gemm.bmm against torch.bmm computed in fp32.

Tolerance, element-wise: |out - ref| <= 1e-2 + 1e-2 * |ref| (tgv_testutil.ATOL/RTOL).
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import tgv_gemm  # noqa: E402
from tgv_testutil import assert_close, rand  # noqa: E402


def ref_bmm(a, b):
    return torch.bmm(a.float(), b.float())


@pytest.mark.parametrize("k", [8, 136, 4096])
@pytest.mark.parametrize("n", [1000, 4096])
@pytest.mark.parametrize("m", [1, 7, 64])
@pytest.mark.parametrize("l", [1, 3])
def test_bmm_grid(l, m, n, k):
    # b contiguous [L, K, N]: the library's W is N-major (w_stride_n = 1)
    a, b = rand(l, m, k), rand(l, k, n)
    out = tgv_gemm.bmm(a, b)
    assert out.shape == (l, m, n) and out.is_contiguous()
    assert_close(out, ref_bmm(a, b), "l=%d m=%d n=%d k=%d" % (l, m, n, k))


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_bmm_b_transposed(n):
    # b = bt.transpose(1, 2) for bt [L, N, K]: the library's W is K-major, any N
    l, m, k = 3, 7, 136
    a = rand(l, m, k)
    b = rand(l, n, k).transpose(1, 2)
    assert_close(tgv_gemm.bmm(a, b), ref_bmm(a, b), "b K-major n=%d" % n)


def test_bmm_a_m_major():
    l, m, n, k = 2, 64, 1000, 136
    a = rand(l, k, m).transpose(1, 2)  # [L, M, K] with stride_m == 1
    b = rand(l, k, n)
    assert_close(tgv_gemm.bmm(a, b), ref_bmm(a, b), "a M-major")


def test_bmm_shared_b():
    # one [K, N] matrix for every batch: batch stride 0, no copy
    l, m, n, k = 4, 7, 1000, 136
    a = rand(l, m, k)
    b = rand(1, k, n).expand(l, k, n)
    assert b.stride(0) == 0
    assert_close(tgv_gemm.bmm(a, b), ref_bmm(a, b), "b expanded")


def test_bmm_out():
    l, m, n, k = 3, 7, 1000, 136
    a, b = rand(l, m, k), rand(l, k, n)
    out = torch.full((l, m, n), 7.0, device="cuda", dtype=torch.bfloat16)
    assert tgv_gemm.bmm(a, b, out=out) is out
    assert_close(out, ref_bmm(a, b), "bmm out=")


def test_bmm_torch_ops():
    a, b = rand(2, 7, 136), rand(2, 136, 1000)
    assert_close(torch.ops.tgv.bmm(a, b), ref_bmm(a, b), "torch.ops.tgv.bmm")
    out = torch.empty(2, 7, 1000, device="cuda", dtype=torch.bfloat16)
    torch.ops.tgv.bmm_out(a, b, out)
    assert_close(out, ref_bmm(a, b), "torch.ops.tgv.bmm_out")
