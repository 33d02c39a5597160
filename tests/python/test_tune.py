"""tgv_gemm.tune: the library's candidate list it times (the one tgv-bench
--tune times: checked option for option on a described sm_90 and a simulated
sm_100 device), the library's writer it writes with, and (on a GPU) a short
tuning run whose file has the library's format and whose choices compute
correctly when forced.

All but the tuning run need torch and the built library but no GPU.
"""

import json
import os

import pytest

torch = pytest.importorskip("torch")
try:
    import tgv_gemm
    from tgv_gemm import _tune
except ImportError as e:  # no built library, or no CUDA runtime to load it with
    pytest.skip(str(e), allow_module_level=True)

SM90_IDS = {t["id"]: t for t in tgv_gemm.list_tactics() if t["arch"] == 90}
L = _tune.L
H200 = L.DeviceDesc(90, 132, 232448)
B200 = L.DeviceDesc(100, 148, 232448)  # simulated: the list is plain data over the description


def test_candidates_follow_the_tuner_rule():
    cands = _tune.candidates(4096, 4096, 1, H200)
    assert cands[-1] == ("cublas", -1, 1, 0)
    mine = cands[:-1]
    assert mine, "no tgv candidate for 4096x4096 at M=1"
    for backend, tactic, split, stages in mine:
        t = SM90_IDS[tactic]
        assert backend == "tgv"
        assert t["cta_n"] == 8, "M = 1 takes the smallest token tile"
        if split == -1:  # stream-K, at the deepest ring
            assert stages == 0
            continue
        assert 1 <= split <= 8
        assert split <= -(-4096 // t["cta_k"])
        tiles = -(-4096 // t["cta_m"])
        assert split == 1 or tiles * split <= 2 * 132, "split-K past two waves"
        assert stages == 0 or (stages == 8 and t["stages"] > 8)
    # Every tile of the smallest token tile, with and without the shallow ring,
    # and split factors that are not powers of two.
    assert {c[1] for c in mine} == {i for i, t in SM90_IDS.items() if t["cta_n"] == 8}
    assert any(c[3] == 8 for c in mine) and any(c[3] == 0 for c in mine)
    assert any(c[2] == -1 for c in mine), "stream-K is a candidate where it can share the problem out"
    assert {3, 5, 6, 7} <= {c[2] for c in mine}


def test_candidates_for_large_m_and_other_families():
    for _, tactic, _, _ in _tune.candidates(1024, 1024, 200, H200)[:-1]:
        assert SM90_IDS[tactic]["cta_n"] == 256
    # No tgv family (sm_80): cuBLASLt only.
    assert _tune.candidates(1024, 1024, 8, L.DeviceDesc(80, 108, 166912)) == [("cublas", -1, 1, 0)]
    # SM100 tactics fix their depth and take no split-K.
    sm100 = _tune.candidates(4096, 4096, 8, B200)
    assert len(sm100) > 1
    for backend, tactic, split, stages in sm100[:-1]:
        assert backend == "tgv" and tgv_gemm.list_tactics()[tactic]["arch"] == 100
        assert split == 1 and stages == 0


@pytest.mark.parametrize("desc", [H200, B200], ids=["sm90", "sm100"])
@pytest.mark.parametrize("n,k,m", [(4096, 4096, 1), (1000, 1024, 16), (14336, 4096, 64), (512, 8192, 256)])
def test_tgv_bench_and_python_time_the_same_list(desc, n, k, m):
    # tgv-bench --tune times the options tgv_tune_candidates returns (through
    # tgv::tune_candidates); tgv_gemm.tune runs candidate_options() of its tuples.
    count = L.ctypes.c_int32(0)
    assert L.lib.tgv_tune_candidates_(desc, n, k, m, None, 0, L.ctypes.byref(count)) == 0, L.last_error()
    raw = (L.Options * count.value)()
    assert L.lib.tgv_tune_candidates_(desc, n, k, m, raw, count.value, L.ctypes.byref(count)) == 0
    fields = ("backend", "tactic", "split_k", "stages", "pdl")
    bench = [tuple(getattr(o, f) for f in fields) for o in raw]
    python = [tuple(getattr(_tune.candidate_options(*c), f) for f in fields) for c in _tune.candidates(n, k, m, desc)]
    assert python == bench


def test_candidates_refuse_bad_arguments():
    with pytest.raises(ValueError, match="m=0"):
        _tune.candidates(1024, 1024, 0, H200)
    with pytest.raises(ValueError, match="sm_count=0"):
        _tune.candidates(1024, 1024, 1, L.DeviceDesc(90, 0, 232448))


def test_a_candidate_runs_exactly_its_split_and_depth():
    one = _tune.candidate_options("tgv", 6, 1, 0)
    assert (one.backend, one.tactic, one.split_k, one.stages) == (1, 6, 1, 0), "split 1 must not mean 'library picks'"
    two = _tune.candidate_options("tgv", 6, 2, 8)
    assert (two.tactic, two.split_k, two.stages) == (6, 2, 8)
    cub = _tune.candidate_options("cublas", -1, 1, 0)
    assert (cub.backend, cub.tactic, cub.split_k, cub.stages) == (2, -1, 0, 0)


def test_the_file_has_the_library_format(tmp_path):
    entries = [
        {"n": 4096, "k": 4096, "m": 8, "backend": "tgv", "tactic": 0, "split_k": 3, "stages": 8, "us": 10.4,
         "cublas_us": 12.5},
        {"n": 4096, "k": 4096, "m": 128, "backend": "cublas", "tactic": -1, "split_k": 1, "stages": 0, "us": 13.2,
         "cublas_us": 13.2},
    ]
    path = str(tmp_path / "t.json")
    assert not _tune.write_tuning_file(path, 'NVIDIA "H200" \\ x', 132, entries)
    doc = json.load(open(path))
    assert doc["format"] == "tgv-gemm-tuning/1"
    assert doc["gpu"] == 'NVIDIA "H200" \\ x' and doc["sm_count"] == 132
    assert doc["library_version"] == tgv_gemm.library_version()
    assert [(e["m"], e["backend"], e["tactic"], e["split_k"], e["stages"], e["us"]) for e in doc["entries"]] == [
        (8, "tgv", 0, 3, 8, 10.4), (128, "cublas", -1, 1, 0, 13.2)]


def test_the_writer_refuses_a_malformed_entry(tmp_path):
    bad = {"n": 4096, "k": 4096, "m": 3, "backend": "tgv", "tactic": 0, "split_k": 1, "stages": 0, "us": 1.0,
           "cublas_us": 1.0}
    with pytest.raises(ValueError, match=r"entries\[0\].*bad m"):
        _tune.write_tuning_file(str(tmp_path / "t.json"), "GPU", 132, [bad])
    assert not os.path.exists(tmp_path / "t.json")


def test_the_default_path_is_the_library_search_order(monkeypatch):
    monkeypatch.setenv("TGV_TUNING_FILE", "/x/t.json")
    assert _tune.tuning_file_path() == "/x/t.json"
    monkeypatch.delenv("TGV_TUNING_FILE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/c")
    assert _tune.tuning_file_path() == "/c/tgv-gemm/tuning.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/h")
    assert _tune.tuning_file_path() == "/h/.cache/tgv-gemm/tuning.json"


def test_m_must_be_a_bucket():
    with pytest.raises(ValueError, match="power of two"):
        tgv_gemm.tune([(256, 256)], ms=[3], path="")


def test_neighbours_must_be_known():
    with pytest.raises(ValueError, match=r"tgv_gemm.tune: neighbours='pdl': expected 'both' .*'kernels' .* or 'self'"):
        tgv_gemm.tune([(256, 256)], ms=[1], path="", neighbours="pdl")


def test_reload_tuning_succeeds():
    # Without a GPU no device has read the file yet: nothing to re-read.
    assert tgv_gemm.reload_tuning() is None


def test_writing_the_librarys_file_reloads_it(tmp_path, monkeypatch):
    reloads = []
    monkeypatch.setattr(_tune.L, "reload_tuning", lambda: reloads.append(1))
    monkeypatch.setenv("TGV_TUNING_FILE", str(tmp_path / "sub" / "tuning.json"))
    assert _tune.write_tuning_file(str(tmp_path / "sub" / "tuning.json"), "NVIDIA H200", 132, [])
    assert reloads == [1]
    assert json.load(open(tmp_path / "sub" / "tuning.json"))["entries"] == []
    assert os.listdir(tmp_path / "sub") == ["tuning.json"], "no temporary file left"
    # A file the library does not read is written and left at that.
    assert not _tune.write_tuning_file(str(tmp_path / "other.json"), "NVIDIA H200", 132, [])
    assert reloads == [1]
    assert os.path.exists(tmp_path / "other.json")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("neighbours", ["both", "kernels", "self"])
def test_a_short_tuning_run(tmp_path, neighbours):
    path = str(tmp_path / "tuning.json")
    entries = tgv_gemm.tune([(1000, 1024)], ms=[1, 64], path=path, replays=3, l2_factor=1.0, verbose=False,
                            neighbours=neighbours)
    assert [e["m"] for e in entries] == [1, 64]
    doc = json.load(open(path))
    props = torch.cuda.get_device_properties(0)
    assert doc["gpu"] == props.name and doc["sm_count"] == props.multi_processor_count
    assert doc["library_version"] == tgv_gemm.library_version()
    for e in doc["entries"]:
        assert e["backend"] in ("tgv", "cublas") and e["us"] > 0 and e["cublas_us"] > 0
        assert e["us"] <= e["cublas_us"] * 1.0001, "the winner is never slower than cuBLASLt in the same run"
        if e["backend"] == "tgv":
            assert e["tactic"] in SM90_IDS or props.major != 9
        # The chosen combination computes correctly when forced.
        x = torch.randn(e["m"], 1024, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(1000, 1024, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(e["m"], 1000, device="cuda", dtype=torch.bfloat16)
        from tgv_gemm import _ops
        opts = _tune.candidate_options(e["backend"], e["tactic"], e["split_k"], e["stages"])
        _ops.run_linear(x, w, None, out, e["backend"], None, None, "test", options=opts)
        ref = torch.nn.functional.linear(x.float(), w.float())
        assert ((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all()
    assert not os.path.exists(path + ".tmp")
