import pytest


@pytest.fixture(autouse=True)
def _fp32_reference_is_fp32():
    """References are computed with fp32 matmuls: keep TF32 out of them."""
    try:
        import torch
    except ImportError:
        yield
        return
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(old)
