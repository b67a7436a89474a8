"""Factor radius ``kappa(T)``: the smallest max-row-norm product over factorizations of T.

``kappa(T) = min_{T = U W^T} max_i ||u_i||_2 * max_j ||w_j||_2`` is the gamma_2
factorization norm of T (an optimal factorization exists at inner dimension rank T, so the
minimum over inner dimension ``r = rank T`` in docs/method.md section 4 is the same number).
It is gauge invariant by construction.

Solver choice (why hand-written): the r x r SDP of docs/method.md section 4 posed in cvxpy
with Clarabel was too slow and memory-hungry at the ranks the descriptor needs (up to
d = 32, about 6 per head on MiniLM, for each of 72 heads; timings in
docs/results/descriptors.md, "The kappa solver"). The dual fixed-point ascent below
(numpy, r x r eigendecompositions only, momentum on the log-weights) reaches a relative
gap of 1e-6 in about 0.2 s on most problems at r = 24-31, M = N = 128, and every call
returns a certified lower bound, so its accuracy is checked rather than trusted. The
stated tolerance is DEFAULT_TOL (relative gap, 5e-7); any two converged solves of the
same T (e.g. in two gauges) agree to it. (The intrinsic block asks for 1e-4,
``analysis.descriptors.intrinsic.KAPPA_TOL``: what its covariates need.) Known limit: on
some real heads the dual (lower) value converges fast but the primal P recovered from it
improves slowly, and the solve stops at DEFAULT_MAX_ITER (about 1 s) with a larger gap
(how often, on MiniLM heads: the same section). Why: on those solves the optimal dual
weights sit on fewer key rows than the rank (a median 7 rows for rank 38 on the
four-family study's capped solves, ``experiments/descriptor_cost.py``), so
``B = W^T diag(mu) W`` is singular at the optimum and the P recovered from the weights
reaches the optimal gauge only as the vanishing weights go to zero. A solve stopped by
``max_iter`` can be resumed (``resume=``) along the same iterates, which lets the intrinsic
block screen every rank briefly and finish only the ranks that can attain Pi.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analysis.validation import ParameterError, check_int, check_positive_finite

# Two solves of one kappa both lie in [kappa, kappa (1 + gap)], so they agree to relative
# DEFAULT_TOL: 5e-7 keeps gauge-related results within the relative 1e-6 of docs/guide/conventions.md ("Descriptors").
DEFAULT_TOL = 5e-7
DEFAULT_MAX_ITER = 3000
_ETA = 2.0  # exponent of the multiplicative step (eta = 4 diverges on MiniLM heads)
_MOMENTUM = 0.7  # heavy-ball factor on the log-weights; halves to thirds the iterations
_LOG_FLOOR = 460.0  # weights >= e^-460 * max keep out of the (very slow) subnormal range


@dataclass(frozen=True)
class KappaState:
    """Everything the dual ascent carries between iterations, so that a solve can resume.

    A solve stopped by ``max_iter`` and resumed with ``factor_radius(..., resume=result)``
    follows exactly the iterates of one uninterrupted solve (same floats).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.kappa import KappaState, factor_radius
    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    >>> stopped = factor_radius(U, W, max_iter=5)
    >>> isinstance(stopped.state, KappaState), stopped.state.zl.shape  # one weight per row
    (True, (30,))
    >>> factor_radius(U, W).state is None  # a converged solve keeps no state
    True
    """

    zl: np.ndarray
    zm: np.ndarray
    zl_prev: np.ndarray
    zm_prev: np.ndarray
    prev_g: float
    best_up: float
    best_P: np.ndarray
    best_g: float
    best_lam: np.ndarray
    best_mu: np.ndarray


@dataclass(frozen=True)
class KappaResult:
    """Result of one factor-radius solve.

    Attributes
    ----------
    value : float
        Attained value ``max_i ||L^T u_i|| * max_j ||L^-1 w_j||`` with ``L = chol(P)``,
        recomputed from the returned ``P`` (never a solver objective): an upper bound on
        kappa.
    lower : float
        Certified lower bound: ``max(max_ij |T_ij|, ||diag(sqrt(lam)) T diag(sqrt(mu))||_*)``
        for the final dual weights ``lam``, ``mu`` (each summing to 1).
    gap : float
        Relative gap ``(value - lower) / lower`` (0 when both are 0).
    P : numpy.ndarray, shape ``[r, r]``
        The gauge ``P = G G^T`` that attains ``value``.
    iterations : int
        Dual iterations used.
    pruned : bool
        The solve stopped because ``lower > stop_above``, before reaching ``tol``.

    Examples
    --------
    ``T = [[1, 1], [1, -1]]`` (a 2 x 2 Hadamard matrix) has ``kappa = sqrt 2``:

    >>> import numpy as np
    >>> from analysis.descriptors.kappa import factor_radius
    >>> result = factor_radius(np.array([[1.0, 1.0], [1.0, -1.0]]), np.eye(2))
    >>> round(result.value, 12), round(result.lower, 12), round(float(np.sqrt(2)), 12)
    (1.414213562373, 1.414213562373, 1.414213562373)
    >>> abs(result.gap) <= 5e-7, result.pruned
    (True, False)
    """

    value: float
    lower: float
    gap: float
    P: np.ndarray
    iterations: int
    pruned: bool = False
    state: KappaState | None = field(default=None, repr=False, compare=False)


def _check_factors(U: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    U = np.asarray(U, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    if U.ndim != 2 or W.ndim != 2 or U.shape[1] != W.shape[1] or U.shape[1] < 1:
        raise ParameterError(
            "U, W", "arrays [M, r] and [N, r] with the same r >= 1", (U.shape, W.shape)
        )
    if not (np.isfinite(U).all() and np.isfinite(W).all()):
        raise ParameterError("U, W", "finite entries", "NaN or inf")
    return U, W


def _attained(U: np.ndarray, W: np.ndarray, P: np.ndarray) -> float:
    """``max_i ||L^T u_i|| * max_j ||L^-1 w_j||`` with ``L = chol(P)``."""
    P = 0.5 * (P + P.T)
    try:
        L = np.linalg.cholesky(P)
        left = np.linalg.norm(U @ L, axis=1).max()
        right = np.linalg.norm(np.linalg.solve(L, W.T), axis=0).max()
    except np.linalg.LinAlgError:
        # P not numerically positive definite: use its symmetric square root, which gives
        # the same two norms whenever P > 0 (any F with F F^T = P does).
        vals, vecs = np.linalg.eigh(P)
        if vals.min() <= 0:
            return float("inf")
        F = (vecs * np.sqrt(vals)) @ vecs.T
        left = np.linalg.norm(U @ F, axis=1).max()
        right = np.linalg.norm(np.linalg.solve(F, W.T), axis=0).max()
    return float(left * right)


def _dual_lower(U: np.ndarray, W: np.ndarray, lam: np.ndarray, mu: np.ndarray) -> float:
    """``||diag(sqrt(lam)) U W^T diag(sqrt(mu))||_*`` via two thin QR factors."""
    lam = np.maximum(lam, 0.0) / max(lam.sum(), np.finfo(float).tiny)
    mu = np.maximum(mu, 0.0) / max(mu.sum(), np.finfo(float).tiny)
    Ru = np.linalg.qr(np.sqrt(lam)[:, None] * U, mode="r")
    Rw = np.linalg.qr(np.sqrt(mu)[:, None] * W, mode="r")
    return float(np.linalg.svd(Ru @ Rw.T, compute_uv=False).sum())


def factor_radius(
    U: np.ndarray,
    W: np.ndarray,
    *,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    stop_above: float | None = None,
    resume: KappaResult | None = None,
) -> KappaResult:
    """Factor radius ``kappa(U W^T)`` with a certified lower bound and gap.

    Parameters
    ----------
    U : array, shape ``[M, r]``
    W : array, shape ``[N, r]``
        Any factorization ``T = U W^T`` with inner dimension ``r = rank T``.
    tol : float
        Stop when the relative gap between the attained value and the dual lower bound is
        at most ``tol``.
    max_iter : int
        Iteration cap; the reported gap says how far from optimal the result is.
    stop_above : float, optional
        Stop as soon as the certified lower bound exceeds this value: the caller only needs
        to know that kappa is larger (see ``pruned`` in the result).
    resume : KappaResult, optional
        A result of this function for the same ``U``, ``W`` that stopped at ``max_iter``:
        the ascent continues from its state (``max_iter`` counts the iterations of both
        calls), along exactly the iterates of one uninterrupted solve. A result without
        state (rank 1, or one that converged or was pruned) is returned unchanged.

    Returns
    -------
    KappaResult

    Notes
    -----
    All factorizations are ``(U G, W G^-T)``; with ``P = G G^T``,
    ``kappa^2 = min_P (max_i u_i^T P u_i)(max_j w_j^T P^-1 w_j)``, and by scale invariance
    ``kappa = min_P max_{lam, mu} (1/2)(sum_i lam_i u_i^T P u_i + sum_j mu_j w_j^T P^-1 w_j)``
    over probability vectors ``lam``, ``mu``. Exchanging min and max (convex in P, linear
    in the weights) gives the dual

        kappa = max_{lam, mu} g(lam, mu),  g = ||diag(sqrt lam) T diag(sqrt mu)||_*
              = tr((A^1/2 B A^1/2)^1/2),  A = U^T diag(lam) U,  B = W^T diag(mu) W,

    whose inner minimizer is the geometric mean ``P = A^-1/2 (A^1/2 B A^1/2)^1/2 A^-1/2``.
    At that P, ``sum_i lam_i a_i = sum_j mu_j b_j = g`` with ``a_i = u_i^T P u_i`` and
    ``b_j = w_j^T P^-1 w_j`` (the gradients of 2g). The iteration is the multiplicative
    fixed point ``lam_i <- lam_i (a_i / g)^eta`` (and the same for mu), eta = 2, taken on
    the log-weights with heavy-ball momentum 0.7 that restarts whenever g decreases. Any P
    gives the upper bound ``sqrt(max a * max b)`` and any weights the lower bound g, so the
    gap is a certificate. ``max_ij |T_ij|`` (unit
    weights) is a second lower bound, exact for rank 1 (``kappa = max|u| max|w|``).

    Examples
    --------
    The 4 x 4 Hadamard matrix has ``kappa = sqrt 4``, in any gauge:

    >>> import numpy as np
    >>> from analysis.descriptors.kappa import factor_radius
    >>> H = np.kron([[1.0, 1.0], [1.0, -1.0]], [[1.0, 1.0], [1.0, -1.0]])
    >>> result = factor_radius(H, np.eye(4))
    >>> round(result.value, 9), round(result.lower, 9)
    (2.0, 2.0)
    >>> G = np.triu(np.ones((4, 4))) + np.eye(4)  # another factorization of the same T
    >>> round(factor_radius(H @ G, np.linalg.inv(G).T).value, 6)
    2.0

    Rank 1 is closed form, ``max|u| max|w|``:

    >>> factor_radius(np.array([[1.0], [-3.0]]), np.array([[2.0], [0.5]])).value
    6.0

    A solve stopped at ``max_iter`` resumes along the same iterates, and
    ``stop_above`` stops as soon as kappa is certified larger:

    >>> rng = np.random.default_rng(0)
    >>> U, W = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    >>> full = factor_radius(U, W)
    >>> resumed = factor_radius(U, W, resume=factor_radius(U, W, max_iter=5))
    >>> resumed.value == full.value, resumed.iterations == full.iterations
    (True, True)
    >>> pruned = factor_radius(U, W, stop_above=1.0)
    >>> pruned.pruned, pruned.lower > 1.0
    (True, True)
    """
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
        # Closed form: every factorization attains max|u| max|w| = max_ij |T_ij| exactly.
        return KappaResult(t_max, t_max, 0.0, np.ones((1, 1)), 0)
    if resume is not None and not isinstance(resume, KappaResult):
        raise ParameterError("resume", "a KappaResult of factor_radius or None", type(resume))
    if resume is not None:
        if resume.state is None:
            return resume
        st, it = resume.state, resume.iterations
        zl, zm, zl_prev, zm_prev = st.zl, st.zm, st.zl_prev, st.zm_prev
        best_up, best_P, best_g = st.best_up, st.best_P, st.best_g
        best_lam, best_mu, prev_g = st.best_lam, st.best_mu, st.prev_g
    else:
        zl, zm = np.full(M, -np.log(M)), np.full(N, -np.log(N))  # log-weights
        zl_prev, zm_prev = zl, zm
        best_up, best_P = np.inf, np.eye(U.shape[1])
        best_g, best_lam, best_mu = 0.0, np.exp(zl), np.exp(zm)
        prev_g, it = 0.0, 0
    pruned, converged = False, False
    while it < max_iter:
        it += 1
        lam = np.exp(zl - zl.max())
        lam /= lam.sum()
        mu = np.exp(zm - zm.max())
        mu /= mu.sum()
        A = U.T @ (lam[:, None] * U)
        B = W.T @ (mu[:, None] * W)
        ea_raw, Va = np.linalg.eigh(0.5 * (A + A.T))
        floored = ea_raw[0] < 1e-13 * ea_raw[-1]
        ea = np.maximum(ea_raw, 1e-13 * ea_raw[-1])
        Ah = (Va * np.sqrt(ea)) @ Va.T
        Aih = (Va / np.sqrt(ea)) @ Va.T
        X = Ah @ B @ Ah
        ex, Vx = np.linalg.eigh(0.5 * (X + X.T))
        if floored:
            # Dual value g = tr((A^1/2 B A^1/2)^1/2) with the exact (unfloored) square root:
            # the floored one keeps P finite but would make g optimistic when A is singular.
            A0h = (Va * np.sqrt(np.maximum(ea_raw, 0.0))) @ Va.T
            X0 = A0h @ B @ A0h
            g = float(np.sqrt(np.maximum(np.linalg.eigvalsh(0.5 * (X0 + X0.T)), 0.0)).sum())
        else:
            g = float(np.sqrt(np.maximum(ex, 0.0)).sum())  # A unfloored: X is exact
        ex = np.maximum(ex, 1e-13 * ex[-1])
        P = Aih @ ((Vx * np.sqrt(ex)) @ Vx.T) @ Aih
        Pinv = Ah @ ((Vx / np.sqrt(ex)) @ Vx.T) @ Ah
        a = ((U @ P) * U).sum(1)
        b = ((W @ Pinv) * W).sum(1)
        up = float(np.sqrt(a.max() * b.max()))
        if up < best_up:
            best_up, best_P = up, P
        if g > best_g:
            best_g, best_lam, best_mu = g, lam, mu
        if best_up <= (1.0 + tol) * max(best_g, t_max):
            # The running bounds say converged; stop only if the recomputed ones agree
            # (a guard against rounding in the running ones).
            value = _attained(U, W, best_P)
            lower = max(t_max, _dual_lower(U, W, best_lam, best_mu))
            if value <= (1.0 + tol) * lower:
                converged = True
                break
        if stop_above is not None and max(best_g, t_max) > stop_above:
            # Recompute the certified lower bound before trusting the running one.
            if max(t_max, _dual_lower(U, W, best_lam, best_mu)) > stop_above:
                pruned = True
                break
        # Momentum on the log-weights, restarted whenever the dual value g decreases.
        beta = _MOMENTUM if g >= prev_g else 0.0
        prev_g = g
        step_l = _ETA * np.log(np.maximum(a / g, 1e-300)) + beta * (zl - zl_prev)
        step_m = _ETA * np.log(np.maximum(b / g, 1e-300)) + beta * (zm - zm_prev)
        zl_prev, zm_prev = zl, zm
        zl, zm = zl + step_l, zm + step_m
        zl = np.maximum(zl, zl.max() - _LOG_FLOOR)
        zm = np.maximum(zm, zm.max() - _LOG_FLOOR)
    value = _attained(U, W, best_P)
    lower = max(t_max, _dual_lower(U, W, best_lam, best_mu))
    gap = (value - lower) / lower if lower > 0 else 0.0
    state = None
    if not (converged or pruned):
        state = KappaState(
            zl, zm, zl_prev, zm_prev, prev_g, best_up, best_P, best_g, best_lam, best_mu
        )
    return KappaResult(value, lower, float(gap), 0.5 * (best_P + best_P.T), it, pruned, state)
