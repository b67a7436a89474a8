"""Lower witnesses ``(R, Y)``: test spaces on which ``A`` is diagonally dominant.

Theorem (METHOD.md section 3): with rows of ``R`` ``[N, m]`` and ``Y`` ``[m, M]`` in the l1
unit ball and ``G = Y A R``, ``min_p (G_pp - sum_(q != p) |G_pq|) > eps`` implies
``r_eps(A) >= m``. Functions here propose candidates; the verifier certifies them.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.cluster.hierarchy import linkage


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


def margin_computed(A: np.ndarray, R: np.ndarray, Y: np.ndarray) -> float:
    """Plain float64 margin of ``Y A R`` after normalizing (for ranking, not certifying)."""
    G = Y @ A @ R
    d = np.diag(G)
    off = np.abs(G).sum(1) - np.abs(d)
    norm = np.abs(Y).sum(1) * np.abs(R).sum(1).max()
    return float(((d - off) / np.maximum(norm, 1e-300)).min())


def project_rows_l1(X: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row (last axis) onto the unit l1 ball.

    Notes
    -----
    Duchi et al. (2008), sort-based; batched over all leading axes. Rows already inside
    the ball are unchanged.
    """
    a = X.abs()
    inside = a.sum(-1, keepdim=True) <= 1.0
    s, _ = torch.sort(a, dim=-1, descending=True)
    cs = s.cumsum(-1) - 1.0
    idx = torch.arange(1, X.shape[-1] + 1, dtype=X.dtype)
    cond = s - cs / idx > 0
    rho = cond.to(X.dtype).cumsum(-1).argmax(-1, keepdim=True)  # last True index
    theta = cs.gather(-1, rho) / (rho + 1).to(X.dtype)
    P = torch.sign(X) * (a - theta).clamp_min(0.0)
    return torch.where(inside, X, P)


def refine_lower(
    A: torch.Tensor,
    R0: torch.Tensor,
    Y0: torch.Tensor,
    sizes: torch.Tensor,
    *,
    steps: int = 200,
    lr: float = 0.02,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected ascent on the diagonal-dominance margin over signed ``R`` and ``Y``.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    R0 : tensor ``[P, N, K]``, Y0 : tensor ``[P, K, M]``
        Starting witnesses, zero-padded beyond each problem's size.
    sizes : int tensor ``[P]``

    Returns
    -------
    R, Y : best witnesses seen per problem (by computed margin), margin : tensor ``[P]``.

    Notes
    -----
    Maximizes a soft minimum over p of ``G_pp - sum_(q != p) |G_pq|``, ``G = Y A R``, with
    Adam steps followed by projection of every row of ``R`` and ``Y`` onto the l1 unit
    ball (so the computed margin is the normalized one). Signed ``R`` matters: the useful
    test functions are differences of key groups (METHOD.md section 7).
    """
    P, M, N = A.shape
    K = R0.shape[-1]
    keep = torch.arange(K)[None, :] < sizes[:, None]  # [P, K]
    cm = keep.to(A.dtype)
    R = (R0 * cm[:, None, :]).clone().requires_grad_(True)
    Y = (Y0 * cm[:, :, None]).clone().requires_grad_(True)
    eye = torch.eye(K, dtype=torch.bool)

    def margins(R, Y):
        G = Y @ A @ R
        d = torch.diagonal(G, dim1=-2, dim2=-1)
        off = G.abs().masked_fill(eye, 0.0).sum(-1)
        return (d - off).masked_fill(~keep, torch.inf)

    with torch.no_grad():
        best = margins(R, Y).amin(-1)
    bestR, bestY = R.detach().clone(), Y.detach().clone()
    opt = torch.optim.Adam([R, Y], lr=lr)
    for step in range(steps):
        frac = step / max(steps - 1, 1)
        beta = 30.0 + 970.0 * frac
        opt.zero_grad(set_to_none=True)
        mg = margins(R, Y)
        obj = -torch.logsumexp(-beta * mg.masked_fill(~keep, 1e3), -1) / beta
        (-obj.sum()).backward()
        opt.step()
        with torch.no_grad():
            R.copy_(project_rows_l1(R * cm[:, None, :]))
            Y.copy_(project_rows_l1(Y) * cm[:, :, None])
            if step % 10 == 9 or step == steps - 1:
                cur = margins(R, Y).amin(-1)
                better = cur > best
                bestR[better] = R[better]
                bestY[better] = Y[better]
                best = torch.maximum(best, cur)
    return bestR, bestY, best
