"""The verifier: certified numbers bound the exact ones, and broken witnesses fail."""

from fractions import Fraction

import numpy as np
import pytest

from analysis.brackets.verify import certified_lower_margin, certified_upper_error, gamma
from analysis.validation import ParameterError


def _exact_upper(A, U, W):
    """Exact ``max_i sum_j |A_ij - (U W^T)_ij|`` in rational arithmetic (floats are exact rationals)."""
    Af = [[Fraction(x) for x in row] for row in A]
    Uf = [[Fraction(x) for x in row] for row in U]
    Wf = [[Fraction(x) for x in row] for row in W]
    best = Fraction(0)
    for i, row in enumerate(Af):
        s = sum(
            abs(row[j] - sum(Uf[i][c] * Wf[j][c] for c in range(len(Uf[i]))))
            for j in range(len(row))
        )
        best = max(best, s)
    return best


def _exact_margin(A, R, Y):
    Af = [[Fraction(x) for x in row] for row in A]
    Rf = [[Fraction(x) for x in row] for row in R]
    Yf = [[Fraction(x) for x in row] for row in Y]
    M, N, m = len(Af), len(Af[0]), len(Rf[0])
    YA = [[sum(Yf[p][i] * Af[i][j] for i in range(M)) for j in range(N)] for p in range(m)]
    G = [[sum(YA[p][j] * Rf[j][q] for j in range(N)) for q in range(m)] for p in range(m)]
    rn = max(sum(abs(x) for x in row) for row in Rf)
    out = None
    for p in range(m):
        v = (G[p][p] - sum(abs(G[p][q]) for q in range(m) if q != p)) / (
            sum(abs(x) for x in Yf[p]) * rn
        )
        out = v if out is None else min(out, v)
    return out


def test_gamma_closed_form():
    u = 2.0**-53
    assert gamma(10) == pytest.approx(10 * u / (1 - 10 * u), rel=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_certified_upper_bounds_exact_error(seed):
    rng = np.random.default_rng(seed)
    A = rng.random((6, 7))
    A /= A.sum(1, keepdims=True)
    U = rng.normal(size=(6, 3))
    W = rng.normal(size=(7, 3)) * 1e-3
    exact = _exact_upper(A, U, W)
    cert = certified_upper_error(A, U, W)
    assert Fraction(cert) >= exact
    assert cert <= float(exact) * (1 + 1e-12)  # tight, not vacuous


@pytest.mark.parametrize("seed", range(5))
def test_certified_margin_bounds_exact_margin(seed):
    rng = np.random.default_rng(seed)
    A = rng.random((6, 7)) + 3 * np.eye(6, 7)
    A /= A.sum(1, keepdims=True)
    R = np.eye(7, 4) + rng.normal(size=(7, 4)) * 0.01
    Y = np.eye(4, 6) * 2.0 + rng.normal(size=(4, 6)) * 0.01  # unnormalized on purpose
    exact = _exact_margin(A, R, Y)
    cert = certified_lower_margin(A, R, Y)
    assert Fraction(cert) <= exact
    assert cert >= float(exact) - 1e-12


def test_shape_and_finiteness_errors():
    A = np.full((3, 4), 0.25)
    with pytest.raises(ParameterError, match="W"):
        certified_upper_error(A, np.ones((3, 2)), np.ones((5, 2)))
    with pytest.raises(ParameterError, match="U"):
        certified_upper_error(A, np.full((3, 1), np.nan), np.ones((4, 1)))
    with pytest.raises(ParameterError, match="Y"):
        certified_lower_margin(A, np.ones((4, 2)), np.ones((3, 3)))


@pytest.mark.parametrize("seed", [4, 8])
def test_certificates_repeat_under_another_blas_thread_count(seed):
    """A stored value is re-checked exactly (``Profile.reverify``), so the verifier must
    give the same floats under any BLAS thread count of its caller. On a SkylakeX host
    OpenBLAS's two-thread GEMM rounds a ``[101, 256] x [256, 101]`` product differently
    from its one-thread GEMM in about 2% of the entries; with ``Y A R`` close to the
    identity (``Y`` the pseudo-inverse of ``A R``) the off-diagonal entries are pure
    rounding and, for these seeds, the margin moved by an ulp before the verifier fixed
    its thread count (elsewhere the test passes either way)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)
    logits = 3.0 * rng.standard_normal((256, 256))
    A = np.exp(logits - logits.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    m = 101
    R = rng.standard_normal((256, m))
    Y = np.linalg.pinv(A @ R)
    U, s, Vt = np.linalg.svd(A)
    U, W = U[:, :m] * s[:m], Vt[:m].T
    values = []
    for threads in (1, 2, 1):
        with threadpool_limits(limits=threads):
            values.append((certified_lower_margin(A, R, Y), certified_upper_error(A, U, W)))
    assert values[0][0] > 0  # a real (positive) certificate, not -inf
    assert values[0] == values[1] == values[2]


def test_wrong_ndim_and_short_dimensions_name_the_parameter():
    """1-D and 3-D inputs, and a dimension shorter than the others imply, are
    ParameterErrors naming the argument (not numpy's shape errors)."""
    A = np.full((3, 4), 0.25)
    with pytest.raises(ParameterError, match="A"):
        certified_upper_error(np.full(4, 0.25), np.ones((1, 1)), np.ones((4, 1)))
    with pytest.raises(ParameterError, match="A"):
        certified_lower_margin(np.full((1, 3, 4), 0.25), np.ones((4, 1)), np.ones((1, 3)))
    with pytest.raises(ParameterError, match="W"):
        certified_upper_error(A, np.ones((3, 2)), np.ones((3, 2)))  # N = 4 rows expected
    with pytest.raises(ParameterError, match="Y"):
        certified_lower_margin(A, np.ones((4, 2)), np.ones((1, 3)))  # m = 2 rows expected


def test_overflow_gives_no_certificate():
    """Products that overflow to +inf and -inf leave NaN in ``U W^T`` or ``Y A R``: the
    verifier then certifies nothing (error ``inf``, margin ``-inf``), never NaN."""
    A = np.full((1, 2), 0.5)
    U = np.array([[1e200, 1e200]])
    W = np.array([[1e200, -1e200], [1e200, -1e200]])
    assert certified_upper_error(A, U, W) == np.inf
    R = np.array([[1e200, 1.0], [-1e200, 1.0]])
    Y = np.array([[1e200], [1.0]])
    assert certified_lower_margin(A, R, Y) == -np.inf


def test_lower_witness_needs_a_column():
    with pytest.raises(ParameterError, match="R"):
        certified_lower_margin(np.full((3, 4), 0.25), np.ones((4, 0)), np.ones((0, 3)))
