"""The experiment that reads a stored power curve at the SESOI."""

from __future__ import annotations

import math

from experiments.power_at_sesoi import power_at

CURVE = [
    {"share": 0.1, "mean_effect": 0.0002, "rate": 0.1},
    {"share": 0.0, "mean_effect": -0.001, "rate": 0.0},
    {"share": 0.3, "mean_effect": 0.0022, "rate": 0.7},
]


def test_power_is_interpolated_in_the_effect_between_the_bracketing_shares():
    rate, lo, hi = power_at(CURVE, 0.0012)
    assert (lo["share"], hi["share"]) == (0.1, 0.3)  # the curve's order does not matter
    assert math.isclose(rate, 0.4)  # halfway from 0.0002 to 0.0022: halfway from 0.1 to 0.7


def test_an_effect_outside_the_simulated_ones_has_no_power_reading():
    rate, lo, hi = power_at(CURVE, 0.01)
    assert math.isnan(rate) and hi is None and lo["share"] == 0.3
    rate, lo, hi = power_at(CURVE, -0.002)
    assert math.isnan(rate) and lo is None and hi["share"] == 0.0
