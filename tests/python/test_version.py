"""One version: CMakeLists.txt's project(tgv_gemm VERSION ...). The library
reports it (tgv_version_string, generated into tgv/version.h), and the Python
package takes its __version__ from the library.

Needs the built library but no GPU; the CMakeLists.txt check needs the
repository (a staged GPU folder has none).
"""

import os
import re

import pytest
from tgv_libonly import ROOT, load_lib


def test_the_library_reports_the_cmake_project_version():
    cmake = os.path.join(ROOT, "CMakeLists.txt")
    if not os.path.exists(cmake):
        pytest.skip("no CMakeLists.txt here (a staged folder)")
    want = re.search(r"project\(tgv_gemm VERSION ([0-9.]+)", open(cmake).read()).group(1)
    assert load_lib().version() == want


def test_the_package_version_is_the_librarys():
    pytest.importorskip("torch")
    try:
        import tgv_gemm
    except ImportError as e:
        pytest.skip(str(e))
    assert tgv_gemm.__version__ == tgv_gemm.library_version() == load_lib().version()
