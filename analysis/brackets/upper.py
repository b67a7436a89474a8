"""Upper witnesses ``(U, W)``: rank-k matrices ``U W^T`` close to ``A`` in max-row-l1.

Every function here proposes candidates; nothing here certifies. Candidates go through
:func:`analysis.brackets.verify.certified_upper_error` before they count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from analysis.brackets.optim import Batch, Problems, adam_step, cosine_lr, step_fraction


def svd_errors(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Truncated-SVD projection errors for every rank.

    Parameters
    ----------
    A : array ``[M, N]`` float64

    Returns
    -------
    V : array ``[N, N]``
        Right singular vectors (columns, by decreasing singular value).
    err : array ``[K + 1]``
        ``err[k] = max_i ||A_i - (A V_k V_k^T)_i||_1`` (computed, not certified),
        ``K = min(M, N)``.

    Notes
    -----
    ``A V_k V_k^T`` is the best rank-k approximation in the Frobenius norm; the witness
    is ``U = A V_k``, ``W = V_k``.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.upper import svd_errors
    >>> V, err = svd_errors(A)
    >>> V.shape, err.shape
    ((8, 8), (9,))
    >>> err.round(9).tolist()  # rank 0 misses each row's mass 1; rank 2 is exact
    [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    At = torch.from_numpy(A)
    _, _, Vh = torch.linalg.svd(At, full_matrices=True)
    V = Vh.T.contiguous()
    K = min(A.shape)
    AV = At @ V
    B = torch.zeros_like(At)
    err = np.empty(K + 1)
    err[0] = float(At.abs().sum(1).max())
    for k in range(1, K + 1):
        B += torch.outer(AV[:, k - 1], V[:, k - 1])
        err[k] = float((At - B).abs().sum(1).max())
    return V.numpy(), err


def svd_witness(A: np.ndarray, V: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(U, W) = (A V_k, V_k)``.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.upper import svd_errors, svd_witness
    >>> from analysis.brackets.verify import certified_upper_error
    >>> U, W = svd_witness(A, svd_errors(A)[0], 2)
    >>> U.shape, W.shape, certified_upper_error(A, U, W) < 1e-12
    ((8, 2), (8, 2), True)
    """
    Vk = V[:, :k]
    return A @ Vk, Vk.copy()


def row_cover_order(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy farthest-point order of rows under the l1 distance.

    Returns
    -------
    order : int array ``[M]``
        ``order[:k]`` are the kept rows at rank k.
    radius : array ``[M + 1]``
        ``radius[k] = max_i min_(s in order[:k]) ||A_i - A_s||_1`` (``radius[0]`` is the
        largest row l1 norm).

    Notes
    -----
    Copying the nearest kept row is a rank-k witness: ``U`` is the 0/1 assignment and
    ``W = A[order[:k]]^T``. Farthest-point traversal is the classical 2-approximation to
    the k-center problem (Gonzalez 1985), and one traversal serves every k.

    Examples
    --------
    The zero row is a centre from the start (``radius[0]``), so one kept row leaves the
    other block's rows at distance 1 (their mass), and one row per block covers all:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.upper import row_cover_order
    >>> order, radius = row_cover_order(A)
    >>> radius.tolist()
    [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    >>> sorted(int(i) // 4 for i in order[:2])  # one row of each block
    [0, 1]
    """
    At = torch.from_numpy(A)
    D = torch.cdist(At, At, p=1)
    M = A.shape[0]
    order = np.empty(M, dtype=np.int64)
    radius = np.empty(M + 1)
    near = At.abs().sum(1)  # distance to the zero row
    radius[0] = float(near.max())
    for k in range(M):
        s = int(near.argmax())
        order[k] = s
        near = torch.minimum(near, D[s])
        near[s] = 0.0
        radius[k + 1] = float(near.max())
    return order, radius


def row_cover_witness(A: np.ndarray, order: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank-k witness copying, for every row, its nearest (l1) kept row ``order[:k]``.

    Returns ``(U, W)``: ``U`` ``[M, k]`` the 0/1 assignment of rows to kept rows, ``W``
    ``[N, k]`` the kept rows (:func:`row_cover_order`).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.upper import row_cover_order, row_cover_witness
    >>> U, W = row_cover_witness(A, row_cover_order(A)[0], 2)
    >>> U.sum(1).tolist() == [1.0] * 8, bool(np.array_equal(U @ W.T, A))
    (True, True)
    """
    keep = order[:k]
    # cdist, not broadcasting: an [M, k, N] intermediate is gigabytes at n = 1024.
    D = torch.cdist(torch.from_numpy(A), torch.from_numpy(A[keep]), p=1).numpy()  # [M, k]
    U = np.zeros((A.shape[0], k))
    U[np.arange(A.shape[0]), D.argmin(1)] = 1.0
    return U, A[keep].T.copy()


def l1_refit_rows(
    A: torch.Tensor, U: torch.Tensor, W: torch.Tensor, *, iters: int = 30, delta: float = 1e-7
) -> torch.Tensor:
    """Refit each row's coefficients to minimize its own l1 error, for fixed ``W``.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    U : tensor ``[P, M, k]`` (starting coefficients)
    W : tensor ``[P, N, k]``

    Returns
    -------
    tensor ``[P, M, k]``: the refitted ``U`` (rows whose error did not improve keep theirs).

    Notes
    -----
    ``max_i ||A_i - u_i W^T||_1`` separates by row, so the best ``U`` for a fixed ``W``
    solves M independent l1 regressions. Iteratively reweighted least squares
    (weights ``1 / max(|r_ij|, delta)``) solves them all at once as batched k x k
    systems; it is written here because no library batches l1 regression on tensors,
    and the result is checked (not trusted) by the verifier.

    Examples
    --------
    With ``W`` spanning the rows of a rank-2 matrix, the refit from ``U = 0`` recovers
    the rows (error 1 per row before, none after):

    >>> import numpy as np, torch
    >>> from analysis.brackets.upper import l1_refit_rows, svd_errors
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))
    >>> At = torch.from_numpy(A)[None]
    >>> W = torch.from_numpy(svd_errors(A)[0][:, :2])[None]
    >>> U = l1_refit_rows(At, torch.zeros(1, 8, 2, dtype=torch.float64), W)
    >>> float((At - U @ W.transpose(-1, -2)).abs().sum(-1).max()) < 1e-9
    True
    """
    best = U.clone()
    best_err = (A - best @ W.transpose(-1, -2)).abs().sum(-1)
    u = U.clone()
    k = W.shape[-1]
    eye = torch.eye(k, dtype=A.dtype, device=A.device) * 1e-10
    for _ in range(iters):
        r = A - u @ W.transpose(-1, -2)  # [P, M, N]
        wts = 1.0 / r.abs().clamp_min(delta)
        # G[p, i] = W^T diag(wts[p, i]) W ; rhs = W^T diag(wts) a_i
        G = torch.einsum("pnk,pmn,pnl->pmkl", W, wts, W) + eye
        rhs = torch.einsum("pnk,pmn->pmk", W, wts * A)
        u = torch.linalg.solve(G, rhs.unsqueeze(-1)).squeeze(-1)
        err = (A - u @ W.transpose(-1, -2)).abs().sum(-1)
        better = err < best_err
        best = torch.where(better.unsqueeze(-1), u, best)
        best_err = torch.minimum(err, best_err)
    return best


def refine_upper(
    A: torch.Tensor,
    U0: torch.Tensor,
    W0: torch.Tensor,
    problems: Problems,
    *,
    lr: float = 5e-4,
    check: int = 10,
    give_up: float = 0.6,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Adam on ``(U, W)`` minimizing a smoothed max-row-l1 error, batched over problems.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    U0, W0 : tensors ``[P, M, K]``, ``[P, N, K]``
        Starting factors; columns ``>= problems.sizes[p]`` (the ranks) are zeroed and stay
        zero.
    problems : Problems
        Each problem's rank, target error and step budget (schedules run over each
        problem's own budget unless ``problems.horizons`` is given; ``problems.lr_scale``
        scales ``lr`` per problem). A problem leaves the batch once its computed error is
        below ``target * (1 - 1e-4)``, or, past 30% of its steps, when its best error is
        still above ``(1 + give_up * (1 - progress)) * target`` (a hopeless problem stops
        early; one within reach runs on).

    Returns
    -------
    U, W : the best factors seen per problem (by computed max-row error), err : ``[P]``.

    Notes
    -----
    Objective per problem: ``(1/beta) log sum_i exp(beta f_i)`` with
    ``f_i = sum_j sqrt(E_ij^2 + delta^2)``, ``E = A - U W^T``. Its gradient is
    ``dE = softmax(beta f)_i E_ij / sqrt(E_ij^2 + delta^2)``, ``dU = -dE W``,
    ``dW = -dE^T U``. ``delta`` goes 1e-3 -> 1e-5 and ``beta`` 20/eps -> 500/eps, so
    the objective tightens towards the true max-row-l1 error (docs/method.md section 7).

    Examples
    --------
    From random factors to a rank-2 witness of a rank-2 matrix, certified afterwards:

    >>> import numpy as np, torch
    >>> from analysis.brackets.optim import Problems
    >>> from analysis.brackets.upper import refine_upper
    >>> from analysis.brackets.verify import certified_upper_error
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))
    >>> rng = np.random.default_rng(0)
    >>> U0, W0 = (torch.from_numpy(0.3 * rng.normal(size=(1, 8, 2))) for _ in range(2))
    >>> target = torch.tensor([0.1], dtype=torch.float64)
    >>> problems = Problems(torch.tensor([2]), target, steps=torch.tensor([2000]))
    >>> U, W, err = refine_upper(torch.from_numpy(A)[None], U0, W0, problems, lr=0.01)
    >>> bool(err[0] < 0.1), certified_upper_error(A, U[0].numpy(), W[0].numpy()) < 0.1
    (True, True)
    """
    P, M, N = A.shape
    K = U0.shape[-1]
    dev = A.device
    ranks = torch.as_tensor(problems.sizes, device=dev)
    mask = (torch.arange(K, device=dev)[None, :] < ranks[:, None]).to(A.dtype).unsqueeze(1)
    X = torch.cat([U0 * mask, W0 * mask], 1)  # [P, M + N, K]: U on top of W
    best = X.clone()
    best_err = torch.full((P,), float("inf"), dtype=A.dtype, device=dev)
    Sa = torch.as_tensor(problems.steps).expand(P).to(device=dev, dtype=A.dtype)
    h = problems.horizons
    La: float | torch.Tensor = lr
    if problems.lr_scale is not None:
        La = lr * torch.as_tensor(problems.lr_scale).expand(P).to(dev, A.dtype)
    s = AdamState(
        X, torch.zeros_like(X), torch.zeros_like(X), A, mask,
        targets=problems.targets.to(device=dev, dtype=A.dtype),
        budgets=Sa,
        horizons=Sa if h is None else torch.as_tensor(h).expand(P).to(dev, A.dtype),
        lr=La,
        idx=torch.arange(P, device=dev),
    )  # fmt: skip
    total = int(Sa.max())
    for step in range(total + 1):
        U, W = s.X[:, :M], s.X[:, M:]
        E = s.A - U @ W.transpose(-1, -2)
        if step % check == 0 or step >= total:
            idx, Ta = s.idx, s.targets
            err = E.abs().sum(-1).amax(-1)
            b = err < best_err[idx]
            if bool(b.any()):
                best[idx[b]] = s.X[b]
                best_err[idx[b]] = err[b]
            cur = best_err[idx]
            prog = step / s.budgets
            hopeless = (prog > 0.3) & (cur > (1 + give_up * (1 - prog)) * Ta)
            keep = ~((cur <= Ta * (1 - 1e-4)) | hopeless | (step >= s.budgets))
            if not bool(keep.any()):
                break
            if not bool(keep.all()):
                s = s.take(keep)
                U, W = s.X[:, :M], s.X[:, M:]
                E = s.A - U @ W.transpose(-1, -2)
        upper_step(s, E, step)
    return best[:, :M], best[:, M:], best_err


@dataclass(frozen=True)
class AdamState(Batch):
    """The problems :func:`refine_upper` still runs, one row per problem: ``X``
    ``[p, M + N, K]`` (``U`` on top of ``W``) and its Adam moments ``mom, vel`` (updated in
    place), ``A`` ``[p, M, N]``, the ``mask`` ``[p, 1, K]`` of each problem's live columns,
    its target error, step budget and anneal horizon ``[p]``, the learning rate (a float, or
    one per problem) and each problem's index ``idx`` in the whole batch.

    Examples
    --------
    :meth:`take` keeps the problems still running, and a learning rate shared by all:

    >>> import torch
    >>> from analysis.brackets.upper import AdamState
    >>> s = AdamState(*(torch.tensor([[0.0], [1.0]]) for _ in range(8)), 5e-4, torch.arange(2))
    >>> kept = s.take(torch.tensor([False, True]))
    >>> kept.idx.tolist(), kept.lr
    ([1], 0.0005)
    """

    X: torch.Tensor
    mom: torch.Tensor
    vel: torch.Tensor
    A: torch.Tensor
    mask: torch.Tensor
    targets: torch.Tensor
    budgets: torch.Tensor
    horizons: torch.Tensor
    lr: float | torch.Tensor
    idx: torch.Tensor


def upper_step(s: AdamState, E: torch.Tensor, step: int) -> None:
    """One Adam step of :func:`refine_upper`, in place on ``s.X`` and its moments;
    ``E = A - U W^T`` ``[p, M, N]`` is consumed (overwritten).

    Examples
    --------
    The uniform 4 x 4 matrix from ``U = 0.4``, ``W = 0.5`` (each row off by
    ``4 (0.25 - 0.2) = 0.2``): Adam's first step moves every entry up by ``lr``, to
    ``0.41 * 0.51``, and the error to ``4 (0.25 - 0.2091) = 0.1636``:

    >>> import torch
    >>> from analysis.brackets.upper import AdamState, upper_step
    >>> f64 = dict(dtype=torch.float64)
    >>> A = torch.full((1, 4, 4), 0.25, **f64)
    >>> X = torch.cat([torch.full((1, 4, 1), 0.4, **f64), torch.full((1, 4, 1), 0.5, **f64)], 1)
    >>> def error(X):
    ...     return round(float((A - X[:, :4] @ X[:, 4:].mT).abs().sum(-1).max()), 6)
    >>> error(X)
    0.2
    >>> budgets = torch.tensor([100.0], **f64)
    >>> s = AdamState(X, torch.zeros_like(X), torch.zeros_like(X), A, torch.ones(1, 1, 1, **f64),
    ...               torch.tensor([0.1], **f64), budgets, budgets, 0.01, torch.tensor([0]))
    >>> upper_step(s, A - X[:, :4] @ X[:, 4:].mT, 0)
    >>> error(X)
    0.1636
    """
    M = E.shape[-2]
    U, W = s.X[:, :M], s.X[:, M:]
    frac = step_fraction(step, s.horizons)
    delta = (1e-3 * (1e-2) ** frac)[:, None, None]
    beta = (20.0 + 480.0 * frac) / s.targets.clamp_min(1e-6)
    # In place where a temporary would be [p, M, N]: the same operations in the same
    # order as sqrt(E * E + delta^2), so the same floats, without two allocations.
    S = E * E
    S = S.add_(delta * delta).sqrt_()
    w = torch.softmax(beta[:, None] * S.sum(-1), -1)  # [p, M]
    dE = E.div_(S).mul_(w[..., None])
    g = torch.cat([(dE @ W).neg_(), (dE.transpose(-1, -2) @ U).neg_()], 1).mul_(s.mask)
    adam_step(s.X, g, s.mom, s.vel, step + 1, cosine_lr(s.lr, frac, 0.02))
