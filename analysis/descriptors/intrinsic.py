"""Intrinsic geometry block: gauge-invariant descriptors of the interaction ``C = P_M S P_N``.

Everything here depends on Q and K only through the full logits ``S = scale * Q K^T``
(plus the model's additive bias where it has one, e.g. MPNet's relative-position bias),
so any gauge ``(Q G, K G^-T)`` leaves it unchanged (up to floating-point rounding of S).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.descriptors.kappa import DEFAULT_MAX_ITER, DEFAULT_TOL, KappaResult, factor_radius
from analysis.descriptors.registry import Cell, descriptor
from analysis.validation import ParameterError

#: Relative gap at which the block's factor-radius solves stop. Pi moves by at most this
#: relative amount when kappa does (``log2(1 + x)`` has elasticity below 1), r* can change
#: only between ranks whose profile values tie to it, and the covariates enter a regression
#: on log brackets whose widths are tens of percent: 1e-4 is far below anything the models
#: can see. The solver's own default (5e-7) stays the stated tolerance of
#: :func:`intrinsic_profile` and of ``factor_radius``; at 5e-7 the block spent three
#: quarters of the four-family study's descriptor time in solves that creep from a gap of
#: 1e-5 towards it (docs/results/families-study.md, "Amendment 1").
KAPPA_TOL = 1e-4

#: Dual iterations every usable rank gets before the ranks that cannot attain Pi in any
#: cell are pruned (see :func:`intrinsic_profile`).
SCREEN_ITER = 20

#: Singular values of C at or below RANK_RTOL * sigma_1 (or below 1e3 * machine eps * ||S||_F)
#: count as zero for ``rank C``. Loose enough that rounding noise in S (even after a gauge with
#: cond(G) = 1e4) is not counted.
RANK_RTOL = 1e-9


def double_center(S: np.ndarray) -> np.ndarray:
    """``C = P_M S P_N`` with ``P_n = I - 11^T / n``.

    Parameters
    ----------
    S : array ``[M, N]``

    Returns
    -------
    numpy.ndarray ``[M, N]``: S minus row means, column means, plus the grand mean.
    """
    S = np.asarray(S, dtype=np.float64)
    return S - S.mean(0, keepdims=True) - S.mean(1, keepdims=True) + S.mean()


def projective_residual(R: np.ndarray, mask: np.ndarray | None = None) -> float:
    """``q(R) = max_i (max_{j in Omega_i} R_ij - min_{j in Omega_i} R_ij)``.

    Parameters
    ----------
    R : array ``[M, N]``
    mask : bool array ``[M, N]`` or None
        True where key j is allowed for query i (None: all allowed).
    """
    if mask is None:
        return float((R.max(1) - R.min(1)).max())
    hi = np.where(mask, R, -np.inf).max(1)
    lo = np.where(mask, R, np.inf).min(1)
    return float((hi - lo).max())


def residual_error(q: float | np.ndarray, t: float = 1.0) -> float | np.ndarray:
    """``tau = 2 tanh(q / (4 t))``: the sharp bound on ``max_i ||A_i - A~_i||_1``."""
    return 2.0 * np.tanh(np.asarray(q, dtype=np.float64) / (4.0 * t))


@dataclass
class IntrinsicProfile:
    """Per-matrix (t = 1) intrinsic quantities, shared by every (temperature, eps) cell.

    Attributes
    ----------
    d : int
        Head dimension. Per-r columns are written for r = 1 .. max(d, R).
    rank_C : int
    sigma : numpy.ndarray ``[R]``
        Singular values of C: ``R = min(d, rank C)`` for logits ``scale Q K^T`` (whose
        rank is at most d), ``R = rank C`` when a bias is added (it can exceed d).
    q : numpy.ndarray ``[R]``
        ``q(C - T_r)`` for r = 1 .. R over each row's allowed keys.
    kappa : dict[int, KappaResult]
        ``kappa(T_r)`` for the r some cell of the grid can use.
    """

    d: int
    rank_C: int
    sigma: np.ndarray
    q: np.ndarray
    kappa: dict[int, KappaResult]

    @property
    def n_columns(self) -> int:
        """How many per-r columns (``<name>_r1`` ..) the block writes: ``max(d, R)``."""
        return max(self.d, int(self.q.size))


def intrinsic_profile(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    mask: np.ndarray | None,
    *,
    cells: Sequence[tuple[float, float]],
    bias: np.ndarray | None = None,
    tol: float = DEFAULT_TOL,
    prune: bool = True,
) -> IntrinsicProfile:
    """SVD of C, q(C - T_r) for every r, and kappa(T_r) for the r any cell can use.

    Parameters
    ----------
    Q, K : array ``[L, d]``
    scale : float
    mask : bool ``[L, L]`` or None
    cells : sequence of (t, eps), keyword-only
        The grid's cells. Only r with ``2 tanh(q(C - T_r) / (4 t_max)) < eps_max`` (the
        grid's largest temperature and eps) need kappa.
    bias : array ``[L, L]`` or None, keyword-only
        The model's additive logit term; the interaction is then that of the full logits.
    tol : float, keyword-only
        Passed to :func:`analysis.descriptors.kappa.factor_radius` (with its default
        iteration cap).
    prune : bool, default True, keyword-only
        Screen every usable rank first (:data:`SCREEN_ITER` dual iterations); a rank
        whose certified lower bound shows that it cannot attain ``Pi`` in any cell (its
        profile value would exceed another rank's attained one wherever it is usable) is
        not solved on and is left out of ``kappa`` (its per-r diagnostics are NaN); the
        others resume their screen, most promising first, and stop early once ruled out.
        ``Pi``, ``r*`` and ``kappa*`` are the same floats as with ``prune=False`` (every
        usable rank solved; a resumed solve follows an uninterrupted one).

    Notes
    -----
    ``S = scale Q K^T (+ bias)`` in float64 at t = 1, ``C = P_M S P_N = U diag(sigma) V^T``,
    ``T_r = U_r diag(sigma_r) V_r^T`` (unrefined truncated SVD), factored for kappa as
    ``(U_r sigma_r^1/2, V_r sigma_r^1/2)``; kappa is invariant to that choice. At
    ``r = rank C``, ``T_r = C`` and q is set to exactly 0 (the computed residual is rounding
    noise, which would otherwise differ between gauges). r runs to ``min(d, rank C)``
    without a bias (``rank C <= d`` then) and to ``rank C`` with one: a bias is not of
    the ``Q K^T`` form, so the full logits can have any rank up to ``min(M, N)``.
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    d = Q.shape[1]
    S = float(scale) * (Q @ K.T)
    if bias is not None:
        S = S + np.asarray(bias, dtype=np.float64)
    C = double_center(S)
    U, sv, Vt = np.linalg.svd(C, full_matrices=False)
    # Zero below RANK_RTOL * sigma_1, and below rounding level of S itself (C = 0 exactly
    # when S has only row and column terms, but its computed SVD is noise).
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
    if not prune:
        for r in usable:
            kappa[r] = factor_radius(*factors[r], tol=tol, max_iter=max_iter)
        return IntrinsicProfile(d=d, rank_C=rank_C, sigma=sv[:R].copy(), q=q, kappa=kappa)
    # Screen: a few dual iterations give every usable rank a certified lower bound (within
    # about 2e-4 of kappa on real heads) and an attained value, hence an upper bound on Pi
    # in every cell; only ranks whose lower profile bound can still reach it are solved on.
    screen = {
        r: factor_radius(*factors[r], tol=tol, max_iter=min(SCREEN_ITER, max_iter)) for r in usable
    }
    # Attained profile values per rank and cell: an upper bound on Pi in every cell. A rank
    # is compared with the others only (its own value would prune it by rounding).
    attained = {r: _profile_values(r, q[r - 1], screen[r].value, grid) for r in usable}

    def others(r: int) -> np.ndarray:
        return np.min([f for s, f in attained.items() if s != r] or [np.full(len(grid), np.inf)], 0)

    # Most promising first, so that the thresholds are tight for the others.
    order = sorted(
        usable, key=lambda r: np.min(_profile_values(r, q[r - 1], screen[r].lower, grid))
    )
    for r in order:
        stop = _prune_threshold(r, q[r - 1], grid, others(r))
        if stop is not None and screen[r].lower > stop:
            del attained[r]
            continue
        # Resuming follows the iterates of one uninterrupted solve: the screen costs nothing.
        res = factor_radius(
            *factors[r], tol=tol, max_iter=max_iter, stop_above=stop, resume=screen[r]
        )
        if res.pruned:
            del attained[r]
            continue
        kappa[r] = res
        attained[r] = _profile_values(r, q[r - 1], res.value, grid)
    return IntrinsicProfile(d=d, rank_C=rank_C, sigma=sv[:R].copy(), q=q, kappa=kappa)


def _profile_values(
    r: int, q: float, kappa: float, grid: Sequence[tuple[float, float]]
) -> np.ndarray:
    """``(r/2) log2(1 + kappa / (t (eps - tau)^2))`` per cell (inf where ``tau >= eps``)."""
    out = np.full(len(grid), np.inf)
    for i, (t, e) in enumerate(grid):
        tau = residual_error(q, t)
        if tau < e:
            out[i] = 0.5 * r * np.log2(1.0 + kappa / t / (e - tau) ** 2)
    return out


def _prune_threshold(
    r: int, q: float, grid: Sequence[tuple[float, float]], best: np.ndarray
) -> float | None:
    """A kappa(T_r) above which rank r cannot attain Pi in any cell, or None.

    Notes
    -----
    In cell (t, eps) with ``tau = 2 tanh(q / (4t)) < eps`` the profile value is
    ``f = (r/2) log2(1 + kappa / (t (eps - tau)^2))``, increasing in kappa. If
    ``kappa > t (eps - tau)^2 (2^(2 b / r) - 1)``, with b the smallest value attained in
    that cell by another rank, then f > b there, so r is not a minimizer. The threshold is
    the largest such bound over the cells where r is usable, raised by a relative 1e-9 so
    that rounding in b never prunes a tie; None (no pruning) while some such cell has no
    value yet.
    """
    out = -np.inf
    for (t, e), b in zip(grid, best, strict=True):
        tau = residual_error(q, t)
        if tau >= e:
            continue
        if not np.isfinite(b):
            return None
        out = max(out, t * (e - tau) ** 2 * np.expm1(2.0 * b / r * np.log(2.0)))
    return None if out == -np.inf else float(out) * (1.0 + 1e-9)


PER_R = ("sigma", "q", "tau", "kappa", "kappa_lower", "kappa_gap", "profile")


@descriptor(
    "intrinsic",
    needs=("Q", "K", "scale", "mask", "bias"),
    diagnostics=tuple(f"{name}_r*" for name in PER_R)
    + ("rank_C", "kappa_star", "kappa_gap_star", "tau_star"),
    integers=("r_star", "interaction_dim", "rank_C"),
)
def intrinsic(cell: Cell) -> dict[str, float]:
    """Pi_eps, its argmin r*, the interaction dimension, and per-r diagnostics.

    Notes
    -----
    At temperature t (docs/guide/conventions.md, "Descriptors"), for r = 1 .. min(d, rank C):
    ``q_r = q(C - T_r) / t``, ``tau_r = 2 tanh(q(C - T_r) / (4t))``,
    ``kappa_r = kappa(T_r) / t`` (attained value from the solver's P, within relative
    :data:`KAPPA_TOL` of kappa unless its gap column says otherwise), and where
    ``tau_r < eps`` the profile value ``(r/2) log2(1 + kappa_r / (eps - tau_r)^2)``.
    ``Pi = min_r profile_r``, ``r_star`` its smallest minimizer, ``interaction_dim`` the
    smallest r with ``tau_r < eps``. Per-r columns ``<name>_r<r>`` (r = 1 .. d; NaN where
    r > rank C, and for the kappa columns where no cell of the grid uses that r or where r
    was pruned as provably unable to attain Pi in any cell of the grid) are diagnostics. If C = 0 (rank 0), ``Pi = r_star = interaction_dim = 0``: T = 0 is exact
    (tau = 0) and the r = 0 profile value is 0.

    With an additive logit bias (``cell.bias``, e.g. MPNet's relative-position bias) C is
    the interaction of the full logits ``scale Q K^T + bias``, r runs to ``rank C`` (which
    can exceed d) and the per-r columns to ``max(d, rank C)``.
    """
    mat = cell.matrix
    prof: IntrinsicProfile = cell.cached(
        "intrinsic",
        lambda: intrinsic_profile(
            mat.Q,
            mat.K,
            mat.scale,
            mat.mask,
            cells=[(t, e) for t in mat.temperatures for e in mat.eps_grid],
            bias=mat.bias,
            tol=KAPPA_TOL,
        ),
    )
    t, eps = cell.temperature, cell.eps
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
        out.update(
            Pi=np.nan,
            r_star=np.nan,
            interaction_dim=np.nan,
            kappa_star=np.nan,
            kappa_gap_star=np.nan,
            tau_star=np.nan,
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
