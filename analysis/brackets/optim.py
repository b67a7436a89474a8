"""Optimizer pieces shared by the upper and lower refinements (batched over problems)."""

from __future__ import annotations

import math

import torch


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
