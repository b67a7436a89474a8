"""Intrinsic geometry block, version 3: version 2's solver, ranks solved best first.

Version 2 (:mod:`analysis.descriptors.intrinsic2`) screens every usable rank (20 dual
iterations for the top rank, 6 for each next one) before it finishes any; on heads whose
interaction has full rank (a position bias: r up to N - 1) most of its time goes to
screening ranks that are then pruned. Version 3 skips the screen: it bounds every usable
rank's kappa from below by what costs nothing or one dual evaluation (``max |T_r|``, and
the dual value of weights that another rank's solve reached), finishes the rank whose
lower-bounded profile is smallest, prunes each rank whose lower bound is certified above
what the finished ranks attain, and repeats. Same pruning rule, same certificate, same
solver (:func:`~analysis.descriptors.kappa_fast.factor_radius_fast`), so ``Pi_eps``,
``r*`` and the interaction dimension are version 1's and 2's within the solves'
certified gaps; which of the non-minimizing ranks get a finished kappa (the per-r
``kappa_r*`` diagnostics; NaN for a pruned rank) may differ, hence a new version. A
design selects it with ``[descriptors] versions = {intrinsic = 3}``; its block is still
called ``intrinsic`` and its columns ``intrinsic__*``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.descriptors.intrinsic import (
    KAPPA_TOL,
    PER_R,
    RANK_RTOL,
    IntrinsicProfile,
    _profile_values,
    _prune_threshold,
    double_center,
    projective_residual,
    residual_error,
)
from analysis.descriptors.intrinsic2 import profile_columns
from analysis.descriptors.kappa import DEFAULT_MAX_ITER, KappaResult, _dual_lower
from analysis.descriptors.kappa_fast import factor_radius_weights
from analysis.descriptors.registry import Cell, descriptor
from analysis.validation import ParameterError

__all__ = ["START_BLEND", "intrinsic_profile_v3", "intrinsic_v3"]


#: A solve started from another rank's dual weights starts from this blend of them with
#: uniform weights (the finished weights sit on a few rows; rows the new rank needs
#: would take the ascent many iterations to revive from zero).
START_BLEND = 0.9


def _log_start(w: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Log-weights for ``factor_radius_fast(start=...)``: ``w`` blended with uniform."""
    out = []
    for x in w:
        x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
        x = x / x.sum()
        out.append(np.log(START_BLEND * x + (1.0 - START_BLEND) / x.size))
    return out[0], out[1]


def intrinsic_profile_v3(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    mask: np.ndarray | None,
    *,
    cells: Sequence[tuple[float, float]],
    bias: np.ndarray | None = None,
    tol: float = KAPPA_TOL,
) -> IntrinsicProfile:
    """Version 1's intrinsic profile, ranks solved best first (no screen).

    Parameters
    ----------
    Q, K : array ``[L, d]``
    scale : float
    mask : bool ``[L, L]`` or None
    cells : sequence of (t, eps), keyword-only
    bias : array ``[L, L]`` or None, keyword-only
    tol : float, keyword-only
        Relative gap at which each solve stops (default :data:`KAPPA_TOL`).

    Returns
    -------
    IntrinsicProfile

    Notes
    -----
    Same S, C, SVD, rank, residuals q and usable ranks as versions 1 and 2, by the same
    expressions (so ``sigma``, ``q``, ``rank_C`` are the same floats). Each usable rank r
    starts with the lower bound ``kappa(T_r) >= max_ij |T_r,ij|`` (``T_r`` built up one
    singular component at a time). Then, until no rank is open: every open rank whose
    lower bound exceeds version 1's pruning threshold (:func:`~analysis.descriptors.
    intrinsic._prune_threshold`, from the values the finished ranks attain) is pruned;
    an open rank not pruned so gets, once, the dual lower bound of the best weights the
    latest finished solve reached (one evaluation, certified like every dual bound) and
    is tested again; of the ranks still open, the one with the smallest lower-bounded
    profile is solved (started from the nearest finished rank's weights, stopping early
    once certified above its threshold: pruned) to the relative gap ``tol``. Every rank
    not pruned is finished, and every pruning is certified, so the minimizer and Pi are
    version 1's within the solves' gaps.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.intrinsic import intrinsic_profile
    >>> from analysis.descriptors.intrinsic3 import intrinsic_profile_v3
    >>> rng = np.random.default_rng(1)
    >>> Q, K = rng.normal(size=(24, 4)), rng.normal(size=(24, 4))
    >>> cells = [(1.0, 0.1), (1.0, 0.2)]
    >>> one = intrinsic_profile(Q, K, 0.5, None, cells=cells, tol=1e-4)
    >>> three = intrinsic_profile_v3(Q, K, 0.5, None, cells=cells)
    >>> bool(np.array_equal(one.q, three.q))
    True
    >>> all(abs(three.kappa[r].value / one.kappa[r].value - 1) <= 2e-4
    ...     for r in set(one.kappa) & set(three.kappa))
    True
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    d = Q.shape[1]
    S = float(scale) * (Q @ K.T)
    if bias is not None:
        S = S + np.asarray(bias, dtype=np.float64)
    C = double_center(S)
    U, sv, Vt = np.linalg.svd(C, full_matrices=False)
    noise = 1e3 * np.finfo(np.float64).eps * np.linalg.norm(S)
    rank_C = int(np.count_nonzero(sv > max(RANK_RTOL * sv[0], noise))) if sv.size else 0
    R = min(d, rank_C) if bias is None else rank_C
    m = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), C.shape)
    res = C.copy()
    q = np.empty(R)
    for r in range(1, R + 1):
        if r == rank_C:
            q[r - 1] = 0.0  # T_(rank C) = C exactly; the computed residual is rounding noise
            break
        res -= sv[r - 1] * np.outer(U[:, r - 1], Vt[r - 1])
        q[r - 1] = projective_residual(res, m)
    grid = [(float(t), float(e)) for t, e in cells]
    if not grid:
        raise ParameterError("cells", "at least one (temperature, eps) cell", cells)
    t_max, eps_max = max(t for t, _ in grid), max(e for _, e in grid)
    usable = [r for r in range(1, R + 1) if residual_error(q[r - 1], t_max) < eps_max]
    kappa: dict[int, KappaResult] = {}
    if not usable:
        return IntrinsicProfile(d=d, rank_C=rank_C, sigma=sv[:R].copy(), q=q, kappa=kappa)

    def factors(r: int) -> tuple[np.ndarray, np.ndarray]:
        return U[:, :r] * np.sqrt(sv[:r]), Vt[:r].T * np.sqrt(sv[:r])

    # kappa(T) >= max |T_ij| (a rank-one gauge-free bound, the solver's own floor)
    lower: dict[int, float] = {}
    T = np.zeros_like(C)
    top = max(usable)
    for r in range(1, top + 1):
        T += sv[r - 1] * np.outer(U[:, r - 1], Vt[r - 1])
        if r in usable:
            lower[r] = float(np.abs(T).max())
    attained: dict[int, np.ndarray] = {}
    weights: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    open_ranks = set(usable)
    tried: dict[int, int] = {}  # rank -> the finished rank whose weights bounded it

    def others(r: int) -> np.ndarray:
        vals = [f for s, f in attained.items() if s != r]
        return np.min(vals, 0) if vals else np.full(len(grid), np.inf)

    def nearest(r: int) -> int | None:
        return min(weights, key=lambda s: (abs(s - r), -s)) if weights else None

    def priority(r: int) -> tuple[int, float]:
        # a cell no finished rank is usable in comes first (its smallest lower-bounded
        # profile); then the rank whose lower-bounded profile is furthest below the best
        # value attained in some cell
        lp = _profile_values(r, q[r - 1], lower[r], grid)
        best = others(0)
        empty = ~np.isfinite(best) & np.isfinite(lp)
        if empty.any():
            return 0, float(lp[empty].min())
        with np.errstate(invalid="ignore"):
            return 1, float(np.nanmin(lp / best))

    while open_ranks:
        for r in sorted(open_ranks):
            stop = _prune_threshold(r, q[r - 1], grid, others(r))
            if stop is None:
                continue
            near = nearest(r)
            if lower[r] <= stop and near is not None and tried.get(r) != near:
                tried[r] = near
                lower[r] = max(lower[r], _dual_lower(*factors(r), *weights[near]))
            if lower[r] > stop:
                open_ranks.discard(r)
        if not open_ranks:
            break
        r = min(sorted(open_ranks), key=priority)
        stop = _prune_threshold(r, q[r - 1], grid, others(r))
        near = nearest(r)
        start = None if near is None else _log_start(weights[near])
        out, w = factor_radius_weights(
            *factors(r), tol=tol, max_iter=DEFAULT_MAX_ITER, stop_above=stop, start=start
        )
        open_ranks.discard(r)
        if w is not None:
            weights[r] = w
        if out.pruned:
            continue
        kappa[r] = out
        attained[r] = _profile_values(r, q[r - 1], out.value, grid)
    return IntrinsicProfile(d=d, rank_C=rank_C, sigma=sv[:R].copy(), q=q, kappa=kappa)


@descriptor(
    "intrinsic",
    needs=("Q", "K", "scale", "mask", "bias"),
    diagnostics=tuple(f"{name}_r*" for name in PER_R)
    + ("rank_C", "kappa_star", "kappa_gap_star", "tau_star"),
    integers=("r_star", "interaction_dim", "rank_C"),
)
def intrinsic_v3(cell: Cell) -> dict[str, float]:
    """Version 1's columns (Pi_eps, r*, interaction dimension, per-r diagnostics), faster.

    Notes
    -----
    The features and their definitions are those of
    :func:`analysis.descriptors.intrinsic.intrinsic`; the profile is
    :func:`intrinsic_profile_v3`'s (ranks solved best first, kappa by the fast solver,
    certified to the same relative gap), computed once per matrix and shared by its
    cells. Which non-minimizing ranks are finished may differ from versions 1 and 2, so
    the per-r ``kappa_r*`` diagnostics may be NaN (pruned) where theirs are not.
    """
    mat = cell.matrix
    prof: IntrinsicProfile = cell.cached(
        "intrinsic_v3",
        lambda: intrinsic_profile_v3(
            mat.Q,
            mat.K,
            mat.scale,
            mat.mask,
            cells=[(t, e) for t in mat.temperatures for e in mat.eps_grid],
            bias=mat.bias,
        ),
    )
    return profile_columns(prof, cell.temperature, cell.eps)
