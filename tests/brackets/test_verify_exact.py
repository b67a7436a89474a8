"""The verifier against exact arithmetic on adversarial witnesses.

Every float64 is an integer times a power of two, so a matrix is an integer matrix (Python
ints in numpy object arrays) times one power of two, and ``U W^T`` or ``Y A R`` is exact.
Each case asserts

- soundness: the certified upper error is ``>=`` the exact error, the certified lower
  margin ``<=`` the exact margin (as exact rationals);
- tightness: the certified number is within the documented allowance of the exact one
  (a verifier that answers ``inf`` / ``-inf`` fails);
- the documented allowance itself: the certified error is at least the Notes' formula
  evaluated exactly on the verifier's own rounded intermediates (relaxed by ``8u`` for
  the rounding of the formula), so that no term of the allowance can be dropped.

The cases are built to make a weakened verifier certify something false: products of
factors with entries near ``1e8`` that cancel to a row-stochastic matrix (``A`` equal to
the computed product, so the computed residual is zero and only the allowance sees the
true error), rows whose computed sums lose ``~N/8`` ulps, margins of ``Y A R`` with entries
near ``1e8`` that cancel, heavy-tailed rows, subnormal witnesses, and the sizes of the
engine (``k``, ``m`` from 1 to 64, ``N`` up to 128, ``M != N``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from analysis.brackets.verify import (
    UNIT_ROUNDOFF,
    certified_lower_margin,
    certified_upper_error,
    gamma,
)

U_ = Fraction(1, 2**53)
TINY = Fraction(1, 2**1074)


def gamma_exact(n: int) -> Fraction:
    return n * U_ / (1 - n * U_)


# -- exact arithmetic --------------------------------------------------------------------
def as_ints(X: np.ndarray) -> tuple[np.ndarray, int]:
    """``(Xi, e)`` with ``X == Xi * 2**e`` exactly, ``Xi`` an object array of Python ints."""
    X = np.asarray(X, dtype=np.float64)
    f, ex = np.frexp(X)
    mant = (f * 2.0**53).astype(np.int64)  # exact: |f| < 1 has 53 significant bits
    ex = ex.astype(np.int64) - 53
    nz = mant != 0
    e = int(ex[nz].min()) if nz.any() else 0
    shift = np.where(nz, ex - e, 0)
    out = np.empty(X.size, dtype=object)
    for n, (mn, sh) in enumerate(zip(mant.ravel().tolist(), shift.ravel().tolist(), strict=True)):
        out[n] = mn << sh
    return out.reshape(X.shape), e


def _frac(i: int, e: int) -> Fraction:
    return Fraction(i * 2**e) if e >= 0 else Fraction(i, 2**-e)


def exact_upper_rows(A, U, W) -> list[Fraction]:
    """Exact ``sum_j |A_ij - (U W^T)_ij|`` for every row i."""
    Ai, a = as_ints(A)
    M, N = Ai.shape
    if U.shape[1] == 0:
        P, p = np.zeros((M, N), dtype=object), a
    else:
        (Ui, u), (Wi, w) = as_ints(U), as_ints(W)
        P, p = Ui.dot(Wi.T), u + w
    c = min(a, p)
    D = Ai * (1 << (a - c)) - P * (1 << (p - c))
    return [_frac(int(v), c) for v in np.abs(D).sum(axis=1)]


def exact_upper_magnitudes(A, U, W) -> list[Fraction]:
    """Exact ``sum_j (|U||W|^T + |A|)_ij`` for every row i."""
    Ai, a = as_ints(A)
    rows = [_frac(int(v), a) for v in np.abs(Ai).sum(axis=1)]
    if U.shape[1]:
        (Ui, u), (Wi, w) = as_ints(U), as_ints(W)
        mag = np.abs(Ui).dot(np.abs(Wi).sum(axis=0))
        rows = [r + _frac(int(v), u + w) for r, v in zip(rows, mag, strict=True)]
    return rows


def exact_margin_parts(A, R, Y):
    """Exact ``(num_p, den_p, mag_p)``: the numerator ``G_pp - sum_(q != p) |G_pq|`` of
    ``G = Y A R``, the denominator ``||y_p||_1 max_i ||R_i||_1``, and the row sums of
    ``|Y||A||R|`` (all Fractions)."""
    (Ai, a), (Ri, r), (Yi, y) = as_ints(A), as_ints(R), as_ints(Y)
    G = Yi.dot(Ai).dot(Ri)
    mag = np.abs(Yi).dot(np.abs(Ai)).dot(np.abs(Ri)).sum(axis=1)
    e = y + a + r
    rho = _frac(int(max(np.abs(Ri).sum(axis=1))), r)
    out = []
    for p in range(G.shape[0]):
        off = sum(abs(int(G[p, q])) for q in range(G.shape[1]) if q != p)
        num = _frac(int(G[p, p]) - off, e)
        den = _frac(int(np.abs(Yi[p]).sum()), y) * rho
        out.append((num, den, _frac(int(mag[p]), e)))
    return out


def exact_margin(A, R, Y) -> Fraction:
    return min(num / den for num, den, _ in exact_margin_parts(A, R, Y))


# -- checks --------------------------------------------------------------------------------
def check_upper(A, U, W) -> tuple[float, Fraction]:
    """Soundness, tightness and the documented allowance of one upper witness."""
    M, N = A.shape
    k = U.shape[1]
    cert = certified_upper_error(A, U, W)
    rows = exact_upper_rows(A, U, W)
    exact = max(rows)
    assert cert < np.inf
    assert Fraction(cert) >= exact, f"certified {cert!r} < exact error {float(exact)!r}"
    # Tightness: the computed residual exceeds the true one by at most gamma_(k+1) times
    # the magnitudes (then times 1 + gamma_N); the allowance adds gamma_(k+2) 1.01^2 of
    # them. So certified <= max_i [e_i (1 + gamma_N) + 2.1 gamma_(k+2) mag_i] (1 + 8u).
    mags = exact_upper_magnitudes(A, U, W)
    tight = (
        max(
            e * (1 + gamma_exact(N)) + Fraction(21, 10) * gamma_exact(k + 2) * g
            for e, g in zip(rows, mags, strict=True)
        )
        * (1 + 8 * U_)
        + (N * (k + 2) + 16) * 4 * TINY
    )
    assert Fraction(cert) <= tight, f"certified {cert!r} far above exact {float(exact)!r}"
    # The documented allowance, evaluated exactly on the verifier's own rounded
    # intermediates s_i and |U|(|W|^T 1) + |A| 1 (relaxed by 8u for its own rounding):
    with threadpool_limits(limits=1, user_api="blas"):
        B = U @ W.T if k else np.zeros_like(A)
        mU = np.abs(U) @ np.abs(W).sum(axis=0) if k else np.zeros(M)
    s = np.abs(A - B).sum(axis=1)
    m_hat = mU + np.abs(A).sum(axis=1)
    safety2 = Fraction(101, 100) ** 2
    doc = max(
        Fraction(si) * (1 + gamma_exact(N))
        + gamma_exact(k + 2) * safety2 * (1 - 8 * U_) * Fraction(mi)
        for si, mi in zip(s, m_hat, strict=True)
    )
    assert Fraction(cert) >= doc, f"certified {cert!r} below the documented allowance"
    # ... and the Notes' final factor 1 + 4u on the float bound the verifier forms: the
    # verifier's own expression (same float operations, so the same bits), times exactly
    # 1 + 4u, less one rounding of that product (u).
    e_hat = s * (1.0 + gamma(N)) + gamma(k + 2) * ((mU + np.abs(A).sum(axis=1)) * 1.01) * 1.01
    last = Fraction(float(np.max(e_hat))) * (1 + 4 * U_) * (1 - U_)
    assert Fraction(cert) >= last, f"certified {cert!r} below (1 + 4u) times the bound"
    return cert, exact


def check_lower(A, R, Y) -> tuple[float, Fraction]:
    """Soundness and tightness of one lower witness."""
    M, N = A.shape
    m = R.shape[1]
    cert = certified_lower_margin(A, R, Y)
    parts = exact_margin_parts(A, R, Y)
    exact = min(num / den for num, den, _ in parts)
    assert cert > -np.inf
    assert cert < np.inf and Fraction(cert) <= exact, (
        f"certified {cert!r} > exact margin {float(exact)!r}"
    )
    # Tightness: the computed numerator is within 4 gamma_(M+N+m+2) |Y||A||R| of the
    # exact one, the denominator within (M + m + 16) u.
    slack = max(4 * gamma_exact(M + N + m + 2) * mag / den for _, den, mag in parts)
    tight = exact - slack - abs(exact) * (M + m + 16) * 2 * U_
    assert Fraction(cert) >= tight, f"certified {cert!r} far below exact {float(exact)!r}"
    # The documented allowance: the Notes' numerator and inflated norms, computed here
    # from the same rounded intermediates; only the quotient's rounding and the final
    # 1 -/+ 4u are left to the verifier, so it must be at most q (1 -/+ 4u)(1 +/- 2u).
    with threadpool_limits(limits=1, user_api="blas"):
        G = (Y @ A) @ R
        D = gamma(M + N + m) * ((np.abs(Y) @ np.abs(A)) @ np.abs(R)) * 1.01
    diag, off = np.diag(G), np.abs(G) + D
    off_sum = off.sum(axis=1) - np.diag(off)
    num = diag - np.diag(D) - off_sum
    num -= gamma(m + 2) * (np.abs(diag) + np.diag(D) + off_sum)
    den = (np.abs(Y).sum(axis=1) * (1.0 + gamma(M))) * (
        float(np.abs(R).sum(axis=1).max()) * (1.0 + gamma(m))
    )
    if den.min() >= 2.0**-100:  # (else the verifier re-checks a scaled copy)
        q = min(Fraction(a) / Fraction(b) for a, b in zip(num, den, strict=True))
        doc = q * (1 - 4 * U_) * (1 + 2 * U_) if q > 0 else q * (1 + 4 * U_) * (1 - 2 * U_)
        if abs(q) >= Fraction(2) ** -400:
            assert Fraction(cert) <= doc, f"certified {cert!r} above the documented allowance"
            # The final factor exactly: each float quotient fl(num_p / den_p) (the
            # verifier's own operation, so the same bits) times 1 - 4u (positive) or
            # 1 + 4u (negative), plus at most one rounding of that product (u).
            with np.errstate(all="ignore"):
                qf = num / den
            last = min(
                Fraction(float(r)) * ((1 - 4 * U_) * (1 + U_) if r > 0 else (1 + 4 * U_) * (1 - U_))
                for r in qf
            )
            assert Fraction(cert) <= last, f"certified {cert!r} above (1 -/+ 4u) times the quotient"
    return cert, exact


# -- generators -----------------------------------------------------------------------------
def softmax_rows(rng, M, N, scale):
    L = rng.standard_normal((M, N)) * scale
    E = np.exp(L - L.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def cancelling_factors(rng, M, N, k, big=1e8):
    """``(T, U, W)``: T row-stochastic and ``(U, W)`` of rank k with entries near ``big`` whose product is near a row-stochastic
    matrix: a rank-``k0`` SVD part plus pairs of columns ``(big x, z)``, ``(big x, -z)``
    that cancel exactly in exact arithmetic but not in floating point."""
    T = softmax_rows(rng, M, N, 2.0)
    k0 = k - 2 * ((k - 1) // 2)  # 1 or 2 columns of the SVD, the rest in cancelling pairs
    cols_u, cols_w = [], []
    if k0:
        Us, s, Vt = np.linalg.svd(T, full_matrices=False)
        cols_u.append(Us[:, :k0] * s[:k0])
        cols_w.append(Vt[:k0].T)
    for _ in range((k - k0) // 2):
        x = rng.standard_normal(M) * big
        z = rng.standard_normal(N)
        cols_u += [x[:, None], x[:, None] * (1 + 2.0**-40)]
        cols_w += [z[:, None], -z[:, None]]
    return T, np.hstack(cols_u), np.hstack(cols_w)


def lossy_sum_rows(M, N, where="front"):
    """Rows whose computed l1 sums lose about ``(N - 8) / 8`` ulps: ones in the first eight
    places (each of numpy's eight pairwise accumulators starts at 1) and entries just
    below half an ulp of 1 elsewhere, each of which rounds away in its accumulator."""
    A = np.full((M, N), 0.99 * 2.0**-53)
    if where == "front":
        A[:, : min(8, N)] = 1.0
    else:
        A[:, ::8] = 1.0
    return A


# -- upper witnesses -------------------------------------------------------------------------
UPPER_CASES = [(7, 9, 1), (16, 16, 4), (24, 40, 9), (33, 20, 16), (48, 64, 30)]


@pytest.mark.parametrize("M,N,k", UPPER_CASES)
@pytest.mark.parametrize("seed", range(2))
def test_upper_cancelling_factors_A_is_the_computed_product(M, N, k, seed):
    """``A = fl(U W^T)``: the computed residual is zero, the exact one is the rounding of
    products of size ~1e8, which only the ``|U||W|^T`` allowance covers."""
    rng = np.random.default_rng(seed)
    _, U, W = cancelling_factors(rng, M, N, k)
    with threadpool_limits(limits=1, user_api="blas"):
        A = U @ W.T
    _, exact = check_upper(A, U, W)
    assert exact > 0  # the case has a true error to miss


@pytest.mark.parametrize("M,N,k", UPPER_CASES)
def test_upper_cancelling_factors_of_a_softmax(M, N, k):
    rng = np.random.default_rng(M + N + k)
    T, U, W = cancelling_factors(rng, M, N, k)
    check_upper(T, U, W)


@pytest.mark.parametrize("N", [8, 24, 64, 128])
@pytest.mark.parametrize("where", ["front", "spread"])
def test_upper_rows_whose_sums_round_down(N, where):
    """The zero witness (k = 0) and a rank-1 witness with ``W = 0`` on rows whose computed
    l1 sums lose up to ``(N - 8) / 8`` ulps: the ``gamma_N`` row-sum term must cover it."""
    A = lossy_sum_rows(3, N, where)
    check_upper(A, np.zeros((3, 0)), np.zeros((N, 0)))
    check_upper(A, np.ones((3, 1)), np.zeros((N, 1)))


@pytest.mark.parametrize("M,N,k", [(10, 10, 1), (20, 31, 5), (40, 24, 12), (64, 64, 64)])
def test_upper_heavy_tailed(M, N, k):
    """Near one-hot rows, Cauchy factors, and a good SVD witness of the same matrix."""
    rng = np.random.default_rng(k)
    A = softmax_rows(rng, M, N, 12.0)
    check_upper(A, rng.standard_cauchy((M, k)), rng.standard_cauchy((N, k)) * 1e-3)
    Us, s, Vt = np.linalg.svd(A, full_matrices=False)
    kk = min(k, M, N)
    check_upper(A, Us[:, :kk] * s[:kk], Vt[:kk].T)


def test_upper_exact_witness_within_ulps():
    """``U = A, W = I``: the exact error is 0 and the certificate a few ulps of gamma."""
    rng = np.random.default_rng(3)
    A = softmax_rows(rng, 12, 12, 1.0)
    cert, exact = check_upper(A, A.copy(), np.eye(12))
    assert exact == 0 and 0 < cert < 20 * UNIT_ROUNDOFF * 12


@pytest.mark.slow
@pytest.mark.parametrize("M,N,k", [(128, 128, 64), (96, 128, 33), (128, 80, 48)])
def test_upper_cancelling_at_engine_sizes(M, N, k):
    rng = np.random.default_rng(M * k)
    T, U, W = cancelling_factors(rng, M, N, k)
    with threadpool_limits(limits=1, user_api="blas"):
        A = U @ W.T
    check_upper(A, U, W)
    check_upper(T, U, W)


# -- lower witnesses -------------------------------------------------------------------------
def group_witness(rng, A, m):
    """A Gastinel-Kahan witness: key columns in m contiguous groups, Y the normalized rows
    of ``(A_S R)^-1`` at m rows S."""
    M, N = A.shape
    R = np.zeros((N, m))
    for j, g in enumerate(np.array_split(np.arange(N), m)):
        R[g, j] = 1.0
    S = rng.choice(M, size=m, replace=False)
    Z = np.linalg.inv(A[S] @ R)
    Y = np.zeros((m, M))
    Y[:, S] = Z / np.abs(Z).sum(axis=1, keepdims=True)
    return R, Y


def cancelling_lower(rng, A, m, big=1e8):
    """``(R, Y)`` with entries near ``big`` that cancel in ``Y A R``: a group witness plus
    ``big (v, -v)`` added to pairs of columns of R and ``big (w, w)`` to Y's rows in a
    direction that ``A R``'s added part annihilates in exact arithmetic (not in floats)."""
    R, Y = group_witness(rng, A, m)
    M, N = A.shape
    v = rng.standard_normal(N) * big
    R = R + np.outer(v, np.tile([1.0, -1.0], m)[:m]) * (m > 1)
    # Y gets a big component along a vector orthogonal to A v (so Y A v cancels).
    Av = A @ v
    w = rng.standard_normal(M)
    w -= (w @ Av) / (Av @ Av) * Av
    Y = Y + np.outer(np.ones(m), w) * big * 1e-8
    return R, Y


LOWER_CASES = [(6, 7, 1), (12, 12, 3), (24, 40, 6), (40, 24, 10), (64, 64, 16)]


@pytest.mark.parametrize("M,N,m", LOWER_CASES)
@pytest.mark.parametrize("seed", range(2))
def test_lower_group_witnesses(M, N, m, seed):
    rng = np.random.default_rng(seed)
    A = softmax_rows(rng, M, N, 3.0) + 2 * np.eye(M, N)
    A /= A.sum(axis=1, keepdims=True)
    check_lower(A, *group_witness(rng, A, m))


@pytest.mark.parametrize("M,N,m", LOWER_CASES)
def test_lower_cancelling_entries(M, N, m):
    rng = np.random.default_rng(M + m)
    A = softmax_rows(rng, M, N, 3.0) + 2 * np.eye(M, N)
    A /= A.sum(axis=1, keepdims=True)
    check_lower(A, *cancelling_lower(rng, A, m))


@pytest.mark.parametrize("M,N,m", [(8, 3, 6), (16, 4, 12), (40, 8, 33)])
def test_lower_more_columns_than_keys(M, N, m):
    """``m > N``: ``Y A R`` has rank at most ``N < m``, so the exact margin is at most 0
    and nothing may be certified; the allowance's ``gamma`` indices count the ``m``
    columns (not the ``N`` rows of ``R``), which the allowance check sees through entries
    near ``1e8`` that cancel (the ``D`` term then dominates the numerator)."""
    rng = np.random.default_rng(M * N + m)
    A = softmax_rows(rng, M, N, 3.0)
    R = rng.standard_normal((N, m)) * 1e8
    Y = np.linalg.pinv(A @ R)
    cert, exact = check_lower(A, R, Y)
    assert exact <= 0 and cert < 0


@pytest.mark.parametrize("m", [2, 5, 16])
def test_lower_pseudo_inverse_off_diagonal_pure_rounding(m):
    """``Y = (A R)^+`` with big R: ``Y A R`` is the identity up to rounding, so every
    off-diagonal entry is rounding that only the ``D`` term can bound."""
    rng = np.random.default_rng(m)
    A = softmax_rows(rng, 48, 40, 2.0)
    R = rng.standard_normal((40, m)) * 1e8
    Y = np.linalg.pinv(A @ R)
    cert, exact = check_lower(A, R, Y)
    assert exact > 0


@pytest.mark.parametrize("M,N,m", [(8, 8, 2), (30, 20, 4), (20, 30, 7)])
def test_lower_heavy_tailed(M, N, m):
    rng = np.random.default_rng(N)
    A = softmax_rows(rng, M, N, 12.0)
    check_lower(A, rng.standard_cauchy((N, m)), rng.standard_cauchy((m, M)))
    check_lower(A, *group_witness(rng, A, m))


@pytest.mark.slow
@pytest.mark.parametrize("M,N,m", [(128, 128, 64), (96, 128, 40)])
def test_lower_at_engine_sizes(M, N, m):
    rng = np.random.default_rng(M + N + m)
    A = softmax_rows(rng, M, N, 4.0) + 3 * np.eye(M, N)
    A /= A.sum(axis=1, keepdims=True)
    check_lower(A, *group_witness(rng, A, m))
    check_lower(A, *cancelling_lower(rng, A, m))


# -- underflow: witnesses whose products fall below 2^-1022 -----------------------------------
@pytest.mark.parametrize("N,k", [(4, 1), (64, 1), (64, 2), (128, 8)])
def test_upper_products_that_underflow(N, k):
    """Products of 2^-537 and 0.49 2^-537 round to 0: the exact error of a row is
    ``0.49 N k`` subnormal units, which the verifier before the underflow fix called 0
    (its absolute allowance must grow with ``N k``)."""
    U = np.full((1, k), 2.0**-537)
    W = np.full((N, k), 0.49 * 2.0**-537)
    cert = certified_upper_error(np.zeros((1, N)), U, W)
    exact = max(exact_upper_rows(np.zeros((1, N)), U, W))
    assert exact > 0
    assert Fraction(cert) >= exact, f"certified {cert!r} < exact error {float(exact)!r}"


@pytest.mark.parametrize("i,j,e", [(1, 5, -537), (21, 15, -537), (3, 7, -540)])
def test_lower_subnormal_scale_cannot_inflate_a_margin(i, j, e):
    """``Y = c I``, ``R = d I`` with ``c d`` subnormal: the margin is scale invariant
    (exactly 0.8 here), yet rounding in subnormal range made the verifier certify about
    1.0 before it re-checked such witnesses scaled up, which claimed ``r_eps >= 2`` at
    ``eps = 0.9`` for a matrix within 0.8 of rank one."""
    A = np.array([[0.9, 0.1], [0.1, 0.9]])
    c, d = i * 2.0**e, j * 2.0 ** (-1074 - e) / 8
    R, Y = d * np.eye(2), c * np.eye(2)
    cert, exact = certified_lower_margin(A, R, Y), exact_margin(A, R, Y)
    assert cert < np.inf and Fraction(cert) <= exact, (
        f"certified {cert!r} > exact margin {float(exact)!r}"
    )
    # the same witness at a normal scale gives the same (tight) margin
    check_lower(A, np.eye(2), np.eye(2))


@pytest.mark.parametrize("seed", range(3))
def test_lower_subnormal_norms_of_a_large_matrix(seed):
    """``A`` of size ``2^1000`` and ``Y``, ``R`` whose norms multiply to a subnormal: ``G``
    is of normal size, but the denominator has lost most of its bits (and ``D`` is far
    above any underflow allowance), so only the scaled re-check keeps the margin sound."""
    rng = np.random.default_rng(seed)
    A = 2.0**1000 * (np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]]) + rng.random((3, 2)) * 0.05)
    for i in range(1, 12):
        R = np.eye(2) * (i * 2.0**-537) + rng.random((2, 2)) * 2.0**-545
        # rows of different sizes and a third column: scaling columns of Y instead of its
        # rows would change the witness
        Y = np.array([[3.0, 0.25, 0.1], [0.5 * 2.0**-6, 5.0 * 2.0**-5, 0.0]]) * 2.0**-540
        cert, exact = certified_lower_margin(A, R, Y), exact_margin(A, R, Y)
        assert cert < np.inf and Fraction(cert) <= exact, (
            f"certified {cert!r} > exact margin {float(exact)!r}"
        )
        assert cert > 0  # a certificate is given (not -inf)


@pytest.mark.parametrize("seed", range(4))
def test_lower_products_that_underflow_under_a_huge_R(seed):
    """``Y`` near ``2^-1000`` and ``R`` near ``2^1000`` (norms of product 1, no rescaling):
    the products of ``Y A`` fall below ``2^-1022`` and keep only ~30 bits, which ``R``
    then scales back to normal size. Only the absolute underflow allowance of ``D``
    covers that loss."""
    rng = np.random.default_rng(seed)
    A = (np.array([[0.9, 0.1], [0.1, 0.9]]) + rng.random((2, 2)) * 0.05) * 2.0**-30
    R = (np.eye(2) + rng.random((2, 2)) * 0.01) * 2.0**1000
    Y = (np.eye(2) * 0.7 + rng.random((2, 2)) * 0.01) * 2.0**-1000
    cert, exact = certified_lower_margin(A, R, Y), exact_margin(A, R, Y)
    assert cert < np.inf and Fraction(cert) <= exact, (
        f"certified {cert!r} > exact margin {float(exact)!r}"
    )


def test_lower_tiny_margin_reports_no_certificate():
    """A margin within 2^-500 of zero accepts no eps > 0."""
    A = np.array([[0.5, 0.5], [0.5, 0.5]])
    mu = certified_lower_margin(A, np.eye(2), np.eye(2))
    assert mu < 0 and Fraction(mu) <= exact_margin(A, np.eye(2), np.eye(2))


@pytest.mark.parametrize("M,N", [(8, 8), (16, 16), (32, 8)])
def test_lower_underflow_allowance_grows_with_M_N_and_R(M, N):
    """Every product of ``Y A`` is ``0.51`` subnormal units and rounds up to one unit, so
    ``fl(Y A)`` is about twice ``Y A``; ``R`` of size ``2^500`` then carries that error
    into normal range: ``G`` is about twice the exact one, with a margin of about
    ``N 2^-474`` (above the 2^-500 cutoff of tiny margins). Only an absolute allowance
    of order ``M N max_i ||R_i||_1 2^-1074`` in ``D`` keeps the margin sound."""
    Y = np.full((1, M), 2.0**-600)
    A = np.full((M, N), 0.51 * 2.0**-474)
    R = np.full((N, 1), 2.0**520)
    cert, exact = certified_lower_margin(A, R, Y), exact_margin(A, R, Y)
    assert exact > 2.0**-480
    assert cert < np.inf and Fraction(cert) <= exact, (
        f"certified {cert!r} > exact margin {float(exact)!r}"
    )


@pytest.mark.parametrize("sign", [1, -1])
def test_lower_margins_of_subnormal_size_certify_nothing(sign):
    """``A`` of entries a few subnormal units: the margin is ``+-2 2^-1074`` exactly, far
    below what float64 can certify, so the verifier must report a negative number (no
    ``eps > 0`` accepted), whichever the sign of the exact margin."""
    t = 2.0**-1074
    A = t * (np.array([[3.0, 1.0], [1.0, 3.0]]) if sign > 0 else np.array([[1.0, 3.0], [3.0, 1.0]]))
    cert, exact = (
        certified_lower_margin(A, np.eye(2), np.eye(2)),
        exact_margin(A, np.eye(2), np.eye(2)),
    )
    assert exact == sign * 2 * TINY
    assert cert < 0
    assert Fraction(cert) <= exact, f"certified {cert!r} > exact margin {float(exact)!r}"


def test_lower_zero_row_of_Y_or_zero_R_certifies_nothing():
    A = np.full((2, 2), 0.5)
    Y = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert certified_lower_margin(A, np.eye(2), Y) == -np.inf
    assert certified_lower_margin(A, np.zeros((2, 2)), np.eye(2)) == -np.inf


@pytest.mark.parametrize("k", [1, 2, 7])
def test_lower_subnormal_quotient_is_not_rounded_up_into_a_certificate(k):
    """A margin of ``(k + 0.99) 2^-1074`` (``A = [[k t, t]]``, ``R = [[1], [0.99]]``,
    ``Y = [[64]]``): the quotient is subnormal and rounds to ``(k + 1) 2^-1074``, above the
    exact margin, which ``1 - 4u`` cannot undo; the cutoff of tiny margins must catch it."""
    t = 2.0**-1074
    A, R, Y = np.array([[k * t, t]]), np.array([[1.0], [0.99]]), np.array([[64.0]])
    cert, exact = certified_lower_margin(A, R, Y), exact_margin(A, R, Y)
    assert cert < np.inf and Fraction(cert) <= exact, (
        f"certified {cert!r} > exact margin {float(exact)!r}"
    )
