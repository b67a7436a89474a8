"""The shared Holm adjustment equals statsmodels' to the bit (ties, NaN, one family per row)
and is what the comparison and the method-3 power simulation call (no gc.collect)."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from analysis.compare.multiplicity import holm
from analysis.validation import ParameterError


def _families(rng: np.random.Generator):
    """Random families of 1 to 12 p values: continuous, rounded (many ties), with exact
    0 and 1, all equal, and large p's whose multiples pass 1."""
    for n in range(1, 13):
        for _ in range(20):
            yield rng.uniform(size=n)
            yield np.round(rng.uniform(size=n), 1)  # ties
            yield rng.choice([0.0, 0.01, 0.05, 0.05, 0.5, 1.0], size=n)
        yield np.full(n, 0.03)
        yield np.full(n, 0.7)


@pytest.fixture
def no_collect(monkeypatch):
    """statsmodels' holm without its gc.collect (its arithmetic unchanged), so hundreds of
    reference calls take a second, not minutes."""
    monkeypatch.setattr(gc, "collect", lambda *a: 0)


def test_holm_equals_statsmodels_bit_for_bit(no_collect):
    rng = np.random.default_rng(20240611)
    n_checked = 0
    for p in _families(rng):
        np.testing.assert_array_equal(holm(p), multipletests(p, method="holm")[1])
        n_checked += 1
    assert n_checked > 400
    # NaN sorts last and propagates through the running maximum, as in statsmodels
    p = np.array([0.2, np.nan, 0.01, 0.04])
    np.testing.assert_array_equal(holm(p), multipletests(p, method="holm")[1])
    assert holm(np.array([])).shape == (0,)


def test_holm_adjusts_each_row_on_its_own(no_collect):
    rng = np.random.default_rng(7)
    p = np.round(rng.uniform(size=(200, 5)), 2)  # ties within rows
    expected = np.stack([multipletests(row, method="holm")[1] for row in p])
    np.testing.assert_array_equal(holm(p), expected)
    # and a 3-D stack: the last axis is the family
    np.testing.assert_array_equal(holm(p.reshape(20, 10, 5)), expected.reshape(20, 10, 5))
    with pytest.raises(ParameterError, match="p"):
        holm(0.3)


def test_comparison_and_power_use_it_without_collecting(monkeypatch):
    """The comparison's Holm step (and so every simulated study) runs no gc.collect."""
    import analysis.compare.equivalence as equivalence
    import analysis.compare.nested as nested
    import analysis.power.decisions as decisions

    assert nested.holm is holm and equivalence.holm_adjust is holm and decisions.holm is holm
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    from analysis.datasets import example_sizes, example_widths
    from analysis.power.simulate import simulate_study, simulated_comparison

    sizes = dataclasses.replace(example_sizes(), estimator="ols")
    table = simulate_study(sizes, example_widths(), share=0.3, random_state=1)
    simulated_comparison(sizes, table, random_state=1)
    assert calls == []
