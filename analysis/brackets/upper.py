"""Upper witnesses ``(U, W)``: rank-k matrices ``U W^T`` close to ``A`` in max-row-l1.

Every function here proposes candidates; nothing here certifies. Candidates go through
:func:`analysis.brackets.verify.certified_upper_error` before they count.
"""

from __future__ import annotations

import numpy as np
import torch


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
    """``(U, W) = (A V_k, V_k)``."""
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
    keep = order[:k]
    D = np.abs(A[:, None, :] - A[None, keep, :]).sum(-1)  # [M, k]
    U = np.zeros((A.shape[0], k))
    U[np.arange(A.shape[0]), D.argmin(1)] = 1.0
    return U, A[keep].T.copy()


def l1_refit_rows(
    A: torch.Tensor,
    U: torch.Tensor,
    W: torch.Tensor,
    *,
    iters: int = 30,
    delta: float = 1e-7,
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
    """
    best = U.clone()
    best_err = (A - best @ W.transpose(-1, -2)).abs().sum(-1)
    u = U.clone()
    k = W.shape[-1]
    eye = torch.eye(k, dtype=A.dtype) * 1e-10
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
    ranks: torch.Tensor,
    targets: torch.Tensor,
    *,
    steps: int = 300,
    lr: float = 2e-3,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Adam on ``(U, W)`` minimizing a smoothed max-row-l1 error, batched over problems.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    U0, W0 : tensors ``[P, M, K]``, ``[P, N, K]``
        Starting factors, zero-padded beyond each problem's rank.
    ranks : int tensor ``[P]``
        Rank of each problem (columns ``>= ranks[p]`` stay zero).
    targets : tensor ``[P]``
        The error each problem must reach; optimization of a problem stops once its
        computed error is below ``target * (1 - 1e-4)``.

    Returns
    -------
    U, W : the best factors seen per problem (by computed max-row error).
    err : tensor ``[P]`` their computed errors.

    Notes
    -----
    Objective per problem: ``(1/beta) log sum_i exp(beta f_i)`` with
    ``f_i = sum_j sqrt(E_ij^2 + delta^2)``, ``E = A - U W^T``; the smoothing ``delta`` and
    the sharpness ``beta`` are annealed (METHOD.md section 7). Adam is written with
    torch.optim; the annealing schedule is ours.
    """
    P, M, N = A.shape
    K = U0.shape[-1]
    mask = (torch.arange(K)[None, :] < ranks[:, None]).to(A.dtype).unsqueeze(1)  # [P,1,K]
    U = (U0 * mask).clone().requires_grad_(True)
    W = (W0 * mask).clone().requires_grad_(True)
    opt = torch.optim.Adam([U, W], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1), eta_min=lr * 0.02)
    with torch.no_grad():
        best_err = (A - U @ W.transpose(-1, -2)).abs().sum(-1).amax(-1)
    bestU, bestW = U.detach().clone(), W.detach().clone()
    active = best_err > targets * (1 - 1e-4)
    scale = targets.clamp_min(1e-6)
    for step in range(steps):
        if not bool(active.any()):
            break
        frac = step / max(steps - 1, 1)
        delta = float(1e-3 * (1e-2) ** frac)  # 1e-3 -> 1e-5
        beta = (20.0 + 480.0 * frac) / scale  # sharpen the soft max over rows
        opt.zero_grad(set_to_none=True)
        E = A - (U * mask) @ (W * mask).transpose(-1, -2)
        f = torch.sqrt(E * E + delta * delta).sum(-1)  # [P, M]
        obj = torch.logsumexp(beta[:, None] * f, -1) / beta
        (obj * active).sum().backward()
        opt.step()
        sched.step()
        if step % 10 == 9 or step == steps - 1:
            with torch.no_grad():
                Um, Wm = U * mask, W * mask
                err = (A - Um @ Wm.transpose(-1, -2)).abs().sum(-1).amax(-1)
                better = err < best_err
                bestU[better] = Um[better]
                bestW[better] = Wm[better]
                best_err = torch.minimum(err, best_err)
                active = best_err > targets * (1 - 1e-4)
    return bestU, bestW, best_err
