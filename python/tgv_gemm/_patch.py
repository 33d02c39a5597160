"""tgv_gemm.patch(model): every eligible nn.Linear of a model runs tgv_gemm.linear.

    handle = tgv_gemm.patch(model)      # or: with tgv_gemm.patch(model): ...
    print(handle.summary())             # how many patched and fused, how many skipped and why
    handle.unpatch()                    # every forward as before (merged weights stay merged)

The swap sets an instance attribute `forward` on each patched module (a
function of this file bound to it: _Bound, which pickles), so
nn.Module.__call__, hooks, state_dict, deepcopy, torch.save and torch.compile
see an ordinary module; the weights are the module's own
(nothing copied, nothing cast; a fusion merges two weights once, see below).
Taking the attribute away restores the class's forward.

A patched forward runs tgv_gemm.linear when the input is a bf16 CUDA tensor and
autograd has nothing to record (inference: torch.no_grad / inference_mode, or
tensors that do not require grad); otherwise it calls F.linear, which is what the
module did before (tgv_gemm has no backward). tgv_gemm.linear launches on the
current stream, so a patched model can be captured in a CUDA graph (warm each
shape up once outside the capture, as with any cuBLAS call).

Fusion (fuse=True, the default): FUSERS holds functions
fuser(name, module, backend) -> Fusion | str | None, asked for every module
before its linears are patched one by one: None when the module is not of the
fuser's kind, a reason (str, listed in handle.not_fused) when it is and cannot
be fused, or a Fusion, which replaces that module's forward and names the child
linears it runs itself (those are counted as fused, not patched). Registered:
_fusers.gated_mlp (gate_proj/up_proj/act_fn of a gated MLP into one
silu_mul_linear / gelu_tanh_mul_linear over a merged [gate; up] weight; the two
weights become views into it, see _fusers.py) and _fusers.qkv (an attention's
q_proj/k_proj/v_proj into one GEMM over a merged [q; k; v] weight, each linear
returning its columns of the one output; the attention's forward stays).
"""

import inspect

import torch
import torch.nn.functional as F

_BF16 = torch.bfloat16
_grad_enabled = torch.is_grad_enabled
_F_linear = F.linear

# Weights on these device types are eligible (the CPU tests add "cpu" and stub
# the launch).
_DEVICE_TYPES = ("cuda",)


class Fusion:
    """What a fuser returns: `forward(module, *args, **kwargs)`, the replacement
    for the module's forward (bound to it by patch()); `covers`, the names
    (relative to the module) of the nn.Linear children it runs itself; `what`,
    a line for the handle; and `apply()`, called by patch() once the covered
    linears passed `include`, which does what the forward needs done first (a
    weight merge) and returns {attribute: value} to set on the module (removed
    again by unpatch) or a reason (str) it could not, having changed nothing.

    `forward` must be a module-level function (patch() remembers it to know its
    own forwards; a closure a module would pin its state for the process).

    on_children=True: the module's forward stays; `forward` replaces each covered
    linear's forward instead, and apply()'s attributes are set on each of them
    (the q/k/v fusion: the attention's forward is left as the model wrote it)."""

    def __init__(self, forward, covers, what, apply=None, on_children=False):
        self.forward = forward
        self.covers = tuple(covers)
        self.what = what
        self.apply = apply if apply is not None else dict
        self.on_children = on_children


class FusionState:
    """Base of what a Fusion's apply() keeps on its module: `covers` names the
    linears it runs, so a later patch() knows them as already fused; `into`, on
    the linears of an on_children fusion, names the module they were fused in."""

    covers = ()
    into = None


FUSERS = []


# tgv_gemm/__init__.py imports this file after it has defined linear().
from . import linear as _tgv_linear  # noqa: E402


def _use_tgv(x, weight):
    """True where tgv_gemm.linear computes what F.linear would: a bf16 CUDA
    input and nothing for autograd to record."""
    return (
        (x.is_cuda or x.device.type in _DEVICE_TYPES)
        and x.dtype is _BF16
        and not (_grad_enabled() and (x.requires_grad or weight.requires_grad))
    )


def _forward_auto(self, x):
    w = self.weight
    if _use_tgv(x, w):
        return _tgv_linear(x, w, self.bias)
    return _F_linear(x, w, self.bias)


def _forward_tgv(self, x):
    w = self.weight
    if _use_tgv(x, w):
        return _tgv_linear(x, w, self.bias, backend="tgv")
    return _F_linear(x, w, self.bias)


def _forward_cublas(self, x):
    w = self.weight
    if _use_tgv(x, w):
        return _tgv_linear(x, w, self.bias, backend="cublas")
    return _F_linear(x, w, self.bias)


# One module-level function per backend: a saved model names it (see _Bound).
_FORWARDS = {"auto": _forward_auto, "tgv": _forward_tgv, "cublas": _forward_cublas}


# Every forward function this file installs: the backends', the registered fusers'
# (below) and any other fuser's (added by _fuse when it applies).
_OURS = set(_FORWARDS.values())


class _Bound:
    """A patched module's forward: `__func__` bound to the module `__self__`, as
    a method would be, and picklable so that a saved patched model loads patched.
    (A bound method pickles as getattr(module, func.__name__), which the loaded
    module does not have: torch.save succeeded and torch.load failed.) This one
    pickles as (func, module), func by its qualified name; deepcopy binds the
    copy's function to the copied module."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, func, module):
        self.__func__ = func
        self.__self__ = module

    def __call__(self, *args, **kwargs):
        return self.__func__(self.__self__, *args, **kwargs)

    def __reduce__(self):
        return (_Bound, (self.__func__, self.__self__))

    @property
    def __signature__(self):  # as a bound method's: the function's, without the module
        sig = inspect.signature(self.__func__)
        return sig.replace(parameters=list(sig.parameters.values())[1:])


def _is_ours(module):
    fwd = module.__dict__.get("forward")
    return getattr(fwd, "__func__", None) in _OURS


def _plan_check(weight, bias, backend):
    """The library's own verdict on this weight (tgv_gemm.get_plan at M = 1,
    nothing launched); None when it would run, else the reason."""
    from . import TgvError, get_plan

    x = weight.new_empty((1, weight.shape[1]))
    try:
        get_plan(x, weight, bias, backend=backend)
    except TgvError as e:
        return "refused by the library: %s" % (e,)
    return None


def _capturing():
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def skip_reason(module, backend="auto", check_plan=True):
    """Why this nn.Linear is not patched, or None when it is eligible."""
    if type(module).forward is not torch.nn.Linear.forward:
        return "%s overrides forward" % type(module).__name__
    if _is_ours(module):
        return "already patched"
    if "forward" in module.__dict__:
        return "forward already replaced by another wrapper"
    w, b = module.weight, module.bias
    if not isinstance(w, torch.Tensor) or w.dim() != 2:
        return "weight is not a 2-D tensor"
    if w.device.type not in _DEVICE_TYPES:
        return "weight on %s (CUDA only)" % (w.device.type,)
    if w.dtype is not _BF16:
        return "weight dtype %s (bf16 only)" % (str(w.dtype).replace("torch.", ""),)
    if b is not None and b.dtype is not _BF16:
        return "bias dtype %s (bf16 only)" % (str(b.dtype).replace("torch.", ""),)
    n, k = w.shape
    if n == 0 or k == 0:
        return "empty weight %dx%d" % (n, k)
    if k % 8:
        return "in_features=%d is not a multiple of 8" % k
    if not (w.stride(1) == 1 or w.stride(0) == 1):
        return "weight strides %s match no layout" % (w.stride(),)
    if w.data_ptr() % 16:
        return "weight not 16-byte aligned"
    if b is not None and (b.stride(0) != 1 or b.data_ptr() % 16):
        return "bias not contiguous and 16-byte aligned"
    if check_plan and w.is_cuda and not _capturing():
        return _plan_check(w, b, backend)
    return None


class PatchHandle:
    """What patch() did, and how to undo it.

    patched: names of the nn.Linear modules now running tgv_gemm.linear.
    fused: {name of a module whose forward a fuser replaced: what}; the linears
        it runs itself are in `covered` (neither patched nor skipped).
    not_fused: {name: reason} for every module a fuser recognized and refused
        (its linears are then patched one by one, where eligible).
    skipped: {name: reason} for every nn.Linear left as it was.
    unpatch() puts every module this handle changed back (a module whose forward
    was replaced again since is left alone and listed in `not_restored`); a
    fusion's merged weight stays (the linears' weights remain views into it,
    with the same values).
    Also a context manager: unpatches on exit.
    """

    def __init__(self):
        self.patched = []
        self.fused = {}
        self.covered = []
        self.not_fused = {}
        self.skipped = {}
        self.not_restored = []
        self._modules = []  # (name, module, forward function installed, attribute names set)
        self.active = True

    @staticmethod
    def _tally(reasons):
        out = {}
        for why in reasons.values():
            out[why] = out.get(why, 0) + 1
        return out

    def counts(self):
        """{"patched": n, "fused": n, "covered": n, "not_fused": {reason: n},
        "skipped": {reason: n}}."""
        return {"patched": len(self.patched), "fused": len(self.fused), "covered": len(self.covered),
                "not_fused": self._tally(self.not_fused), "skipped": self._tally(self.skipped)}

    def summary(self):
        c = self.counts()
        parts = ["tgv_gemm.patch: %d nn.Linear patched" % c["patched"]]
        if c["fused"]:
            parts.append("%d modules fused (%d linears)" % (c["fused"], c["covered"]))
        if c["not_fused"]:
            parts.append("%d not fused" % sum(c["not_fused"].values()))
        parts.append("%d skipped" % sum(c["skipped"].values()))
        text = ", ".join(parts)
        for label, reasons in (("fused ", self._tally(self.fused)), ("not fused ", c["not_fused"]),
                               ("", c["skipped"])):
            for why, count in sorted(reasons.items(), key=lambda item: -item[1]):
                text += "\n  %s%d: %s" % (label, count, why)
        return text

    def unpatch(self):
        for name, module, fn, attrs in reversed(self._modules):
            fwd = module.__dict__.get("forward")
            if getattr(fwd, "__func__", None) is fn and getattr(fwd, "__self__", None) is module:
                del module.forward
                for attr in attrs:
                    module.__dict__.pop(attr, None)
            else:
                self.not_restored.append(name)
        self._modules = []
        self.active = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.unpatch()
        return False

    def __repr__(self):
        c = self.counts()
        return "<tgv_gemm.PatchHandle %s: %d patched, %d fused, %d skipped>" % (
            "active" if self.active else "undone", c["patched"], c["fused"], sum(c["skipped"].values()))


def _join(prefix, name):
    return "%s.%s" % (prefix, name) if prefix else name


def _fuse(model, handle, backend, include, covered):
    for name, module in model.named_modules():
        if _is_ours(module):
            continue
        for fuser in FUSERS:
            fusion = fuser(name, module, backend)
            if fusion is None:
                continue
            if "forward" in module.__dict__:  # e.g. accelerate's hooks: that forward may do anything
                handle.not_fused[name] = "forward already replaced by another wrapper"
                break
            if isinstance(fusion, str):
                handle.not_fused[name] = fusion
                break
            children = [(_join(name, c), module.get_submodule(c)) for c in fusion.covers]
            excluded = [n for n, child in children if include is not None and not include(n, child)]
            if excluded:
                handle.not_fused[name] = "excluded: %s" % ", ".join(excluded)
                break
            state = fusion.apply()
            if isinstance(state, str):
                handle.not_fused[name] = state
                break
            _OURS.add(fusion.forward)
            targets = children if fusion.on_children else [(name, module)]
            for target_name, target in targets:
                target.__dict__.update(state)
                target.forward = _Bound(fusion.forward, target)
                handle._modules.append((target_name, target, fusion.forward, tuple(state)))
            handle.fused[name] = fusion.what
            for child_name, child in children:
                covered[id(child)] = None
                handle.covered.append(child_name)
            break


def _fused_earlier(model):
    """{id(linear): reason} for the linears a fusion of an earlier patch() runs."""
    out = {}
    for name, module in model.named_modules():
        if not _is_ours(module):
            continue
        for value in module.__dict__.values():
            if isinstance(value, FusionState):
                for child in value.covers:
                    out[id(module.get_submodule(child))] = "already fused (into %s)" % (name or "the model",)
                if value.into is not None:
                    out[id(module)] = "already fused (into %s)" % (value.into or "the model",)
    return out


def patch(model, *, backend="auto", include=None, fuse=True):
    """Swaps the forward of every eligible nn.Linear in `model` (itself one, or
    any module containing them) for tgv_gemm.linear, after fusing the modules the
    registered FUSERS know (fuse=True); returns a PatchHandle.

    Eligible: a plain nn.Linear (a subclass that overrides forward is left
    alone), bf16 weight (and bias) on a CUDA device, in_features a multiple of
    8, a layout and alignment the library takes (its get_plan() says so), not
    already patched and not wrapped by someone else. Everything else keeps its
    forward and is listed in handle.skipped with the reason. Patching twice
    does not wrap twice (the second handle lists the modules as "already
    patched" / "already fused").

    backend: passed to tgv_gemm.linear ("auto", "tgv", "cublas") and to the
        fused ops.
    include: optional predicate include(name, module) -> bool; a linear it
        rejects is skipped ("excluded"), and a fusion covering it is not made.
    fuse: fuse what FUSERS recognize (today: gated MLPs, gate_proj + up_proj +
        SiLU / GELU-tanh into one GEMM over a merged weight, which patch() builds
        once: the two weights become views into it; and an attention's q_proj,
        k_proj, v_proj into one GEMM likewise; see _fusers.py). fuse=False
        leaves every module's forward but the linears' as it was, and copies
        nothing.
    """
    if backend not in ("auto", "tgv", "cublas"):
        from . import _lib

        raise _lib.TgvValueError("tgv_gemm.patch: backend=%r: expected 'auto', 'tgv' or 'cublas'" % (backend,),
                                 _lib.ERROR_INVALID_ARGUMENT)
    handle = PatchHandle()
    forward = _FORWARDS[backend]
    covered = _fused_earlier(model)
    if fuse and FUSERS:
        _fuse(model, handle, backend, include, covered)
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if id(module) in covered:
            if covered[id(module)] is not None:
                handle.skipped[name] = covered[id(module)]
            continue
        if include is not None and not include(name, module):
            handle.skipped[name] = "excluded"
            continue
        why = skip_reason(module, backend)
        if why is not None:
            handle.skipped[name] = why
            continue
        module.forward = _Bound(forward, module)
        handle._modules.append((name, module, forward, ()))
        handle.patched.append(name)
    return handle


# After patch's helpers exist: the fusers import them.
from . import _fusers  # noqa: E402

FUSERS.append(_fusers.gated_mlp)
FUSERS.append(_fusers.qkv)
# Known as ours before any fusion in this process: a model loaded with torch.load
# carries these forwards (patch() then lists its modules as fused, not as wrapped).
_OURS.update((_fusers.forward_gated, _fusers.forward_qkv))
