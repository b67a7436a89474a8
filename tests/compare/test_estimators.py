"""Interval regression: likelihood, score, coefficient recovery; OLS and ridge."""

from __future__ import annotations

import warnings

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


def test_fits_carry_convergence_diagnostics(rng):
    # a well-posed problem: BFGS stops on its gradient test (gtol 1e-7 on the mean
    # score), so the reported gradient norm is at most that
    n = 300
    X = rng.normal(size=(n, 3))
    y = 1.0 + X @ np.array([0.5, -0.3, 0.2]) + 0.6 * rng.normal(size=n)
    lower, upper = _intervals(rng, y)
    fit = fit_interval(X, lower, upper)
    assert fit.converged is True
    assert isinstance(fit.iterations, int) and fit.iterations >= 1
    assert 0.0 <= fit.grad_norm <= 1e-7
    # closed-form estimators: no iterations, the least-squares gradient is ~0
    for closed in (fit_ols(X, lower, upper), fit_ridge(X, lower, upper, groups=np.arange(n) % 10)):
        assert closed.converged is True and closed.iterations == 0
        assert 0.0 <= closed.grad_norm < 1e-8, (closed.estimator, closed.grad_norm)


def test_capped_interval_fit_is_not_converged(rng):
    # a column that perfectly separates one-sided intervals: the likelihood has no
    # finite maximum, and one BFGS iteration plus ten L-BFGS ones cannot finish
    n = 200
    x1 = rng.normal(size=n)
    sep = np.repeat([-1.0, 0.0, 1.0], [50, 100, 50])
    y = 1.0 + 0.5 * x1 + 0.5 * rng.normal(size=n)
    lower, upper = y - 0.5, y + 0.5
    lower[sep < 0] = -np.inf
    upper[sep > 0] = np.inf
    X = np.column_stack([x1, sep])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' ConvergenceWarning is the point
        for fit in (
            fit_interval(X, lower, upper, maxiter=1),
            fit_estimator("interval", X, lower, upper, maxiter=1),
        ):
            assert fit.converged is False
            assert 1 <= fit.iterations <= 1 + 10
            assert fit.grad_norm > 1e-4
    with pytest.raises(ParameterError) as info:
        fit_interval(X, lower, upper, maxiter=0)
    assert info.value.name == "maxiter"
