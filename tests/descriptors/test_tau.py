"""tau(T) = 2 tanh(q(C - T) / 4) bounds max_i ||A_i - A~_i||_1, sharply."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.descriptors.describe import describe_arrays
from analysis.descriptors.intrinsic import double_center, projective_residual, residual_error


def gibbs(X: np.ndarray, w: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Weighted Gibbs rows ``w_j exp(X_ij)`` over each row's allowed keys."""
    Z = np.where(mask, X, -np.inf)
    E = w * np.exp(Z - Z.max(1, keepdims=True))
    return E / E.sum(1, keepdims=True)


@pytest.mark.parametrize("seed", range(20))
def test_tau_bounds_the_row_l1_error(seed):
    rng = np.random.default_rng(seed)
    M, N = rng.integers(2, 12, size=2)
    C = rng.normal(size=(M, N)) * rng.uniform(0.1, 5)
    T = C + rng.normal(size=(M, N)) * rng.uniform(0.01, 3)
    w = np.exp(rng.normal(size=N) * 2)
    mask = rng.random((M, N)) < 0.7
    mask[np.arange(M), rng.integers(0, N, size=M)] = True  # every row allows a key
    err = np.abs(gibbs(C, w, mask) - gibbs(T, w, mask)).sum(1).max()
    tau = residual_error(projective_residual(C - T, mask))
    assert err <= tau + 1e-12


@pytest.mark.parametrize("q", [1e-3, 0.1, 1.0, 4.0, 20.0])
def test_two_point_example_attains_tau(q):
    C = np.array([[-q / 4, q / 4]])
    T = np.array([[q / 4, -q / 4]])
    ones = np.ones((1, 2), dtype=bool)
    err = np.abs(gibbs(C, np.ones(2), ones) - gibbs(T, np.ones(2), ones)).sum()
    assert projective_residual(C - T) == pytest.approx(q, rel=1e-15)
    assert abs(err - residual_error(q)) <= 1e-12


def test_attention_is_weighted_gibbs_of_C_and_descriptor_tau_bounds_T_r(make_arrays, rng):
    data = make_arrays(rng, n_layer=1, n_head=1, L=14, d=3, causal=True)
    Q, K, s, mask = data["Q"][0, 0], data["K"][0, 0], data["scale"][0, 0], data["mask"]
    S = s * Q @ K.T
    C = double_center(S)
    w = np.exp(S.mean(0) - S.mean())  # column terms b_j of S = C + a_i + b_j + c
    for t in (1.0, 2.5):
        A = softmax64(Q, K, s, mask, t)
        np.testing.assert_allclose(A, gibbs(C / t, w ** (1 / t), mask), rtol=0, atol=1e-13)
        df = describe_arrays(data, eps=[1.9], temperatures=[t], blocks=["intrinsic"])
        U, sv, Vt = np.linalg.svd(C)
        for r in range(1, 4):
            Tr = (U[:, :r] * sv[:r]) @ Vt[:r]
            err = np.abs(A - gibbs(Tr / t, w ** (1 / t), mask)).sum(1).max()
            assert err <= df[f"intrinsic__tau_r{r}"].iloc[0] + 1e-12
