"""Intrinsic geometry block, version 2: version 1's features from a faster factor-radius solve.

Version 1 (:mod:`analysis.descriptors.intrinsic`, kept byte for byte: locked designs pin
its version) spends most of a matrix's descriptor time in the kappa solve at the
minimizing rank, which runs to the 3000-iteration cap where the dual optimum sits on a few
rows. Version 2 prunes ranks by version 1's rule, with
:func:`analysis.descriptors.kappa_fast.factor_radius_fast` in place of
``factor_radius`` (one eigendecomposition per dual iteration, and an L-BFGS polish of the
primal gauge where the ascent stalls), and screens the ranks from the top down, each
from its neighbour's dual weights. Every kappa is still certified
(attained value and dual lower bound recomputed in float64, stopping at the relative gap
:data:`~analysis.descriptors.intrinsic.KAPPA_TOL`), so the features agree with version 1's
to the solves' certified gaps. A design selects it with ``[descriptors] versions =
{intrinsic = 2}``; its block is still called ``intrinsic`` and its columns
``intrinsic__*``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.descriptors.intrinsic import (
    KAPPA_TOL,
    PER_R,
    RANK_RTOL,
    SCREEN_ITER,
    IntrinsicProfile,
    _profile_values,
    _prune_threshold,
    double_center,
    projective_residual,
    residual_error,
)
from analysis.descriptors.kappa import DEFAULT_MAX_ITER, KappaResult
from analysis.descriptors.kappa_fast import factor_radius_fast, start_weights
from analysis.descriptors.registry import Cell, descriptor
from analysis.validation import ParameterError

__all__ = ["WARM_SCREEN_ITER", "intrinsic_profile_v2", "intrinsic_v2"]

#: Screen iterations of a rank started from its upper neighbour's weights.
WARM_SCREEN_ITER = 6


def intrinsic_profile_v2(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    mask: np.ndarray | None,
    *,
    cells: Sequence[tuple[float, float]],
    bias: np.ndarray | None = None,
    tol: float = KAPPA_TOL,
) -> IntrinsicProfile:
    """Version 1's :func:`~analysis.descriptors.intrinsic.intrinsic_profile` (with rank
    screening) on the fast solver.

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
    Same S, C, SVD, rank, residuals q and usable ranks as version 1, computed by the same
    expressions (so ``sigma``, ``q``, ``rank_C`` are the same floats). The screen runs
    from the largest usable rank down: the first for :data:`SCREEN_ITER` iterations from
    uniform weights, each next one for :data:`WARM_SCREEN_ITER` from the log-weights its
    upper neighbour reached. The pruning thresholds and the order of the finishing solves
    are version 1's (a pruned rank is certified not to attain Pi), each solve
    :func:`~analysis.descriptors.kappa_fast.factor_radius_fast`.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.intrinsic import intrinsic_profile
    >>> from analysis.descriptors.intrinsic2 import intrinsic_profile_v2
    >>> rng = np.random.default_rng(1)
    >>> Q, K = rng.normal(size=(24, 4)), rng.normal(size=(24, 4))
    >>> cells = [(1.0, 0.1), (1.0, 0.2)]
    >>> one = intrinsic_profile(Q, K, 0.5, None, cells=cells, tol=1e-4)
    >>> two = intrinsic_profile_v2(Q, K, 0.5, None, cells=cells)
    >>> bool(np.array_equal(one.q, two.q)), sorted(one.kappa) == sorted(two.kappa)
    (True, True)
    >>> all(abs(two.kappa[r].value / one.kappa[r].value - 1) <= 1e-4 for r in one.kappa)
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
    factors = {r: (U[:, :r] * np.sqrt(sv[:r]), Vt[:r].T * np.sqrt(sv[:r])) for r in usable}
    kappa: dict[int, KappaResult] = {}
    max_iter = DEFAULT_MAX_ITER
    # Screen from the top rank down, each rank after the first starting from the weights
    # its neighbour's screen reached (the dual weights live on the rows, whatever r is):
    # WARM_SCREEN_ITER iterations then give bounds as tight as SCREEN_ITER from uniform.
    screen: dict[int, KappaResult] = {}
    prev: KappaResult | None = None
    for r in sorted(usable, reverse=True):
        if prev is not None and prev.state is not None:
            screen[r] = factor_radius_fast(
                *factors[r], tol=tol, max_iter=WARM_SCREEN_ITER, start=start_weights(prev)
            )
        else:
            screen[r] = factor_radius_fast(*factors[r], tol=tol, max_iter=SCREEN_ITER)
        prev = screen[r]
    attained = {r: _profile_values(r, q[r - 1], screen[r].value, grid) for r in usable}

    def others(r: int) -> np.ndarray:
        return np.min([f for s, f in attained.items() if s != r] or [np.full(len(grid), np.inf)], 0)

    order = sorted(
        usable, key=lambda r: np.min(_profile_values(r, q[r - 1], screen[r].lower, grid))
    )
    for r in order:
        stop = _prune_threshold(r, q[r - 1], grid, others(r))
        if stop is not None and screen[r].lower > stop:
            del attained[r]
            continue
        out = factor_radius_fast(
            *factors[r], tol=tol, max_iter=max_iter, stop_above=stop, resume=screen[r]
        )
        if out.pruned:
            del attained[r]
            continue
        kappa[r] = out
        attained[r] = _profile_values(r, q[r - 1], out.value, grid)
    return IntrinsicProfile(d=d, rank_C=rank_C, sigma=sv[:R].copy(), q=q, kappa=kappa)


def profile_columns(prof: IntrinsicProfile, t: float, eps: float) -> dict[str, float]:
    """The block's columns in cell (t, eps) from a profile: version 1's formulas."""
    R = prof.q.size
    tau = residual_error(prof.q, t) if R else np.empty(0)
    cols = {name: np.full(prof.n_columns, np.nan) for name in PER_R}
    cols["sigma"][:R] = prof.sigma / t
    cols["q"][:R] = prof.q / t
    cols["tau"][:R] = tau
    for r, res in prof.kappa.items():
        cols["kappa"][r - 1] = res.value / t
        cols["kappa_lower"][r - 1] = res.lower / t
        cols["kappa_gap"][r - 1] = res.gap
    ok = np.flatnonzero(tau < eps) + 1
    for r in ok:
        cols["profile"][r - 1] = (
            0.5 * r * np.log2(1.0 + cols["kappa"][r - 1] / (eps - tau[r - 1]) ** 2)
        )
    out: dict[str, float] = {"rank_C": prof.rank_C}
    if R == 0:
        out.update(
            Pi=0.0, r_star=0, interaction_dim=0, kappa_star=0.0, kappa_gap_star=0.0, tau_star=0.0
        )
    elif ok.size == 0:
        nan = float("nan")
        out.update(
            Pi=nan,
            r_star=nan,
            interaction_dim=nan,
            kappa_star=nan,
            kappa_gap_star=nan,
            tau_star=nan,
        )
    else:
        vals = cols["profile"][ok - 1]  # NaN for pruned ranks (never the minimizer)
        r_star = int(ok[int(np.nanargmin(vals))])  # the first (smallest r) minimizer
        out.update(
            Pi=float(np.nanmin(vals)),
            r_star=r_star,
            interaction_dim=int(ok[0]),
            kappa_star=cols["kappa"][r_star - 1],
            kappa_gap_star=cols["kappa_gap"][r_star - 1],
            tau_star=cols["tau"][r_star - 1],
        )
    for name in PER_R:
        out.update({f"{name}_r{r}": float(v) for r, v in enumerate(cols[name], start=1)})
    return out


@descriptor(
    "intrinsic",
    needs=("Q", "K", "scale", "mask", "bias"),
    diagnostics=tuple(f"{name}_r*" for name in PER_R)
    + ("rank_C", "kappa_star", "kappa_gap_star", "tau_star"),
    integers=("r_star", "interaction_dim", "rank_C"),
)
def intrinsic_v2(cell: Cell) -> dict[str, float]:
    """Version 1's columns (Pi_eps, r*, interaction dimension, per-r diagnostics), faster.

    Notes
    -----
    The features and their definitions are those of
    :func:`analysis.descriptors.intrinsic.intrinsic`; the profile is
    :func:`intrinsic_profile_v2`'s (kappa by the fast solver, certified to the same
    relative gap), computed once per matrix and shared by its cells.
    """
    mat = cell.matrix
    prof: IntrinsicProfile = cell.cached(
        "intrinsic_v2",
        lambda: intrinsic_profile_v2(
            mat.Q,
            mat.K,
            mat.scale,
            mat.mask,
            cells=[(t, e) for t in mat.temperatures for e in mat.eps_grid],
            bias=mat.bias,
        ),
    )
    return profile_columns(prof, cell.temperature, cell.eps)
