"""Upper-witness constructions: the row cover (Gonzalez farthest-point traversal)."""

from __future__ import annotations

import numpy as np

from analysis.brackets.upper import row_cover_order, row_cover_witness
from analysis.brackets.verify import certified_upper_error


def _random_attention(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    S = rng.normal(size=(m, n)) * 2.0
    S -= S.max(1, keepdims=True)
    A = np.exp(S)
    return A / A.sum(1, keepdims=True)


def test_row_cover_copies_the_nearest_kept_row():
    rng = np.random.default_rng(0)
    A = _random_attention(rng, 40, 30)
    order, radius = row_cover_order(A)
    for k in (1, 5, 17):
        U, W = row_cover_witness(A, order, k)
        keep = order[:k]
        # Brute force on this small matrix: l1 distance of every row to every kept row.
        D = np.abs(A[:, None, :] - A[None, keep, :]).sum(-1)
        assert U.shape == (40, k) and W.shape == (30, k)
        np.testing.assert_array_equal(U.sum(1), np.ones(40))
        np.testing.assert_array_equal(U.argmax(1), D.argmin(1))
        np.testing.assert_array_equal(W, A[keep].T)
        # Its error is the largest distance to the nearest kept row; radius[k] also lets a
        # row be "copied" from the zero row (distance = its l1 norm), so it is no larger.
        err = np.abs(A - U @ W.T).sum(1).max()
        np.testing.assert_allclose(err, D.min(1).max(), rtol=1e-12)
        assert radius[k] <= err * (1 + 1e-12)
        assert certified_upper_error(A, U, W) >= err


def test_row_cover_radius_is_non_increasing_and_zero_at_full_rank():
    rng = np.random.default_rng(1)
    A = _random_attention(rng, 25, 25)
    _, radius = row_cover_order(A)
    assert np.all(np.diff(radius) <= 0)
    assert radius[-1] == 0.0
    np.testing.assert_allclose(radius[0], A.sum(1).max())
