"""The fusers tgv_gemm.patch(model) asks (registered in _patch.FUSERS).

gated_mlp: a module whose forward is, in its source,
    down_proj(act_fn(gate_proj(x)) * up_proj(x))
(Llama, Mistral, Qwen2/3, Gemma and about a hundred other transformers MLPs)
with act_fn SiLU or GELU's tanh approximation runs
    down_proj(silu_mul_linear(x, W_gate_up, b_gate_up))
instead: the gate and up projections and the activation-and-multiply become one
GEMM over a [2I, K] weight (gate rows first) and its epilogue, down_proj stays
a child linear (patched like any other). Three kernels a layer fewer, and the
[M, I] gate and up outputs never reach memory.

The merged weight: built once at patch time by concatenation, after which the
two nn.Linear weights are *views* into it (Parameter.data set to W[:I] and
W[I:]; the Parameter objects, their names and state_dict stay), so the
originals are freed and the model holds the weight once. Freed blocks stay in
torch's caching allocator (torch.cuda.empty_cache() hands them back). A weight
already laid out so (a second patch after unpatch) is used in place: nothing is
copied again. unpatch() restores the forwards; the weights stay views, with the
same values. load_state_dict copies into the views, so the merged weight
follows; anything that rebinds a weight (model.to(dtype), param.data = ...)
breaks the aliasing, which the fused forward checks on every eager call (four
pointer comparisons; not while torch.compile traces it): it then runs the
module's own forward, which is correct, just unfused. A deepcopy of a fused model is such a case (Parameter.__deepcopy__
clones each weight).

What is proven before fusing, each refusal a reason in handle.not_fused:
- the class's forward source parses to exactly the pattern above (an
  intermediate `name = ...; return name` allowed, the two factors in either
  order, no decorators, a single argument); nothing is inferred from names alone;
- act_fn is one of the known types, exactly (a subclass may compute anything):
  torch.nn.SiLU, torch.nn.functional.silu, transformers' SiLUActivation;
  torch.nn.GELU(approximate="tanh"), transformers' GELUTanh (= PytorchGELUTanh),
  NewGELUActivation, FastGELUActivation; with no instance forward of its own
  (e.g. a kernel swapped in from the hub), and then checked numerically against
  F.silu / F.gelu(approximate="tanh") on 512 fp32 points in [-8, 8] (|diff|
  <= 1e-5 + 1e-5 |ref|; erf GELU differs by up to ~5e-4, QuickGELU by ~2e-2);
- gate_proj and up_proj are patchable nn.Linear (skip_reason), of one shape,
  both with a bias or both without, with no hooks (fusion would skip them; the
  same for act_fn and for global forward hooks);
- the module is in eval mode (fusion is for inference; training keeps the
  module's forward);
- the library takes the merged weight with that epilogue (get_plan at M = 1).

Per call, as the patched linears do: the fused path runs for a bf16 CUDA input
with nothing for autograd to record; anything else runs the module's own
forward (its gate/up linears then run F.linear).

qkv: an attention module whose forward, in its source, calls self.q_proj(h),
self.k_proj(h) and self.v_proj(h) once each on one argument h that it never
rebinds (Llama, Mistral, Qwen2/3 and most transformers attentions) runs one GEMM
over a merged [q; k; v] weight instead of three. The attention's forward stays
as it is; the three linears' forwards change: the first of them called with a
tensor computes all three outputs into one [M, Nq + Nk + Nv] tensor and keeps
it (per thread) for the other two, which return their columns if they are
called with that same tensor object (and, outside inference mode, unmodified:
its version counter); a call with any other tensor computes the merged output
anew for it (so no order of calls is assumed, and a call left out leaves
nothing stale behind). Each returns a view of
its columns (row stride Nq + Nk + Nv, as engines' qkv.split gives; reshapes of
the last dimension, view(..., heads, head_dim), work on it). Two kernels a layer
fewer, and one grid over the merged weight. The weights are merged as for the
gated MLP (the three Parameters become views), with the same checks per call.
Proven before fusing, each refusal a reason: the forward's source as above;
the three are patchable nn.Linear of one in_features and device, all with a
bias or none, with no hooks (and no global ones); eval mode; the library takes
the merged weight (get_plan at M = 1). Under torch.compile each runs its own
GEMM (no per-thread state in a traced graph).

Not fused (docs/integration.md says why): o_proj/down_proj with the residual
add: it lives in the decoder layer's forward; fusing it would mean
re-implementing that forward.
"""

import ast
import functools
import inspect
import sys
import textwrap
import threading

import torch
import torch.nn.functional as F

from . import get_plan as _get_plan
from . import gelu_tanh_mul_linear as _tgv_gelu_tanh_mul
from . import silu_mul_linear as _tgv_silu_mul
from . import TgvError
from . import _patch
from ._patch import Fusion, FusionState, _BF16, skip_reason

_grad_enabled = torch.is_grad_enabled
_is_compiling = torch.compiler.is_compiling

STATE = "_tgv_gated_mlp"  # the instance attribute holding a fused module's merged weight

# ---- the forward's source ----------------------------------------------------------


def _self_attr(node, self_name, attr):
    return (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
            and node.value.id == self_name)


def _call_of(node, self_name, attr, arg):
    """node is self.<attr>(<arg>): one positional argument, no keywords."""
    return (isinstance(node, ast.Call) and _self_attr(node.func, self_name, attr) and len(node.args) == 1
            and not node.keywords and arg(node.args[0]))


def _is_gated_product(expr, self_name, x):
    """expr is self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    (the factors in either order)."""

    def is_x(n):
        return isinstance(n, ast.Name) and n.id == x

    def gated(n):
        return _call_of(n, self_name, "act_fn", lambda a: _call_of(a, self_name, "gate_proj", is_x))

    def up(n):
        return _call_of(n, self_name, "up_proj", is_x)

    def product(n):
        return (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
                and ((gated(n.left) and up(n.right)) or (up(n.left) and gated(n.right))))

    return _call_of(expr, self_name, "down_proj", product)


@functools.lru_cache(maxsize=None)
def forward_mismatch(forward):
    """None when `forward` (a class's function) is the gated MLP in its source,
    else why not."""
    try:
        source = textwrap.dedent(inspect.getsource(forward))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError) as e:
        return "its forward's source cannot be read (%s)" % (type(e).__name__,)
    fn = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(fn, ast.FunctionDef):
        return "its forward is not a plain function"
    if fn.decorator_list:
        return "its forward is decorated"
    a = fn.args
    if (len(a.args) != 2 or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults):
        return "its forward takes other arguments than (self, x)"
    self_name, x = a.args[0].arg, a.args[1].arg
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    expr = None
    if len(body) == 1 and isinstance(body[0], ast.Return):
        expr = body[0].value
    elif (len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1
          and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return)
          and isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id):
        expr = body[0].value
    if expr is None or not _is_gated_product(expr, self_name, x):
        return "its forward is not `return down_proj(act_fn(gate_proj(x)) * up_proj(x))`"
    return None


# ---- the activation ----------------------------------------------------------------

_SILU, _GELU_TANH = "silu", "gelu_tanh"
_TRANSFORMERS_KINDS = {
    "SiLUActivation": _SILU,
    "GELUTanh": _GELU_TANH,  # PytorchGELUTanh is this class under another name
    "PytorchGELUTanh": _GELU_TANH,
    "NewGELUActivation": _GELU_TANH,
    "FastGELUActivation": _GELU_TANH,
}
_REFERENCE = {_SILU: F.silu, _GELU_TANH: functools.partial(F.gelu, approximate="tanh")}
PROBE_TOL = 1e-5


def _kind_by_type(act):
    if act is F.silu:
        return _SILU
    t = type(act)
    if t is torch.nn.SiLU:
        return _SILU
    if t is torch.nn.GELU:
        return _GELU_TANH if act.approximate == "tanh" else None
    name = t.__name__
    mod = sys.modules.get("transformers.activations")
    if mod is not None and t.__module__ == mod.__name__ and getattr(mod, name, None) is t:
        return _TRANSFORMERS_KINDS.get(name)
    return None


def activation_kind(act, device):
    """(kind, None) for a SiLU or GELU-tanh we can prove, else (None, why)."""
    what = getattr(act, "__name__", None) or type(act).__name__
    if type(act) is torch.nn.GELU:
        what = "GELU(approximate=%r)" % (act.approximate,)
    kind = _kind_by_type(act)
    if kind is None:
        return None, "act_fn is %s: only SiLU and GELU (tanh) have a fused epilogue" % (what,)
    if isinstance(act, torch.nn.Module):
        if "forward" in act.__dict__:
            return None, "act_fn (%s) has an instance forward of its own" % (what,)
        if act._forward_hooks or act._forward_pre_hooks:
            return None, "act_fn has hooks (fusion would skip them)"
    probe = torch.linspace(-8.0, 8.0, 512, device=device)
    with torch.no_grad():
        try:
            got = act(probe)
        except Exception as e:  # noqa: BLE001 - any failure is a refusal, not our error
            return None, "act_fn (%s) failed on the numeric probe: %s" % (what, e)
        ref = _REFERENCE[kind](probe)
        ok = isinstance(got, torch.Tensor) and got.shape == ref.shape and bool(
            ((got.float() - ref).abs() <= PROBE_TOL + PROBE_TOL * ref.abs()).all())
    if not ok:
        return None, "act_fn (%s) does not compute %s on the numeric probe" % (what, kind)
    return kind, None


# ---- the fused forward -------------------------------------------------------------


def _row_ptr(base, row):
    """Where row `row` of the merged tensor `base` starts (0 for no tensor)."""
    return 0 if base is None else base.data_ptr() + row * base.stride(0) * base.element_size()


def _ptrs_of(weight, bias):
    return weight.data_ptr(), 0 if bias is None else bias.data_ptr()


class GatedState(FusionState):
    """What a fused module keeps (instance attribute STATE): the merged weight
    and bias, the activation, the backend, and where gate's and up's weights and
    biases must start for the merge to hold (views at their offsets of the merged
    tensors: a rebound weight or a deep copy's clones are not; a model saved and
    loaded whole is, torch.save writing views of one storage as such, and the
    places are computed again from the loaded merged tensors)."""

    def __init__(self, weight, bias, kind, backend, rows, copied):
        self.weight = weight
        self.copied = copied  # False: the weights were already one tensor (a second patch)
        self.bias = bias
        self.kind = kind
        self.backend = backend
        self.rows = rows  # gate's: the first `rows` of the merged weight
        self.covers = ("gate_proj", "up_proj")
        self._place()

    def _place(self):
        w, b, i = self.weight, self.bias, self.rows
        self.expect = None if w is None else (_row_ptr(w, 0), _row_ptr(w, i), _row_ptr(b, 0), _row_ptr(b, i))

    def holds(self, gate, up):
        g, u = gate.bias, up.bias
        return (gate.weight.data_ptr(), up.weight.data_ptr(), 0 if g is None else g.data_ptr(),
                0 if u is None else u.data_ptr()) == self.expect

    # A deep copy's linears hold clones: it runs the module's own forward (patch the copy
    # to fuse it) and keeps no merged weight of its own.
    def __deepcopy__(self, memo):
        twin = GatedState.__new__(GatedState)
        twin.__dict__.update(self.__dict__, weight=None, bias=None, expect=None)
        return twin

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._place()


# What the fused forward launches, by kind (the CPU tests put stand-ins here).
LAUNCH = {_SILU: _tgv_silu_mul, _GELU_TANH: _tgv_gelu_tanh_mul}
EPILOGUE = {_SILU: "silu_mul", _GELU_TANH: "gelu_tanh_mul"}


def forward_gated(self, x):
    """A fused gated MLP's forward (bound to the module by patch())."""
    st = self.__dict__[STATE]
    gate, up = self.gate_proj, self.up_proj
    if (
        (x.is_cuda or x.device.type in _patch._DEVICE_TYPES)
        and x.dtype is _BF16
        and not (_grad_enabled() and (x.requires_grad or gate.weight.requires_grad or up.weight.requires_grad))
        and (_is_compiling() or st.holds(gate, up))  # dynamo cannot trace data_ptr()
    ):
        return self.down_proj(LAUNCH[st.kind](x, st.weight, st.bias, backend=st.backend))
    return type(self).forward(self, x)


# ---- the merge ---------------------------------------------------------------------


def _adjacent(a, b):
    """b's elements follow a's in one storage, both contiguous: [a; b] is a view."""
    return (a.is_contiguous() and b.is_contiguous() and a.dtype == b.dtype and a.device == b.device
            and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and b.storage_offset() == a.storage_offset() + a.numel())


def _merged_all(parts):
    """[a; b; ...] along dim 0 as one contiguous tensor: a view where the parts
    already are one (copied=False), else a concatenation (copied=True)."""
    parts = [p.detach() for p in parts]
    if all(_adjacent(a, b) for a, b in zip(parts, parts[1:])):
        a = parts[0]
        shape = (sum(p.shape[0] for p in parts),) + tuple(a.shape[1:])
        strides = (a.shape[1], 1) if a.dim() == 2 else (1,)
        return a.as_strided(shape, strides, a.storage_offset()), False
    return torch.cat(parts, 0), True


def _merged(a, b):
    """[a; b] along dim 0 as one contiguous tensor: a view where a and b already
    are one (copied=False), else a new concatenation (copied=True)."""
    return _merged_all([a, b])


def _rebind(param, view):
    with torch.no_grad():
        param.data = view


def _global_hooks():
    m = torch.nn.modules.module
    return any(getattr(m, n, None) for n in ("_global_forward_hooks", "_global_forward_pre_hooks"))


def _refusal(module, mismatch, named_linears, backend, capture_note):
    """The checks every fuser makes, in order: not under capture, eval mode, the
    forward's source (mismatch(forward) -> None or why), each linear patchable
    and hook-free, no global hooks. None, or the reason."""
    cls = type(module).__name__
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return "patch() runs under CUDA-graph capture: %s (patch before capturing)" % capture_note
    if module.training:
        return "%s is in training mode: fusion is for inference (model.eval() first)" % cls
    why = mismatch(type(module).forward)
    if why is not None:
        return "%s: %s" % (cls, why)
    for child_name, child in named_linears:
        if not isinstance(child, torch.nn.Linear):
            return "%s is %s, not nn.Linear" % (child_name, type(child).__name__)
        why = skip_reason(child, backend, check_plan=False)
        if why is not None:
            return "%s: %s" % (child_name, why)
        if child._forward_hooks or child._forward_pre_hooks:
            return "%s has hooks (fusion would skip them)" % child_name
    if _global_hooks():
        names = [n for n, _ in named_linears]
        return "global forward hooks are registered (fusion would skip them for %s)" % (
            " and ".join([", ".join(names[:-1]), names[-1]]))
    return None


def gated_mlp(name, module, backend):
    """Fuser (see the file's docstring): a Fusion, a reason (str) when the module
    is a gated MLP that cannot be fused, or None when it is not one."""
    children = module._modules
    gate, up, down = children.get("gate_proj"), children.get("up_proj"), children.get("down_proj")
    if gate is None or up is None or down is None or not hasattr(module, "act_fn"):
        return None
    why = _refusal(module, forward_mismatch, (("gate_proj", gate), ("up_proj", up)), backend,
                   "fusing copies weights and probes act_fn")
    if why is not None:
        return why
    gw, uw = gate.weight, up.weight
    if gw.shape != uw.shape or gw.device != uw.device:
        return "gate_proj %s and up_proj %s differ in shape or device" % (
            "x".join(map(str, gw.shape)), "x".join(map(str, uw.shape)))
    if (gate.bias is None) != (up.bias is None):
        return "%s has a bias and %s has none" % (("gate_proj", "up_proj") if up.bias is None else ("up_proj",
                                                                                                     "gate_proj"))
    kind, why = activation_kind(module.act_fn, gw.device)
    if why is not None:
        return why

    def apply():
        w, copied = _merged(gw, uw)
        b = None if gate.bias is None else _merged(gate.bias, up.bias)[0]
        if w.is_cuda:
            try:
                _get_plan(w.new_empty((1, w.shape[1])), w, b, backend=backend, epilogue=EPILOGUE[kind])
            except TgvError as e:
                return "the merged gate_up weight is refused by the library: %s" % (e,)
        i = gw.shape[0]
        _rebind(gw, w[:i])
        _rebind(uw, w[i:])
        if b is not None:
            _rebind(gate.bias, b[:i])
            _rebind(up.bias, b[i:])
        return {STATE: GatedState(w, b, kind, backend, gw.shape[0], copied)}

    what = "gate_proj+up_proj+%s: %s_linear over one %dx%d weight" % (
        kind, EPILOGUE[kind], 2 * gw.shape[0], gw.shape[1])
    return Fusion(forward_gated, ("gate_proj", "up_proj"), what, apply=apply)


# ---- q, k and v into one GEMM ------------------------------------------------------

QKV = "_tgv_qkv"  # the attribute on each of the three linears: their one QkvState
PROJECTIONS = ("q_proj", "k_proj", "v_proj")


def _rebinds(fn, name):
    """Whether the function's body assigns `name` anywhere (any target form)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
    return False


@functools.lru_cache(maxsize=None)
def attention_mismatch(forward):
    """None when `forward` (a class's function) calls self.q_proj(h),
    self.k_proj(h) and self.v_proj(h) once each, h one of its arguments that it
    never rebinds; else why not."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(forward)))
    except (OSError, TypeError, SyntaxError) as e:
        return "its forward's source cannot be read (%s)" % (type(e).__name__,)
    fn = tree.body[0] if len(tree.body) == 1 else None
    # A decorator is allowed (transformers' attentions carry a kwarg-renaming one):
    # whatever it does around the body, the projections' forwards check at run time
    # that they are given the tensor the merged output was computed from.
    if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
        return "its forward is not a plain function"
    self_name = fn.args.args[0].arg
    args = {a.arg for a in fn.args.posonlyargs + fn.args.args[1:] + fn.args.kwonlyargs}
    calls = {p: [] for p in PROJECTIONS}
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr in calls and isinstance(node.value, ast.Name) \
                and node.value.id == self_name:
            calls[node.attr].append(node)
    inputs = set()
    for p in PROJECTIONS:
        if len(calls[p]) != 1:
            return "its forward uses self.%s %d times (fused: once each)" % (p, len(calls[p]))
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func in [
                c for p in PROJECTIONS for c in calls[p]]:
            if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
                return "its forward calls self.%s with other than one plain name" % node.func.attr
            inputs.add(node.args[0].id)
            calls[node.func.attr] = []  # seen as a call
    if any(calls[p] for p in PROJECTIONS):
        return "its forward uses a projection other than by calling it"
    if len(inputs) != 1:
        return "its forward calls q_proj, k_proj and v_proj on different inputs (%s)" % ", ".join(sorted(inputs))
    h = inputs.pop()
    if h not in args:
        return "its forward calls the projections on %s, not one of its arguments" % h
    if _rebinds(fn, h):
        return "its forward rebinds %s" % h
    for node in ast.walk(fn):  # h.add_(...) and the like: an inference tensor has no version counter to tell
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") \
                and not node.func.attr.startswith("_") and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == h:
            return "its forward modifies %s in place (%s.%s)" % (h, h, node.func.attr)
    return None


class QkvState(FusionState):
    """The three linears' shared state (attribute QKV on each): the merged
    weight and bias, each projection's columns and where its weight and bias
    must start (see GatedState: a linear whose weight is elsewhere is no
    projection of the merge any more), and per thread the last merged output
    with its input."""

    def __init__(self, weight, bias, backend, linears, into, copied):
        self.weight = weight
        self.bias = bias
        self.backend = backend
        self.copied = copied
        self.into = into
        self.columns = []  # (first column, end) of q, k, v
        lo = 0
        for lin in linears:
            self.columns.append((lo, lo + lin.weight.shape[0]))
            lo += lin.weight.shape[0]
        self._place()
        self.local = threading.local()  # .x, .version, .y, .pending (the projections yet to take theirs)

    def _place(self):
        w, b = self.weight, self.bias
        self.roles = {} if w is None else {(_row_ptr(w, lo), _row_ptr(b, lo)): j
                                           for j, (lo, _) in enumerate(self.columns)}

    # A deep copy's linears hold clones: each runs its own GEMM (patch the copy to fuse
    # it) and the copy keeps no merged weight of its own. The per-thread outputs are
    # never copied nor saved (a threading.local cannot be).
    def __deepcopy__(self, memo):
        twin = QkvState.__new__(QkvState)
        twin.__dict__.update(self.__dict__, weight=None, bias=None, roles={}, local=threading.local())
        return twin

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "local"}

    def __setstate__(self, state):
        self.__dict__.update(state, local=threading.local())
        self._place()


def _version(x):
    try:
        return x._version
    except RuntimeError:  # an inference-mode tensor keeps no version counter
        return None


def forward_qkv(self, x):
    """q_proj's, k_proj's and v_proj's forward in a fused attention (bound to
    each of them by patch()). A linear whose weight was rebound since the merge
    runs its own GEMM; its columns of a merged output are then never used."""
    st = self.__dict__[QKV]
    w, b = self.weight, self.bias
    if not _patch._use_tgv(x, w):
        return _patch._F_linear(x, w, b)
    me = None if _is_compiling() else st.roles.get(_ptrs_of(w, b))
    if me is None:
        return _patch._tgv_linear(x, w, b, backend=st.backend)
    loc = st.local
    if getattr(loc, "x", None) is x and me in loc.pending and loc.version == _version(x):
        y = loc.y
    else:
        y = _patch._tgv_linear(x, st.weight, st.bias, backend=st.backend)
        loc.x, loc.version, loc.y, loc.pending = x, _version(x), y, set(range(len(st.columns)))
    loc.pending.discard(me)
    if not loc.pending:  # all three have theirs: hold neither tensor past the attention
        loc.x = loc.y = None
    lo, hi = st.columns[me]
    return y[..., lo:hi]


def qkv(name, module, backend):
    """Fuser (see the file's docstring): a Fusion, a reason when the module is an
    attention with q/k/v projections that cannot be fused, or None when it is
    not one (or is fused already)."""
    children = module._modules
    lins = [children.get(p) for p in PROJECTIONS]
    if any(lin is None for lin in lins):
        return None
    if any(QKV in lin.__dict__ for lin in lins if isinstance(lin, torch.nn.Module)):
        return None  # an earlier patch fused them; the linears say so themselves
    why = _refusal(module, attention_mismatch, list(zip(PROJECTIONS, lins)), backend, "fusing copies weights")
    if why is not None:
        return why
    k, dev = lins[0].weight.shape[1], lins[0].weight.device
    for p, lin in zip(PROJECTIONS[1:], lins[1:]):
        if lin.weight.shape[1] != k or lin.weight.device != dev:
            return "q_proj and %s differ in in_features or device (%d, %d)" % (p, k, lin.weight.shape[1])
    with_bias = [lin.bias is not None for lin in lins]
    if any(with_bias) and not all(with_bias):
        return "%s a bias and %s none" % (
            " and ".join(p for p, b in zip(PROJECTIONS, with_bias) if b) + (" have" if sum(with_bias) > 1 else " has"),
            " and ".join(p for p, b in zip(PROJECTIONS, with_bias) if not b))

    def apply():
        w, copied = _merged_all([lin.weight for lin in lins])
        b = _merged_all([lin.bias for lin in lins])[0] if all(with_bias) else None
        if w.is_cuda:
            try:
                _get_plan(w.new_empty((1, w.shape[1])), w, b, backend=backend)
            except TgvError as e:
                return "the merged qkv weight is refused by the library: %s" % (e,)
        lo = 0
        for lin in lins:
            hi = lo + lin.weight.shape[0]
            _rebind(lin.weight, w[lo:hi])
            if b is not None:
                _rebind(lin.bias, b[lo:hi])
            lo = hi
        return {QKV: QkvState(w, b, backend, lins, name, copied)}

    what = "q_proj+k_proj+v_proj: one GEMM over a %dx%d weight" % (sum(lin.weight.shape[0] for lin in lins), k)
    return Fusion(forward_qkv, PROJECTIONS, what, apply=apply, on_children=True)
