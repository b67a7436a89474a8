"""Interval regression: likelihood, score, coefficient recovery; OLS and ridge."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.tools.numdiff import approx_fprime

from analysis.compare import fit_interval, fit_ols, fit_ridge, interval_sq_loss
from analysis.compare.estimators import IntervalRegression, fit_estimator, interval_loglik_obs
from analysis.validation import ParameterError


def _intervals(rng, y, *, point_share=0.05, max_width=2.0):
    w = rng.uniform(0.2, max_width, size=y.size)
    lower = y - rng.uniform(size=y.size) * w
    upper = lower + w
    pt = rng.uniform(size=y.size) < point_share
    lower[pt] = upper[pt] = y[pt]
    return lower, upper


def test_loglik_matches_scipy(rng):
    mu = rng.normal(size=50)
    lower = rng.normal(size=50)
    upper = lower + rng.uniform(0, 2, size=50)
    upper[:5] = lower[:5]
    lower[5] = -np.inf
    upper[6] = np.inf
    sigma = 0.7
    got = interval_loglik_obs(mu, sigma, lower, upper)
    with np.errstate(divide="ignore"):
        want = np.log(norm.cdf(upper, mu, sigma) - norm.cdf(lower, mu, sigma))
    want[:5] = norm.logpdf(lower[:5], mu[:5], sigma)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # far tails stay finite
    assert np.isfinite(
        interval_loglik_obs(np.array([0.0]), 1.0, np.array([30.0]), np.array([31.0]))
    ).all()


def test_analytic_score_matches_numerical(rng):
    n = 300
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 3))])
    y = X @ np.array([1.0, 0.5, -0.2, 0.0]) + 0.6 * rng.normal(size=n)
    lower, upper = _intervals(rng, y)
    lower[:3] = -np.inf
    model = IntervalRegression(lower, upper, X)
    params = np.array([0.9, 0.4, -0.1, 0.1, np.log(0.5)])
    num = approx_fprime(params, model.loglike, centered=True)
    np.testing.assert_allclose(model.score(params), num, rtol=1e-5, atol=1e-5)


def test_interval_regression_recovers_coefficients(rng):
    # n = 3000 cells, intervals up to 2 units wide, 5% points. Tolerance: each estimate
    # within 4 asymptotic SEs (from the inverse Hessian); for 5 coefficients,
    # P(any |z| > 4) ~ 5 * 6.3e-5 = 3e-4 if the estimator is consistent and the SEs right.
    # sigma: within 4 SE as well, its SE approximated by sigma / sqrt(2 n_eff) with
    # n_eff = n / 2 (intervals carry less information than points).
    n = 3000
    beta = np.array([1.5, 0.7, -0.4, 0.25, 0.0])
    sigma = 0.8
    X = rng.normal(size=(n, 4))
    y = beta[0] + X @ beta[1:] + sigma * rng.normal(size=n)
    lower, upper = _intervals(rng, y)
    fit = fit_interval(X, lower, upper, cov=True)
    assert fit.converged
    z = (fit.coef - beta) / fit.bse
    assert np.all(np.abs(z) < 4), z
    assert abs(fit.sigma - sigma) < 4 * sigma / np.sqrt(n)
    # midpoint OLS is biased towards nothing here (symmetric widths), but less precise
    ols = fit_ols(X, lower, upper)
    assert np.all(np.abs(ols.coef - beta) < 6 * ols.bse)


def test_ridge_groups_and_alpha(rng):
    n = 400
    X = rng.normal(size=(n, 3))
    y = X @ np.array([0.5, 0.0, 0.0]) + rng.normal(size=n)
    lower, upper = _intervals(rng, y)
    groups = np.repeat(np.arange(20), 20)
    fit = fit_ridge(X, lower, upper, groups=groups)
    assert fit.alpha is not None and fit.alpha > 0
    assert abs(fit.coef[1] - 0.5) < 0.2
    with pytest.raises(ParameterError, match="groups"):
        fit_ridge(X, lower, upper, groups=np.zeros(n))
    with pytest.raises(ParameterError, match="groups"):
        fit_estimator("ridge", X, lower, upper)
    with pytest.raises(ParameterError, match="estimator"):
        fit_estimator("lasso", X, lower, upper)


def test_midpoint_estimators_refuse_infinite_ends(rng):
    X = rng.normal(size=(10, 1))
    lower = np.zeros(10)
    lower[0] = -np.inf
    with pytest.raises(ParameterError, match="y_lower/y_upper"):
        fit_ols(X, lower, np.ones(10))


def test_interval_sq_loss():
    lo = np.array([1.0, 1.0, 1.0, 2.0])
    up = np.array([2.0, 2.0, 2.0, 2.0])
    np.testing.assert_allclose(
        interval_sq_loss(np.array([1.5, 0.5, 3.0, 2.5]), lo, up), [0.0, 0.25, 1.0, 0.25]
    )
