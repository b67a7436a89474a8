"""No empty progress bars (issue 53, item 7): a store with nothing stored yet draws no
"re-verify (default): 0profile" bar; a run with nothing to do draws no profiles bar."""

from __future__ import annotations

import pytest

from analysis.store import RunSpec, Store, run_brackets


def test_no_bar_for_nothing_to_reverify(filled_store, engine, capsys):
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=True))
    err = capsys.readouterr().err
    assert "re-verify" not in err  # nothing stored before this run
    assert "profiles (default)" in err  # the bar of the work that was done stays


def test_no_bar_for_an_empty_store(tmp_path, engine, capsys):
    with Store(tmp_path / "empty", create=True) as store:
        run_brackets(store, (0.1,), engine=engine, run=RunSpec(progress=True))
    assert capsys.readouterr().err == ""


def _recording_bars(monkeypatch, module):
    """Every CostBar ``module`` builds, kept (the bars of issue 53 item 1)."""
    import analysis.progress as progress

    bars = []

    class Recording(progress.CostBar):
        def __init__(self, costs, **kw):
            super().__init__(costs, **kw)
            self.costs = list(costs)
            bars.append(self)

    monkeypatch.setattr(module, "CostBar", Recording)
    return bars


def test_profiles_bar_counts_cost_and_shows_items(filled_store, engine, monkeypatch, capsys):
    """The profiles bar's total is the profiles' summed cost (N ** PROFILE_EXPONENT each),
    a dear matrix moves it further than a cheap one, and the count stays visible."""
    import analysis.store.run as run_module
    from analysis.progress import PROFILE_EXPONENT, matrix_cost
    from analysis.sources import synthetic

    big = filled_store.add_synthetic(synthetic.spherical(24, 3, 4.0, random_state=9), head=9)
    bars = _recording_bars(monkeypatch, run_module)
    temps = (0.5, 1.0)
    run_brackets(
        filled_store, (0.1,), engine=engine, temperatures=temps, run=RunSpec(progress=True)
    )
    (bar,) = [b for b in bars if b.desc.startswith("profiles")]
    sides = {r.key: r.length for r in filled_store.matrices()}
    assert sorted(sides.values()) == [12] * 6 + [24]
    want = len(temps) * sum(matrix_cost(n, PROFILE_EXPONENT) for n in sides.values())
    assert bar.format_dict["total"] == pytest.approx(want)
    assert bar.format_dict["n"] == pytest.approx(want)  # every profile done
    assert sorted(bar.costs)[-2:] == [matrix_cost(24, PROFILE_EXPONENT)] * 2
    assert matrix_cost(24, PROFILE_EXPONENT) > matrix_cost(12, PROFILE_EXPONENT)
    assert (bar.items, bar.items_total) == (14, 14)
    err = capsys.readouterr().err
    assert "14/14 profiles" in err
    assert big in sides


def test_resumed_bar_starts_at_the_stored_cost(filled_store, engine, monkeypatch, capsys):
    """A second run's re-verify bar weighs stored profiles by cost too; an extended run's
    profiles bar starts at the cost of what is stored, with the stored count shown."""
    import analysis.store.run as run_module
    from analysis.progress import PROFILE_EXPONENT, matrix_cost

    keys = [r.key for r in filled_store.matrices()]
    run_brackets(
        filled_store, (0.1,), engine=engine, matrix_keys=keys[:2], run=RunSpec(progress=False)
    )
    bars = _recording_bars(monkeypatch, run_module)
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=True))
    reverify, profiles = bars
    unit = matrix_cost(12, PROFILE_EXPONENT)
    assert reverify.format_dict["total"] == pytest.approx(2 * unit)
    assert profiles.format_dict["total"] == pytest.approx(6 * unit)
    assert profiles.format_dict["initial"] == pytest.approx(2 * unit)
    assert "6/6 profiles" in capsys.readouterr().err
