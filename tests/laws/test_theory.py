"""The laws' predictions (analysis.laws.theory): asymptotic slopes, the harmonic rank count."""

import math

import numpy as np
import pytest

from analysis.laws.theory import (
    POWERS,
    asymptotic_betas,
    asymptotic_onset,
    harmonic_dimension,
    harmonic_rank,
    harmonic_slope,
    local_harmonic_slopes,
    n_for_asymptotic_grid,
    theory_slope,
)
from analysis.validation import ParameterError


def test_theory_slopes():
    assert [theory_slope("spherical", d) for d in (2, 3, 4)] == [0.5, 1.0, 1.5]
    assert [theory_slope("ball", d) for d in (2, 3, 4)] == [1.0, 1.5, 2.0]
    with pytest.raises(ParameterError, match="^family:"):
        theory_slope("torus", 2)


def test_harmonic_dimension_closed_forms():
    assert [harmonic_dimension(lvl, 2) for lvl in range(5)] == [1, 2, 2, 2, 2]
    assert [harmonic_dimension(lvl, 3) for lvl in range(6)] == [2 * lvl + 1 for lvl in range(6)]
    assert [harmonic_dimension(lvl, 4) for lvl in range(6)] == [(lvl + 1) ** 2 for lvl in range(6)]
    # Sum up to degree L = dim of polynomials of degree <= L on the sphere:
    # C(L + d - 1, d - 1) + C(L + d - 2, d - 1).
    for d in (2, 3, 5, 7):
        for L in range(8):
            total = sum(harmonic_dimension(lvl, d) for lvl in range(L + 1))
            assert total == math.comb(L + d - 1, d - 1) + math.comb(L + d - 2, d - 1)


def test_harmonic_rank_known_answers():
    # Provenance: Abramowitz & Stegun table 9.11 at x = 1: I_0 = 1.2660659, I_1 = 0.5651591,
    # I_2 = 0.1357477, I_3 = 0.0221684.
    # d = 2 (nu = 0): I_2 / I_0 = 0.107 > 0.1, I_3 / I_0 = 0.0175 -> L = 2, 1 + 2 + 2 = 5.
    assert harmonic_rank(2, 1.0, 0.1) == 5
    # d = 4 (nu = 1): I_2 / I_1 = 0.240 > 0.1, I_3 / I_1 = 0.0392 -> L = 1, 1 + 4 = 5.
    assert harmonic_rank(4, 1.0, 0.1) == 5
    # d = 3 (nu = 1/2), closed forms in units of sqrt(2 / pi) at x = 1:
    # I_1/2 = sinh 1 = 1.1752012, I_3/2 = cosh 1 - sinh 1 = 0.3678794,
    # I_5/2 = 4 sinh 1 - 3 cosh 1 = 0.0715629, I_7/2 = I_3/2 - 5 I_5/2 = 0.0100651.
    # Ratios 0.313, 0.0609, 0.0086: eps 0.1 -> L = 1 (rank 4); eps 0.05 -> L = 2 (rank 9).
    assert harmonic_rank(3, 1.0, 0.1) == 4
    assert harmonic_rank(3, 1.0, 0.05) == 9
    # Large beta: ive keeps the ratio finite where I itself overflows.
    assert harmonic_rank(3, 5000.0, 0.1) > harmonic_rank(3, 1250.0, 0.1)


def test_harmonic_rank_monotone():
    betas = [0.5, 1, 2, 4, 8, 16, 32, 64]
    for d in (2, 3, 4):
        r = [harmonic_rank(d, b, 0.1) for b in betas]
        assert r == sorted(r)
        r_eps = [harmonic_rank(d, 8.0, e) for e in (0.02, 0.05, 0.1, 0.2, 0.4)]
        assert r_eps == sorted(r_eps, reverse=True)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_asymptotic_slope_is_the_law(d):
    # L ~ sqrt(2 beta ln(1/eps)) and sum of dims ~ L^(d-1): slope (d - 1) / 2 at large beta.
    # Tolerance 0.02: the integer degree leaves a ripple of about 1 / L per octave.
    big = [2.0**i for i in range(12, 17)]
    assert harmonic_slope(d, big, 0.1) == pytest.approx((d - 1) / 2, abs=0.02)
    # ... and steeper than the law in the Taylor regime (beta below 2 ln(1/eps) ~ 4.6).
    assert harmonic_slope(d, [1.0, 2.0, 4.0, 8.0], 0.1) > (d - 1) / 2 + 0.05


def test_local_slopes_sorted_and_sized():
    s = local_harmonic_slopes(3, [16.0, 1.0, 4.0], 0.1)
    assert s.shape == (2,) and np.all(np.isfinite(s))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: harmonic_rank(1, 1.0, 0.1), "d"),
        (lambda: harmonic_rank(3, 0.0, 0.1), "beta"),
        (lambda: harmonic_rank(3, float("inf"), 0.1), "beta"),
        (lambda: harmonic_rank(3, 1.0, 1.0), "eps"),
        (lambda: harmonic_rank(3, 1.0, 0.0), "eps"),
        (lambda: harmonic_dimension(-1, 3), "degree"),
        (lambda: harmonic_slope(3, [4.0, 4.0], 0.1), "betas"),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises(ParameterError, match=f"^{name}:"):
        call()


@pytest.mark.parametrize("eps", [0.1, 0.2])
@pytest.mark.parametrize("d", [2, 3, 4])
def test_asymptotic_onset_is_where_the_local_slopes_settle(d, eps):
    onset = asymptotic_onset(d, eps)
    slopes = local_harmonic_slopes(d, POWERS, eps)
    i = POWERS.index(onset)
    assert np.all(np.abs(slopes[i:] - (d - 1) / 2) <= 0.15)
    if i > 0:  # the octave just below does not qualify
        assert abs(slopes[i - 1] - (d - 1) / 2) > 0.15


def test_asymptotic_grid_and_the_n_it_needs():
    g = asymptotic_betas(3, 0.2, 512)
    assert g[0] == asymptotic_onset(3, 0.2)
    assert all(b2 == 2 * b1 for b1, b2 in zip(g[:-1], g[1:], strict=True))
    assert all(harmonic_rank(3, b, 0.2) <= 512 / 4 for b in g)
    assert harmonic_rank(3, 2 * g[-1], 0.2) > 512 / 4 or len(g) == 5
    need = n_for_asymptotic_grid(3, 0.1, points=3)
    assert len(asymptotic_betas(3, 0.1, need)) >= 3
    assert len(asymptotic_betas(3, 0.1, need - 1)) < 3
