"""Lower-witness constructions: the l1-ball projection and the exact alternating LPs."""

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

from analysis.attention import softmax64
from analysis.brackets import lower as L
from analysis.brackets import lower_ascent as ascent
from analysis.brackets.verify import certified_lower_margin
from tests.fixtures.known import blocks, blocks_threshold, permute


def _project_sort(x: np.ndarray) -> np.ndarray:
    """Reference Euclidean projection onto the l1 unit ball (Duchi et al. 2008, sort-based)."""
    if np.abs(x).sum() <= 1:
        return x.copy()
    u = np.sort(np.abs(x))[::-1]
    cs = np.cumsum(u)
    k = np.arange(1, x.size + 1)
    rho = np.nonzero(u * k > cs - 1)[0][-1]
    theta = (cs[rho] - 1) / (rho + 1)
    return np.sign(x) * np.maximum(np.abs(x) - theta, 0)


def _smooth_head(rng, n=40, d=3, beta=6.0):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return softmax64(X, X, beta)


@pytest.mark.parametrize("length", [1, 2, 7, 33, 128])
def test_projection_matches_sort_reference(rng, length):
    # rows outside (scaled up) and inside (scaled down) the ball, some with zeros and ties
    X = rng.normal(size=(6, 9, length)) * rng.uniform(0.05, 4.0, size=(6, 9, 1))
    X[0, 0] = 0.0
    X[1, 1, : (length + 1) // 2] = 2.0
    ref = np.array([[_project_sort(r) for r in m] for m in X])
    got = ascent.project_rows_l1(torch.from_numpy(X), iters=60).numpy()
    assert np.abs(got - ref).max() <= 1e-12


def test_projection_default_is_feasible_and_keeps_inside_rows(rng):
    X = torch.from_numpy(rng.normal(size=(5, 11, 64)) * rng.uniform(0.001, 0.05, size=(5, 11, 1)))
    X[:, ::2] *= 100.0  # even rows well outside the ball
    P = ascent.project_rows_l1(X)  # default: 3 Michelot iterations, then scaled onto the ball
    norms = P.abs().sum(-1)
    assert float(norms.max()) <= 1.0 + 1e-12
    inside = X.abs().sum(-1) <= 1.0
    assert bool(inside.any()) and bool((~inside).any())
    assert torch.equal(P[inside], X[inside])  # exactly unchanged
    # outside rows land on the sphere and keep their signs (soft thresholding)
    assert torch.allclose(norms[~inside], torch.ones_like(norms[~inside]), atol=1e-12)
    assert bool((P * X >= 0).all())


def test_projection_float32_feasible(rng):
    X = torch.from_numpy(rng.normal(size=(4, 30, 128)).astype(np.float32)) * 3
    assert float(ascent.project_rows_l1(X).abs().sum(-1).max()) <= 1.0 + 1e-5


def test_lower_lr_schedule():
    lr = ascent.lower_lr(torch.tensor([1, 5, 10, 50, 200]))
    assert torch.allclose(lr, torch.tensor([0.05, 0.05, 0.025, 0.005, 0.002], dtype=lr.dtype))


def _best_y_by_primal(B: np.ndarray, p: int) -> float:
    """``min { ||B x||_inf : x_p = 1, ||x||_inf <= 1 }``: the LP dual of the best row ``y_p``."""
    M, m = B.shape
    # vars x (m), s; min s with -s <= B x <= s
    c = np.r_[np.zeros(m), 1.0]
    A_ub = np.vstack([np.c_[B, -np.ones(M)], np.c_[-B, -np.ones(M)]])
    bounds = [(-1, 1)] * m + [(0, None)]
    bounds[p] = (1, 1)
    return linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * M), bounds=bounds, method="highs").fun


def test_lp_best_Y_attains_minimax_value(rng):
    A = _smooth_head(rng)
    labels = L.column_partitions(A, [6])[0]
    R, _, _ = L.group_witness(A, labels, 6)
    R = R + 0.1 * rng.normal(size=R.shape)
    R /= np.abs(R).sum(1, keepdims=True).max()
    Y = L.lp_best_Y(A, R)
    assert np.abs(Y).sum(1).max() <= 1 + 1e-9
    G = (Y @ A) @ R
    rows = np.diag(G) - (np.abs(G).sum(1) - np.abs(np.diag(G)))
    B = A @ R
    for p in range(6):
        assert rows[p] == pytest.approx(_best_y_by_primal(B, p), abs=1e-8)
    # and no feasible random y does better
    for _ in range(200):
        y = rng.normal(size=A.shape[0]) * (rng.random(A.shape[0]) < 0.2)
        y /= max(np.abs(y).sum(), 1e-300)
        g = y @ B
        assert g[0] - np.abs(g[1:]).sum() <= rows[0] + 1e-9


def test_lp_best_R_is_optimal_for_its_Y(rng):
    A = _smooth_head(rng)
    labels = L.column_partitions(A, [5])[0]
    R0, Y0, _ = L.group_witness(A, labels, 5)
    R = L.lp_best_R(A, Y0)
    assert R is not None and np.abs(R).sum(1).max() <= 1 + 1e-9
    base = L.normalized_margins(A, R0, Y0).min()
    got = L.normalized_margins(A, R, Y0).min()
    assert got >= base - 1e-9
    for _ in range(100):  # random feasible signed R never beats the LP optimum
        Rr = R0 + 0.3 * rng.normal(size=R0.shape)
        Rr /= np.abs(Rr).sum(1, keepdims=True)
        assert L.normalized_margins(A, Rr, Y0).min() <= got + 1e-9


def test_lp_best_Y_reaches_gastinel_kahan_on_noisy_blocks(rng):
    sizes = [3, 5, 2, 6, 4]
    h = 0.3
    A = permute(blocks(sizes, h), rng)
    labels = L.column_partitions(A, [5])[0]
    R, _, _ = L.group_witness(A, labels, 5)
    Y = L.lp_best_Y(A, R)
    mu = certified_lower_margin(A, R, Y)
    thr = blocks_threshold(sizes, h)
    assert mu == pytest.approx(thr, rel=1e-8)


def test_lp_polish_never_worse_and_verifies(rng):
    A = _smooth_head(rng, n=48)
    for m in (3, 5, 8):
        labels = L.column_partitions(A, [m])[0]
        R, Y, _ = L.group_witness(A, labels, m)
        start = L.normalized_margins(A, R, Y).min()
        Rp, Yp, mg = L.lp_polish(A, R, Y, rounds=2)
        assert mg >= start
        assert mg == pytest.approx(L.normalized_margins(A, Rp, Yp).min(), abs=1e-12)
        mu = certified_lower_margin(A, Rp, Yp)
        assert mu <= mg + 1e-12 and mu == pytest.approx(mg, abs=1e-9)
