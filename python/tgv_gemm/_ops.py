"""The torch custom ops tgv::linear, tgv::linear_out, tgv::linear_residual_,
tgv::bmm, tgv::bmm_out.

Registered with torch.library.Library("tgv", "DEF") + define + impl (direct
registration: torch.library.custom_op costs more per call), each with a fake
implementation (torch.library.register_fake) so that torch.compile traces them
without a graph break. The CUDA kernels launch on torch's current stream of the
tensors' device, so CUDA-graph capture records them.

Nothing is ever copied: operands go to the library as base pointer + element
strides, and layouts it cannot take are errors.
"""

import torch

from . import _lib as L

_BF16 = torch.bfloat16
_FP16 = torch.float16
_FP32 = torch.float32
_Tensor = torch.Tensor
# torch dtype -> tgv_dtype, for inputs (x, weight, bias) and for out / residual.
_IN_TYPES = {_BF16: L.DTYPE_BF16, _FP16: L.DTYPE_FP16}
_OUT_TYPES = {_BF16: L.DTYPE_BF16, _FP16: L.DTYPE_FP16, _FP32: L.DTYPE_FP32}

# (Both absent from CPU-only torch builds, where no CUDA tensor can reach the kernels.)
_get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
if _raw_stream is None:  # pragma: no cover - older torch

    def _raw_stream(device_index):
        return torch.cuda.current_stream(device_index).cuda_stream


_pack = L.pack_problem
_c_gemm = L.c_gemm
_thread_problem = L.thread_problem
_options = L.options
_DEFAULT_OPTIONS = L.options("auto", None, None)
_INVALID = L.ERROR_INVALID_ARGUMENT
_record = None  # tgv_gemm.autotune's recorder while a block is open: _record(n, k, m, has_bias)


def _value_error(where, message):
    return L.TgvValueError("%s: %s" % (where, message), _INVALID)


def _type_error(where, message):
    return L.TgvTypeError("%s: %s" % (where, message), _INVALID)


# ---- checks shared by the real and the fake kernels ---------------------------


def _check_tensor(t, name, where, device, allow_meta, first="x", dtype=_BF16):
    if not isinstance(t, _Tensor):
        raise _type_error(where, "%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    dev = t.device
    if dev.type != "cuda" and not (allow_meta and dev.type == "meta"):
        raise _value_error(where, "%s must be a CUDA tensor, got a tensor on %s" % (name, dev))
    if device is not None and dev != device:
        raise _value_error(
            where, "%s is on %s but %s is on %s: every tensor must be on the same device" % (name, dev, first, device)
        )
    if dtype is None:  # x of linear(): either input type
        if t.dtype not in _IN_TYPES:
            raise _type_error(where, "%s.dtype must be torch.bfloat16 or torch.float16, got %s" % (name, t.dtype))
    elif t.dtype != dtype:
        raise _type_error(where, "%s.dtype must be %s, got %s" % (name, dtype, t.dtype))


def _flatten_lead(shape, stride):
    """(M, stride of M) for dims shape[:-1] viewed as one dim, as a view; None
    when no view can merge them. The stride is None when M <= 1."""
    m = 1
    sm = None
    expect = None
    for i in range(len(shape) - 2, -1, -1):
        size = shape[i]
        if size == 1:
            continue
        if size == 0:
            return 0, None
        st = stride[i]
        if sm is None:
            sm = st
        elif st != expect:
            return None
        expect = st * size
        m *= size
    return m, sm


def _not_flattenable(where, name, t):
    return _value_error(
        where,
        "%s of shape %s and strides %s: its leading dims cannot be viewed as one dim M without a copy "
        "(tgv_gemm never copies); pass a tensor whose leading dims are mergeable, e.g. %s.contiguous()"
        % (name, tuple(t.shape), t.stride(), name),
    )


def _out_dtype(x, out_dtype, where):
    """out's dtype: out_dtype, or x's when None; x's type or float32."""
    if out_dtype is None or out_dtype == x.dtype:
        return x.dtype
    if out_dtype != _FP32:
        raise _type_error(
            where, "out_dtype=%s: must be None, x.dtype (%s) or torch.float32" % (out_dtype, x.dtype)
        )
    return _FP32


def _epilogue_name(epilogue):
    for name, value in L.EPILOGUES.items():
        if value == epilogue:
            return name
    return str(epilogue)


def _check_linear(x, weight, bias, out, where, allow_meta=False, residual=None, out_dtype=None, epilogue=0):
    """Raises the error that names the offending argument; returns otherwise."""
    _check_tensor(x, "x", where, None, allow_meta, dtype=None)
    device = x.device
    _check_tensor(weight, "weight", where, device, allow_meta, dtype=x.dtype)
    if bias is not None:
        _check_tensor(bias, "bias", where, device, allow_meta, dtype=x.dtype)
    od = _out_dtype(x, out.dtype if out_dtype is None and out is not None else out_dtype, where)
    if out is not None:
        _check_tensor(out, "out", where, device, allow_meta, dtype=od)
    if residual is not None:
        _check_tensor(residual, "residual", where, device, allow_meta, dtype=od)
        if epilogue:
            raise _value_error(where, "residual with %s: a residual is added only to a plain linear" % (
                _epilogue_name(epilogue),))
    if x.dim() < 1:
        raise _value_error(where, "x must have shape [..., K], got a 0-d tensor")
    if weight.dim() != 2:
        raise _value_error(where, "weight must be 2-D [N, K] (as nn.Linear stores it), got shape %s" % (tuple(weight.shape),))
    k = x.shape[-1]
    n, kw = weight.shape
    if kw != k:
        raise _value_error(
            where, "weight.shape[1]=%s must equal x.shape[-1]=%s (K); weight is [N, K], x is [..., K]" % (kw, k)
        )
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != n:
            raise _value_error(where, "bias must have shape [N]=[%s], got %s" % (n, tuple(bias.shape)))
        if n > 1 and bias.stride(0) != 1:
            raise _value_error(where, "bias must be contiguous, got stride %s" % (bias.stride(0),))
    if epilogue and n % 2:
        raise _value_error(
            where, "weight.shape[0]=%s must be even for %s: weight stacks N/2 gate rows over N/2 up rows"
            % (n, _epilogue_name(epilogue))
        )
    n_out = n // 2 if epilogue else n
    if x.dim() > 2 and _flatten_lead(x.shape, x.stride()) is None:
        raise _not_flattenable(where, "x", x)
    for name, t in (("out", out), ("residual", residual)):
        if t is None:
            continue
        expected = tuple(x.shape[:-1]) + (n_out,)
        if tuple(t.shape) != expected:
            raise _value_error(
                where, "%s must have shape %s ([..., %s]), got %s"
                % (name, expected, "N/2" if epilogue else "N", tuple(t.shape))
            )
        if t.dim() > 2 and _flatten_lead(t.shape, t.stride()) is None:
            raise _not_flattenable(where, name, t)


def _check_bmm(a, b, out, where, allow_meta=False):
    _check_tensor(a, "a", where, None, allow_meta)
    device = a.device
    _check_tensor(b, "b", where, device, allow_meta, "a")
    if out is not None:
        _check_tensor(out, "out", where, device, allow_meta, "a")
    if a.dim() != 3:
        raise _value_error(where, "a must be 3-D [L, M, K], got shape %s" % (tuple(a.shape),))
    if b.dim() != 3:
        raise _value_error(where, "b must be 3-D [L, K, N], got shape %s" % (tuple(b.shape),))
    if b.shape[0] != a.shape[0]:
        raise _value_error(where, "b.shape[0]=%s must equal a.shape[0]=%s (L)" % (b.shape[0], a.shape[0]))
    if b.shape[1] != a.shape[2]:
        raise _value_error(where, "b.shape[1]=%s must equal a.shape[2]=%s (K)" % (b.shape[1], a.shape[2]))
    if out is not None:
        expected = (a.shape[0], a.shape[1], b.shape[2])
        if tuple(out.shape) != expected:
            raise _value_error(where, "out must have shape %s ([L, M, N]), got %s" % (expected, tuple(out.shape)))


# ---- the CUDA kernels -----------------------------------------------------------


def _fail_linear(x, weight, bias, out, where, residual=None, out_dtype=None, epilogue=0):
    """The quick checks of run_linear failed: raise the error naming the argument."""
    _check_linear(x, weight, bias, out, where, residual=residual, out_dtype=out_dtype, epilogue=epilogue)
    raise _value_error(where, "unsupported arguments")  # pragma: no cover - the check above raises


def _fail_bmm(a, b, out, where):
    _check_bmm(a, b, out, where)
    raise _value_error(where, "unsupported arguments")  # pragma: no cover


def _launch(problem, opts, device_index, where):
    if _get_device() == device_index:
        status = _c_gemm(problem, opts, _raw_stream(device_index))
    else:
        with torch.cuda.device(device_index):
            status = _c_gemm(problem, opts, _raw_stream(device_index))
    if status:
        raise L.error_from_status(status, where)


def _row_strides(t, m, cols, where, name):
    """(stride of M, stride of N) of an [..., cols] tensor viewed as [M, cols]."""
    if t.dim() == 2:
        sm, sn = t.stride()
    else:
        sn = t.stride(-1)
        r = _flatten_lead(t.shape, t.stride())
        if r is None:
            raise _not_flattenable(where, name, t)
        sm = r[1]
    if m <= 1:
        sm = 1 if sn != 1 else cols
    return sm, sn


def run_linear(x, weight, bias, out, backend, tactic, pdl, where, options=None, launch=None, residual=None,
               out_dtype=None, epilogue=0):
    d = x.get_device()
    xt = x.dtype
    od = out_dtype if out_dtype is not None else xt if out is None else out.dtype  # out's dtype decides
    if (
        d < 0
        or weight.get_device() != d
        or (xt is not _BF16 and xt is not _FP16)
        or weight.dtype is not xt
        or (od is not xt and od is not _FP32)
        or weight.dim() != 2
        or x.dim() == 0
        or (bias is not None and (bias.get_device() != d or bias.dtype is not xt or bias.dim() != 1))
        or (out is not None and (out.get_device() != d or out.dtype is not od))
        or (residual is not None and (residual.get_device() != d or residual.dtype is not od or epilogue))
    ):
        _fail_linear(x, weight, bias, out, where, residual, out_dtype, epilogue)
    xs = x.shape
    k = xs[-1]
    n, kw = weight.shape
    if kw != k or (bias is not None and (bias.shape[0] != n or (n > 1 and bias.stride(0) != 1))) or (epilogue and n % 2):
        _fail_linear(x, weight, bias, out, where, residual, out_dtype, epilogue)
    n_out = n // 2 if epilogue else n

    if len(xs) == 2:
        m = xs[0]
        sxm, sxk = x.stride()
    else:
        sxk = x.stride(-1)
        r = _flatten_lead(xs, x.stride())
        if r is None:
            raise _not_flattenable(where, "x", x)
        m, sxm = r
    if m <= 1:  # the stride of a size-1 dim is meaningless: pick one the layout rules accept
        sxm = 1 if sxk != 1 else k

    if out is None:
        out = x.new_empty(xs[:-1] + (n_out,), dtype=od)
        som, son = n_out, 1
    else:
        os_ = out.shape
        if len(os_) != len(xs) or os_[-1] != n_out or os_[:-1] != xs[:-1]:
            _fail_linear(x, weight, bias, out, where, residual, out_dtype, epilogue)
        som, son = _row_strides(out, m, n_out, where, "out")
    if residual is None:
        res_ptr, srm, srn = 0, som, son
    else:
        if residual.shape != out.shape:
            _fail_linear(x, weight, bias, out, where, residual, out_dtype, epilogue)
        res_ptr = residual.data_ptr()
        srm, srn = _row_strides(residual, m, n_out, where, "residual")

    swn, swk = weight.stride()
    if n <= 1:
        swn = 1 if swk != 1 else k

    if options is not None:  # the tuner: split-K and stages too
        opts = options
    elif backend == "auto" and tactic is None and pdl is None:
        opts = _DEFAULT_OPTIONS
    else:
        opts = _options(backend, tactic, pdl)
    # Not the tuner's calls, not get_plan's, and not a gated call: the tuners time
    # GEMMs without one, and the library plans gated calls by its cost model.
    if _record is not None and options is None and launch is None and not epilogue:
        _record(n, k, m, bias is not None)
    problem = _thread_problem()
    _pack(
        problem, 0,
        m, n, k, 1, _IN_TYPES[xt],
        x.data_ptr(), 0, sxm, sxk,
        weight.data_ptr(), 0, swn, swk,
        0 if bias is None else bias.data_ptr(),
        out.data_ptr(), 0, som, son,
        _OUT_TYPES[od], epilogue, res_ptr, 0, srm, srn,
    )  # fmt: skip
    (launch or _launch)(problem, opts, d, where)  # get_plan passes a launch that only plans
    return out


def run_bmm(a, b, out, where):
    d = a.get_device()
    if (
        d < 0
        or b.get_device() != d
        or a.dtype is not _BF16
        or b.dtype is not _BF16
        or a.dim() != 3
        or b.dim() != 3
        or (out is not None and (out.get_device() != d or out.dtype is not _BF16 or out.dim() != 3))
    ):
        _fail_bmm(a, b, out, where)
    nl, m, k = a.shape
    bl, kb, n = b.shape
    if bl != nl or kb != k:
        _fail_bmm(a, b, out, where)
    if out is None:
        out = a.new_empty((nl, m, n))
    elif out.shape != (nl, m, n):
        _fail_bmm(a, b, out, where)
    sal, sam, sak = a.stride()
    sbl, sbk, sbn = b.stride()  # b[l] is K x N, i.e. W^T: W[l][n][k] = b[l][k][n]
    sol, som, son = out.stride()
    if m <= 1:
        sam = 1 if sak != 1 else k
        som = 1 if son != 1 else n
    if n <= 1:
        sbn = 1 if sbk != 1 else k
    problem = _thread_problem()
    _pack(
        problem, 0,
        m, n, k, nl, 0,
        a.data_ptr(), sal, sam, sak,
        b.data_ptr(), sbl, sbn, sbk,
        0,
        out.data_ptr(), sol, som, son,
        L.DTYPE_BF16, 0, 0, 0, 0, 0,
    )  # fmt: skip
    _launch(problem, _DEFAULT_OPTIONS, d, where)
    return out


def _linear_cuda(x, weight, bias=None, backend="auto", tactic=None, pdl=None, residual=None, out_dtype=None,
                 epilogue=0):
    return run_linear(x, weight, bias, None, backend, tactic, pdl, "tgv_gemm.linear", None, None, residual,
                      out_dtype, epilogue)


def _linear_out_cuda(x, weight, bias, out, backend="auto", tactic=None, pdl=None, residual=None, epilogue=0):
    run_linear(x, weight, bias, out, backend, tactic, pdl, "tgv_gemm.linear", None, None, residual, out.dtype,
               epilogue)


def _linear_residual_cuda(x, weight, bias, hidden, backend="auto", tactic=None, pdl=None):
    run_linear(x, weight, bias, hidden, backend, tactic, pdl, "tgv_gemm.linear", None, None, hidden, hidden.dtype)


def _bmm_cuda(a, b):
    return run_bmm(a, b, None, "tgv_gemm.bmm")


def _bmm_out_cuda(a, b, out):
    run_bmm(a, b, out, "tgv_gemm.bmm")


# CPU kernels exist only to say clearly that the tensors must be on the GPU
# (instead of the dispatcher's "could not run 'tgv::linear' with arguments from
# the 'CPU' backend").
def _linear_cpu(x, weight, bias=None, backend="auto", tactic=None, pdl=None, residual=None, out_dtype=None,
                epilogue=0):
    _check_linear(x, weight, bias, None, "tgv_gemm.linear", residual=residual, out_dtype=out_dtype, epilogue=epilogue)
    raise _value_error("tgv_gemm.linear", "tensors must be CUDA tensors")  # pragma: no cover


def _linear_out_cpu(x, weight, bias, out, backend="auto", tactic=None, pdl=None, residual=None, epilogue=0):
    _check_linear(x, weight, bias, out, "tgv_gemm.linear", residual=residual, out_dtype=out.dtype, epilogue=epilogue)
    raise _value_error("tgv_gemm.linear", "tensors must be CUDA tensors")  # pragma: no cover


def _linear_residual_cpu(x, weight, bias, hidden, backend="auto", tactic=None, pdl=None):
    _check_linear(x, weight, bias, hidden, "tgv_gemm.linear", residual=hidden, out_dtype=hidden.dtype)
    raise _value_error("tgv_gemm.linear", "tensors must be CUDA tensors")  # pragma: no cover


def _bmm_cpu(a, b):
    _check_bmm(a, b, None, "tgv_gemm.bmm")
    raise _value_error("tgv_gemm.bmm", "tensors must be CUDA tensors")  # pragma: no cover


def _bmm_out_cpu(a, b, out):
    _check_bmm(a, b, out, "tgv_gemm.bmm")
    raise _value_error("tgv_gemm.bmm", "tensors must be CUDA tensors")  # pragma: no cover


# ---- the fake (meta) kernels ----------------------------------------------------


def _linear_fake(x, weight, bias=None, backend="auto", tactic=None, pdl=None, residual=None, out_dtype=None,
                 epilogue=0):
    _check_linear(x, weight, bias, None, "tgv_gemm.linear", allow_meta=True, residual=residual, out_dtype=out_dtype,
                  epilogue=epilogue)
    n = weight.shape[0] // 2 if epilogue else weight.shape[0]
    return x.new_empty(tuple(x.shape[:-1]) + (n,), dtype=_out_dtype(x, out_dtype, "tgv_gemm.linear"))


def _linear_out_fake(x, weight, bias, out, backend="auto", tactic=None, pdl=None, residual=None, epilogue=0):
    _check_linear(x, weight, bias, out, "tgv_gemm.linear", allow_meta=True, residual=residual, out_dtype=out.dtype,
                  epilogue=epilogue)


def _linear_residual_fake(x, weight, bias, hidden, backend="auto", tactic=None, pdl=None):
    _check_linear(x, weight, bias, hidden, "tgv_gemm.linear", allow_meta=True, residual=hidden,
                  out_dtype=hidden.dtype)


def _bmm_fake(a, b):
    _check_bmm(a, b, None, "tgv_gemm.bmm", allow_meta=True)
    return a.new_empty((a.shape[0], a.shape[1], b.shape[2]))


def _bmm_out_fake(a, b, out):
    _check_bmm(a, b, out, "tgv_gemm.bmm", allow_meta=True)


# ---- registration ---------------------------------------------------------------

_SCHEMAS = {
    "linear": (
        'linear(Tensor x, Tensor weight, Tensor? bias=None, str backend="auto", int? tactic=None, '
        "bool? pdl=None, Tensor? residual=None, ScalarType? out_dtype=None, int epilogue=0) -> Tensor",
        _linear_cuda, _linear_cpu, _linear_fake,
    ),
    "linear_out": (
        'linear_out(Tensor x, Tensor weight, Tensor? bias, Tensor(a!) out, str backend="auto", '
        "int? tactic=None, bool? pdl=None, Tensor? residual=None, int epilogue=0) -> ()",
        _linear_out_cuda, _linear_out_cpu, _linear_out_fake,
    ),
    # hidden = x @ weight.T (+ bias) + hidden, in place: the residual is out.
    "linear_residual_": (
        'linear_residual_(Tensor x, Tensor weight, Tensor? bias, Tensor(a!) hidden, str backend="auto", '
        "int? tactic=None, bool? pdl=None) -> ()",
        _linear_residual_cuda, _linear_residual_cpu, _linear_residual_fake,
    ),
    "bmm": ("bmm(Tensor a, Tensor b) -> Tensor", _bmm_cuda, _bmm_cpu, _bmm_fake),
    "bmm_out": ("bmm_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", _bmm_out_cuda, _bmm_out_cpu, _bmm_out_fake),
}  # fmt: skip


def _register():
    if hasattr(torch.ops, "tgv") and hasattr(torch.ops.tgv, "linear"):
        raise ImportError(
            "tgv_gemm: the torch ops tgv::* are already registered in this process, by another copy of "
            "tgv_gemm (%s?); import only one" % L.library_path()
        )
    library = torch.library.Library("tgv", "DEF")
    tags = (torch.Tag.pt2_compliant_tag,)
    for name, (schema, cuda_fn, cpu_fn, fake_fn) in _SCHEMAS.items():
        library.define(schema, tags=tags)
        library.impl(name, cuda_fn, "CUDA")
        library.impl(name, cpu_fn, "CPU")
        torch.library.register_fake("tgv::" + name, fake_fn, lib=library)
    return library


_library = _register()  # keeps the registrations alive

op_linear = torch.ops.tgv.linear.default
op_linear_out = torch.ops.tgv.linear_out.default
op_linear_residual_ = torch.ops.tgv.linear_residual_.default
op_bmm = torch.ops.tgv.bmm.default
op_bmm_out = torch.ops.tgv.bmm_out.default
