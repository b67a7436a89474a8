"""Rank pruning in the intrinsic profile: exact for Pi, r* and kappa*, and certified."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.descriptors.intrinsic import intrinsic_profile, residual_error
from analysis.descriptors.kappa import factor_radius

CELLS = [(t, e) for t in (1.0, 2.0) for e in (0.1, 0.2)]


def _pi(prof, t, e):
    """(Pi, r*) of one cell from a profile's solved ranks (smallest minimizer)."""
    best = (np.inf, None)
    for r, res in sorted(prof.kappa.items()):
        tau = residual_error(prof.q[r - 1], t)
        if tau < e:
            f = 0.5 * r * np.log2(1.0 + res.value / t / (e - tau) ** 2)
            if f < best[0]:
                best = (f, r)
    return best


def _head(seed: int, L: int = 24, d: int = 10):
    """Queries with a geometrically decaying spectrum: several ranks are usable."""
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((L, d)) * 0.5 ** np.arange(d)
    K = rng.standard_normal((L, d))
    return Q, K, 0.3


def test_pruning_leaves_pi_and_r_star_unchanged():
    pruned_total = 0
    for seed in range(3):
        Q, K, scale = _head(seed)
        full = intrinsic_profile(Q, K, scale, None, cells=CELLS, prune=False)
        pruned = intrinsic_profile(Q, K, scale, None, cells=CELLS)
        pruned_total += len(full.kappa) - len(pruned.kappa)
        for t, e in CELLS:
            # identical floats: the kept ranks run the same deterministic solve
            assert _pi(pruned, t, e) == _pi(full, t, e)
        for r, res in pruned.kappa.items():
            assert res.value == full.kappa[r].value
    assert pruned_total > 0  # the inputs do exercise pruning


def test_stop_above_is_certified():
    Q, K, _ = _head(7, L=24, d=10)
    full = factor_radius(Q, K)
    res = factor_radius(Q, K, stop_above=0.5 * full.lower)
    assert res.pruned
    # the lower bound that justified stopping is a true lower bound on kappa
    assert 0.5 * full.lower < res.lower <= full.value * (1 + 1e-12)
    assert res.iterations < full.iterations
    assert not factor_radius(Q, K, stop_above=2.0 * full.value).pruned


def test_stop_above_nan_is_rejected():
    with pytest.raises(ValueError, match="stop_above"):
        factor_radius(np.ones((3, 2)), np.eye(3, 2), stop_above=float("nan"))
