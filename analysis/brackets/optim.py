"""Optimizer pieces shared by the upper and lower refinements (batched over problems)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from analysis.validation import ParameterError


class Batch:
    """Mixin of the refinements' frozen batches: each tensor field holds one row per
    problem, and :meth:`take` keeps the rows of the problems still running.

    Examples
    --------
    >>> import torch
    >>> from analysis.brackets.optim import Problems
    >>> two = Problems(torch.tensor([2, 5]), torch.tensor([0.1, 0.2]), torch.tensor([300, 400]))
    >>> two.take(torch.tensor([False, True])).sizes.tolist()
    [5]
    """

    def take(self, keep: torch.Tensor):  # noqa: ANN201 (the subclass)
        """The same batch restricted to ``keep`` (bool ``[p]``); non-tensors are kept."""
        vals = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return type(self)(**{k: v[keep] if torch.is_tensor(v) else v for k, v in vals.items()})


@dataclass(frozen=True)
class Problems(Batch):
    """Problems refined side by side, one entry ``[P]`` per problem in every field.

    Attributes
    ----------
    sizes : int tensor
        The rank ``k`` of an upper problem (:func:`analysis.brackets.upper.refine_upper`),
        the size ``m`` of a lower one (:func:`analysis.brackets.lower_ascent.refine_lower`).
    targets : tensor
        The error an upper problem must reach, the margin a lower one must exceed.
    steps : int tensor
        Step budget of each problem.
    horizons : tensor, optional
        Upper only: the number of steps over which each problem's schedule (delta, beta,
        learning rate) anneals; a horizon longer than the budget stops the run part-way
        through its anneal. Default: the budgets (engine 4). The early stops still follow
        ``steps``.
    lr_scale : tensor, optional
        Upper only: a factor on the learning rate per problem (engine 5 lowers the rate at
        large ranks). Default: the same rate for every problem (engine 4).

    Examples
    --------
    >>> import torch
    >>> from analysis.brackets.optim import Problems
    >>> Problems(torch.tensor([2]), torch.tensor([0.1]), torch.tensor([300]), lr_scale=torch.ones(1)).check_lower()
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: problems: expected no horizons or lr_scale (upper only), got 'given'
    """

    sizes: torch.Tensor
    targets: torch.Tensor
    steps: torch.Tensor
    horizons: torch.Tensor | None = None
    lr_scale: torch.Tensor | None = None

    def check_lower(self) -> None:
        """Refuse ``horizons`` and ``lr_scale`` (a lower refinement has neither)."""
        if self.horizons is not None or self.lr_scale is not None:
            raise ParameterError("problems", "no horizons or lr_scale (upper only)", "given")


def adam_step(
    X: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: torch.Tensor
) -> None:
    """One in-place Adam update of ``X`` ``[P, ...]`` with a learning rate per problem ``[P]``.

    Kingma & Ba (2015) with default betas.

    Written out because the refinements compute their gradients in closed form and
    drop finished problems from the batch as they go, which ``torch.optim`` (bound to
    fixed parameter tensors) does not allow; it also avoids autograd's overhead.

    Examples
    --------
    Adam's first step (``t = 1``) moves every entry by the learning rate against the sign
    of its gradient, whatever the gradient's size (the bias-corrected moments are ``g``
    and ``g^2``):

    >>> import torch
    >>> from analysis.brackets.optim import adam_step
    >>> X = torch.zeros(2, 3, dtype=torch.float64)
    >>> g = torch.tensor([[2.0, -30.0, 0.5], [5.0, 5.0, -5.0]], dtype=torch.float64)
    >>> m, v = torch.zeros_like(X), torch.zeros_like(X)
    >>> adam_step(X, g, m, v, 1, torch.tensor([0.1, 0.01], dtype=torch.float64))
    >>> X.round(decimals=6).tolist()
    [[-0.1, 0.1, -0.1], [-0.01, -0.01, 0.01]]
    """
    b1, b2 = 0.9, 0.999
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (v / (1 - b2**t)).sqrt_().add_(1e-8)
    step = (lr / (1 - b1**t)).reshape(-1, *([1] * (X.ndim - 1)))
    X.sub_((m / denom).mul_(step))


def cosine_lr(lr: float, frac: torch.Tensor, floor: float) -> torch.Tensor:
    """Cosine decay from ``lr`` to ``floor * lr`` as ``frac`` goes 0 -> 1 (per problem).

    Examples
    --------
    Halfway the rate is the mean of its two ends, ``(1 + floor) / 2`` times ``lr``:

    >>> import torch
    >>> from analysis.brackets.optim import cosine_lr
    >>> cosine_lr(1.0, torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64), 0.1).round(
    ...     decimals=6
    ... ).tolist()
    [1.0, 0.55, 0.1]
    """
    return lr * (floor + (1 - floor) * 0.5 * (1 + torch.cos(math.pi * frac)))


def step_fraction(step: int, budgets: torch.Tensor) -> torch.Tensor:
    """Progress ``step / (budget - 1)`` of each problem through its own step budget, in [0, 1].

    Examples
    --------
    At step 5, a budget of 11 steps (0 to 10) is half done; smaller budgets are finished,
    and a budget of one step counts as done from the start:

    >>> import torch
    >>> from analysis.brackets.optim import step_fraction
    >>> step_fraction(5, torch.tensor([11, 6, 1])).tolist()
    [0.5, 1.0, 1.0]
    """
    return (step / (budgets - 1).clamp_min(1)).clamp(max=1.0)
