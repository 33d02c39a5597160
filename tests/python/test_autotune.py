"""tgv_gemm.autotune: what a block records (through _ops.run_linear's hook),
how it buckets and dedupes, what it hands the tuner and writes, the exception
path, nesting, threads, capture; and (on a GPU) a short real block.

The CPU tests drive the real run_linear with stand-in tensors (a device index,
shapes and strides, no memory) and a launch that does nothing, and replace
tgv_gemm.tune by a stub that returns entries.
"""

import json
import threading
import warnings

import pytest

torch = pytest.importorskip("torch")
try:
    import tgv_gemm
    from tgv_gemm import _autotune, _ops, _tune
except ImportError as e:  # no built library, or no CUDA runtime to load it with
    pytest.skip(str(e), allow_module_level=True)

BF16 = torch.bfloat16


class FakeTensor:
    """Enough of a CUDA bf16 tensor for run_linear's checks (row-major)."""

    def __init__(self, *shape):
        self.shape = tuple(shape)
        self.dtype = BF16

    def get_device(self):
        return 0

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        st, acc = [], 1
        for s in reversed(self.shape):
            st.append(acc)
            acc *= max(s, 1)
        st = tuple(reversed(st))
        return st if i is None else st[i]

    def data_ptr(self):
        return 1 << 20

    def new_empty(self, shape, dtype=None):  # run_linear passes out's dtype (fp32 out exists)
        return FakeTensor(*shape)


@pytest.fixture
def launches(monkeypatch):
    """run_linear launches nothing; returns the `where` of each launch."""
    seen = []
    monkeypatch.setattr(_ops, "_launch", lambda problem, opts, d, where: seen.append(where))
    return seen


@pytest.fixture
def tuner(monkeypatch, tmp_path):
    """tgv_gemm.tune replaced: records its calls, returns one entry a point;
    the file's header and the library's reload stubbed; the library's file is
    tmp_path/tuning.json."""
    calls = []

    def fake_tune(shapes, ms, *, path=None, bias=False, replays=7, verbose=True, neighbours="both", **kw):
        calls.append({"shapes": list(shapes), "ms": list(ms), "path": path, "bias": bias, "replays": replays,
                      "neighbours": neighbours})
        return [{"n": n, "k": k, "m": m, "backend": "tgv", "tactic": 3, "split_k": 2, "stages": 0, "us": 10.0,
                 "cublas_us": 12.0} for n, k in shapes for m in ms]

    monkeypatch.setattr(_tune, "tune", fake_tune)
    monkeypatch.setattr(_autotune, "_device_header", lambda: ("NVIDIA H200", 132, "0.1.0"))
    monkeypatch.setattr(_autotune, "_capturing", lambda: False)
    monkeypatch.setattr(_tune.L, "reload_tuning", lambda: None)
    monkeypatch.setenv("TGV_TUNING_FILE", str(tmp_path / "tuning.json"))
    return calls


def run(m, n, k, bias=False, **kw):
    x = FakeTensor(m, k)
    w = FakeTensor(n, k)
    b = FakeTensor(n) if bias else None
    _ops.run_linear(x, w, b, None, "auto", None, None, "test", **kw)


def test_buckets_are_the_tuning_files():
    expect = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 8: 8, 9: 16, 17: 32, 33: 64, 64: 64, 65: 128, 129: 256, 256: 256}
    assert {m: _autotune.bucket(m) for m in expect} == expect
    assert _autotune.bucket(0) is None and _autotune.bucket(257) is None and _autotune.bucket(4096) is None


def test_records_shapes_bucketed_and_counted(launches, tuner):
    assert _ops._record is None, "no block open: no hook"
    run(1, 64, 32)  # before the block: not recorded
    with tgv_gemm.autotune() as block:
        assert _ops._record is not None
        for m in (1, 3, 4, 5, 300, 0):
            run(m, 4096, 1024)
        run(4, 4096, 1024, bias=True)
        run(7, 1024, 4096)
        x = FakeTensor(2, 3, 1024)  # leading dims flatten: M = 6 -> bucket 8
        _ops.run_linear(x, FakeTensor(4096, 1024), None, None, "auto", None, None, "test")
        assert block.calls == {(4096, 1024, 1): 1, (4096, 1024, 4): 3, (4096, 1024, 8): 2, (1024, 4096, 8): 1}
    assert _ops._record is None, "the hook is removed when the last block closes"
    assert len(launches) == 10, "every call inside the block ran"
    assert block.shapes == {(4096, 1024): [1, 4, 8], (1024, 4096): [8]}
    # One tuner call a shape, at that shape's recorded buckets, writing nothing itself.
    assert tuner == [
        {"shapes": [(4096, 1024)], "ms": [1, 4, 8], "path": "", "bias": False, "replays": 7,
         "neighbours": "both"},
        {"shapes": [(1024, 4096)], "ms": [8], "path": "", "bias": False, "replays": 7, "neighbours": "both"},
    ]


def test_the_tuners_and_get_plans_calls_are_not_recorded(launches, tuner):
    opts = _tune.candidate_options("tgv", 0, 1, 0)
    with tgv_gemm.autotune() as block:
        run(8, 512, 512, options=opts)  # the tuner's calls pass their options
        run(8, 512, 512, launch=lambda *a: None)  # get_plan's pass a launch that only plans
    assert block.calls == {}
    assert tuner == [], "nothing recorded: nothing tuned"


def test_gated_calls_are_not_recorded_residual_calls_are(launches, tuner):
    with tgv_gemm.autotune() as block:
        run(4, 8192, 1024, epilogue=_tune.L.EPILOGUES["silu_mul"])  # timed as plain, it would misinform
        run(4, 4096, 1024, residual=FakeTensor(4, 4096))
    assert len(launches) == 2, "both calls ran"
    assert block.calls == {(4096, 1024, 4): 1}


def tuning_text(gpu, sm_count, version, entries):
    """A tuning file's text as the library writes it (src/plan/tuning.hpp's format)."""
    return json.dumps({"format": "tgv-gemm-tuning/1", "library_version": version, "gpu": gpu,
                       "sm_count": sm_count, "entries": entries})


def test_writes_the_librarys_file_merged(launches, tuner, tmp_path):
    path = tmp_path / "tuning.json"
    old = [
        {"n": 4096, "k": 1024, "m": 1, "backend": "cublas", "tactic": -1, "split_k": 1, "stages": 0, "us": 9.0,
         "cublas_us": 9.0},  # re-tuned below: replaced
        {"n": 8192, "k": 8192, "m": 2, "backend": "tgv", "tactic": 1, "split_k": 1, "stages": 8, "us": 30.0,
         "cublas_us": 33.0},  # not seen: kept
    ]
    path.write_text(tuning_text("NVIDIA H200", 132, "0.1.0", old))
    with tgv_gemm.autotune(replays=5, bias=True) as block:
        run(1, 4096, 1024)
    doc = json.loads(path.read_text())
    assert doc["gpu"] == "NVIDIA H200" and doc["format"] == "tgv-gemm-tuning/1"
    got = {(e["n"], e["k"], e["m"]): (e["backend"], e["tactic"], e["split_k"]) for e in doc["entries"]}
    assert got == {(8192, 8192, 2): ("tgv", 1, 1), (4096, 1024, 1): ("tgv", 3, 2)}
    assert [e["m"] for e in block.entries] == [1]
    assert tuner[0]["replays"] == 5 and tuner[0]["bias"] is True
    assert tuner[0]["neighbours"] == "both", "by default scored as a model's GEMMs run: after ours and after others"
    # A file for another GPU is replaced whole.
    path.write_text(tuning_text("NVIDIA B200", 148, "0.1.0", old))
    with tgv_gemm.autotune():
        run(1, 4096, 1024)
    doc = json.loads(path.read_text())
    assert [(e["n"], e["k"], e["m"]) for e in doc["entries"]] == [(4096, 1024, 1)]
    assert doc["gpu"] == "NVIDIA H200"


def test_merged_entries_ignores_a_corrupt_file():
    new = [{"n": 1, "k": 8, "m": 1}]
    assert _autotune.merged_entries("{not json", ("g", 1, "v"), new) == new
    assert _autotune.merged_entries('{"gpu": "g"}', ("g", 1, "v"), new) == new
    assert _autotune.merged_entries(None, ("g", 1, "v"), new) == new


def test_path_option_and_no_write(launches, tuner, tmp_path):
    other = tmp_path / "elsewhere.json"
    with tgv_gemm.autotune(path=str(other)):
        run(2, 256, 256)
    assert json.loads(other.read_text())["entries"][0]["m"] == 2
    assert not (tmp_path / "tuning.json").exists()
    with tgv_gemm.autotune(path="") as block:
        run(2, 256, 256)
    assert block.entries and not (tmp_path / "tuning.json").exists(), "path='': tuned, nothing written"


def test_an_exception_tunes_nothing(launches, tuner, tmp_path):
    with pytest.raises(KeyError):
        with tgv_gemm.autotune() as block:
            run(1, 4096, 1024)
            raise KeyError("engine failed")
    assert block.calls == {(4096, 1024, 1): 1}
    assert tuner == [] and block.entries == []
    assert not (tmp_path / "tuning.json").exists()
    assert _ops._record is None


def test_nested_blocks_tune_once_at_the_outermost(launches, tuner):
    with tgv_gemm.autotune(ms=[1, 2, 4, 8]) as outer:
        run(1, 512, 512)
        with tgv_gemm.autotune(ms=[1]) as inner:  # an inner block's options do not apply
            run(8, 1024, 512)
        assert tuner == [], "the inner block tunes nothing"
        assert inner.calls == {(1024, 512, 8): 1}
        try:
            with tgv_gemm.autotune():
                run(2, 2048, 512)
                raise ValueError("inner failure, caught outside it")
        except ValueError:
            pass
        run(16, 512, 512)  # bucket 16: outside outer's ms
    assert outer.calls == {(512, 512, 1): 1, (1024, 512, 8): 1, (2048, 512, 2): 1, (512, 512, 16): 1}
    # Most weight bytes first; 512x512 (two calls) ties 1024x512 and was recorded first.
    assert [(c["shapes"], c["ms"]) for c in tuner] == [([(2048, 512)], [2]), ([(512, 512)], [1]), ([(1024, 512)], [8])]


def test_interleaved_blocks_hand_their_records_on(launches, tuner):
    a = tgv_gemm.autotune()
    b = tgv_gemm.autotune()
    a.__enter__()
    run(1, 512, 512)  # a only
    b.__enter__()
    run(2, 512, 512)  # both
    a.__exit__(None, None, None)  # not last: tunes nothing
    assert tuner == []
    run(4, 512, 512)  # b only
    b.__exit__(None, None, None)
    assert a.calls == {(512, 512, 1): 1, (512, 512, 2): 1}
    assert b.calls == {(512, 512, 2): 1, (512, 512, 4): 1}
    assert b.tuned == {(512, 512, 1): 1, (512, 512, 2): 1, (512, 512, 4): 1}, "the last block tunes the union"
    assert [c["ms"] for c in tuner] == [[1, 2, 4]]


def test_a_block_is_entered_once(tuner):
    block = tgv_gemm.autotune()
    with block:
        with pytest.raises(RuntimeError, match="already open"):
            block.__enter__()
    assert _ops._record is None


def test_max_shapes_takes_the_most_bytes_and_budget_stops(launches, tuner):
    with tgv_gemm.autotune(max_shapes=2) as block:
        for _ in range(5):
            run(1, 800, 64)  # 5 x 800 x 64 weight elements streamed
        for _ in range(3):
            run(1, 1600, 64)  # 3 x 1600 x 64: the most
        run(2, 4096, 64)  # one call, but 4096 x 64
    assert [c["shapes"] for c in tuner] == [[(1600, 64)], [(4096, 64)]]
    assert block.skipped == [(800, 64)]
    del tuner[:]
    with tgv_gemm.autotune(budget_s=0) as block:
        run(1, 512, 512)
        run(1, 1024, 512)
    assert tuner == [] and sorted(block.skipped) == [(512, 512), (1024, 512)]


def test_bad_options():
    with pytest.raises(ValueError, match="power of two"):
        tgv_gemm.autotune(ms=[3])
    with pytest.raises(ValueError, match="power of two"):
        tgv_gemm.autotune(ms=[512])
    with pytest.raises(ValueError, match="max_shapes"):
        tgv_gemm.autotune(max_shapes=-1)


def test_threads_record_every_call(launches, tuner):
    per_thread = 500
    start = threading.Barrier(4)

    def work(m):
        start.wait()
        for _ in range(per_thread):
            run(m, 1024, 1024)

    with tgv_gemm.autotune() as block:
        threads = [threading.Thread(target=work, args=(m,)) for m in (1, 2, 3, 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert block.calls == {(1024, 1024, 1): per_thread, (1024, 1024, 2): per_thread, (1024, 1024, 4): 2 * per_thread}


def test_closing_during_a_capture_only_records(launches, tuner, monkeypatch):
    monkeypatch.setattr(_autotune, "_capturing", lambda: True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tgv_gemm.autotune() as block:
            run(1, 512, 512)
    assert any("capture" in str(w.message) for w in caught)
    assert tuner == []
    monkeypatch.setattr(_autotune, "_capturing", lambda: False)
    block.tune_now()
    assert [c["ms"] for c in tuner] == [[1]]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_real_block_tunes_what_ran(tmp_path):
    from tgv_testutil import assert_close, rand, ref_linear

    path = str(tmp_path / "tuning.json")
    w = rand(1000, 1024)
    outs = []
    with tgv_gemm.autotune(path=path, replays=3) as block:
        for m in (1, 5):
            x = rand(m, 1024)
            outs.append((tgv_gemm.linear(x, w), ref_linear(x, w)))
        graph_x = rand(2, 1024)
        tgv_gemm.linear(graph_x, w)  # warm-up outside the capture
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # recorded during capture; the capture is unharmed
            graph_out = torch.ops.tgv.linear(graph_x, w, None)
        g.replay()
        torch.cuda.synchronize()
    for out, ref in outs:
        assert_close(out, ref, "linear inside the block")
    assert_close(graph_out, ref_linear(graph_x, w), "captured inside the block")
    assert block.calls == {(1000, 1024, 1): 1, (1000, 1024, 8): 1, (1000, 1024, 2): 2}
    doc = json.load(open(path))
    assert sorted(e["m"] for e in doc["entries"]) == [1, 2, 8]
    assert all(e["n"] == 1000 and e["k"] == 1024 and e["us"] > 0 for e in doc["entries"])


def test_neighbours_is_passed_on_and_checked(launches, tuner):
    with tgv_gemm.autotune(neighbours="self"):
        run(1, 4096, 1024)
    assert [c["neighbours"] for c in tuner] == ["self"]
    with pytest.raises(ValueError, match="neighbours='chain': expected 'both'"):
        tgv_gemm.autotune(neighbours="chain")
