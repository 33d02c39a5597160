"""tgv-gemm for PyTorch: the bf16 GEMM of LLM decoding (few tokens, large weights).

    import torch, tgv_gemm
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)     # [..., K] tokens
    w = torch.randn(6144, 4096, device="cuda", dtype=torch.bfloat16)  # [N, K], as nn.Linear stores it
    y = tgv_gemm.linear(x, w)             # == F.linear(x, w): [8, 6144], bf16, fp32 accumulation
    y = torch.ops.tgv.linear(x, w, None)  # the same custom op: torch.compile and CUDA graphs see it

`linear(x, weight, bias=None, *, residual=None, out=None, out_dtype=None,
backend="auto", tactic=None, pdl=None)`, `silu_mul_linear(x, w_gate_up, ...)` /
`gelu_tanh_mul_linear` (fused gate_up projection and activation) and
`bmm(a, b, *, out=None)` ([L, M, K] x [L, K, N] -> [L, M, N]) are the
torch custom ops `torch.ops.tgv.linear` / `linear_out` / `bmm` / `bmm_out`
(with fake kernels: `torch.compile(fullgraph=True)` traces them). They launch
on `torch.cuda.current_stream()`, so CUDA-graph capture records them (run a
shape once outside capture first: the cuBLASLt backend caches its algorithm).

Nothing is copied: transposed and strided views go to the library as strides
(x K- or M-major, weight K- or N-major, out row- or column-major); a layout the
library cannot take, CPU tensors, tensors on different devices and mismatched
shapes raise ValueError, a dtype other than bf16 or fp16 (one type for x, weight
and bias; out of that type or fp32; bmm bf16 only) raises TypeError, a request the
device cannot serve raises NotImplementedError (a RuntimeError), CUDA/cuBLAS
failures raise RuntimeError; each is also a `tgv_gemm.TgvError` and carries the
library's message naming the argument. Inference only: the ops have no autograd
formula. In plain eager mode linear() and bmm() skip the dispatcher's round
trip and call the op's CUDA kernel directly (same checks, same launch); under
torch.compile, tensor subclasses, dispatch/function modes, functorch, the
profiler or inputs requiring grad they call torch.ops.tgv.* instead.

`with autotune():` around an engine's warm-up records the linear shapes it runs
and tunes them when the block exits; `patch(model)` makes every eligible
nn.Linear of a model run linear() (reversible: `handle.unpatch()`).

`tune(shapes, ms)` times every candidate (tactic, split-K, ring depth, cuBLASLt)
for your weight shapes on this GPU, as `tgv-bench --tune` does, and writes the
tuning file that backend "auto" follows, at once in this process and in those
started afterwards. `reload_tuning()` has the library re-read the file (one
written by `tgv-bench --tune`, say) without restarting.

Requires torch >= 2.4: `import tgv_gemm` without torch raises ImportError
saying so. $TGV_GEMM_LIBRARY overrides where libtgv_gemm.so is loaded from
(default: next to this file, where `pip install .` puts it).
"""

try:
    import torch  # noqa: F401
except ModuleNotFoundError as _e:
    if _e.name != "torch":
        raise
    raise ImportError(
        "tgv_gemm needs PyTorch, which is not installed: install torch (>= 2.4, a CUDA build) first, "
        "e.g. `pip install torch`, then `import tgv_gemm` again"
    ) from None

if not hasattr(torch, "library") or not hasattr(torch.library, "register_fake"):
    raise ImportError("tgv_gemm needs torch >= 2.4 (torch.library.register_fake); found torch %s" % torch.__version__)

from . import _lib
from ._lib import (  # noqa: F401
    TgvError,
    TgvNotSupportedError,
    TgvRuntimeError,
    TgvTypeError,
    TgvValueError,
    library_path,
)
from . import _ops
from ._lib import reload_tuning  # noqa: F401
from ._tune import tune, tuning_file_path  # noqa: F401

__version__ = _lib.version()  # the library's: one version, CMakeLists.txt's

__all__ = [
    "linear",
    "silu_mul_linear",
    "gelu_tanh_mul_linear",
    "bmm",
    "list_tactics",
    "get_plan",
    "tune",
    "tuning_file_path",
    "reload_tuning",
    "autotune",
    "patch",
    "library_version",
    "library_path",
    "TgvError",
    "TgvValueError",
    "TgvTypeError",
    "TgvNotSupportedError",
    "TgvRuntimeError",
]

_op_linear = _ops.op_linear
_op_linear_out = _ops.op_linear_out
_op_linear_residual_ = _ops.op_linear_residual_
_op_bmm = _ops.op_bmm
_op_bmm_out = _ops.op_bmm_out
_run_linear = _ops.run_linear
_run_bmm = _ops.run_bmm

# In plain eager mode, linear() and bmm() call the CUDA kernel of the op
# directly instead of through torch's dispatcher (the round trip into a Python
# kernel costs several microseconds a call). They do so only where the two are
# indistinguishable: not under torch.compile/export, plain tensors (no
# subclasses, fake or functional tensors), CUDA, no TorchDispatchMode or
# TorchFunctionMode, no functorch transform, no profiler, and no input that
# autograd would have to see. Everywhere else they call torch.ops.tgv.*.
_is_compiling = torch.compiler.is_compiling
_Tensor = torch.Tensor
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_C = torch._C
_grad_enabled = _C.is_grad_enabled


def _always_dispatch():
    return True


_dispatch_modes = getattr(_C, "_len_torch_dispatch_stack", None)
_function_modes = getattr(_C, "_is_torch_function_mode_enabled", None)
_functorch = getattr(_C, "_are_functorch_transforms_active", None)
_profiling = getattr(getattr(_C, "_autograd", None), "_profiler_enabled", None)
if None in (_dispatch_modes, _function_modes, _functorch, _profiling):  # pragma: no cover - unknown torch
    _dispatch_modes = _always_dispatch


def _eager(tensors):
    """True where linear() may call the op's CUDA kernel directly (see above)."""
    x = tensors[0]
    if _is_compiling() or type(x) is not _Tensor or not x.is_cuda:
        return False
    for t in tensors[1:]:
        if t is not None and type(t) not in _PLAIN:
            return False
    if _dispatch_modes() or _function_modes() or _functorch() or _profiling():
        return False
    return not (_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))


def linear(x, weight, bias=None, *, residual=None, out=None, out_dtype=None, backend="auto", tactic=None, pdl=None):
    """out = x @ weight.T (+ bias) (+ residual), like torch.nn.functional.linear,
    with fp32 accumulation and one rounding at the end.

    x: [..., K] bf16 or fp16 CUDA tensor; its leading dims are flattened into M
       as a view (an error if no view can). K-major (x.stride(-1) == 1) or
       M-major (e.g. x = t.t() for t of shape [K, M]).
    weight: [N, K] of x's dtype, as nn.Linear stores it; K-major or N-major
       (e.g. w.t() of a [K, N] tensor).
    bias: [N] of x's dtype, contiguous, or None.
    residual: [..., N] of out's dtype, added in fp32 before the rounding, or
       None. It may be `out` itself (the hidden state updated in place:
       linear(x, w, residual=h, out=h)); any other overlap is an error.
    out: [..., N] to write into (row- or column-major), or None for a new
       row-major tensor. Returned.
    out_dtype: None (x's dtype) or torch.float32 (e.g. a MoE router's logits).
    backend: "auto" (fastest validated for the device and shape), "tgv" (our
       kernels; an error where they cannot run) or "cublas" (cuBLASLt, and the
       library's epilogue kernel where one is needed).
    tactic: an id from list_tactics() (backend "tgv"/"auto"), or None for auto.
    pdl: launch with programmatic dependent launch (None: the library default, on).
    """
    if (
        residual is None
        and out_dtype is None
        and not _is_compiling()
        and type(x) is _Tensor
        and type(weight) in _PLAIN
        and (bias is None or type(bias) in _PLAIN)
        and (out is None or type(out) is _Tensor)
        and x.is_cuda
        and not _dispatch_modes()
        and not _function_modes()
        and not _functorch()
        and not _profiling()
        and not (
            _grad_enabled()
            and (
                x.requires_grad
                or weight.requires_grad
                or (bias is not None and bias.requires_grad)
                or (out is not None and out.requires_grad)
            )
        )
    ):
        return _run_linear(x, weight, bias, out, backend, tactic, pdl, "tgv_gemm.linear")
    return _linear_general(x, weight, bias, residual, out, out_dtype, backend, tactic, pdl, 0)


def _linear_general(x, weight, bias, residual, out, out_dtype, backend, tactic, pdl, epilogue):
    if out is not None and out_dtype is None:
        out_dtype = out.dtype
    if _eager((x, weight, bias, residual, out)):
        return _run_linear(x, weight, bias, out, backend, tactic, pdl, "tgv_gemm.linear", None, None, residual,
                           out_dtype, epilogue)
    if out is None:
        return _op_linear(x, weight, bias, backend, tactic, pdl, residual, out_dtype, epilogue)
    if residual is out:
        _op_linear_residual_(x, weight, bias, out, backend, tactic, pdl)
    else:
        _op_linear_out(x, weight, bias, out, backend, tactic, pdl, residual, epilogue)
    return out


def silu_mul_linear(x, weight, bias=None, *, out=None, out_dtype=None, backend="auto", tactic=None, pdl=None):
    """out = silu(x @ gate.T + bias_gate) * (x @ up.T + bias_up): the gated MLP's
    merged gate_up projection and its activation in one kernel.

    weight: [N, K], rows 0..N/2-1 the gate projection and N/2..N-1 the up
       projection (as engines store a merged gate_up weight); N even.
    bias: [N] (gate then up) or None. out: [..., N/2]. Otherwise as linear().
    """
    return _linear_general(x, weight, bias, None, out, out_dtype, backend, tactic, pdl, _lib.EPILOGUES["silu_mul"])


def gelu_tanh_mul_linear(x, weight, bias=None, *, out=None, out_dtype=None, backend="auto", tactic=None, pdl=None):
    """As silu_mul_linear() with GELU's tanh approximation for the gate
    (torch.nn.functional.gelu(approximate="tanh"))."""
    return _linear_general(x, weight, bias, None, out, out_dtype, backend, tactic, pdl,
                           _lib.EPILOGUES["gelu_tanh_mul"])


def bmm(a, b, *, out=None):
    """out[l] = a[l] @ b[l], like torch.bmm: a [L, M, K], b [L, K, N] -> [L, M, N],
    bf16 with fp32 accumulation. b may be any layout the library takes through
    strides (b[l] row-major is the library's W N-major; b.transpose(1, 2) of an
    [L, N, K] tensor is W K-major); a batch stride of 0 (b.expand) shares one
    matrix across the batch."""
    if (
        not _is_compiling()
        and type(a) is _Tensor
        and type(b) in _PLAIN
        and (out is None or type(out) is _Tensor)
        and a.is_cuda
        and not _dispatch_modes()
        and not _function_modes()
        and not _functorch()
        and not _profiling()
        and not (_grad_enabled() and (a.requires_grad or b.requires_grad or (out is not None and out.requires_grad)))
    ):
        return _run_bmm(a, b, out, "tgv_gemm.bmm")
    if out is None:
        return _op_bmm(a, b)
    _op_bmm_out(a, b, out)
    return out


_BACKEND_NAMES = {_lib.BACKENDS["tgv"]: "tgv", _lib.BACKENDS["cublas"]: "cublas"}


def get_plan(x, weight, bias=None, *, out=None, backend="auto", tactic=None, pdl=None, residual=None, out_dtype=None,
             epilogue="none"):
    """What linear() would run for these arguments, without launching anything:
    a dict with backend ("tgv" or "cublas"; None for an empty problem), tactic
    (an id from list_tactics(), or None), split_k (-1: stream-K, from a tuning
    file), stages (the pipeline depth) and pdl. Same checks and errors as linear(); epilogue is "none", "silu_mul"
    or "gelu_tanh_mul" (what silu_mul_linear / gelu_tanh_mul_linear run)."""
    if epilogue not in _lib.EPILOGUES:
        raise TgvValueError("tgv_gemm.get_plan: epilogue=%r: must be one of %s" % (epilogue, ", ".join(
            repr(e) for e in _lib.EPILOGUES)), _lib.ERROR_INVALID_ARGUMENT)
    if out is not None and out_dtype is None:
        out_dtype = out.dtype
    plan = {}

    def plan_only(problem, opts, device_index, where):
        info = _lib.PlanInfo()
        with torch.cuda.device(device_index):
            status = _lib.lib.tgv_get_plan_(problem, opts, info)
        if status:
            raise _lib.error_from_status(status, where)
        name = _BACKEND_NAMES.get(info.backend)
        plan.update(backend=name, tactic=info.tactic if name == "tgv" else None, split_k=info.split_k,
                    stages=info.stages, pdl=bool(info.pdl))

    _run_linear(x, weight, bias, out, backend, tactic, pdl, "tgv_gemm.get_plan", launch=plan_only, residual=residual,
                out_dtype=out_dtype, epilogue=_lib.EPILOGUES[epilogue])
    return plan or {"backend": None, "tactic": None, "split_k": 1, "stages": 0, "pdl": pdl is not False}


def list_tactics():
    """The tgv kernel tactics of this build: a list of dicts with keys id, arch,
    cta_m (weight rows per CTA), cta_n (tokens per CTA), cta_k, stages, cluster."""
    return [_lib.get_tactic(i) for i in range(_lib.num_tactics())]


def library_version():
    """The version string of the loaded libtgv_gemm.so."""
    return _lib.version()


# After linear() exists: _patch binds it.
from ._autotune import autotune  # noqa: E402
from ._patch import patch  # noqa: E402
