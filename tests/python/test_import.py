"""`import tgv_gemm` without torch fails at once, saying that torch is needed.

Runs anywhere (no torch, no GPU needed): the import is tried in a child
interpreter where importing torch is made to fail.
"""

import importlib.util
import os
import subprocess
import sys

import pytest


def test_import_without_torch_says_torch_is_needed():
    if importlib.util.find_spec("tgv_gemm") is None:
        pytest.skip("tgv_gemm is not importable (install it, or set PYTHONPATH=python)")
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # makes `import torch` raise ModuleNotFoundError\n"
        "try:\n"
        "    import tgv_gemm\n"
        "except ImportError as e:\n"
        "    print('IMPORTERROR:', e)\n"
        "else:\n"
        "    print('IMPORTED')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("IMPORTERROR:"), r.stdout + r.stderr
    assert "needs PyTorch" in r.stdout and "install torch" in r.stdout, r.stdout
