"""Lower witnesses ``(R, Y)``: test spaces on which ``A`` is diagonally dominant.

Theorem (METHOD.md section 3): with rows of ``R`` ``[N, m]`` and ``Y`` ``[m, M]`` in the l1
unit ball and ``G = Y A R``, ``min_p (G_pp - sum_(q != p) |G_pq|) > eps`` implies
``r_eps(A) >= m``. Functions here propose candidates; the verifier certifies them.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.cluster.hierarchy import linkage

from analysis.brackets.optim import adam_step, cosine_lr, step_fraction


def column_partitions(A: np.ndarray, sizes: list[int], *, method: str = "ward") -> np.ndarray:
    """Nested partitions of the key columns, one per requested number of groups.

    Parameters
    ----------
    A : array ``[M, N]``
    sizes : list of int
        Numbers of groups wanted (each ``<= N``).
    method : {"ward", "average-cosine"}
        ``ward``: Ward linkage on the raw columns (similar query profiles, mass-aware);
        ``average-cosine``: average linkage on cosine distance (mass-blind).

    Returns
    -------
    labels : int array ``[len(sizes), N]``

    Notes
    -----
    Coarse-graining is what makes lower witnesses work on smooth heads: a group of
    similar keys is one test function that rows can dominate. One dendrogram
    (scipy.cluster.hierarchy) gives every number of groups at once.
    """
    cols = A.T
    if method == "ward":
        Z = linkage(cols, method="ward")
    elif method == "average-cosine":
        norms = np.linalg.norm(cols, axis=1, keepdims=True)
        Z = linkage(cols / np.maximum(norms, 1e-300), method="average", metric="cosine")
    else:
        raise ValueError(f"method: expected 'ward' or 'average-cosine', got {method!r}")
    return _cut_all(Z, A.shape[1], sizes)


def _cut_all(Z: np.ndarray, N: int, sizes: list[int]) -> np.ndarray:
    """Labels ``0..m-1`` after the first ``N - m`` merges of linkage ``Z``, for each m.

    Written by hand because ``scipy.cluster.hierarchy.cut_tree`` returns wrong partitions
    for some inputs (e.g. ``n_clusters = N`` on tied distances gives one cluster).
    """
    parent = list(range(2 * N - 1))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    want = {m: i for i, m in enumerate(sizes)}
    out = np.zeros((len(sizes), N), dtype=np.int64)

    def record(m: int) -> None:
        if m in want:
            roots = [find(j) for j in range(N)]
            _, lab = np.unique(roots, return_inverse=True)
            out[want[m]] = lab

    record(N)
    for step, (a, b) in enumerate(Z[:, :2].astype(np.int64)):
        parent[a] = N + step
        parent[b] = N + step
        record(N - step - 1)
    return out


def group_witness(
    A: np.ndarray, labels: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Gastinel-Kahan witness from a column partition into ``m`` groups.

    ``R`` is the 0/1 group indicator ``[N, m]``; one row per group is chosen greedily by
    dominance of that group's mass; ``Y`` holds the rows of ``(A_S R)^-1`` divided by
    their l1 norms, placed at the chosen rows ``S`` ``[m, M]``.

    Returns ``(R, Y, margin)`` with the computed (uncertified) margin
    ``1 / ||(A_S R)^-1||_inf``.
    """
    M, N = A.shape
    R = np.zeros((N, m))
    R[np.arange(N), labels] = 1.0
    B = A @ R  # [M, m] mass of each row on each group
    score = 2 * B - B.sum(1, keepdims=True)  # B_ip - sum_(q != p) B_iq
    S = np.full(m, -1)
    taken = np.zeros(M, dtype=bool)
    # Groups whose best row is least dominant choose first.
    for p in np.argsort(score.max(0)):
        s = np.where(taken, -np.inf, score[:, p])
        S[p] = int(np.argmax(s))
        taken[S[p]] = True
    Y = np.zeros((m, M))
    try:
        inv = np.linalg.inv(B[S])
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(B[S])
    if not np.isfinite(inv).all():
        inv = np.eye(m)
    rows = np.abs(inv).sum(1, keepdims=True)
    inv /= np.maximum(rows, 1e-300)
    Y[:, S] = inv
    G = inv @ B[S]
    d = np.diag(G)
    return R, Y, float((d - (np.abs(G).sum(1) - np.abs(d))).min())


def project_rows_l1(X: torch.Tensor, *, iters: int = 3) -> torch.Tensor:
    """Project each row (last axis) onto the unit l1 ball; rows inside are unchanged.

    Notes
    -----
    The Euclidean projection soft-thresholds ``|x|`` at the ``theta`` solving
    ``sum_j max(|x_j| - theta, 0) = 1``. Michelot's fixed-point iteration
    ``theta <- (sum_(|x_j| > theta) |x_j| - 1) / #{|x_j| > theta}`` increases
    monotonically to it from below and needs no sort; after a few iterations any row
    still (slightly) outside the ball is scaled onto it, so every returned row is
    feasible. Used in the optimizer only: the verifier normalizes witnesses itself.
    """
    a = X.abs()
    n = a.sum(-1, keepdim=True)
    theta = ((n - 1.0) / X.shape[-1]).clamp_min(0.0)
    for _ in range(iters):
        above = a > theta
        cnt = above.sum(-1, keepdim=True).clamp_min(1)
        theta = (((a * above).sum(-1, keepdim=True) - 1.0) / cnt).clamp_min(0.0)
    P = torch.sign(X) * (a - theta).clamp_min(0.0)
    P = P / P.abs().sum(-1, keepdim=True).clamp_min(1.0)
    return torch.where(n <= 1.0, X, P)


def refine_lower(
    A: torch.Tensor,
    R0: torch.Tensor,
    Y0: torch.Tensor,
    sizes: torch.Tensor,
    targets: torch.Tensor,
    *,
    steps: torch.Tensor,
    lr: float = 0.02,
    check: int = 10,
    give_up: float = 0.7,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected ascent on the diagonal-dominance margin over signed ``R`` and ``Y``.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    R0 : tensor ``[P, N, K]``, Y0 : tensor ``[P, K, M]``
        Starting witnesses; entries beyond each problem's size are zeroed.
    sizes : int tensor ``[P]``
    targets : tensor ``[P]``
        The margin each problem must exceed. A problem leaves the batch once its margin
        is above ``1.02 * target``, or, past 30% of its steps, when it is still below
        ``(1 - give_up * (1 - progress)) * target``.
    steps : int tensor ``[P]``
        Step budget of each problem.

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
    matters: the useful test functions are differences of key groups (METHOD.md
    section 7).
    """
    P, M, N = A.shape
    K = R0.shape[-1]
    kp = torch.arange(K)[None, :] < sizes[:, None]  # [P, K]
    cm = kp.to(A.dtype)
    R = project_rows_l1(R0 * cm[:, None, :])
    Y = project_rows_l1(Y0) * cm[:, :, None]
    off = 1.0 - torch.eye(K, dtype=A.dtype)
    best_R, best_Y = R.clone(), Y.clone()
    best = torch.full((P,), -float("inf"), dtype=A.dtype)
    mR, vR, mY, vY = (torch.zeros_like(t) for t in (R, R, Y, Y))
    idx = torch.arange(P)
    Aa, Ta = A, targets.to(A.dtype)
    Sa = torch.as_tensor(steps).expand(P).to(A.dtype)
    total = int(Sa.max())
    for step in range(total + 1):
        YA = Y @ Aa
        AR = Aa @ R
        G = YA @ R
        mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
        mg = mg.masked_fill(~kp, float("inf"))
        if step % check == 0 or step >= total:
            cur = mg.amin(-1)
            b = cur > best[idx]
            if bool(b.any()):
                best_R[idx[b]] = R[b]
                best_Y[idx[b]] = Y[b]
                best[idx[b]] = cur[b]
            cb = best[idx]
            prog = step / Sa
            hopeless = (prog > 0.3) & (cb < (1 - give_up * (1 - prog)) * Ta)
            keep = ~((cb > 1.02 * Ta) | hopeless | (step >= Sa))
            if not bool(keep.any()):
                break
            if not bool(keep.all()):
                R, Y, mR, vR, mY, vY, Aa, cm, kp, Ta, Sa, idx, YA, AR, G, mg = (
                    t[keep] for t in (R, Y, mR, vR, mY, vY, Aa, cm, kp, Ta, Sa, idx, YA, AR, G, mg)
                )
        frac = step_fraction(step, Sa)
        beta = (30.0 + 970.0 * frac)[:, None]
        w = torch.softmax(-beta * mg.masked_fill(~kp, 1e3), -1)  # [p, K]
        dG = w[..., None] * (1.0 - off - off * torch.sign(G))
        lr_t = cosine_lr(lr, frac, 0.1)
        adam_step(Y, -(dG @ AR.transpose(-1, -2)), mY, vY, step + 1, lr_t)  # ascent
        adam_step(R, -(YA.transpose(-1, -2) @ dG), mR, vR, step + 1, lr_t)
        R = project_rows_l1(R * cm[:, None, :])
        Y = project_rows_l1(Y) * cm[:, :, None]
    return best_R, best_Y, best
