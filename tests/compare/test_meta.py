"""The exploratory random-effects summary: DerSimonian-Laird by hand against the module."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.compare.meta import random_effects, se_from_ci
from analysis.validation import ParameterError

Z = stats.norm.ppf(0.975)


def dersimonian_laird(y, se):
    """The textbook DL estimate, written out (Borenstein et al., ch. 12 and 16)."""
    y, v = np.asarray(y, float), np.asarray(se, float) ** 2
    w = 1 / v
    mu_fe = (w * y).sum() / w.sum()
    q = (w * (y - mu_fe) ** 2).sum()
    df = len(y) - 1
    c = w.sum() - (w**2).sum() / w.sum()
    tau2 = max(0.0, (q - df) / c)
    ws = 1 / (v + tau2)
    mu = (ws * y).sum() / ws.sum()
    se_mu = np.sqrt(1 / ws.sum())
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0
    return mu, se_mu, tau2, q, i2


def test_matches_dersimonian_laird_by_hand_with_heterogeneity():
    y = [0.08, -1.57, 0.30]
    lo = [0.018, -4.90, 0.10]
    hi = [0.167, 0.20, 0.52]
    se = (np.array(hi) - np.array(lo)) / (2 * Z)
    mu, se_mu, tau2, q, i2 = dersimonian_laird(y, se)
    r = random_effects(y, lo, hi)
    assert tau2 > 0 and r.k == 3 and r.q_df == 2
    assert r.estimate == pytest.approx(mu, rel=1e-10)
    assert r.se == pytest.approx(se_mu, rel=1e-10)
    assert r.tau2 == pytest.approx(tau2, rel=1e-10)
    assert r.q == pytest.approx(q, rel=1e-10)
    assert r.i2 == pytest.approx(i2, rel=1e-10)
    assert (r.ci_low, r.ci_high) == pytest.approx((mu - Z * se_mu, mu + Z * se_mu), rel=1e-10)
    assert r.q_p == pytest.approx(stats.chi2.sf(q, 2), rel=1e-10)


def test_se_is_the_ci_width_over_two_z():
    assert se_from_ci([0.0, 1.0], [2 * Z, 1.0 + Z]).tolist() == pytest.approx([1.0, 0.5])
    assert se_from_ci([0.0], [1.0], level=0.9)[0] == pytest.approx(1 / (2 * stats.norm.ppf(0.95)))


@pytest.mark.parametrize(
    ("effects", "lo", "hi", "name"),
    [
        ([0.1], [0.0], [0.2], "effects"),  # one study is no summary
        ([0.1, np.nan], [0.0, 0.0], [0.2, 0.2], "effects"),
        ([0.1, 0.2], [0.0, 0.3], [0.2, 0.1], "ci_high"),  # high below low
        ([0.1, 0.2], [0.1, 0.0], [0.1, 0.2], "ci_low"),  # zero width: no SE
    ],
)
def test_bad_input_is_refused_naming_the_parameter(effects, lo, hi, name):
    with pytest.raises(ParameterError, match=f"^{name}:"):
        random_effects(effects, lo, hi)


def test_tau2_is_truncated_at_zero_when_q_is_below_its_df():
    # three close effects: the moment estimate of tau^2 is negative; DL sets it to 0
    y, lo, hi = [0.10, 0.11, 0.12], [0.0, 0.01, 0.02], [0.2, 0.21, 0.22]
    se = (np.array(hi) - np.array(lo)) / (2 * Z)
    mu, se_mu, tau2, q, i2 = dersimonian_laird(y, se)
    assert q < 2 and tau2 == 0.0
    r = random_effects(y, lo, hi)
    assert (r.tau2, r.i2) == (0.0, 0.0)
    assert r.estimate == pytest.approx(mu, rel=1e-10) and r.se == pytest.approx(se_mu, rel=1e-10)
    assert r.ci_low == pytest.approx(mu - Z * se_mu, rel=1e-10)
