"""tgv_gemm.linear against F.linear computed in fp32.

Tolerance, element-wise: |out - ref| <= 1e-2 + 1e-2 * |ref| (tgv_testutil.ATOL/RTOL).
"""

import threading

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import tgv_gemm  # noqa: E402
from tgv_testutil import assert_close, rand, ref_linear, skip_unless_device_cannot_serve  # noqa: E402


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("k", [8, 136, 4096])
@pytest.mark.parametrize("n", [1000, 4096])
@pytest.mark.parametrize("m", [1, 7, 64, 200])
def test_shape_grid(m, n, k, bias):
    x = rand(m, k)
    w = rand(n, k)
    b = rand(n) if bias else None
    out = tgv_gemm.linear(x, w, b)
    assert out.shape == (m, n) and out.is_contiguous()
    assert_close(out, ref_linear(x, w, b), "m=%d n=%d k=%d bias=%s" % (m, n, k, bias))


@pytest.mark.parametrize("backend", ["auto", "cublas", "tgv"])
@pytest.mark.parametrize("m,n,k", [(1, 1000, 136), (7, 4096, 4096), (64, 1000, 8), (200, 4096, 136)])
def test_backends(m, n, k, backend):
    x, w, b = rand(m, k), rand(n, k), rand(n)
    try:
        out = tgv_gemm.linear(x, w, b, backend=backend)
    except tgv_gemm.TgvNotSupportedError as e:  # backend="tgv" on a device it cannot serve
        skip_unless_device_cannot_serve(e)
    assert_close(out, ref_linear(x, w, b), backend)


@pytest.mark.parametrize("pdl", [None, False, True])
def test_pdl(pdl):
    x, w, b = rand(64, 4096), rand(4096, 4096), rand(4096)
    assert_close(tgv_gemm.linear(x, w, b, pdl=pdl), ref_linear(x, w, b), "pdl=%s" % pdl)


def test_list_tactics():
    tactics = tgv_gemm.list_tactics()
    assert tactics, "no tactics"
    for i, t in enumerate(tactics):
        assert set(t) == {"id", "arch", "cta_m", "cta_n", "cta_k", "stages", "cluster"}
        assert t["id"] == i
        assert t["cta_m"] > 0 and t["cta_n"] > 0 and t["cta_k"] > 0 and t["stages"] > 0


def test_every_tactic():
    major, minor = torch.cuda.get_device_capability()
    arch = major * 10 + minor
    tactics = [t for t in tgv_gemm.list_tactics() if t["arch"] == arch]
    if not tactics:
        pytest.skip("no tgv tactic for sm_%d in this build" % arch)
    x, w, b = rand(64, 4096), rand(1000, 4096), rand(1000)
    ref = ref_linear(x, w, b)
    for t in tactics:
        out = tgv_gemm.linear(x, w, b, backend="tgv", tactic=t["id"])
        assert_close(out, ref, "tactic %s" % t)


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_leading_dims(bias):
    k, n = 136, 1000
    x = rand(2, 3, k)
    w = rand(n, k)
    b = rand(n) if bias else None
    out = tgv_gemm.linear(x, w, b)
    assert out.shape == (2, 3, n)
    assert_close(out, ref_linear(x, w, b), "x [2, 3, K]")


def test_leading_dims_of_a_strided_view():
    # rows 0, 2, 4, ... of a [12, K] tensor, seen as [2, 3, K]: mergeable without a copy
    k, n = 4096, 1000
    x = rand(12, k)[::2].view(2, 3, k)
    w = rand(n, k)
    assert_close(tgv_gemm.linear(x, w), ref_linear(x, w), "strided rows")


def test_one_dim_input():
    x, w, b = rand(136), rand(1000, 136), rand(1000)
    out = tgv_gemm.linear(x, w, b)
    assert out.shape == (1000,)
    assert_close(out, ref_linear(x, w, b), "x [K]")


@pytest.mark.parametrize("m", [1, 64, 200])
@pytest.mark.parametrize("x_layout", ["k_major", "m_major"])
@pytest.mark.parametrize("w_layout", ["k_major", "n_major"])
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_transposed_views(m, x_layout, w_layout, bias):
    k, n = 4096, 1000
    if x_layout == "m_major":
        t = rand(k, m)
        x = t.t()  # [M, K], stride (1, M): M-major
        assert m == 1 or x.stride(0) == 1
    else:
        x = rand(m, k)
    if w_layout == "n_major":
        wt = rand(k, n)
        w = wt.t()  # [N, K], stride (1, N): N-major
        assert w.stride(0) == 1
    else:
        w = rand(n, k)
    b = rand(n) if bias else None
    ptr_x, ptr_w = x.data_ptr(), w.data_ptr()
    out = tgv_gemm.linear(x, w, b)
    assert (x.data_ptr(), w.data_ptr()) == (ptr_x, ptr_w)
    assert_close(out, ref_linear(x, w, b), "x %s, w %s" % (x_layout, w_layout))


@pytest.mark.parametrize("m", [1, 7, 64])
@pytest.mark.parametrize("out_layout", ["row_major", "col_major"])
def test_out(m, out_layout):
    k, n = 136, 1000
    x, w, b = rand(m, k), rand(n, k), rand(n)
    if out_layout == "col_major":
        if m % 8 and m != 1:
            pytest.skip("column-major out needs a leading dimension that is a multiple of 8")
        out = torch.full((n, m), 7.0, device="cuda", dtype=torch.bfloat16).t()
    else:
        out = torch.full((m, n), 7.0, device="cuda", dtype=torch.bfloat16)
    ptr = out.data_ptr()
    got = tgv_gemm.linear(x, w, b, out=out)
    assert got is out and out.data_ptr() == ptr
    assert_close(out, ref_linear(x, w, b), "out=%s" % out_layout)


def test_out_leading_dims():
    k, n = 136, 1000
    x, w = rand(2, 3, k), rand(n, k)
    out = torch.full((2, 3, n), 7.0, device="cuda", dtype=torch.bfloat16)
    assert tgv_gemm.linear(x, w, out=out) is out
    assert_close(out, ref_linear(x, w), "out [2, 3, N]")


def test_out_strided_rows():
    # out rows with a stride larger than N (a slice of a wider buffer)
    k, n, m = 136, 1000, 7
    x, w = rand(m, k), rand(n, k)
    buf = torch.full((m, n + 24), 7.0, device="cuda", dtype=torch.bfloat16)
    out = buf[:, :n]
    tgv_gemm.linear(x, w, out=out)
    assert_close(out, ref_linear(x, w), "out stride n+24")
    assert bool((buf[:, n:] == 7.0).all()), "wrote outside out"


def test_empty_m():
    x, w = rand(0, 136), rand(1000, 136)
    out = tgv_gemm.linear(x, w)
    assert out.shape == (0, 1000)


def test_torch_ops_entry_points():
    x, w, b = rand(7, 136), rand(1000, 136), rand(1000)
    ref = ref_linear(x, w, b)
    assert_close(torch.ops.tgv.linear(x, w, b), ref, "torch.ops.tgv.linear")
    assert_close(torch.ops.tgv.linear(x, w, b, backend="cublas"), ref, "torch.ops.tgv.linear cublas")
    out = torch.empty(7, 1000, device="cuda", dtype=torch.bfloat16)
    assert torch.ops.tgv.linear_out(x, w, b, out) is None
    assert_close(out, ref, "torch.ops.tgv.linear_out")


def test_current_stream_is_used():
    x, w, b = rand(64, 4096), rand(4096, 4096), rand(4096)
    ref = ref_linear(x, w, b)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = tgv_gemm.linear(x, w, b)
        assert_close(out, ref, "side stream")  # ordered on s: no sync needed


def test_threads():
    # Two threads per shape: a thread whose first CUDA call is ours once made
    # every cuBLASLt call fail (no current context); the second thread of a
    # shape finds its plan cached and so made no call that bound one by chance.
    cases = [(m, n, 136) for m in (1, 7, 64) for n in (1000, 4096)] * 2
    data = [(rand(m, k), rand(n, k), rand(n)) for m, n, k in cases]
    results = [None] * len(data)
    errors = []

    def work(i):
        try:
            x, w, b = data[i]
            for _ in range(20):
                results[i] = tgv_gemm.linear(x, w, b)
            torch.cuda.current_stream().synchronize()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (x, w, b), out in zip(data, results):
        assert_close(out, ref_linear(x, w, b), "threads")


def test_library_version():
    assert tgv_gemm.library_version().count(".") == 2


def test_get_plan_says_what_linear_runs():
    """get_plan(): the dispatcher's choice, without launching (untuned rules)."""
    import os

    if os.environ.get("TGV_TUNING_FILE"):
        pytest.skip("a tuning file is set")
    x1, x200 = rand(1, 4096), rand(200, 4096)
    w = rand(4096, 4096)
    assert tgv_gemm.get_plan(x200, w)["backend"] == "cublas"  # untuned auto: M > 128
    assert tgv_gemm.get_plan(x1, w, backend="cublas") == {
        "backend": "cublas", "tactic": None, "split_k": 1, "stages": 0, "pdl": True}
    if torch.cuda.get_device_capability()[0] != 9:
        return
    p = tgv_gemm.get_plan(x1, w)
    assert p["backend"] == "tgv" and p["split_k"] >= 1 and p["stages"] >= 2
    tactics = {t["id"]: t for t in tgv_gemm.list_tactics()}
    assert tactics[p["tactic"]]["cta_n"] == 8
    q = tgv_gemm.get_plan(x1, w, tactic=6, pdl=False)
    assert q["tactic"] == 6 and q["pdl"] is False
    with pytest.raises(ValueError, match="CUDA"):
        tgv_gemm.get_plan(x1.cpu(), w)
