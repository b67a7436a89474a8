"""Baseline blocks: features of A and of the cell's design variables only.

``baseline`` is the primary (calibrated) baseline of docs/method.md section 4. ``baseline_plus``
holds the SVD-projection rank, which is one of the upper-witness constructions and hence
partly the outcome, so it stays out of the primary baseline (docs/method.md section 4).
"""

from __future__ import annotations

import numpy as np

from analysis.descriptors.registry import Cell, descriptor


def baseline_matrix(A: np.ndarray, mask: np.ndarray | None) -> dict[str, object]:
    """eps-independent baseline quantities of one ``[M, N]`` matrix."""
    M, N = A.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(A > 0, np.log(np.where(A > 0, A, 1.0)), 0.0)
    H = -(A * logs).sum(1) + 0.0  # + 0.0 turns -0.0 (one-hot rows) into 0.0
    n_allowed = np.full(M, N) if mask is None else np.broadcast_to(mask, A.shape).sum(1)
    wide = n_allowed >= 2
    Hn = H[wide] / np.log(n_allowed[wide]) if wide.any() else np.array([np.nan])
    sv = np.linalg.svd(A, compute_uv=False)
    return {
        "n_queries": float(M),
        "n_keys": float(N),
        "entropy_mean": float(H.mean()),
        "entropy_min": float(H.min()),
        "entropy_max": float(H.max()),
        "entropy_norm_mean": float(Hn.mean()),
        "max_col_mass": float(A.sum(0).max() / M),
        "stable_rank": float((sv**2).sum() / sv[0] ** 2) if sv[0] > 0 else np.nan,
        "sv": sv,
    }


@descriptor(
    "baseline",
    needs=("A", "mask"),
    log_scale=("n_queries", "n_keys", "temperature", "eps", "max_col_mass", "stable_rank"),
    integers=("n_queries", "n_keys", "svd_rank_l2"),
    calibrated=True,
)
def baseline(cell: Cell) -> dict[str, float]:
    """Design variables and spectrum/entropy summaries of A at the cell's temperature.

    Notes
    -----
    - ``n_keys`` = N, ``n_queries`` = M (log N enters downstream: ``log_scale``).
    - Row entropies ``H_i = -sum_j A_ij ln A_ij`` (nats): mean, min, max, and the mean of
      ``H_i / ln |Omega_i|`` over rows with at least two allowed keys.
    - ``max_col_mass = max_j sum_i A_ij / M`` (attention sinks).
    - ``stable_rank = ||A||_F^2 / ||A||_2^2``.
    - ``svd_rank_l2`` = smallest k with ``||A - A_k||_2 = sigma_(k+1) <= eps``
      (Eckart-Young; ``sigma_(N+1) = 0``).
    """
    t = cell.temperature
    base = cell.cached(("baseline", t), lambda: baseline_matrix(cell.A, cell.mask))
    sv = base["sv"]
    k = int(np.count_nonzero(sv > cell.eps))  # sv is sorted descending
    out = {k_: v for k_, v in base.items() if k_ != "sv"}
    out.update(temperature=t, eps=cell.eps, svd_rank_l2=k)
    return out


def svd_projection_errors(A: np.ndarray) -> np.ndarray:
    """``e_k = max_i ||A_i - (A V_k V_k^T)_i||_1`` for k = 0 .. N.

    Parameters
    ----------
    A : array ``[M, N]``

    Returns
    -------
    numpy.ndarray ``[N + 1]``; ``V_k`` = the top-k right singular vectors of A.
    """
    _, _, Vt = np.linalg.svd(A, full_matrices=False)
    E = A.copy()
    errs = [np.abs(E).sum(1).max()]
    for v in Vt:
        E -= np.outer(A @ v, v)
        errs.append(np.abs(E).sum(1).max())
    errs += [0.0] * (A.shape[1] + 1 - len(errs))  # rank-deficient tail: exact
    return np.asarray(errs[: A.shape[1] + 1])


@descriptor(
    "baseline_plus",
    needs=("A",),
    diagnostics=("svd_proj_error",),
    integers=("svd_proj_rank",),
    calibrated=True,
)
def baseline_plus(cell: Cell) -> dict[str, float]:
    """The cheap SVD-projection rank (a sensitivity block, outside the primary baseline).

    Notes
    -----
    ``svd_proj_rank`` = smallest k with ``max_i ||(A - A V_k V_k^T)_i||_1 <= eps``; the
    diagnostic ``svd_proj_error`` is that error. Not a certified bound (no rounding
    allowance): the bracket engine certifies; this is a covariate.
    """
    t = cell.temperature
    errs = cell.cached(("svd_proj", t), lambda: svd_projection_errors(cell.A))
    ok = np.flatnonzero(errs <= cell.eps)
    k = int(ok[0]) if ok.size else len(errs) - 1
    return {"svd_proj_rank": k, "svd_proj_error": float(errs[k])}
