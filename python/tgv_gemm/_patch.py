"""tgv_gemm.patch(model): every eligible nn.Linear of a model runs tgv_gemm.linear.

    handle = tgv_gemm.patch(model)      # or: with tgv_gemm.patch(model): ...
    print(handle.summary())             # how many patched, how many skipped and why
    handle.unpatch()                    # every module exactly as before

The swap sets an instance attribute `forward` on each patched module (a bound
method of this file), so nn.Module.__call__, hooks, state_dict, deepcopy and
torch.compile see an ordinary module; the weights are the module's own
(nothing copied, nothing cast). Taking the attribute away restores the class's
forward.

A patched forward runs tgv_gemm.linear when the input is a bf16 CUDA tensor and
autograd has nothing to record (inference: torch.no_grad / inference_mode, or
tensors that do not require grad); otherwise it calls F.linear, which is what the
module did before (tgv_gemm has no backward). tgv_gemm.linear launches on the
current stream, so a patched model can be captured in a CUDA graph (warm each
shape up once outside the capture, as with any cuBLAS call).

Fusion seam: the library is gaining fused epilogues (SiLU-and-mul over a merged
[gate; up] weight, residual add). FUSERS holds functions fuser(name, module) ->
Fusion or None, asked for every module before its linears are patched one by
one; a Fusion replaces that module's forward and names the child linears it
covers (those are counted as fused, not patched). None is registered yet.
"""

import types

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
    for the module's forward (bound to it by patch()), and `covers`, the names
    (relative to the module) of the nn.Linear children it runs itself."""

    def __init__(self, forward, covers, what):
        self.forward = forward
        self.covers = tuple(covers)
        self.what = what


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


def _make_forward(backend):
    if backend == "auto":
        return _forward_auto

    def forward(self, x):
        w = self.weight
        if _use_tgv(x, w):
            return _tgv_linear(x, w, self.bias, backend=backend)
        return _F_linear(x, w, self.bias)

    return forward


_OURS = {_forward_auto}  # every forward function this file installs


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
    fused: {name of a module whose forward a fuser replaced: what}, and the
        linears it covers are in `covered`.
    skipped: {name: reason} for every nn.Linear left as it was.
    unpatch() puts every module this handle changed back (a module whose forward
    was replaced again since is left alone and listed in `not_restored`).
    Also a context manager: unpatches on exit.
    """

    def __init__(self):
        self.patched = []
        self.fused = {}
        self.covered = []
        self.skipped = {}
        self.not_restored = []
        self._modules = []  # (name, module, forward function installed)
        self.active = True

    def counts(self):
        """{"patched": n, "fused": n, "skipped": {reason: n}}."""
        reasons = {}
        for why in self.skipped.values():
            reasons[why] = reasons.get(why, 0) + 1
        return {"patched": len(self.patched), "fused": len(self.fused), "skipped": reasons}

    def summary(self):
        c = self.counts()
        parts = ["tgv_gemm.patch: %d nn.Linear patched" % c["patched"]]
        if c["fused"]:
            parts.append("%d modules fused (%d linears)" % (c["fused"], len(self.covered)))
        skipped = sum(c["skipped"].values())
        parts.append("%d skipped" % skipped)
        text = ", ".join(parts)
        for why, count in sorted(c["skipped"].items(), key=lambda item: -item[1]):
            text += "\n  %d: %s" % (count, why)
        return text

    def unpatch(self):
        for name, module, fn in reversed(self._modules):
            fwd = module.__dict__.get("forward")
            if getattr(fwd, "__func__", None) is fn and getattr(fwd, "__self__", None) is module:
                del module.forward
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


def patch(model, *, backend="auto", include=None, fuse=True):
    """Swaps the forward of every eligible nn.Linear in `model` (itself one, or
    any module containing them) for tgv_gemm.linear; returns a PatchHandle.

    Eligible: a plain nn.Linear (a subclass that overrides forward is left
    alone), bf16 weight (and bias) on a CUDA device, in_features a multiple of
    8, a layout and alignment the library takes (its get_plan() says so), not
    already patched and not wrapped by someone else. Everything else keeps its
    forward and is listed in handle.skipped with the reason. Patching twice
    does not wrap twice (the second handle lists the modules as "already
    patched").

    backend: passed to tgv_gemm.linear ("auto", "tgv", "cublas").
    include: optional predicate include(name, module) -> bool; a linear it
        rejects is skipped ("excluded").
    fuse: ask the registered FUSERS (none yet) to fuse modules they know.
    """
    if backend not in ("auto", "tgv", "cublas"):
        from . import _lib

        raise _lib.TgvValueError("tgv_gemm.patch: backend=%r: expected 'auto', 'tgv' or 'cublas'" % (backend,),
                                 _lib.ERROR_INVALID_ARGUMENT)
    handle = PatchHandle()
    forward = _make_forward(backend)
    _OURS.add(forward)
    covered = set()
    if fuse and FUSERS:
        for name, module in model.named_modules():
            if _is_ours(module) or "forward" in module.__dict__:
                continue
            for fuser in FUSERS:
                fusion = fuser(name, module)
                if fusion is None:
                    continue
                _OURS.add(fusion.forward)
                module.forward = types.MethodType(fusion.forward, module)
                handle._modules.append((name, module, fusion.forward))
                handle.fused[name] = fusion.what
                for child in fusion.covers:
                    covered.add(id(module.get_submodule(child)))
                    handle.covered.append(_join(name, child))
                break
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or id(module) in covered:
            continue
        if include is not None and not include(name, module):
            handle.skipped[name] = "excluded"
            continue
        why = skip_reason(module, backend)
        if why is not None:
            handle.skipped[name] = why
            continue
        module.forward = types.MethodType(forward, module)
        handle._modules.append((name, module, forward))
        handle.patched.append(name)
    return handle
