"""tgv_gemm.tune in one thread while four others serve tgv_gemm.linear, each on
its own stream with its own weight shape and M varying call to call (issue 12:
with the tuner capturing in torch's global mode, the serving threads failed with
"operation not permitted when stream is capturing").

Every served result is checked against F.linear in fp32 (element-wise
|out - ref| <= 1e-2 + 1e-2 |ref|, tgv_testutil), into an output poisoned with
NaN; every serving thread makes calls while the tuner is running (asserted). The
scenario runs ROUNDS times in a row, fresh threads and streams each round. The
tuner tries a few of its candidates per round (the capture, not the list, is
under test), so the whole test takes a few seconds.

    python3 -m pytest tests/python/test_tune_beside_serving.py -q
"""

import threading

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("tgv_gemm tests need a CUDA GPU", allow_module_level=True)

import tgv_gemm  # noqa: E402
from tgv_gemm import _tune  # noqa: E402
from tgv_testutil import assert_close, rand, ref_linear, skip_unless_device_cannot_serve  # noqa: E402

ROUNDS = 20
# (N, K, backend, the Ms it cycles through): both backends, auto on either side
# of its M > 32 switch, odd M.
SERVERS = [
    (1000, 1024, "auto", (1, 5, 16, 33, 64)),
    (2048, 512, "tgv", (8, 1, 17, 3)),
    (768, 2048, "cublas", (64, 2, 9)),
    (1536, 1032, "auto", (31, 4, 128, 1)),
]
MIN_CALLS = 4  # per serving thread and round, at least this many, tuner or not


def _few_candidates(full):
    def pick(*args, **kwargs):
        cands = full(*args, **kwargs)
        tgv = [c for c in cands if c[0] == "tgv"]
        return tgv[:1] + tgv[-1:] + [c for c in cands if c[0] == "cublas"]

    return pick


def _serve(index, tuning, stop, counts, errors):
    n, k, backend, ms = SERVERS[index]
    try:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            w = rand(n, k)
            b = rand(n) if index % 2 == 0 else None
            call = 0
            while call < MIN_CALLS or not stop.is_set():
                m = ms[call % len(ms)]
                x = rand(m, k)
                out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                tgv_gemm.linear(x, w, b, out=out, backend=backend)
                assert_close(out, ref_linear(x, w, b), "server %d call %d (M=%d N=%d K=%d %s)"
                             % (index, call, m, n, k, backend))
                call += 1
                if tuning.is_set() and not stop.is_set():
                    counts[index] += 1  # a call made while the tuner ran
    except Exception as e:  # noqa: BLE001 -- reported by the main thread
        errors.append("server %d: %r" % (index, e))


def _tune_thread(tuning, errors, done):
    tuning.set()
    try:
        entries = _tune.tune([(1024, 2048)], ms=(1, 16), path="", replays=2, l2_factor=0.5, verbose=False)
        if [e["m"] for e in entries] != [1, 16]:
            errors.append("tuner: entries for M %r, want [1, 16]" % ([e["m"] for e in entries],))
    except Exception as e:  # noqa: BLE001
        errors.append("tuner: %r" % (e,))
    finally:
        done.set()


def test_tuner_beside_four_serving_threads_20_rounds(monkeypatch):
    monkeypatch.setattr(_tune, "candidates", _few_candidates(_tune.candidates))
    for i, (n, k, backend, ms) in enumerate(SERVERS):  # tgv backend: skip where this device has none
        if backend == "tgv":
            try:
                tgv_gemm.linear(rand(1, k), rand(n, k), backend="tgv")
            except tgv_gemm.TgvNotSupportedError as e:
                skip_unless_device_cannot_serve(e)
    for r in range(ROUNDS):
        tuning, stop, errors = threading.Event(), threading.Event(), []
        counts = [0] * len(SERVERS)
        servers = [threading.Thread(target=_serve, args=(i, tuning, stop, counts, errors))
                   for i in range(len(SERVERS))]
        tuner = threading.Thread(target=_tune_thread, args=(tuning, errors, stop))
        for t in servers:
            t.start()
        tuner.start()
        tuner.join()
        for t in servers:
            t.join()
        assert not errors, "round %d: %s" % (r, "; ".join(errors))
        assert all(c > 0 for c in counts), "round %d: a server made no call while the tuner ran: %r" % (r, counts)
