"""Helpers shared by the tgv_gemm tests (imported after the CUDA skip)."""

import itertools

import pytest
import torch
import torch.nn.functional as F

_seeds = itertools.count(1234)

# Element-wise tolerance of every comparison against an fp32 reference:
#     |out - ref| <= ATOL + RTOL * |ref|
# bf16 keeps 8 significant bits: rounding the fp32 accumulator to bf16 alone
# costs up to 2^-9 ~ 0.002 relative; the rest is fp32 summation order.
ATOL = 1e-2
RTOL = 1e-2


def rand(*shape, device="cuda", dtype=torch.bfloat16):
    """Random normal data, never zeros (a zero tensor would hide missing writes);
    each call draws from its own deterministic seed."""
    g = torch.Generator(device=device)
    g.manual_seed(next(_seeds))
    t = torch.randn(*shape, device=device, dtype=torch.float32, generator=g)
    return t.to(dtype)


def ref_linear(x, w, b=None):
    """F.linear in fp32 on the same (bf16-rounded) inputs."""
    return F.linear(x.float(), w.float(), None if b is None else b.float())


def assert_close(out, ref, what=""):
    assert out.shape == ref.shape, (what, out.shape, ref.shape)
    assert out.dtype == torch.bfloat16, (what, out.dtype)
    diff = (out.float() - ref.float()).abs()
    bound = ATOL + RTOL * ref.float().abs()
    bad = diff > bound
    if bool(bad.any()):
        idx = bad.nonzero()[0].tolist()
        raise AssertionError(
            "%s: %d of %d elements off; first at %s: out=%g ref=%g (bound %g); max |diff| %g"
            % (
                what,
                int(bad.sum()),
                bad.numel(),
                idx,
                float(out.float()[tuple(idx)]),
                float(ref.float()[tuple(idx)]),
                float(bound[tuple(idx)]),
                float(diff.max()),
            )
        )


def skip_unless_device_cannot_serve(error):
    """A TgvNotSupportedError from backend="tgv" is a skip only where this
    device cannot run the tgv kernels; on sm_90, whose family the library serves
    everywhere these tests go, the refusal is re-raised: a failure."""
    if torch.cuda.get_device_capability()[0] == 9:
        raise error
    pytest.skip("this device cannot run the tgv kernels: %s" % error)
