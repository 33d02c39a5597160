"""python/tgv_gemm/_lib.py loaded from its file, without torch and without the
package (for tests that run where torch is missing). ROOT is the repository, or
a staged GPU folder laid out like it."""

import importlib.util
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def load_lib(name="tgv_gemm_lib_only"):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "python", "tgv_gemm", "_lib.py"))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:  # no built library, or no CUDA runtime to load it with
        pytest.skip(str(e))
    return module
