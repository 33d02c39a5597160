"""tgv_gemm.tune: the candidate rule, the file it writes, and (on a GPU) a short
tuning run whose file has the library's format and whose choices compute
correctly when forced.

The rule, the file format and the reload need torch and the built library but
no GPU.
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


def test_candidates_follow_the_tgv_bench_rule():
    tactics = tgv_gemm.list_tactics()
    cands = _tune.candidates(4096, 4096, 1, tactics, 90, 132)
    assert cands[-1] == ("cublas", -1, 1, 0)
    mine = cands[:-1]
    assert mine, "no tgv candidate for 4096x4096 at M=1"
    for backend, tactic, split, stages in mine:
        t = SM90_IDS[tactic]
        assert backend == "tgv"
        assert t["cta_n"] == 8, "M = 1 takes the smallest token tile"
        assert split in (1, 2, 4, 8)
        assert split <= -(-4096 // t["cta_k"])
        tiles = -(-4096 // t["cta_m"])
        assert split == 1 or tiles * split <= 2 * 132, "split-K past two waves"
        assert stages == 0 or (stages == 8 and t["stages"] > 8)
    # Every tile of the smallest token tile, with and without the shallow ring.
    assert {c[1] for c in mine} == {i for i, t in SM90_IDS.items() if t["cta_n"] == 8}
    assert any(c[3] == 8 for c in mine) and any(c[3] == 0 for c in mine)


def test_candidates_for_large_m_and_other_families():
    tactics = tgv_gemm.list_tactics()
    for _, tactic, _, _ in _tune.candidates(1024, 1024, 200, tactics, 90, 132)[:-1]:
        assert SM90_IDS[tactic]["cta_n"] == 256
    # No tgv family (e.g. sm_80): cuBLASLt only.
    assert _tune.candidates(1024, 1024, 8, tactics, None, 108) == [("cublas", -1, 1, 0)]
    # SM100 tactics fix their depth and take no split-K.
    for _, tactic, split, stages in _tune.candidates(4096, 4096, 8, tactics, 100, 148)[:-1]:
        assert split == 1 and stages == 0


def test_a_candidate_runs_exactly_its_split_and_depth():
    one = _tune.candidate_options("tgv", 6, 1, 0)
    assert (one.backend, one.tactic, one.split_k, one.stages) == (1, 6, 1, 0), "split 1 must not mean 'library picks'"
    two = _tune.candidate_options("tgv", 6, 2, 8)
    assert (two.tactic, two.split_k, two.stages) == (6, 2, 8)
    cub = _tune.candidate_options("cublas", -1, 1, 0)
    assert (cub.backend, cub.tactic, cub.split_k, cub.stages) == (2, -1, 0, 0)


def test_the_file_has_the_library_format():
    entries = [
        {"n": 4096, "k": 4096, "m": 8, "backend": "tgv", "tactic": 0, "split_k": 2, "stages": 8, "us": 10.4,
         "cublas_us": 12.5},
        {"n": 4096, "k": 4096, "m": 128, "backend": "cublas", "tactic": -1, "split_k": 1, "stages": 0, "us": 13.2,
         "cublas_us": 13.2},
    ]
    doc = json.loads(_tune.tuning_json('NVIDIA "H200"', 132, "0.1.0", entries))
    assert doc["format"] == "tgv-gemm-tuning/1"
    assert doc["gpu"] == 'NVIDIA "H200"' and doc["sm_count"] == 132 and doc["library_version"] == "0.1.0"
    assert [(e["m"], e["backend"], e["tactic"], e["split_k"], e["stages"]) for e in doc["entries"]] == [
        (8, "tgv", 0, 2, 8), (128, "cublas", -1, 1, 0)]


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


def test_reload_tuning_succeeds():
    # Without a GPU no device has read the file yet: nothing to re-read.
    assert tgv_gemm.reload_tuning() is None


def test_writing_the_librarys_file_reloads_it(tmp_path, monkeypatch):
    reloads = []
    monkeypatch.setattr(_tune.L, "reload_tuning", lambda: reloads.append(1))
    monkeypatch.setenv("TGV_TUNING_FILE", str(tmp_path / "sub" / "tuning.json"))
    text = _tune.tuning_json("NVIDIA H200", 132, "0.1.0", [])
    assert _tune.write_tuning_file(str(tmp_path / "sub" / "tuning.json"), text)
    assert reloads == [1]
    assert open(tmp_path / "sub" / "tuning.json").read() == text
    assert not os.path.exists(str(tmp_path / "sub" / "tuning.json.tmp"))
    # A file the library does not read is written and left at that.
    assert not _tune.write_tuning_file(str(tmp_path / "other.json"), text)
    assert reloads == [1]
    assert os.path.exists(tmp_path / "other.json")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_short_tuning_run(tmp_path):
    path = str(tmp_path / "tuning.json")
    entries = tgv_gemm.tune([(1000, 1024)], ms=[1, 64], path=path, replays=3, l2_factor=1.0, verbose=False)
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
