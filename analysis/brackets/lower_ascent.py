"""The lower refinement: batched projected ascent on the margin of lower witnesses ``(R, Y)``.

Starts come from :mod:`analysis.brackets.lower`; what the ascent finds is a candidate, which
the verifier certifies (:func:`analysis.brackets.verify.certified_lower_margin`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from analysis.brackets.optim import Batch, Problems, adam_step, cosine_lr, step_fraction


def project_rows_l1(X: torch.Tensor, *, iters: int = 3) -> torch.Tensor:
    """Project each row (last axis) onto the unit l1 ball; rows inside are unchanged.

    Notes
    -----
    The Euclidean projection soft-thresholds ``|x|`` at the ``theta`` solving
    ``f(theta) = sum_j max(|x_j| - theta, 0) = 1``. Michelot's fixed-point iteration
    ``theta <- (sum_(|x_j| > theta) |x_j| - 1) / #{|x_j| > theta}``, written here as
    ``theta <- theta + (f(theta) - 1) / #{|x_j| > theta}``, increases monotonically to it
    from ``theta_0 = (||x||_1 - 1) / n`` and needs no sort; after a few iterations any row
    still (slightly) outside the ball is scaled onto it (by ``f(theta)``, its l1 norm), so
    every returned row is feasible. A row inside the ball keeps ``theta = 0`` and is
    returned exactly. Used in the optimizer only: the verifier normalizes witnesses itself.

    Examples
    --------
    ``(3, 1)`` soft-thresholded at ``theta = 2`` is ``(1, 0)``; ``(0.2, 0.3)`` is inside:

    >>> import torch
    >>> from analysis.brackets.lower_ascent import project_rows_l1
    >>> X = torch.tensor([[3.0, 1.0], [0.2, 0.3]], dtype=torch.float64)
    >>> project_rows_l1(X).round(decimals=9).tolist()
    [[1.0, 0.0], [0.2, 0.3]]
    """
    a = X.abs()
    theta = ((a.sum(-1, keepdim=True) - 1.0) / X.shape[-1]).clamp_min_(0.0)
    for _ in range(iters):
        over = (a - theta).clamp_min_(0.0)
        f = over.sum(-1, keepdim=True)
        # #{|x_j| > theta} as an exact float count: over_j > 0 exactly when |x_j| > theta
        # (IEEE subtraction is exact in sign), and a float count skips a bool tensor and an
        # int64 -> float64 promotion per iteration (same theta, bit for bit).
        cnt = torch.sign(over).sum(-1, keepdim=True).clamp_min_(1.0)
        theta = (theta + (f - 1.0) / cnt).clamp_min_(0.0)
    P = (a - theta).clamp_min_(0.0)
    norm = P.sum(-1, keepdim=True).clamp_min_(1.0)
    return P.mul_(torch.sign(X)).div_(norm)


def lower_lr(sizes: torch.Tensor) -> torch.Tensor:
    """Adam step size of the lower ascent per problem: ``0.25 / m`` clamped to [0.002, 0.05].

    The entries of a witness shrink as ``m`` grows (rows of ``Y`` spread over more
    rows), and Adam's steps do not scale with the gradient, so a fixed step that suits
    ``m = 5`` destroys the group structure at ``m = 50`` (measured on MiniLM heads).

    Examples
    --------
    >>> import torch
    >>> from analysis.brackets.lower_ascent import lower_lr
    >>> lower_lr(torch.tensor([5, 50, 500])).round(decimals=9).tolist()  # 0.25 / m, clamped
    [0.05, 0.005, 0.002]
    """
    return (0.25 / sizes.double()).clamp(0.002, 0.05)


def refine_lower(
    A: torch.Tensor,
    R0: torch.Tensor,
    Y0: torch.Tensor,
    problems: Problems,
    *,
    lr: torch.Tensor | float | None = None,
    check: int = 10,
    give_up: float = 0.7,
    stall: float = 0.25,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected ascent on the diagonal-dominance margin over signed ``R`` and ``Y``.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    R0 : tensor ``[P, N, K]``, Y0 : tensor ``[P, K, M]``
        Starting witnesses; entries beyond each problem's size are zeroed.
    problems : Problems
        Each problem's size, target margin and step budget. A problem leaves the batch
        once its margin is above ``1.02 * target``, or, past 30% of its steps, when it is
        still below ``(1 - give_up * (1 - progress)) * target``.
    lr : float or tensor ``[P]``, optional
        Peak Adam step per problem (cosine decay to a tenth); default :func:`lower_lr`.
    stall : float
        A problem also leaves once its best margin has not grown by 0.1% over the last
        ``stall`` fraction of its budget (at least 50 steps).

    Returns
    -------
    R, Y : best witnesses seen per problem (by computed margin), margin : tensor ``[P]``.

    Notes
    -----
    Maximizes ``-(1/beta) log sum_p exp(-beta mg_p)``, a soft minimum of
    ``mg_p = G_pp - sum_(q != p) |G_pq|``, ``G = Y A R``. With ``w = softmax(-beta mg)``,
    ``dG_pq = w_p (delta_pq - (1 - delta_pq) sign(G_pq))``, ``dY = dG (A R)^T``,
    ``dR = (Y A)^T dG``. After each Adam step every row of ``R`` and ``Y`` is projected
    onto the l1 unit ball, so the computed margin is the normalized one. Signed ``R``
    matters: the useful test functions are differences of key groups (docs/method.md
    section 7).

    Examples
    --------
    From a perturbed start of negative margin to a witness certified above 0.5:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> import torch
    >>> from analysis.brackets.lower import normalized_margins
    >>> from analysis.brackets.lower_ascent import refine_lower
    >>> from analysis.brackets.optim import Problems
    >>> from analysis.brackets.verify import certified_lower_margin
    >>> rng = np.random.default_rng(0)
    >>> R0 = np.repeat(np.eye(2), 4, axis=0) + 0.3 * rng.normal(size=(8, 2))
    >>> Y0 = np.abs(rng.normal(size=(2, 8)))
    >>> bool(normalized_margins(A, R0, Y0).max() < 0)
    True
    >>> problems = Problems(torch.tensor([2]), torch.tensor([0.5], dtype=torch.float64),
    ...                     steps=torch.tensor([500]))
    >>> R, Y, margin = refine_lower(
    ...     torch.from_numpy(A)[None], torch.from_numpy(R0)[None], torch.from_numpy(Y0)[None],
    ...     problems,
    ... )
    >>> bool(margin[0] > 0.5), certified_lower_margin(A, R[0].numpy(), Y[0].numpy()) > 0.5
    (True, True)
    """
    problems.check_lower()
    P, M, N = A.shape
    K = R0.shape[-1]
    dev = A.device
    sizes = torch.as_tensor(problems.sizes, device=dev)
    kp = torch.arange(K, device=dev)[None, :] < sizes[:, None]  # [P, K]
    cm = kp.to(A.dtype)
    R = project_rows_l1(R0 * cm[:, None, :])
    Y = project_rows_l1(Y0) * cm[:, :, None]
    off = 1.0 - torch.eye(K, dtype=A.dtype, device=dev)
    on = 1.0 - off  # the identity, as 1 - off (the exact floats the gradient used before)
    best_R, best_Y = R.clone(), Y.clone()
    best = torch.full((P,), -float("inf"), dtype=A.dtype, device=dev)
    La = lower_lr(sizes) if lr is None else torch.as_tensor(lr, dtype=torch.float64, device=dev)
    s = AscentState(
        R, Y, *(torch.zeros_like(t) for t in (R, R, Y, Y)), A, kp, cm,
        targets=problems.targets.to(device=dev, dtype=A.dtype),
        budgets=torch.as_tensor(problems.steps).expand(P).to(device=dev, dtype=A.dtype),
        lr=La.expand(P).to(A.dtype),
        idx=torch.arange(P, device=dev),
    )  # fmt: skip
    # best margin as of the last improvement, and the step it happened
    ref = torch.full((P,), -float("inf"), dtype=A.dtype, device=dev)
    since = torch.zeros(P, dtype=A.dtype, device=dev)
    total = int(s.budgets.max())
    for step in range(total + 1):
        YA = s.Y @ s.A
        AR = s.A @ s.R
        G = YA @ s.R
        mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
        mg = mg.masked_fill(~s.kp, float("inf"))
        if step % check == 0 or step >= total:
            idx, Sa = s.idx, s.budgets
            cur = mg.amin(-1)
            b = cur > best[idx]
            if bool(b.any()):
                best_R[idx[b]] = s.R[b]
                best_Y[idx[b]] = s.Y[b]
                best[idx[b]] = cur[b]
            cb = best[idx]
            grew = cb - ref[idx] > 1e-3 * ref[idx].abs().nan_to_num(posinf=0.0)
            ref[idx[grew]] = cb[grew]
            since[idx[grew]] = step
            stalled = step - since[idx] > (stall * Sa).clamp_min(50)
            prog = step / Sa
            hopeless = (prog > 0.3) & (cb < (1 - give_up * (1 - prog)) * s.targets)
            keep = ~((cb > 1.02 * s.targets) | hopeless | stalled | (step >= Sa))
            if not bool(keep.any()):
                break
            if not bool(keep.all()):
                s = s.take(keep)
                YA, AR, G, mg = (t[keep] for t in (YA, AR, G, mg))
        s = lower_step(s, YA, AR, G, mg, on, off, step)
    return best_R, best_Y, best


@dataclass(frozen=True)
class AscentState(Batch):
    """The problems :func:`refine_lower` still runs, one row per problem: the witnesses
    ``R`` ``[p, N, K]`` and ``Y`` ``[p, K, M]``, their Adam moments ``mR, vR, mY, vY``
    (updated in place), ``A`` ``[p, M, N]``, each problem's live size as bool ``kp`` and as
    float ``cm`` ``[p, K]``, its target margin, step budget and peak step ``[p]``, and its
    index ``idx`` in the whole batch.

    Examples
    --------
    :meth:`take` keeps the problems still running (here the second of two):

    >>> import torch
    >>> from analysis.brackets.lower_ascent import AscentState
    >>> s = AscentState(*(torch.tensor([[0.0], [1.0]]) for _ in range(12)), torch.arange(2))
    >>> s.take(torch.tensor([False, True])).idx.tolist()
    [1]
    """

    R: torch.Tensor
    Y: torch.Tensor
    mR: torch.Tensor
    vR: torch.Tensor
    mY: torch.Tensor
    vY: torch.Tensor
    A: torch.Tensor
    kp: torch.Tensor
    cm: torch.Tensor
    targets: torch.Tensor
    budgets: torch.Tensor
    lr: torch.Tensor
    idx: torch.Tensor


def lower_step(
    s: AscentState,
    YA: torch.Tensor,
    AR: torch.Tensor,
    G: torch.Tensor,
    mg: torch.Tensor,
    on: torch.Tensor,
    off: torch.Tensor,
    step: int,
) -> AscentState:
    """One projected ascent step of :func:`refine_lower`; returns the state with the new
    ``(R, Y)``.

    ``YA = Y A``, ``AR = A R``, ``G = YA R`` and the margins ``mg`` ``[p, K]`` are those of
    the current ``(R, Y)``; ``on`` / ``off`` are the identity and its complement
    ``[K, K]``. The Adam moments are updated in place.

    Examples
    --------
    The state :func:`refine_lower` keeps, for one problem on the 3 x 3 identity from
    ``R = Y^T = 0.1 + 0.6 I``. Adam's first step moves every entry by ``lr`` along its
    gradient's sign: the diagonal up to 0.75, the rest down to 0.05 (rows inside the l1
    ball are not projected), and the margin grows:

    >>> import torch
    >>> from analysis.brackets.lower import normalized_margins
    >>> from analysis.brackets.lower_ascent import AscentState, lower_step
    >>> f64 = dict(dtype=torch.float64)
    >>> A = torch.eye(3, **f64)[None]
    >>> R = (0.1 + 0.6 * torch.eye(3, **f64))[None]
    >>> Y = R.mT.clone()
    >>> def margin(R, Y):
    ...     mg = normalized_margins(A[0].numpy(), R[0].numpy(), Y[0].numpy())
    ...     return round(float(mg.min()), 6)
    >>> margin(R, Y)
    0.259259
    >>> kp = torch.ones(1, 3, dtype=torch.bool)
    >>> one = dict(targets=torch.tensor([0.5], **f64), budgets=torch.tensor([100.0], **f64))
    >>> s = AscentState(R, Y, *(torch.zeros_like(R) for _ in range(4)), A, kp, kp.double(),
    ...                 **one, lr=torch.tensor([0.05], **f64), idx=torch.tensor([0]))
    >>> YA, AR = Y @ A, A @ R
    >>> G = YA @ R
    >>> on = torch.eye(3, **f64)
    >>> off = 1 - on
    >>> mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
    >>> s = lower_step(s, YA, AR, G, mg, on, off, 0)
    >>> s.R[0].round(decimals=6).tolist()
    [[0.75, 0.05, 0.05], [0.05, 0.75, 0.05], [0.05, 0.05, 0.75]]
    >>> margin(s.R, s.Y)  # (0.5675 - 2 * 0.0775) / 0.85^2
    0.570934
    """
    frac = step_fraction(step, s.budgets)
    beta = (30.0 + 970.0 * frac)[:, None]
    w = torch.softmax(-beta * mg.masked_fill(~s.kp, 1e3), -1)  # [p, K]
    dG = w[..., None] * (on - off * torch.sign(G))
    lr_t = cosine_lr(s.lr, frac, 0.1)
    adam_step(s.Y, (dG @ AR.transpose(-1, -2)).neg_(), s.mY, s.vY, step + 1, lr_t)  # ascent
    adam_step(s.R, (YA.transpose(-1, -2) @ dG).neg_(), s.mR, s.vR, step + 1, lr_t)
    R = project_rows_l1(s.R * s.cm[:, None, :])
    Y = project_rows_l1(s.Y).mul_(s.cm[:, :, None])
    return dataclasses.replace(s, R=R, Y=Y)
