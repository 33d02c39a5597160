"""tgv_gemm.autotune: record the shapes an engine's warm-up runs, tune them when it ends.

    with tgv_gemm.autotune():
        engine.warm_up()          # every tgv_gemm.linear / torch.ops.tgv.linear call is recorded
    # here: tuned (tgv_gemm.tune), the tuning file written and in effect

Calls inside the block run as always (under CUDA-graph capture too: recording
touches no GPU state). Each call made through tgv_gemm's linear path
(`_ops.run_linear`: the eager fast path, the torch ops' CUDA kernels, torch.compile'd
graphs calling them) adds its (N, K, M bucket) to every open block; M above 256
(prefill) is outside the tuning file's range and is not recorded. The tuner's and
get_plan()'s own calls are not recorded. bmm is not recorded: the tuner times
single GEMMs, and a choice measured at L = 1 would be recorded for a batched
problem it was never measured on. Gated calls (silu_mul_linear, gelu_tanh_mul)
are not recorded either: the tuner times GEMMs without that epilogue, and the
library plans gated calls by its cost model whatever the file says (a
residual call is recorded: a tuned tgv plan serves it, a cuBLASLt verdict does
not, since cuBLASLt's route would add an epilogue kernel the tuner never timed).
"""

import contextlib
import json
import os
import threading
import time
import warnings

from . import _ops
from . import _tune

_MAX_M = 256

_lock = threading.Lock()
_open = []  # the blocks now open, in the order they were entered (any thread)
_pending = {}  # every call recorded since the first of the open blocks opened


def bucket(m):
    """The tuning file's bucket of M: the power of two m with M in (m/2, m]; None
    for M = 0 and M > 256 (outside the file's range)."""
    if m < 1 or m > _MAX_M:
        return None
    return 1 << (m - 1).bit_length()


def _record(n, k, m, has_bias):
    """The hook _ops.run_linear calls while a block is open. One lock round
    trip: a few hundred nanoseconds against microseconds of launch."""
    b = bucket(m)
    if b is None:
        return
    key = (n, k, b)
    with _lock:
        _pending[key] = _pending.get(key, 0) + 1
        for block in _open:
            block._counts[key] = block._counts.get(key, 0) + 1


def _install():
    _ops._record = _record if _open else None


class autotune:
    """A block that records the linear shapes run inside it and tunes them on a
    clean exit.

    path: the tuning file to write (default: the one the library reads,
        tuning_file_path(); then the choices are in effect at once). Entries
        already in that file for this GPU and library version are kept unless
        re-tuned here.
    ms: which M buckets to tune: None (default) tunes each shape at the buckets
        recorded for it; a list restricts them to those buckets.
    max_shapes: tune at most this many (N, K) shapes, those that streamed the
        most weight bytes first (calls x N x K: their share of a decode step).
    budget_s: start no new shape once this many seconds of tuning have passed
        (the shape in progress finishes).
    verbose: print what was recorded and what the tuner chose.
    bias, replays, neighbours: passed to tgv_gemm.tune (neighbours="both",
        the default, scores each candidate by the mean of its time back to back
        and between other kernels, as a model's GEMMs have both kinds of
        neighbour; "self" or "kernels" one order only).

    Blocks nest (and may be opened from several threads): a call is recorded
    by every open block; a block that closes while another is still open
    tunes nothing; the last block to close tunes everything recorded since the
    first of them opened, with its own options, unless an exception leaves it
    (then nothing is tuned). Closing during a CUDA-graph capture on this
    thread tunes nothing (timing would break the capture) and warns; call
    tune_now() afterwards.

    After exit: .calls ({(n, k, bucket): count} of the calls made while this
    block was open), .shapes ({(n, k): [buckets]} of those), .tuned (the
    {(n, k, bucket): count} handed to the tuner: the last block's union),
    .entries (what the tuner returned, [] if it did not run) and .skipped
    (shapes left out by max_shapes or budget_s).
    """

    def __init__(self, *, path=None, ms=None, max_shapes=None, budget_s=None, verbose=False, bias=False,
                 replays=7, neighbours="both"):
        _tune.check_neighbours(neighbours, "tgv_gemm.autotune")
        if ms is not None:
            ms = sorted(set(int(m) for m in ms))
            for m in ms:
                if bucket(m) != m:
                    raise _tune.L.TgvValueError(
                        "tgv_gemm.autotune: ms=%r: every M must be a power of two in [1, 256]" % (ms,),
                        _tune.L.ERROR_INVALID_ARGUMENT)
        if max_shapes is not None and max_shapes < 0:
            raise _tune.L.TgvValueError("tgv_gemm.autotune: max_shapes=%r must be >= 0" % (max_shapes,),
                                        _tune.L.ERROR_INVALID_ARGUMENT)
        self.path = path
        self.ms = ms
        self.max_shapes = max_shapes
        self.budget_s = budget_s
        self.verbose = verbose
        self.bias = bias
        self.replays = replays
        self.neighbours = neighbours
        self._counts = {}
        self.tuned = None
        self.entries = []
        self.skipped = []
        self._entered = False

    # ---- recording -------------------------------------------------------------

    def __enter__(self):
        with _lock:
            if self._entered:
                raise RuntimeError("tgv_gemm.autotune: this block is already open; use a new autotune() to nest")
            self._entered = True
            _open.append(self)
            _install()
        return self

    def __exit__(self, exc_type, exc, tb):
        with _lock:
            _open.remove(self)
            self._entered = False
            last = not _open
            if last:
                union = dict(_pending)
                _pending.clear()
            _install()
        if exc_type is not None or not last:
            return False
        self.tuned = union
        if _capturing():
            warnings.warn("tgv_gemm.autotune: the block closed during a CUDA-graph capture; nothing was tuned "
                          "(call .tune_now() after the capture)", RuntimeWarning, stacklevel=2)
            return False
        self.tune_now()
        return False

    @property
    def calls(self):
        with _lock:
            return dict(self._counts)

    @property
    def shapes(self):
        """{(n, k): sorted buckets} of .calls, in the order first recorded."""
        return _shapes(self.calls)

    # ---- tuning ----------------------------------------------------------------

    def plan(self):
        """[((n, k), [buckets])] that tune_now() would tune, the shapes that
        streamed the most weight bytes first (ties: first recorded), after ms
        and max_shapes; and the shapes max_shapes leaves out."""
        calls = self.calls if self.tuned is None else self.tuned
        totals = {}
        for (n, k, _), count in calls.items():
            totals[(n, k)] = totals.get((n, k), 0) + count * n * k
        shapes = _shapes(calls)
        order = {nk: i for i, nk in enumerate(shapes)}
        todo = []
        for nk, ms in sorted(shapes.items(), key=lambda item: (-totals[item[0]], order[item[0]])):
            if self.ms is not None:
                ms = [m for m in ms if m in self.ms]
            if ms:
                todo.append((nk, ms))
        left = []
        if self.max_shapes is not None and len(todo) > self.max_shapes:
            todo, left = todo[: self.max_shapes], [nk for nk, _ in todo[self.max_shapes:]]
        return todo, left

    def tune_now(self):
        """Tunes what was recorded (as on a clean exit) and writes the file;
        returns the entries."""
        todo, self.skipped = self.plan()
        if self.verbose:
            print("tgv_gemm.autotune: tuning %d shapes at %d (N, K, M bucket) points"
                  % (len(todo), sum(len(ms) for _, ms in todo)))
        start = time.monotonic()
        entries = []
        for i, ((n, k), ms) in enumerate(todo):
            if self.budget_s is not None and time.monotonic() - start >= self.budget_s:
                self.skipped += [nk for nk, _ in todo[i:]]
                break
            entries += _tune.tune([(n, k)], ms, path="", bias=self.bias, replays=self.replays,
                                  verbose=self.verbose, neighbours=self.neighbours)
        if self.skipped and self.verbose:
            print("tgv_gemm.autotune: not tuned (max_shapes/budget_s): %s"
                  % ", ".join("%dx%d" % nk for nk in self.skipped))
        self.entries = entries
        if entries:
            path = _tune.tuning_file_path() if self.path is None else self.path
            if path:
                _write(path, entries, self.verbose)
        return entries


def _shapes(calls):
    out = {}
    for (n, k, m) in calls:
        out.setdefault((n, k), set()).add(m)
    return {nk: sorted(ms) for nk, ms in out.items()}


def _capturing():
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _device_header():
    """(gpu, sm_count, version) as tune() writes them for the current device."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return props.name, props.multi_processor_count, _tune.L.version()


def merged_entries(old_text, header, entries):
    """The entries of a tuning file's text `old_text` that `entries` do not
    re-tune, followed by `entries`; old entries are kept only when the file is
    for the same GPU, SM count and library version (`header`)."""
    keep = []
    if old_text:
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            doc = json.loads(old_text)
            if (doc.get("gpu"), doc.get("sm_count"), doc.get("library_version")) == tuple(header):
                new = {(e["n"], e["k"], e["m"]) for e in entries}
                keep = [e for e in doc["entries"] if (e["n"], e["k"], e["m"]) not in new]
    for e in keep:  # fields the writer needs that an older file may lack
        e.setdefault("stages", 0)
        e.setdefault("us", 0.0)
        e.setdefault("cublas_us", 0.0)
    return keep + list(entries)


def _write(path, entries, verbose):
    """Writes `entries` merged into the file at `path` (through tune's writer,
    which has the library re-read its own file)."""
    header = _device_header()
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    entries = merged_entries(old, header, entries)
    reloaded = _tune.write_tuning_file(path, header[0], header[1], entries)
    if verbose:
        print("tgv_gemm.autotune: wrote %s (%d entries)%s"
              % (path, len(entries), "; in effect now" if reloaded else ""))
