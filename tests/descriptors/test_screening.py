"""The intrinsic block's fast path: resumable kappa solves, rank screening, shared temperatures.

Reference values come from a straightforward computation kept here: the SVD of the
interaction, q(C - T_r) for every r, and kappa(T_r) for every usable r from the SDP of
docs/method.md section 4 posed in cvxpy (Clarabel), then Pi as the minimum over r.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from analysis.descriptors.describe import describe_matrix
from analysis.descriptors.intrinsic import (
    KAPPA_TOL,
    SCREEN_ITER,
    double_center,
    intrinsic_profile,
    projective_residual,
    residual_error,
)
from analysis.descriptors.kappa import factor_radius

CELLS = [(t, e) for t in (1.0, 2.0) for e in (0.1, 0.2)]


def _decaying_head(seed: int, L: int = 32, d: int = 12):
    """Slowly decaying query spectrum: several ranks usable, the top one the minimizer."""
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((L, d)) * 0.8 ** np.arange(d)
    K = rng.standard_normal((L, d))
    return Q, K, 1.0


def test_resume_follows_one_uninterrupted_solve():
    rng = np.random.default_rng(3)
    U, W = rng.normal(size=(40, 6)), rng.normal(size=(30, 6))
    whole = factor_radius(U, W)
    assert whole.iterations > 2 * SCREEN_ITER  # the split below falls inside the solve
    part = factor_radius(U, W, max_iter=SCREEN_ITER)
    assert part.iterations == SCREEN_ITER and part.state is not None
    # the partial result is already certified: kappa lies in [lower, value]
    assert part.lower <= whole.value * (1 + 1e-12) and whole.lower <= part.value * (1 + 1e-12)
    resumed = factor_radius(U, W, resume=part)
    assert resumed.iterations == whole.iterations
    assert (resumed.value, resumed.lower, resumed.gap) == (whole.value, whole.lower, whole.gap)
    np.testing.assert_array_equal(resumed.P, whole.P)
    # a finished solve has no state and comes back unchanged
    assert whole.state is None and factor_radius(U, W, resume=whole) is whole


def test_resume_rejects_other_objects():
    with pytest.raises(ValueError, match="resume"):
        factor_radius(np.ones((3, 2)), np.eye(3, 2), resume=1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_only_ranks_that_attain_pi_are_solved_to_tolerance(seed):
    # Ranks whose screened lower bound already puts their profile above another rank's
    # attained value are never solved on (before: every rank up to the first value was).
    Q, K, scale = _decaying_head(seed)
    full = intrinsic_profile(Q, K, scale, None, cells=CELLS, prune=False)
    prof = intrinsic_profile(Q, K, scale, None, cells=CELLS)
    assert len(full.kappa) >= 3  # several usable ranks
    r_stars = set()
    for t, e in CELLS:
        f = {
            r: 0.5 * r * np.log2(1 + k.value / t / (e - residual_error(full.q[r - 1], t)) ** 2)
            for r, k in full.kappa.items()
            if residual_error(full.q[r - 1], t) < e
        }
        if f:
            r_stars.add(min(f, key=lambda r: (f[r], r)))
    assert set(prof.kappa) == r_stars
    for r, res in prof.kappa.items():  # the kept solves are the uninterrupted ones
        assert res.value == full.kappa[r].value and res.lower == full.kappa[r].lower


def _sdp_kappa(U: np.ndarray, W: np.ndarray) -> float:
    """kappa(U W^T) from the SDP: min g s.t. u_i^T P u_i <= 1, [[P, w_j], [w_j^T, g]] >= 0."""
    cp = pytest.importorskip("cvxpy")
    r = U.shape[1]
    P = cp.Variable((r, r), symmetric=True)
    g = cp.Variable()
    cons = [cp.sum(cp.multiply(U @ P, U), axis=1) <= 1]
    for w in W:
        col = w.reshape(r, 1)
        cons.append(cp.bmat([[P, col], [col.T, cp.reshape(g, (1, 1), order="C")]]) >> 0)
    cp.Problem(cp.Minimize(g), cons).solve(solver="CLARABEL")
    return float(np.sqrt(g.value))


def _reference(Q, K, scale, mask, bias, temps, eps_grid):
    """{(t, eps): (Pi, r*, interaction_dim)} by the straightforward computation."""
    S = scale * Q @ K.T + (0.0 if bias is None else bias)
    C = double_center(S)
    U, sv, Vt = np.linalg.svd(C)
    rank = int(np.count_nonzero(sv > 1e-9 * sv[0]))
    R = rank if bias is not None else min(Q.shape[1], rank)
    q = [projective_residual(C - (U[:, :r] * sv[:r]) @ Vt[:r], mask) for r in range(1, R)] + [0]
    kap = {}
    out = {}
    for t in temps:
        for e in eps_grid:
            f = {}
            for r in range(1, R + 1):
                tau = residual_error(q[r - 1], t)
                if tau < e:
                    if r not in kap:
                        root = np.sqrt(sv[:r])
                        kap[r] = _sdp_kappa(U[:, :r] * root, Vt[:r].T * root)
                    f[r] = 0.5 * r * np.log2(1 + kap[r] / t / (e - tau) ** 2)
            r_star = min(f, key=lambda r: (f[r], r))
            out[(t, e)] = (f[r_star], r_star, min(f))
    return out


@pytest.mark.parametrize("kind", ["plain", "causal", "bias"])
def test_features_match_a_straightforward_solve(kind):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng({"plain": 11, "causal": 12, "bias": 13}[kind])
    L, d = 12, 4
    Q, K = rng.normal(size=(L, d)), rng.normal(size=(L, d)) * 0.7 ** np.arange(d)
    mask = np.tril(np.ones((L, L), dtype=bool)) if kind == "causal" else None
    bias = 0.3 * rng.normal(size=(L, L)) if kind == "bias" else None
    temps, eps_grid = (0.7, 1.0, 2.0), (0.2, 0.5)
    df = describe_matrix(
        Q=Q,
        K=K,
        scale=0.5,
        mask=mask,
        diagnostics=True,
        eps=eps_grid,
        temperatures=temps,
        blocks=["intrinsic"],
        bias=bias,
    )
    ref = _reference(Q, K, 0.5, mask, bias, temps, eps_grid)
    if kind == "bias":
        assert df["intrinsic__rank_C"].iloc[0] > d  # the bias lifts the rank above d
    for row in df.itertuples():
        pi, r_star, dim = ref[(row.temperature, row.eps)]
        # kappa within the block's solver gap (<= KAPPA_TOL) of the SDP's, which is
        # accurate to about 1e-5 relative: Pi (elasticity in kappa below 1) to their sum
        assert row.intrinsic__Pi == pytest.approx(pi, rel=KAPPA_TOL + 1e-5)
        assert row.intrinsic__r_star == r_star
        assert row.intrinsic__interaction_dim == dim


@pytest.mark.parametrize("kind", ["plain", "causal", "bias"])
def test_temperatures_together_equal_each_alone(kind):
    # The study describes every head at all its temperatures at once (one SVD, one set of
    # kappa solves); each temperature described alone gives the same floats.
    rng = np.random.default_rng(21)
    L, d = 24, 8
    Q, K = rng.normal(size=(L, d)) * 0.7 ** np.arange(d), rng.normal(size=(L, d))
    mask = np.tril(np.ones((L, L), dtype=bool)) if kind == "causal" else None
    bias = 0.2 * rng.normal(size=(L, L)) if kind == "bias" else None
    temps, eps_grid = (0.5, 1.0, 2.0), (0.05, 0.1, 0.2)
    together = describe_matrix(
        Q=Q,
        K=K,
        scale=0.4,
        mask=mask,
        diagnostics=True,
        eps=eps_grid,
        temperatures=temps,
        blocks=["intrinsic"],
        bias=bias,
    )
    assert together["intrinsic__Pi"].notna().any()
    for t in temps:
        alone = describe_matrix(
            Q=Q,
            K=K,
            scale=0.4,
            mask=mask,
            diagnostics=True,
            eps=eps_grid,
            temperatures=(t,),
            blocks=["intrinsic"],
            bias=bias,
        )
        joint = together[together["temperature"] == t].reset_index(drop=True)
        for c in alone.columns:
            a, b = alone[c].to_numpy(), joint[c].to_numpy()
            if re.fullmatch(r"intrinsic__(kappa|kappa_lower|kappa_gap|profile)_r\d+", c):
                # per-r solve diagnostics: NaN where a grid pruned the rank, else identical
                both = ~(np.isnan(a) | np.isnan(b))
                np.testing.assert_array_equal(a[both], b[both], err_msg=c)
            else:
                np.testing.assert_array_equal(a, b, err_msg=c)
