"""Factor radius ``kappa(T)``, faster: the dual ascent of :mod:`analysis.descriptors.kappa`
with one eigendecomposition per iteration and a primal polish where the ascent stalls.

Used by version 2 of the intrinsic block (:mod:`analysis.descriptors.intrinsic2`);
:func:`analysis.descriptors.kappa.factor_radius` is unchanged (its text is in the locked
version 1). The result is a :class:`~analysis.descriptors.kappa.KappaResult` whose
``value`` and ``lower`` are recomputed in float64 by the same functions as version 1's
(``_attained`` from the returned P, ``_dual_lower`` from the returned weights), so the
certificate is the same; only the way to the iterates differs.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import minimize

from analysis.descriptors.kappa import (
    DEFAULT_MAX_ITER,
    DEFAULT_TOL,
    KappaResult,
    KappaState,
    _attained,
    _check_factors,
    _dual_lower,
)
from analysis.validation import ParameterError, check_int, check_positive_finite

__all__ = [
    "POLISH_BETAS",
    "POLISH_FIRST",
    "factor_radius_fast",
    "factor_radius_weights",
    "start_weights",
]

_ETA = 2.0  # as version 1
_MOMENTUM = 0.7
_LOG_FLOOR = 460.0
_COND_LIMIT = 1e-13  # as version 1's floor on the eigenvalues of A and of X
#: Iterations at which a stalled solve is polished: POLISH_FIRST, then each doubling
#: (the running gap is first recorded at POLISH_FIRST / 2).
POLISH_FIRST = 80
#: A polish's cost in dual iterations, roughly: its objective evaluations (each about
#: one iteration's work) up to where it pays on the stalled solves measured.
POLISH_COST = 400
#: Sharpness of the polish's log-sum-exp stages (on log a and log b).
POLISH_BETAS = (1e3, 1e4, 1e5)
#: L-BFGS iterations per polish stage, at most.
POLISH_MAXITER = 150


def _gauge(
    U: np.ndarray, W: np.ndarray, lam: np.ndarray, mu: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
    """Dual value g, row norms a, b and a factor F (P = F F^T) of the geometric-mean gauge.

    ``A = U^T diag(lam) U = L L^T`` (Cholesky), ``X = L^T B L = V diag(e) V^T``; then
    ``P = A^-1 # B = L^-T X^1/2 L^-1`` (the geometric mean is congruence invariant, so this
    is version 1's ``A^-1/2 (A^1/2 B A^1/2)^1/2 A^-1/2``), ``g = sum sqrt(e)`` and
    ``F = L^-T V diag(e^1/4)``. None where A is too ill-conditioned for the Cholesky route.
    """
    A = U.T @ (lam[:, None] * U)
    B = W.T @ (mu[:, None] * W)
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    dg = np.diag(L)
    if dg.min() ** 2 < 1e3 * _COND_LIMIT * dg.max() ** 2:
        return None
    X = L.T @ B @ L
    ex, V = np.linalg.eigh(0.5 * (X + X.T))
    g = float(np.sqrt(np.maximum(ex, 0.0)).sum())
    ex = np.maximum(ex, _COND_LIMIT * ex[-1])
    q = ex**0.25
    F = solve_triangular(L, V, lower=True, trans="T") * q  # L^-T V e^1/4
    Fi = (L @ V) / q  # (F^-T): P^-1 = Fi Fi^T
    a = np.square(U @ F).sum(1)
    b = np.square(W @ Fi).sum(1)
    return g, a, b, F


def _gauge_eig(
    U: np.ndarray, W: np.ndarray, lam: np.ndarray, mu: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Version 1's iteration (two eigendecompositions), for an ill-conditioned A."""
    A = U.T @ (lam[:, None] * U)
    B = W.T @ (mu[:, None] * W)
    ea_raw, Va = np.linalg.eigh(0.5 * (A + A.T))
    ea = np.maximum(ea_raw, _COND_LIMIT * ea_raw[-1])
    Ah = (Va * np.sqrt(ea)) @ Va.T
    Aih = (Va / np.sqrt(ea)) @ Va.T
    X = Ah @ B @ Ah
    ex, Vx = np.linalg.eigh(0.5 * (X + X.T))
    if ea_raw[0] < _COND_LIMIT * ea_raw[-1]:
        A0h = (Va * np.sqrt(np.maximum(ea_raw, 0.0))) @ Va.T
        X0 = A0h @ B @ A0h
        g = float(np.sqrt(np.maximum(np.linalg.eigvalsh(0.5 * (X0 + X0.T)), 0.0)).sum())
    else:
        g = float(np.sqrt(np.maximum(ex, 0.0)).sum())
    ex = np.maximum(ex, _COND_LIMIT * ex[-1])
    q = ex**0.25
    F = Aih @ (Vx * q)
    Fi = Ah @ (Vx / q)
    a = np.square(U @ F).sum(1)
    b = np.square(W @ Fi).sum(1)
    return g, a, b, F


def _remaining(gap_then: float, gap_now: float, span: int, tol: float) -> float:
    """Iterations to reach ``tol`` if the gap keeps shrinking as it did over ``span``."""
    if gap_now <= tol:
        return 0.0
    if not (np.isfinite(gap_then) and 0.0 < gap_now < gap_then):
        return np.inf if np.isfinite(gap_then) else 0.0  # no earlier checkpoint: wait
    return span * np.log(gap_now / tol) / np.log(gap_then / gap_now)


class _Reached(Exception):
    """Raised inside the polish's objective once the target value is attained."""


def _polish(
    U: np.ndarray, W: np.ndarray, F: np.ndarray, up: float, lower: float, tol: float
) -> tuple[float, np.ndarray]:
    """Primal polish: minimize a smoothed ``log max a + log max b`` over gauges ``F G``.

    ``a_i = ||G^T F^T u_i||^2``, ``b_j = ||G^-1 F^-1 w_j||^2`` over all invertible G
    (``P = F G G^T F^T``), the two maxima replaced by log-sum-exp at sharpness beta
    (:data:`POLISH_BETAS`, each stage started where the last stopped), by L-BFGS. Every
    objective evaluation also gives the exact value ``sqrt(max a max b)``; the best one is
    kept and the polish stops once it is within ``(1 + tol)`` of ``lower``. Returns the
    best value and its factor (``up`` and F when nothing better was found).
    """
    r = F.shape[1]
    Ut = U @ F
    Wt = np.linalg.solve(F, W.T).T  # W F^-T
    target = (1.0 + tol) * lower
    best = [up, np.eye(r)]

    def fg(x: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
        G = x.reshape(r, r)
        try:
            Gi = np.linalg.inv(G)
        except np.linalg.LinAlgError:
            return np.inf, np.zeros_like(x)
        UG, Y = Ut @ G, Wt @ Gi.T
        a, b = np.square(UG).sum(1), np.square(Y).sum(1)
        val = float(np.sqrt(a.max() * b.max()))
        if val < best[0]:
            best[0], best[1] = val, G.copy()
            if val <= target:
                raise _Reached
        la, lb = np.log(a), np.log(b)
        ea, eb = np.exp(beta * (la - la.max())), np.exp(beta * (lb - lb.max()))
        sa, sb = ea.sum(), eb.sum()
        f = la.max() + lb.max() + (np.log(sa) + np.log(sb)) / beta  # log-sum-exp, stable
        p, q = ea / sa, eb / sb
        grad = 2.0 * (Ut.T * (p / a)) @ UG - 2.0 * Gi.T @ ((Y.T * (q / b)) @ Y)
        return float(f), grad.ravel()

    x = np.eye(r).ravel()
    try:
        for beta in POLISH_BETAS:
            x = minimize(
                fg,
                x,
                args=(beta,),
                jac=True,
                method="L-BFGS-B",
                options={
                    "maxiter": POLISH_MAXITER,
                    "maxfun": 2 * POLISH_MAXITER,
                    "gtol": 1e-12,
                    "ftol": 1e-15,
                },
            ).x
    except _Reached:
        pass
    if best[0] < up:
        return best[0], F @ best[1]
    return up, F


def factor_radius_fast(
    U: np.ndarray,
    W: np.ndarray,
    *,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    stop_above: float | None = None,
    resume: KappaResult | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> KappaResult:
    """Factor radius ``kappa(U W^T)`` with a certified lower bound and gap (faster route).

    Parameters, returns and the meaning of every field are those of
    :func:`analysis.descriptors.kappa.factor_radius`; ``resume`` takes a result of this
    function. ``start`` (log-weights ``(z_lam, z_mu)`` over the rows of U and of W, e.g.
    :func:`start_weights` of a solve of a neighbouring rank) replaces the uniform start of
    a fresh solve; any start gives the same certificate.

    Notes
    -----
    The same dual ascent as version 1 (multiplicative update ``lam_i <- lam_i (a_i/g)^2``
    on the log-weights with heavy-ball momentum 0.7, restarted when g decreases), with two
    changes in how the iterates are computed and one addition:

    1. The geometric-mean gauge ``P = A^-1 # B`` is computed from a Cholesky factor
       ``A = L L^T`` and one eigendecomposition of ``L^T B L`` instead of two
       eigendecompositions (same P in exact arithmetic); where A is ill-conditioned
       (``min diag(L)^2 < 1e-10 max diag(L)^2``) version 1's two-eigendecomposition step
       is used.
    2. ``P`` itself is never formed in the loop, only a factor ``F`` with ``P = F F^T``.
    3. A primal polish where the ascent stalls. At iterations 80, 160, 320, ... the
       running gap's rate since the previous checkpoint predicts how many more
       iterations the ascent needs; where that is more than :data:`POLISH_COST`, the
       best gauge so far is refined directly: ``log max_i a_i + log max_j b_j`` over
       gauges ``P = F G G^T F^T`` (F the current factor, G any invertible matrix), with
       the two maxima smoothed by log-sum-exp at sharpness 1e3, then 1e4, then 1e5 on
       the logs, by L-BFGS (at most 150 iterations, 300 evaluations a stage). Every
       evaluation's exact value ``sqrt(max a max b)`` is a candidate upper bound, and
       the polish stops once one is within ``(1 + tol)`` of the running lower bound.
       Why: where the dual optimum sits on fewer rows than the rank, ``B`` (or ``A``) is
       singular at the optimum and the gauge recovered from the weights reaches the
       optimal one only as the vanishing weights reach zero, which version 1's
       iteration cap (3000) stops first; the dual lower bound itself is by then
       within about 1e-6 of kappa, so only the primal side needs work.

    Every candidate gauge gives an upper bound and every weight vector a lower bound, so
    the stop rule is version 1's: the attained value (recomputed from P in float64) at
    most ``(1 + tol)`` times the certified lower bound (recomputed from the weights).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.kappa import factor_radius
    >>> from analysis.descriptors.kappa_fast import factor_radius_fast
    >>> H = np.kron([[1.0, 1.0], [1.0, -1.0]], [[1.0, 1.0], [1.0, -1.0]])
    >>> round(factor_radius_fast(H, np.eye(4)).value, 9)
    2.0
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    >>> slow, fast = factor_radius(U, W), factor_radius_fast(U, W)
    >>> bool(abs(fast.value - slow.value) <= 1e-6 * slow.value), fast.gap <= 5e-7
    (True, True)
    """
    return _solve(U, W, tol, max_iter, stop_above, resume, start)[0]


def factor_radius_weights(
    U: np.ndarray,
    W: np.ndarray,
    *,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    stop_above: float | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[KappaResult, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`factor_radius_fast` (a fresh solve), and the dual weights of its lower bound.

    Returns
    -------
    result : KappaResult
        Exactly :func:`factor_radius_fast`'s for the same arguments.
    weights : (lam, mu) or None
        The weights over the rows of U and of W whose dual value is ``result.lower``
        (before the ``max |T|`` floor), each summing to 1; None for rank 1 (no ascent).
        Any weights give a certified lower bound for any factor pair with these rows,
        e.g. another rank's ``(U[:, :s], W[:, :s])``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.kappa_fast import factor_radius_fast, factor_radius_weights
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    >>> res, (lam, mu) = factor_radius_weights(U, W)
    >>> res.value == factor_radius_fast(U, W).value, lam.shape, mu.shape
    (True, (30,), (20,))
    """
    return _solve(U, W, tol, max_iter, stop_above, None, start)


def _solve(
    U: np.ndarray,
    W: np.ndarray,
    tol: float,
    max_iter: int,
    stop_above: float | None,
    resume: KappaResult | None,
    start: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[KappaResult, tuple[np.ndarray, np.ndarray] | None]:
    U, W = _check_factors(U, W)
    tol = check_positive_finite("tol", tol)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    if stop_above is not None:
        stop_above = float(stop_above)
        if np.isnan(stop_above):
            raise ParameterError("stop_above", "a number or None", stop_above)
    M, N = U.shape[0], W.shape[0]
    t_max = float(np.abs(U @ W.T).max())
    if U.shape[1] == 1:
        return KappaResult(t_max, t_max, 0.0, np.ones((1, 1)), 0), None
    if resume is not None and not isinstance(resume, KappaResult):
        raise ParameterError("resume", "a KappaResult of factor_radius_fast or None", type(resume))
    if resume is not None:
        if resume.state is None:
            return resume, None
        st, it = resume.state, resume.iterations
        zl, zm, zl_prev, zm_prev = st.zl, st.zm, st.zl_prev, st.zm_prev
        best_up, best_F, best_g = st.best_up, st.best_P, st.best_g
        best_lam, best_mu, prev_g = st.best_lam, st.best_mu, st.prev_g
    else:
        zl, zm = np.full(M, -np.log(M)), np.full(N, -np.log(N))
        if start is not None:
            zl, zm = (np.asarray(z, dtype=np.float64) for z in start)
            if (
                zl.shape != (M,)
                or zm.shape != (N,)
                or not np.isfinite(zl).all()
                or not np.isfinite(zm).all()
            ):
                raise ParameterError(
                    "start", f"finite log-weights of shapes ({M},), ({N},)", (zl.shape, zm.shape)
                )
        zl_prev, zm_prev = zl, zm
        best_up, best_F = np.inf, np.eye(U.shape[1])
        best_g, best_lam, best_mu = 0.0, np.exp(zl), np.exp(zm)
        prev_g, it = 0.0, 0
    pruned, converged = False, False
    next_polish = POLISH_FIRST // 2
    while next_polish <= it:
        next_polish *= 2
    gap_then = np.inf
    while it < max_iter:
        it += 1
        lam = np.exp(zl - zl.max())
        lam /= lam.sum()
        mu = np.exp(zm - zm.max())
        mu /= mu.sum()
        out = _gauge(U, W, lam, mu)
        g, a, b, F = out if out is not None else _gauge_eig(U, W, lam, mu)
        up = float(np.sqrt(a.max() * b.max()))
        if up < best_up:
            best_up, best_F = up, F
        if g > best_g:
            best_g, best_lam, best_mu = g, lam, mu
        if it == next_polish:
            gap_now = best_up / max(best_g, t_max) - 1.0
            if _remaining(gap_then, gap_now, it - next_polish // 2, tol) > POLISH_COST:
                # At its rate since the last checkpoint the ascent would need more
                # iterations than a polish costs: the primal lags the dual, so polish it.
                best_up, best_F = _polish(U, W, best_F, best_up, max(best_g, t_max), tol)
            gap_then = best_up / max(best_g, t_max) - 1.0
            next_polish *= 2
        if best_up <= (1.0 + tol) * max(best_g, t_max):
            value = _attained(U, W, best_F @ best_F.T)
            lower = max(t_max, _dual_lower(U, W, best_lam, best_mu))
            if value <= (1.0 + tol) * lower:
                converged = True
                break
        if stop_above is not None and max(best_g, t_max) > stop_above:
            if max(t_max, _dual_lower(U, W, best_lam, best_mu)) > stop_above:
                pruned = True
                break
        beta = _MOMENTUM if g >= prev_g else 0.0
        prev_g = g
        step_l = _ETA * np.log(np.maximum(a / g, 1e-300)) + beta * (zl - zl_prev)
        step_m = _ETA * np.log(np.maximum(b / g, 1e-300)) + beta * (zm - zm_prev)
        zl_prev, zm_prev = zl, zm
        zl, zm = zl + step_l, zm + step_m
        zl = np.maximum(zl, zl.max() - _LOG_FLOOR)
        zm = np.maximum(zm, zm.max() - _LOG_FLOOR)
    P = best_F @ best_F.T
    value = _attained(U, W, P)
    lower = max(t_max, _dual_lower(U, W, best_lam, best_mu))
    gap = (value - lower) / lower if lower > 0 else 0.0
    state = None
    if not (converged or pruned):
        # best_P holds the factor F of the best gauge here (P = F F^T).
        state = KappaState(
            zl, zm, zl_prev, zm_prev, prev_g, best_up, best_F, best_g, best_lam, best_mu
        )
    return KappaResult(value, lower, float(gap), 0.5 * (P + P.T), it, pruned, state), (
        best_lam,
        best_mu,
    )


def start_weights(result: KappaResult) -> tuple[np.ndarray, np.ndarray]:
    """Log-weights to start another solve from: the ascent's current ones, else its best.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.kappa_fast import factor_radius_fast, start_weights
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    >>> zl, zm = start_weights(factor_radius_fast(U, W, max_iter=5))
    >>> zl.shape, zm.shape
    ((30,), (20,))
    """
    if result.state is not None:
        return result.state.zl, result.state.zm
    raise ParameterError("result", "a stopped solve (with state)", "a finished one")
