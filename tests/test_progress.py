"""The cost-weighted stage bars (issue 53 item 1): the total is the summed cost, the item
count is shown, the rate is the whole stage's, and a stage's bar weighs by matrix side."""

from __future__ import annotations

import io

import pytest

from analysis.progress import (
    DESCRIBE_EXPONENT,
    SMOOTHING,
    CostBar,
    matrix_cost,
)
from analysis.validation import ParameterError


def test_total_is_summed_cost_and_items_are_counted():
    out = io.StringIO()
    with CostBar([1.0, 3.0], desc="x", unit="matrices", done=2, done_cost=4.0, file=out) as bar:
        assert bar.format_dict["total"] == pytest.approx(8.0)
        assert bar.format_dict["n"] == pytest.approx(4.0)
        bar.advance(3.0, note="t=1")
        assert bar.format_dict["n"] == pytest.approx(7.0)
        assert (bar.items, bar.items_total) == (3, 4)
    text = out.getvalue()
    assert "2/4 matrices" in text and "3/4 matrices, t=1" in text
    assert "7.0/8.0" not in text  # cost units are never shown
    assert bar.bar.smoothing == SMOOTHING == 0.0


def test_rate_is_counted_from_the_first_completion_over_the_whole_stage():
    """The start-up before the first item is no item's cost, and a burst after a stall
    moves the rate no more than its cost does: cost done since the first completion over
    the time since then (tqdm's default would be a smoothed rate of the last updates)."""
    clock = [0.0]
    bar = CostBar([1.0] * 10, desc="x", unit="items", file=io.StringIO())
    bar.bar._time = lambda: clock[0]
    bar.bar.reset(total=10.0)
    for t in (2.0, 4.0, 6.0, 8.0):
        clock[0] = t
        bar.advance(1.0)
    clock[0] = 16.0  # a stall, then a burst
    bar.advance(1.0)
    bar.advance(1.0)
    fd = bar.format_dict
    rate = fd["rate"] if fd["rate"] else fd["n"] / fd["elapsed"]
    assert rate == pytest.approx((6.0 - 1.0) / (16.0 - 2.0))
    remaining = (fd["total"] - fd["n"]) / rate
    assert remaining == pytest.approx(4.0 * 14.0 / 5.0)
    bar.close()


def test_bad_costs_are_refused():
    with pytest.raises(ParameterError, match="costs"):
        CostBar([1.0, 0.0], desc="x", unit="items", disable=True)
    with pytest.raises(ParameterError, match="exponent"):
        matrix_cost(8, -1.0)
    assert matrix_cost(64, DESCRIBE_EXPONENT) > matrix_cost(32, DESCRIBE_EXPONENT)


def test_descriptor_bar_weighs_matrices_by_side(monkeypatch, tmp_path):
    """The descriptors stage's bar: total = summed N ** DESCRIBE_EXPONENT, count shown."""
    import analysis.progress as progress
    import analysis.study.describe as describe
    from analysis.datasets import open_example_study
    from analysis.store import Store
    from analysis.study.stages import synthetic_stage

    bars = []

    class Recording(progress.CostBar):
        def __init__(self, costs, **kw):
            super().__init__(costs, **kw)
            bars.append(self)

    monkeypatch.setattr(describe, "CostBar", Recording)
    monkeypatch.chdir(tmp_path)  # the example study is written here
    study = open_example_study("studies/describe.toml", synthetic=True)
    with Store(study.paths.store, create=True) as store:
        keys = synthetic_stage(study, store)
        describe.descriptor_stage(study, store, keys, workers=1, progress=True)
        sides = [store.matrix(k).length for k in keys]
    (bar,) = bars
    want = sum(matrix_cost(n, DESCRIBE_EXPONENT) for n in sides)
    assert bar.format_dict["total"] == pytest.approx(want) == pytest.approx(bar.format_dict["n"])
    assert (bar.items, bar.items_total) == (len(keys), len(keys))
