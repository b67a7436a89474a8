"""The verifier on inputs that are not float64: the same certificate as their float64 values.

float32, float16 and small integer arrays hold values that float64 represents exactly, so
the verifier must promote them and certify exactly what it certifies for the float64
copies. Computing in the input's own precision is unsound: the allowance is built from
``u = 2^-53``, while a float32 product rounds at ``2^-24`` (a float32 rank-4 witness of a
16 x 16 matrix then certifies ``3.9e-14`` where the exact error is ``8.7e-7``), and an int8
product wraps around. Each case also checks soundness against the exact value (rationals).
Complex input, whose imaginary part a cast would drop, is refused.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError
from tests.brackets.test_verify_exact import exact_margin, exact_upper_rows

LOW = [np.float32, np.float16, np.int8, np.int16, np.int32, np.uint8]
ROLES = ["all", "matrix", "factors"]


def _upper_case(dtype, rng):
    """``(A, U, W)`` of ``dtype``: ``A`` the product computed in that dtype, so a verifier
    that multiplies in it sees a zero residual while the exact residual is its rounding
    (floats) or its wrap-around (ints)."""
    M, N, k = 16, 16, 4
    if np.dtype(dtype).kind == "f":
        U = rng.uniform(0.1, 1.0, size=(M, k)).astype(dtype)
        W = rng.uniform(0.1, 1.0, size=(N, k)).astype(dtype)
    else:
        U = rng.integers(9, 12, size=(M, k)).astype(dtype)  # 4 products of ~100: wraps int8
        W = rng.integers(9, 12, size=(N, k)).astype(dtype)
    with np.errstate(all="ignore"):
        A = U @ W.T
    return A, U, W


def _lower_case(dtype, rng):
    """``(A, R, Y)`` of ``dtype`` whose ``Y A R`` rounds (floats) or wraps (ints) in it."""
    M, N, m = 12, 12, 6
    if np.dtype(dtype).kind == "f":
        A = (np.eye(M) + rng.uniform(0.0, 0.3, size=(M, N))).astype(dtype)
        R = (np.eye(N, m) + rng.uniform(-1e-3, 1e-3, size=(N, m))).astype(dtype)
        Y = (np.eye(m, M) / 3 + rng.uniform(-1e-3, 1e-3, size=(m, M))).astype(dtype)
    else:
        top = 100 if np.dtype(dtype).itemsize == 1 else 30_000
        A = (np.eye(M, N, dtype=np.int64) * top).astype(dtype)
        R = np.eye(N, m, dtype=np.int64).astype(dtype)
        Y = np.eye(m, M, dtype=np.int64).astype(dtype)
        Y[:, -1] = 1  # one more row of A summed in: 100 + 100 wraps int8, 60000 int16
        A[-1] = top
    return A, R, Y


def _cast(arrays, role, dtype):
    """The float64 arrays, with those of ``role`` in ``dtype``."""
    A, *F = (np.asarray(x, dtype=np.float64) for x in arrays)
    if role in ("all", "matrix"):
        A = A.astype(dtype)
    if role in ("all", "factors"):
        F = [f.astype(dtype) for f in F]
    return A, *F


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("dtype", LOW)
def test_upper_certifies_the_float64_values_of_low_precision_input(dtype, role):
    A, U, W = _cast(_upper_case(dtype, np.random.default_rng(1)), role, dtype)
    A64, U64, W64 = (np.asarray(x, dtype=np.float64) for x in (A, U, W))
    assert all(np.array_equal(x, y) for x, y in ((A, A64), (U, U64), (W, W64)))  # exact
    cert = certified_upper_error(A, U, W)
    exact = max(exact_upper_rows(A64, U64, W64))
    assert Fraction(cert) >= exact, f"certified {cert!r} < exact error {float(exact)!r}"
    assert cert == certified_upper_error(A64, U64, W64)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("dtype", LOW)
def test_lower_certifies_the_float64_values_of_low_precision_input(dtype, role):
    A, R, Y = _cast(_lower_case(dtype, np.random.default_rng(2)), role, dtype)
    A64, R64, Y64 = (np.asarray(x, dtype=np.float64) for x in (A, R, Y))
    cert = certified_lower_margin(A, R, Y)
    exact = exact_margin(A64, R64, Y64)
    assert Fraction(cert) <= exact, f"certified {cert!r} > exact margin {float(exact)!r}"
    assert cert == certified_lower_margin(A64, R64, Y64)


def test_float32_witness_of_the_review_is_not_certified_below_its_error():
    """The review's kind of case: a float32 rank-4 witness of a 16 x 16 matrix, ``A`` its
    float32 product. Exact error ``1.06e-6``; a verifier computing in float32 certifies
    ``4.3e-14`` (the review's matrix: ``3.9e-14`` for ``8.7e-7``)."""
    A, U, W = _upper_case(np.float32, np.random.default_rng(0))
    exact = max(exact_upper_rows(*(np.asarray(x, dtype=np.float64) for x in (A, U, W))))
    assert exact > 1e-8
    cert = certified_upper_error(A, U, W)
    assert Fraction(cert) >= exact, f"certified {cert!r} < exact error {float(exact)!r}"


@pytest.mark.parametrize("which", ["A", "U", "W"])
def test_complex_input_is_refused_not_cast(which):
    """A cast to float64 would drop the imaginary part: ``A = [[1 + 1j]]`` against the exact
    witness of its real part would certify ``~7e-16`` for an error of 1."""
    args = {"A": np.array([[1.0]]), "U": np.array([[1.0]]), "W": np.array([[1.0]])}
    args[which] = args[which] + 1j
    with pytest.raises(ParameterError, match=rf"^{which}: expected a real array"):
        certified_upper_error(args["A"], args["U"], args["W"])
    with pytest.raises(ParameterError, match=r"^R: expected a real array"):
        certified_lower_margin(np.eye(2), np.eye(2) * (1 + 0j), np.eye(2))
    with pytest.raises(ParameterError, match=r"^Y: expected a real array"):
        certified_lower_margin(np.eye(2), np.eye(2), np.array([["1", "0"], ["0", "1"]]))
