"""ctypes binding of the tgv-gemm C ABI (include/tgv/tgv.h).

This module needs no torch: it only loads libtgv_gemm.so and mirrors its
structs. The library is looked up at $TGV_GEMM_LIBRARY if that is set, else next
to this file (tgv_gemm/libtgv_gemm.so, where `pip install .` puts it).
"""

import ctypes
import os
import struct
import threading

__all__ = [
    "Problem",
    "Options",
    "TacticInfo",
    "library_path",
    "lib",
    "TgvError",
    "TgvValueError",
    "TgvTypeError",
    "TgvNotSupportedError",
    "TgvRuntimeError",
]

# tgv_status
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_NOT_SUPPORTED = 2
ERROR_CUDA = 3
ERROR_CUBLAS = 4
ERROR_INTERNAL = 5

# tgv_dtype
DTYPE_BF16 = 0
DTYPE_FP16 = 1
DTYPE_FP32 = 2

# tgv_epilogue
EPILOGUES = {"none": 0, "silu_mul": 1, "gelu_tanh_mul": 2}

# tgv_backend
BACKENDS = {"auto": 0, "tgv": 1, "cublas": 2}


class Problem(ctypes.Structure):
    """struct tgv_problem."""

    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("l", ctypes.c_int64),
        ("dtype", ctypes.c_int32),
        ("x", ctypes.c_void_p),
        ("x_stride_l", ctypes.c_int64),
        ("x_stride_m", ctypes.c_int64),
        ("x_stride_k", ctypes.c_int64),
        ("w", ctypes.c_void_p),
        ("w_stride_l", ctypes.c_int64),
        ("w_stride_n", ctypes.c_int64),
        ("w_stride_k", ctypes.c_int64),
        ("bias", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("out_stride_l", ctypes.c_int64),
        ("out_stride_m", ctypes.c_int64),
        ("out_stride_n", ctypes.c_int64),
        ("out_dtype", ctypes.c_int32),
        ("epilogue", ctypes.c_int32),
        ("residual", ctypes.c_void_p),
        ("residual_stride_l", ctypes.c_int64),
        ("residual_stride_m", ctypes.c_int64),
        ("residual_stride_n", ctypes.c_int64),
    ]


class Options(ctypes.Structure):
    """struct tgv_options."""

    _fields_ = [
        ("backend", ctypes.c_int32),
        ("tactic", ctypes.c_int32),
        ("pdl", ctypes.c_int32),
        ("split_k", ctypes.c_int32),
        ("stages", ctypes.c_int32),
    ]


class TacticInfo(ctypes.Structure):
    """struct tgv_tactic_info."""

    _fields_ = [
        ("id", ctypes.c_int32),
        ("arch", ctypes.c_int32),
        ("cta_m", ctypes.c_int32),
        ("cta_n", ctypes.c_int32),
        ("cta_k", ctypes.c_int32),
        ("stages", ctypes.c_int32),
        ("cluster", ctypes.c_int32),
    ]


class PlanInfo(ctypes.Structure):
    """struct tgv_plan_info."""

    _fields_ = [
        ("backend", ctypes.c_int32),
        ("tactic", ctypes.c_int32),
        ("split_k", ctypes.c_int32),
        ("stages", ctypes.c_int32),
        ("pdl", ctypes.c_int32),
    ]


class DeviceDesc(ctypes.Structure):
    """struct tgv_device_desc."""

    _fields_ = [
        ("sm", ctypes.c_int32),
        ("sm_count", ctypes.c_int32),
        ("smem_optin_bytes", ctypes.c_int64),
    ]


class TuningEntry(ctypes.Structure):
    """struct tgv_tuning_entry."""

    _fields_ = [
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("m", ctypes.c_int64),
        ("backend", ctypes.c_int32),
        ("tactic", ctypes.c_int32),
        ("split_k", ctypes.c_int32),
        ("stages", ctypes.c_int32),
        ("us", ctypes.c_double),
        ("cublas_us", ctypes.c_double),
    ]


# One C call fills a whole Problem (struct.pack_into writes through the
# buffer protocol of the ctypes instance): cheaper than 24 attribute stores.
# Native ("@") alignment inserts the same padding as the C compiler; checked
# against ctypes' layout right below.
_PROBLEM_FORMAT = struct.Struct("@qqqqiPqqqPqqqPPqqqiiPqqq")
assert _PROBLEM_FORMAT.size == ctypes.sizeof(Problem), (_PROBLEM_FORMAT.size, ctypes.sizeof(Problem))


def _check_pack_layout():
    p = Problem()
    values = list(range(1, 25))
    _PROBLEM_FORMAT.pack_into(p, 0, *values)
    got = [getattr(p, name) for name, _ in Problem._fields_]
    if got != values:
        raise ImportError("tgv_gemm: struct layout mismatch between struct.Struct and ctypes: %r" % (got,))


_check_pack_layout()
pack_problem = _PROBLEM_FORMAT.pack_into


# ---- errors -----------------------------------------------------------------


class TgvError(Exception):
    """Base of every error raised by tgv_gemm. `status` is the tgv_status code
    (None for errors found in Python before the library was called)."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class TgvValueError(TgvError, ValueError):
    """A size, shape, device, pointer, stride or option is wrong
    (TGV_ERROR_INVALID_ARGUMENT)."""


class TgvTypeError(TgvError, TypeError):
    """A tensor has a dtype other than torch.bfloat16."""


class TgvNotSupportedError(TgvError, NotImplementedError):
    """A valid request that this build or device cannot serve
    (TGV_ERROR_NOT_SUPPORTED). NotImplementedError is a RuntimeError."""


class TgvRuntimeError(TgvError, RuntimeError):
    """A CUDA, cuBLASLt or internal failure (TGV_ERROR_CUDA, _CUBLAS, _INTERNAL)."""


# ---- loading ----------------------------------------------------------------


def library_path():
    """Where the shared library is loaded from: $TGV_GEMM_LIBRARY, else the
    package directory."""
    env = os.environ.get("TGV_GEMM_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtgv_gemm.so")


def _load():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            "tgv_gemm: the library %s does not exist. Build and install the package with "
            "`pip install .` from the tgv-gemm repository, or point TGV_GEMM_LIBRARY at a "
            "libtgv_gemm.so built with CMake (target tgv_gemm)." % path
        )
    try:
        handle = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "tgv_gemm: could not load %s: %s. It needs the CUDA runtime and cuBLASLt of the CUDA "
            "major version it was built with (libcudart.so.13, libcublasLt.so.13): importing a "
            "torch built for that CUDA provides them, or add their directory to "
            "LD_LIBRARY_PATH." % (path, e)
        ) from e

    def fn(name, restype, argtypes):
        f = getattr(handle, name)
        f.restype = restype
        f.argtypes = argtypes
        return f

    P = ctypes.POINTER
    handle.tgv_default_options_ = fn("tgv_default_options", None, [P(Options)])
    handle.tgv_default_problem_ = fn(
        "tgv_default_problem", None, [P(Problem), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    )
    handle.tgv_gemm_ = fn("tgv_gemm", ctypes.c_int, [P(Problem), P(Options), ctypes.c_void_p])
    handle.tgv_validate_ = fn("tgv_validate", ctypes.c_int, [P(Problem), P(Options)])
    handle.tgv_get_plan_ = fn("tgv_get_plan", ctypes.c_int, [P(Problem), P(Options), P(PlanInfo)])
    handle.tgv_reload_tuning_ = fn("tgv_reload_tuning", ctypes.c_int, [])
    handle.tgv_describe_device_ = fn("tgv_describe_device", ctypes.c_int, [ctypes.c_int32, P(DeviceDesc)])
    handle.tgv_tune_candidates_ = fn(
        "tgv_tune_candidates",
        ctypes.c_int,
        [P(DeviceDesc), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, P(Options), ctypes.c_int32,
         P(ctypes.c_int32)],
    )
    handle.tgv_write_tuning_file_ = fn(
        "tgv_write_tuning_file",
        ctypes.c_int,
        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, P(TuningEntry), ctypes.c_int32],
    )
    handle.tgv_tuning_file_path_ = fn("tgv_tuning_file_path", ctypes.c_char_p, [])
    handle.tgv_num_tactics_ = fn("tgv_num_tactics", ctypes.c_int32, [])
    handle.tgv_get_tactic_ = fn("tgv_get_tactic", ctypes.c_int, [ctypes.c_int32, P(TacticInfo)])
    handle.tgv_last_error_ = fn("tgv_last_error", ctypes.c_char_p, [])
    handle.tgv_status_name_ = fn("tgv_status_name", ctypes.c_char_p, [ctypes.c_int])
    handle.tgv_version_string_ = fn("tgv_version_string", ctypes.c_char_p, [])
    return handle


lib = _load()

# The bound C functions, looked up once.
c_gemm = lib.tgv_gemm_
c_validate = lib.tgv_validate_


def last_error():
    """tgv_last_error() of the calling thread, as str."""
    return lib.tgv_last_error_().decode("utf-8", "replace")


def status_name(status):
    return lib.tgv_status_name_(status).decode("ascii", "replace")


def version():
    """The library's version string (tgv_version_string)."""
    return lib.tgv_version_string_().decode("ascii")


def error_from_status(status, where):
    """The exception for a failed call: the library's own message (which names
    the argument and its value) behind `where`, the status name after it."""
    message = "%s: %s [%s]" % (where, last_error(), status_name(status))
    if status == ERROR_INVALID_ARGUMENT:
        return TgvValueError(message, status)
    if status == ERROR_NOT_SUPPORTED:
        return TgvNotSupportedError(message, status)
    return TgvRuntimeError(message, status)


# ---- per-thread problem, shared options ---------------------------------------

# tgv_gemm runs with the GIL released (ctypes.CDLL), so each thread fills its
# own Problem.
_tls = threading.local()


def thread_problem():
    try:
        return _tls.problem
    except AttributeError:
        p = _tls.problem = Problem()
        return p


_options_cache = {}
_options_lock = threading.Lock()


def options(backend, tactic, pdl, split_k=None, stages=None):
    """The (cached, never mutated) Options for backend name, tactic (None:
    auto), pdl (None: library default), split_k and stages (None: the
    library's choice)."""
    key = (backend, tactic, pdl, split_k, stages)
    o = _options_cache.get(key)
    if o is not None:
        return o
    b = BACKENDS.get(backend)
    if b is None:
        raise TgvValueError(
            "backend=%r: must be one of %s" % (backend, ", ".join(repr(n) for n in BACKENDS)),
            ERROR_INVALID_ARGUMENT,
        )
    o = Options()
    lib.tgv_default_options_(o)
    o.backend = b
    for name, value in (("tactic", tactic), ("split_k", split_k), ("stages", stages)):
        if value is None:
            continue
        v = int(value)
        if not -(2**31) <= v < 2**31:
            what = "-1 (auto) or an id from list_tactics()" if name == "tactic" else "a 32-bit value"
            raise TgvValueError("%s=%d: must be %s" % (name, v, what), ERROR_INVALID_ARGUMENT)
        setattr(o, name, v)
    if pdl is not None:
        o.pdl = 1 if pdl else 0
    with _options_lock:
        if len(_options_cache) > 4096:  # tactic sweeps: keep the cache bounded
            _options_cache.clear()
        _options_cache[key] = o
    return o


def reload_tuning():
    """tgv_reload_tuning(): the library re-reads the tuning file for the devices
    this process has used, and backend "auto" follows it from the next call."""
    status = lib.tgv_reload_tuning_()
    if status:
        raise error_from_status(status, "tgv_gemm.reload_tuning")


def num_tactics():
    return lib.tgv_num_tactics_()


def get_tactic(tactic_id):
    info = TacticInfo()
    status = lib.tgv_get_tactic_(tactic_id, info)
    if status:
        raise error_from_status(status, "tgv_gemm.list_tactics")
    return {name: getattr(info, name) for name, _ in TacticInfo._fields_}


# ---- the tuner's pieces (tgv-bench --tune uses the same) ----------------------

_BACKEND_NAMES = {v: k for k, v in BACKENDS.items()}


def describe_device(device):
    """tgv_describe_device(device): what the tuner's candidates depend on."""
    desc = DeviceDesc()
    status = lib.tgv_describe_device_(int(device), desc)
    if status:
        raise error_from_status(status, "tgv_gemm.tune")
    return desc


def tune_candidates(desc, n, k, m):
    """tgv_tune_candidates: the (backend, tactic, split_k, stages) tuples a tuner
    times for weights n x k at m tokens on the described device, cuBLASLt last
    (as ("cublas", -1, 1, 0))."""
    count = ctypes.c_int32(0)
    status = lib.tgv_tune_candidates_(desc, n, k, m, None, 0, ctypes.byref(count))
    if status:
        raise error_from_status(status, "tgv_gemm.tune")
    out = (Options * count.value)()
    status = lib.tgv_tune_candidates_(desc, n, k, m, out, count.value, ctypes.byref(count))
    if status:
        raise error_from_status(status, "tgv_gemm.tune")
    result = []
    for o in out:
        if o.backend == BACKENDS["cublas"]:
            result.append(("cublas", -1, 1, 0))
        else:
            result.append((_BACKEND_NAMES[o.backend], o.tactic, o.split_k, o.stages))
    return result


def write_tuning_file(path, gpu, sm_count, entries):
    """tgv_write_tuning_file: `entries` (dicts with n, k, m, backend name, tactic,
    split_k, stages, us, cublas_us) as the tuning file `path` ("" or None: the
    file the library reads), written whole."""
    array = (TuningEntry * len(entries))()
    for slot, e in zip(array, entries):
        b = BACKENDS.get(e["backend"])
        if b is None:
            raise TgvValueError("backend=%r: must be 'tgv' or 'cublas'" % (e["backend"],), ERROR_INVALID_ARGUMENT)
        slot.n, slot.k, slot.m, slot.backend = e["n"], e["k"], e["m"], b
        slot.tactic, slot.split_k, slot.stages = e["tactic"], e["split_k"], e["stages"]
        slot.us, slot.cublas_us = e["us"], e["cublas_us"]
    status = lib.tgv_write_tuning_file_((path or "").encode(), gpu.encode(), sm_count, array, len(entries))
    if status:
        raise error_from_status(status, "tgv_gemm.tune")


def tuning_file_path():
    """tgv_tuning_file_path(): where the library reads the tuning file ("" if
    no default applies)."""
    return lib.tgv_tuning_file_path_().decode("utf-8", "replace")
