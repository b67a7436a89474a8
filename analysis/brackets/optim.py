"""Optimizer pieces shared by the upper and lower refinements (batched over problems)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch

#: The smallest positive float64 (a subnormal): multiplied by 1 it survives only while the
#: CPU keeps subnormals.
_SUBNORMAL = 5e-324


def _flushing_subnormals() -> bool:
    """Whether this thread's CPU currently flushes subnormal floats to zero."""
    # Read as bits: a float comparison would itself see the subnormal as zero while flushing.
    x = torch.tensor([_SUBNORMAL], dtype=torch.float64) * 1.0
    return x.view(torch.int64).item() == 0


@contextmanager
def subnormals_flushed() -> Iterator[None]:
    """Flush subnormal floats to zero on this thread's CPU while the block runs; usable as
    a decorator (``@subnormals_flushed()``). The previous setting is restored.

    Why: the refinements weight rows by a sharp softmax, so most weights, gradients and
    squared gradients underflow into the subnormal range, and x86 arithmetic on subnormal
    operands is tens of times slower (microcode assists). Flushing them costs nothing the
    search can see: a subnormal (below 2.2e-308) next to the optimizer's other terms is
    below float64 rounding, and on the engine's reference sample (48 profiles of the
    four-family study) every returned witness is the same float as without it
    (docs/results/engine.md). Only candidate search runs this way: the verifier that
    certifies witnesses runs outside it, with IEEE gradual underflow. ``torch`` sets the
    flag for the calling thread only, which is the thread the engine's one-thread
    refinements run on; where the CPU cannot flush, nothing changes.
    """
    was = _flushing_subnormals()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(was)


def adam_step(
    X: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: torch.Tensor
) -> None:
    """One in-place Adam update of ``X`` ``[P, ...]`` with a learning rate per problem ``[P]``.

    Kingma & Ba (2015) with default betas.

    Written out because the refinements compute their gradients in closed form and
    drop finished problems from the batch as they go, which ``torch.optim`` (bound to
    fixed parameter tensors) does not allow; it also avoids autograd's overhead.
    """
    b1, b2 = 0.9, 0.999
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (v / (1 - b2**t)).sqrt_().add_(1e-8)
    step = (lr / (1 - b1**t)).reshape(-1, *([1] * (X.ndim - 1)))
    X.sub_((m / denom).mul_(step))


def cosine_lr(lr: float, frac: torch.Tensor, floor: float) -> torch.Tensor:
    """Cosine decay from ``lr`` to ``floor * lr`` as ``frac`` goes 0 -> 1 (per problem)."""
    return lr * (floor + (1 - floor) * 0.5 * (1 + torch.cos(math.pi * frac)))


def step_fraction(step: int, budgets: torch.Tensor) -> torch.Tensor:
    """Progress ``step / (budget - 1)`` of each problem through its own step budget, in [0, 1]."""
    return (step / (budgets - 1).clamp_min(1)).clamp(max=1.0)
