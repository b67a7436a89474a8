"""The optimizer pieces: subnormals are flushed only inside the refinements."""

from __future__ import annotations

import pytest
import torch

from analysis.brackets.optim import subnormals_flushed

TINY = 5e-324  # the smallest positive float64, a subnormal


def _survives() -> bool:
    # Compared as bits: a float comparison would itself read the subnormal as zero while
    # the CPU flushes.
    x = torch.tensor([TINY], dtype=torch.float64) * 1.0
    return x.view(torch.int64).item() == 1


def test_subnormals_flushed_inside_and_restored_after():
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormals")
    assert _survives()
    with subnormals_flushed():
        assert not _survives()
    assert _survives()  # the verifier, outside, keeps IEEE gradual underflow


def test_subnormals_flushed_keeps_a_flushing_caller_flushing():
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        with subnormals_flushed():
            pass
        assert not _survives()
    finally:
        torch.set_flush_denormal(False)


def test_subnormals_flushed_restores_on_error():
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormals")

    @subnormals_flushed()
    def boom() -> None:
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        boom()
    assert _survives()
