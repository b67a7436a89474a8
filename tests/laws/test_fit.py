"""The slope fits (analysis.laws.fit) on synthetic intervals with a known slope."""

import math

import numpy as np
import pytest

from analysis.laws.fit import fit_law, fit_slope, identified_slopes, log_bounds
from analysis.laws.theory import harmonic_slope
from analysis.validation import ParameterError


def _brackets(rng, slope, *, half_width, noise, reps=6):
    """Integer brackets around r = exp(1 + slope * x + noise), x on a beta-like grid."""
    beta = np.array([1, 2, 4, 8, 16, 32, 64], float)
    x = np.repeat(np.log1p(beta), reps)
    y = 3.0 + slope * x + noise * rng.standard_normal(x.size)
    # asymmetric widths in log space, drawn per row, so the truth is not the midpoint
    w_lo = half_width * rng.uniform(0.5, 1.5, x.size)
    w_hi = half_width * rng.uniform(0.5, 1.5, x.size)
    lo = np.floor(np.exp(y - w_lo))
    hi = np.ceil(np.exp(y + w_hi))
    return x, y, lo, hi, np.repeat(beta, reps)


def test_recovers_known_slope(rng):
    # Truth: slope 1.5, latent noise sd 0.05, brackets +-0.05..0.15 in log.
    # With 42 rows over a log-range of 3.5 the ML slope's SD is about 0.05 / (1.2 * 6.5)
    # ~ 0.007 plus what asymmetric brackets add (they shift each row by at most ~0.05,
    # independently of x): 0.05 is ~5 SDs, so a failure means a wrong fit, not bad luck.
    x, y, lo, hi, beta = _brackets(rng, 1.5, half_width=0.1, noise=0.05)
    r = fit_slope(x, lo, hi, strata=beta, n_boot=49, random_state=1)
    assert r["converged"]
    assert abs(r["slope"] - 1.5) < 0.05
    assert abs(r["slope_mid"] - 1.5) < 0.05
    assert r["ci"][0] <= r["slope"] <= r["ci"][1]
    assert r["ci_mid"][0] < r["slope_mid"] < r["ci_mid"][1]
    assert r["n_obs"] == x.size and r["n_boot"] == 49


def test_identified_set_contains_slope_of_truth_and_midpoints(rng):
    # Deterministic property: the least-squares slope of any y inside the brackets
    # (the truth, the midpoints) lies in the identified set.
    x, y, lo, hi, _ = _brackets(rng, 0.5, half_width=0.4, noise=0.1)
    ylo, yhi = log_bounds(lo, hi)
    s_lo, s_hi = identified_slopes(x, ylo, yhi)
    ols = np.polyfit(x, y, 1)[0]
    mid = np.polyfit(x, 0.5 * (ylo + yhi), 1)[0]
    assert s_lo <= ols <= s_hi and s_lo <= mid <= s_hi
    # and it is sharp: its ends are attained by selections inside the brackets
    w = x - x.mean()
    assert np.polyfit(x, np.where(w > 0, ylo, yhi), 1)[0] == pytest.approx(s_lo)
    assert np.polyfit(x, np.where(w > 0, yhi, ylo), 1)[0] == pytest.approx(s_hi)


def test_zero_lower_end_is_left_censored(rng):
    x, _, lo, hi, beta = _brackets(rng, 1.0, half_width=0.1, noise=0.05)
    lo[0] = 0
    r = fit_slope(x, lo, hi, strata=beta, n_boot=0)
    assert math.isfinite(r["slope"]) and abs(r["slope"] - 1.0) < 0.05
    assert math.isnan(r["slope_mid"])  # a midpoint of [-inf, ln hi] does not exist
    assert math.isnan(r["ci"][0])  # n_boot = 0: no CI


def test_bad_input_names_parameter():
    with pytest.raises(ParameterError, match="^x"):
        fit_slope([1.0, 1.0], [2, 3], [4, 5])
    with pytest.raises(ParameterError, match="brackets"):
        fit_slope([1.0, 2.0], [5, 3], [4, 5])
    with pytest.raises(ParameterError, match="n_boot"):
        fit_slope([1.0, 2.0], [2, 3], [4, 5], n_boot=-1)


def test_threaded_brackets_give_the_limit_line():
    # Every bracket contains the line 1 + 0.5 x with room to spare: the likelihood's
    # supremum is the sigma -> 0 limit, reported as the max-min-margin line.
    x = np.log1p(np.array([1, 2, 4, 8, 16, 32], float))
    r = np.exp(2.0 + 0.5 * x)
    lo, hi = np.floor(r * 0.8), np.ceil(r * 1.25)
    res = fit_slope(x, lo, hi, n_boot=0)
    assert res["degenerate"] and res["sigma"] == 0.0
    # the line threads every bracket, so its slope is an LS slope of points inside them
    assert res["slope_set"][0] <= res["slope"] <= res["slope_set"][1]
    ylo, yhi = log_bounds(lo, hi)
    fitted = res["intercept"] + res["slope"] * x
    assert np.all(fitted > ylo) and np.all(fitted < yhi)
    lo_b, hi_b = res["slope_threading"]
    assert lo_b <= res["slope"] <= hi_b and lo_b <= 0.5 <= hi_b


def test_point_touching_an_open_bracket_is_degenerate():
    # A closed bracket [5, 5] and an open one [5, 6] at the same x, one more beta above:
    # the line through ln 5 touches the open bracket's lower end (margin 0), the point's
    # density grows like 1/sigma and the other bracket keeps probability >= 1/2, so the
    # likelihood is unbounded: the fit must report the sigma -> 0 limit.
    x = np.array([0.0, 0.0, 1.0, 1.0])
    lo = np.array([5, 5, 9, 9])
    hi = np.array([5, 6, 12, 12])
    res = fit_slope(x, lo, hi, n_boot=0)
    assert res["degenerate"] and res["sigma"] == 0.0
    assert res["intercept"] == pytest.approx(np.log(5))
    assert np.log(9) <= res["intercept"] + res["slope"] <= np.log(12)


def test_fit_law_reports_the_harmonic_count(harmonic_table):
    # Brackets built around the count itself: every one contains it.
    (fit,) = fit_law(harmonic_table, family="spherical", n_boot=20)
    h = fit.extra["harmonic"]
    assert h["inside"] == h["n_matrices"] == 8
    assert h["slope"] == pytest.approx(harmonic_slope(3, [1.0, 2.0, 4.0, 8.0], 0.1))
    assert h["counts"]["1"] == 4
    # the ball has no such count
    (ball,) = fit_law(harmonic_table, family="ball", n_boot=20)
    assert "harmonic" not in ball.extra
