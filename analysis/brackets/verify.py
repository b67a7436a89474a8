"""Rigorous float64 re-checks of upper and lower witnesses.

Every bracket end the package reports passes through these two functions. They use only
matrix products, sums and absolute values, with a rounding allowance taken from the
standard model of floating-point arithmetic (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., sections 2.2-3.5). A larger allowance is always sound,
so wherever an intermediate quantity is itself rounded we inflate the allowance by a
generous factor rather than reason about the last bit.

Both functions run numpy's BLAS on one thread. The allowances hold for any order of
summation, so a certificate is sound under any thread count, but it is only *repeatable*
under a fixed one: OpenBLAS's threaded GEMM can round differently from its one-thread
GEMM (measured on a SkylakeX host: a ``[101, 256] x [256, 101]`` product differs in the
last bit in about 2% of its entries), and a stored margin re-checked under another thread
count than it was certified under then fails by an ulp (``Profile.reverify`` compares
exactly). The search certifies under one BLAS thread already; fixing it here makes every
re-check, wherever it runs, repeat the certification's arithmetic.
"""

from __future__ import annotations

import contextlib

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

from analysis.validation import ParameterError

__all__ = ["UNIT_ROUNDOFF", "certified_lower_margin", "certified_upper_error", "gamma"]

UNIT_ROUNDOFF = 2.0**-53
# Inflation applied to allowances that are themselves computed in floating point.
_SAFETY = 1.01
# The smallest positive (subnormal) double: a product that underflows is off by at most
# half of it, an absolute error that the relative model (``u``) does not cover.
_TINY = 2.0**-1074
# Below this size a certified value may have lost bits to underflow: it is recomputed with
# explicit absolute allowances (upper) or from witnesses scaled up by powers of two (lower).
_SMALL = 2.0**-500


_BLAS: ThreadpoolController | None = None


def _one_blas_thread() -> contextlib.AbstractContextManager:
    """Context in which numpy's BLAS runs on one thread (the previous count is restored).

    Not :func:`analysis.attention.fixed_torch_threads`: the verifier runs for every
    candidate witness, and that context also sets torch's threads and rescans the loaded
    libraries on each entry (about 90 us against 6 us here).
    """
    global _BLAS
    if _BLAS is None:  # scans the loaded libraries once (about 80 us a scan), then reused
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def gamma(n: int) -> float:
    """``gamma_n = n u / (1 - n u)`` with ``u = 2^-53``.

    Examples
    --------
    >>> from analysis.brackets.verify import UNIT_ROUNDOFF, gamma
    >>> gamma(0)
    0.0
    >>> gamma(4) > 4 * UNIT_ROUNDOFF
    True
    """
    nu = n * UNIT_ROUNDOFF
    if nu >= 0.5:
        raise ParameterError("n", "a size with n * 2^-53 < 0.5", n)
    return nu / (1.0 - nu)


def _as64(name: str, X, shape: tuple[int | None, int | None]) -> np.ndarray:
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":  # a complex part would be dropped, text or objects parsed
        raise ParameterError(name, "a real array (bool, int or float entries)", X.dtype)
    X = X.astype(np.float64, copy=False)  # float32 products would round at 2^-24, not u
    if X.ndim != 2 or any(s is not None and s != x for s, x in zip(shape, X.shape, strict=True)):
        want = "x".join("?" if s is None else str(s) for s in shape)
        raise ParameterError(name, f"a 2-D array of shape {want}", X.shape)
    if not np.isfinite(X).all():
        raise ParameterError(name, "finite entries", "NaN or inf")
    return X


def certified_upper_error(A: npt.ArrayLike, U: npt.ArrayLike, W: npt.ArrayLike) -> float:
    """Certified bound on ``max_i sum_j |A_ij - (U W^T)_ij|``.

    Parameters
    ----------
    A : array ``[M, N]``
    U : array ``[M, k]``
    W : array ``[N, k]``

    Returns
    -------
    float
        A number ``e`` with ``max_i ||A_i - (U W^T)_i||_1 <= e`` in exact arithmetic.

    Notes
    -----
    With ``s_i`` the computed ``sum_j |A_ij - fl(U W^T)_ij|``,
    ``e = max_i [ s_i + gamma_N s_i + gamma_(k+2) sum_j (|U||W|^T + |A|)_ij ]``:
    ``gamma_k`` covers the inner products, one more ``u`` each the subtraction and the
    absolute value's argument, ``gamma_N`` the row sum. The row sums of ``|U||W|^T`` are
    formed as ``|U| (|W|^T 1)`` and inflated by ``_SAFETY``; the final additions are
    covered by a further factor ``1 + 4u`` per term.

    The standard model leaves out underflow: a product below ``2^-1022`` is off by up to
    ``2^-1075`` absolutely, so a row of ``U W^T`` by up to ``N k 2^-1075``. Where ``e``
    is at least ``2^-500`` that is far inside the ``_SAFETY`` slack of the ``gamma`` term
    (the row's magnitudes are then at least about ``e / 2``); below it the bound is
    replaced by ``4 e + (N (k + 2) + 16) 2^-1074``. Witnesses with normal-range entries
    certify bit for bit what they did without this case.

    Examples
    --------
    The uniform 4 x 4 matrix is ``u u^T`` with ``u = (1/2, ..., 1/2)``: its rank-1 witness
    is exact, so the certified error is the rounding allowance alone.

    >>> import numpy as np
    >>> from analysis.brackets import certified_upper_error
    >>> A = np.full((4, 4), 0.25)
    >>> u = np.full((4, 1), 0.5)
    >>> e = certified_upper_error(A, u, u)
    >>> 0.0 < e < 1e-14
    True
    >>> certified_upper_error(A, np.zeros((4, 0)), np.zeros((4, 0))) >= 1.0  # rank 0: B = 0
    True
    """
    A = _as64("A", A, (None, None))
    M, N = A.shape
    U = _as64("U", U, (M, None))
    k = U.shape[1]
    W = _as64("W", W, (N, k))
    with _one_blas_thread():
        B = U @ W.T if k else np.zeros_like(A)
        mass = np.abs(U) @ np.abs(W).sum(axis=0) if k else np.zeros(M)
    s = np.abs(A - B).sum(axis=1)
    mass = (mass + np.abs(A).sum(axis=1)) * _SAFETY
    e = s * (1.0 + gamma(N)) + gamma(k + 2) * mass * _SAFETY
    e = float(np.max(e) * (1.0 + 4 * UNIT_ROUNDOFF))
    if not e <= np.inf:  # NaN from an overflow (inf - inf): no bound
        return np.inf
    if e < _SMALL or N * (k + 2) > 2**40:  # the N k products of a row may each lose _TINY / 2
        e = 4.0 * e + (N * (k + 2) + 16) * _TINY
    return e


def certified_lower_margin(A: npt.ArrayLike, R: npt.ArrayLike, Y: npt.ArrayLike) -> float:
    """Certified lower bound on the normalized diagonal-dominance margin of ``Y A R``.

    Parameters
    ----------
    A : array ``[M, N]``
    R : array ``[N, m]``
    Y : array ``[m, M]``

    Returns
    -------
    float
        ``mu`` such that ``r_eps(A) >= m`` for every ``eps < mu`` (accept iff ``mu > eps``).

    Notes
    -----
    With ``G = fl(Y A R)`` and ``D = gamma_(M+N+m) |Y||A||R|``,
    ``mu = min_p [(G_pp - D_pp) - sum_(j != p)(|G_pj| + D_pj)] / (||y_p||_1 max_i ||R_i||_1)``
    (docs/method.md section 3). Dividing by the norms makes any scaling of ``Y`` and ``R``
    sound. We additionally subtract ``gamma_(m+2)`` times the magnitudes summed in the
    numerator (the numerator's own rounding), inflate the two norms by ``1 + gamma``
    of their lengths, and round the quotient towards zero by ``1 - 4u``.

    Underflow, which the standard model leaves out: every entry of ``D`` also carries
    ``(2 (M N max_i ||R_i||_1 + N + 8) + 2) 2^-1074``, twice the absolute error of the
    products of ``Y A`` and ``(Y A) R`` that fall below ``2^-1022`` (absorbed without a
    trace wherever ``D`` is of normal size). A denominator ``||y_p||_1 max_i ||R_i||_1``
    below ``2^-100`` could lose its bits, so the witness is then re-checked with each row of
    ``Y`` and ``R`` as a whole scaled up by a power of two (exact; the margin is invariant)
    until its largest entry is at least 1. A margin within ``2^-500`` of zero is reported as
    ``-2^-500`` (accepts no ``eps > 0``). Witnesses with normal-range entries certify bit for
    bit what they did without these cases.

    Examples
    --------
    The 3 x 3 identity with ``R = Y = I``: ``Y A R = I`` has margin 1 in exact arithmetic;
    the certified margin is just below it, so ``r_eps(I) >= 3`` for every eps below it.

    >>> import numpy as np
    >>> from analysis.brackets import certified_lower_margin
    >>> I = np.eye(3)
    >>> mu = certified_lower_margin(I, I, I)
    >>> 1.0 - 1e-14 < mu < 1.0
    True
    """
    A = _as64("A", A, (None, None))
    M, N = A.shape
    R = _as64("R", R, (N, None))
    m = R.shape[1]
    if m < 1:
        raise ParameterError("R", "at least one column", R.shape)
    Y = _as64("Y", Y, (m, M))
    mu, den = _lower_margin(A, R, Y)
    if den < 2.0**-100:  # a norm so small that the quotient may lose bits to underflow
        mu, den = _lower_margin(A, _scaled_up(R, axis=None), _scaled_up(Y, axis=1))
    return mu if abs(mu) >= _SMALL else -_SMALL


def _scaled_up(X: np.ndarray, axis: int | None) -> np.ndarray:
    """``X`` (whole, or each row for ``axis=1``) times the power of two that brings its
    largest magnitude into ``[1, 2)`` where that is below 1; exact (no rounding)."""
    big = np.abs(X).max(axis=axis, keepdims=True)
    _, e = np.frexp(np.where(big > 0, big, 1.0))
    return np.ldexp(X, np.maximum(1 - e, 0))


def _lower_margin(A: np.ndarray, R: np.ndarray, Y: np.ndarray) -> tuple[float, float]:
    """:func:`certified_lower_margin` on checked arrays, and its least denominator."""
    M, N = A.shape
    m = R.shape[1]
    with _one_blas_thread(), np.errstate(all="ignore"):  # an overflow yields inf or NaN
        G = (Y @ A) @ R
        D = gamma(M + N + m) * ((np.abs(Y) @ np.abs(A)) @ np.abs(R)) * _SAFETY
    # Underflow: each entry of Y A loses at most M _TINY / 2, of G then N _TINY / 2 more
    # plus that loss times a column l1 norm of R (at most N max_i ||R_i||_1).
    rmax = float(np.abs(R).sum(axis=1).max())
    D = D + (2.0 * (M * N * rmax + N + 8) + 2.0) * _TINY
    diag = np.diag(G)
    off = np.abs(G) + D
    off_sum = off.sum(axis=1) - np.diag(off)
    num = diag - np.diag(D) - off_sum
    num -= gamma(m + 2) * (np.abs(diag) + np.diag(D) + off_sum)
    ynorm = np.abs(Y).sum(axis=1) * (1.0 + gamma(M))
    rnorm = float(np.abs(R).sum(axis=1).max()) * (1.0 + gamma(m))
    if rnorm == 0.0 or (ynorm == 0.0).any():
        return -np.inf, np.inf
    den = ynorm * rnorm
    with np.errstate(all="ignore"):  # den may underflow to 0: the caller scales and retries
        ratio = num / den
        # Round towards -inf in magnitude terms: shrink positive ratios, grow negative ones.
        ratio = np.where(
            ratio > 0, ratio * (1 - 4 * UNIT_ROUNDOFF), ratio * (1 + 4 * UNIT_ROUNDOFF)
        )
    mu = float(ratio.min())
    mu = mu if mu >= -np.inf else -np.inf  # NaN from an overflow (inf - inf): no bound
    return mu, float(den.min())
