"""Factor radius kappa(T): closed forms, gauge invariance, certificate, optional SDP check."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import hadamard

from analysis.descriptors.kappa import factor_radius
from analysis.validation import ParameterError


def test_rank_one_is_exact(rng):
    u = rng.normal(size=(9, 1))
    w = rng.normal(size=(6, 1)) * 3.0
    res = factor_radius(u, w)
    assert res.value == np.abs(u).max() * np.abs(w).max()
    assert res.lower == res.value and res.gap == 0.0


@pytest.mark.parametrize("r", [2, 4])
def test_equal_norm_orthogonal_factors_in_any_gauge(rng, r):
    # U = c_u H_16[:, :r], W = c_w H_8[:, :r]: orthogonal columns, equal row norms sqrt(r),
    # so kappa = r c_u c_w = ||T||_* / sqrt(M N), attained at P = I.
    U, W = 0.5 * hadamard(16)[:, :r], 3.0 * hadamard(8)[:, :r]
    G = rng.normal(size=(r, r)) + 2 * np.eye(r)
    res = factor_radius(U @ G, W @ np.linalg.inv(G).T)
    exact = r * 0.5 * 3.0
    assert res.lower <= exact * (1 + 1e-12)
    assert res.value >= exact * (1 - 1e-12)
    assert res.value == pytest.approx(exact, rel=1e-4)
    T = U @ W.T
    nuclear = np.linalg.svd(T, compute_uv=False).sum() / np.sqrt(T.size)
    assert nuclear == pytest.approx(exact, rel=1e-12)


def test_psd_interaction_gives_max_diagonal(rng):
    # T = V V^T: P = I attains max ||v_i||^2 = max T_ii, which max |T_ij| certifies.
    V = rng.normal(size=(12, 3))
    G = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    res = factor_radius(V @ G, V @ np.linalg.inv(G).T)
    assert res.value == pytest.approx((V**2).sum(1).max(), rel=1e-4)
    assert res.gap <= 1e-4


def test_certificate_brackets_value_and_is_gauge_free(rng):
    U, W = rng.normal(size=(30, 5)), rng.normal(size=(25, 5))
    res = factor_radius(U, W, tol=1e-6)
    assert 0 <= res.gap <= 1e-6 + 1e-12
    assert res.lower <= res.value
    T = U @ W.T
    assert res.lower >= np.abs(T).max()
    # Attained value recomputed from P: max ||L^T u_i|| max ||L^-1 w_j||.
    L = np.linalg.cholesky(res.P)
    direct = (
        np.linalg.norm(U @ L, axis=1).max() * np.linalg.norm(np.linalg.solve(L, W.T), axis=0).max()
    )
    assert res.value == pytest.approx(direct, rel=1e-12)
    G = rng.normal(size=(5, 5))
    other = factor_radius(U @ G, W @ np.linalg.inv(G).T, tol=1e-6)
    assert other.value == pytest.approx(res.value, rel=2e-6)


def test_matches_cvxpy_sdp_on_a_small_problem(rng):
    cp = pytest.importorskip("cvxpy")
    U, W = rng.normal(size=(10, 3)), rng.normal(size=(8, 3))
    P = cp.Variable((3, 3), symmetric=True)
    g = cp.Variable()
    cons = [cp.sum(cp.multiply(U @ P, U), axis=1) <= 1]
    for w in W:
        col = w.reshape(3, 1)
        cons.append(cp.bmat([[P, col], [col.T, cp.reshape(g, (1, 1), order="C")]]) >> 0)
    cp.Problem(cp.Minimize(g), cons).solve(solver="CLARABEL")
    res = factor_radius(U, W, tol=1e-7)
    assert res.value == pytest.approx(np.sqrt(g.value), rel=1e-5)


def test_bad_factors_name_the_parameter():
    with pytest.raises(ParameterError, match="U, W"):
        factor_radius(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ParameterError, match="tol"):
        factor_radius(np.ones((3, 2)), np.ones((3, 2)), tol=0)
