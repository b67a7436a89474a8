"""The engine's own certified ends, re-checked in exact arithmetic.

Small profiles (N = 24 to 40) of softmax matrices and of a real MiniLM head: every stored
upper witness's exact error must be at most its certified error, every stored lower
witness's exact margin at least its certified margin, so the brackets read off the profile
hold in exact arithmetic.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from analysis.brackets import LowerWitness, Profile, UpperWitness, profile_matrix
from tests.brackets.test_verify_exact import exact_margin, exact_upper_rows, softmax_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "minilm_l64_4heads.npy"


def _softmax(seed: int, M: int, N: int, scale: float) -> np.ndarray:
    return softmax_rows(np.random.default_rng(seed), M, N, scale)


def _minilm(head: int, n: int) -> np.ndarray:
    """The leading ``n x n`` block of a bundled MiniLM head, each row divided by its sum
    (a new row-stochastic matrix, profiled as such)."""
    A = np.load(EXAMPLE)[head].astype(np.float64)[:n, :n]
    return A / A.sum(axis=1, keepdims=True)


CASES = {
    "softmax-24": lambda: _softmax(0, 24, 24, 2.0),
    "softmax-32x40": lambda: _softmax(1, 32, 40, 3.0),
    "minilm-h1-32": lambda: _minilm(1, 32),
    "minilm-h3-40": lambda: _minilm(3, 40),
}


def _check_ends(A: np.ndarray, prof: Profile) -> tuple[int, int]:
    n_up = n_lo = 0
    for w in prof.upper.values():
        assert isinstance(w, UpperWitness)
        if w.U is None:  # the identity witness, never stored with arrays
            continue
        U, W = np.asarray(w.U, dtype=np.float64), np.asarray(w.W, dtype=np.float64)
        exact = max(exact_upper_rows(A, U, W))
        assert exact <= Fraction(w.error), f"rank {w.rank}: exact {float(exact)!r} > {w.error!r}"
        n_up += 1
    for w in prof.lower.values():
        assert isinstance(w, LowerWitness)
        R, Y = np.asarray(w.R, dtype=np.float64), np.asarray(w.Y, dtype=np.float64)
        exact = exact_margin(A, R, Y)
        assert exact >= Fraction(w.margin), f"size {w.size}: exact {float(exact)!r} < {w.margin!r}"
        n_lo += 1
    return n_up, n_lo


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_ends_hold_in_exact_arithmetic(case):
    A = CASES[case]()
    prof = profile_matrix(A, eps=(0.05, 0.1, 0.2), effort="fast", prune=False)
    assert prof.reverify(A) == []  # the witnesses certify for this very A
    n_up, n_lo = _check_ends(A, prof)
    assert n_up >= 2 and n_lo >= 1  # there were ends to check
    for eps in (0.05, 0.1, 0.2):
        lo, hi = prof.bracket(eps)
        assert lo <= hi
