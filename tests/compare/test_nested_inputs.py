"""Inputs as a factor (issue 50 part 5): input fixed effects and the crossed bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.bootstrap import _held_out_draws
from analysis.compare.inputs import crossed_draws, input_labels
from analysis.prereg.options import check_design_options, design_options
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import FAMILY, MODELS, make_table

MEAN_METRICS = ("interval_sq_loss", "interval_loglik")
CI = ["effect", "ci_low", "ci_high", "p_value", "base_value", "rich_value"]


def _table(seed: int = 0, *, n_inputs: int = 2) -> pd.DataFrame:
    table = make_table(np.random.default_rng(seed))
    head = table["cluster"].str[1:].astype(int)
    table["stratum"] = np.where(head % 2 == 0, "ckpt-a", "ckpt-b")
    if n_inputs != 2:  # spread each head's cells over n_inputs inputs per length
        table["input_id"] = np.tile(np.arange(12) // 2 % n_inputs, len(table) // 12)
    return table


def _spec(**kw) -> ComparisonSpec:
    base = {"models": MODELS, "family": FAMILY, "n_boot": 199, "random_state": 3}
    return ComparisonSpec(**{**base, **kw})


def _shifted(table: pd.DataFrame, scale: float = 3.0) -> pd.DataFrame:
    """y plus one constant per (checkpoint, input, length) level, shared by all heads."""
    labels = input_labels(table)
    levels = sorted(set(labels))
    shift = dict(zip(levels, np.random.default_rng(9).normal(0, scale, len(levels)), strict=True))
    s = np.array([shift[x] for x in labels])
    return table.assign(y_lower=table["y_lower"] + s, y_upper=table["y_upper"] + s)


def test_defaults_reproduce_todays_frame_exactly():
    table = _table()
    today = NestedComparison(_spec()).fit(table.drop(columns=["input_id", "length"]))
    stated = NestedComparison(_spec(input_effects="none", resample_inputs=False)).fit(table)
    pd.testing.assert_frame_equal(today.to_frame(), stated.to_frame(), check_exact=True)
    assert today.to_frame().equals(stated.to_frame())


@pytest.mark.parametrize("estimator", ["ols", "interval"])
def test_fixed_input_effects_absorb_an_additive_shift(estimator):
    table = _table()
    kw = {"estimator": estimator, "metrics": MEAN_METRICS}
    fixed = _spec(input_effects="fixed", **kw)
    a = NestedComparison(fixed).fit(table).to_frame()[CI]
    b = NestedComparison(fixed).fit(_shifted(table)).to_frame()[CI]
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-6, atol=1e-9)
    none = _spec(**kw)
    c = NestedComparison(none).fit(table).to_frame()[CI]
    d = NestedComparison(none).fit(_shifted(table)).to_frame()[CI]
    assert not np.allclose(c.to_numpy(), d.to_numpy(), rtol=1e-3)
    # and the input columns are in the fits: M0 has its baseline plus 7 input indicators
    res = NestedComparison(fixed).fit(table)
    assert sum(c.startswith("input__") for c in res.columns["M0"]) == 2 * 2 * 2 - 1


def test_crossed_draws_keep_strata_and_weights():
    table = _table(n_inputs=3)
    held = table["held_out"].to_numpy()
    rng = np.random.default_rng(0)
    heads = _held_out_draws(table, table["cluster"].to_numpy(), held, 2000, rng)
    both = crossed_draws(table, heads, held, rng)
    assert both.n_heads == heads.n_heads and both.counts.shape[0] == 2000
    # every held-out head reads every input of its checkpoint in 2 cells (3 inputs x 2
    # lengths x 2 cells = 12): a replicate's weight in a checkpoint is 4 x heads x inputs
    # exactly when heads and inputs are both drawn within it
    sub = table.loc[held]
    for s in ("ckpt-a", "ckpt-b"):
        n_heads = sub.loc[sub["stratum"] == s, "cluster"].nunique()
        in_s = both.per_cluster == s
        w = both.counts[:, in_s] @ both.head_sizes[in_s]
        assert (w == 4 * n_heads * 3).all()
    # the expected weight of every cell is 1: the mean total weight is the cell count
    total = both.counts @ both.head_sizes
    assert abs(total.mean() / held.sum() - 1) < 0.02
    # and the input draw moves the weights of one head's inputs apart
    first = np.unique(both.codes[(sub["cluster"] == sub["cluster"].iloc[0]).to_numpy()])
    assert first.size == 3 and (both.counts[:, first].std(axis=1) > 0).mean() > 0.5


def test_crossed_bootstrap_widens_the_interval_when_inputs_shift_y():
    table = _shifted(_table(n_inputs=3), scale=1.0)
    # an input-level noise feature: constant within input, so it fits these inputs' shifts
    labels = input_labels(table)
    levels = sorted(set(labels))
    noise = dict(zip(levels, np.random.default_rng(4).normal(size=len(levels)), strict=True))
    table["native__q"] = [noise[x] for x in labels]
    kw = {"estimator": "ols", "metrics": MEAN_METRICS, "n_boot": 999}
    heads = NestedComparison(_spec(**kw)).fit(table).to_frame()
    both = NestedComparison(_spec(resample_inputs=True, **kw)).fit(table).to_frame()
    pd.testing.assert_series_equal(heads["effect"], both["effect"])
    width = lambda f: (f["ci_high"] - f["ci_low"]).to_numpy()  # noqa: E731
    assert (width(both) > width(heads)).all()


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"input_effects": "random"}, "input_effects"),
        ({"input_effects": None}, "input_effects"),
        ({"resample_inputs": "yes"}, "resample_inputs"),
        ({"resample_inputs": True, "bootstrap": "studentized"}, "resample_inputs"),
        (
            {"resample_inputs": True, "refit_replicates": 3, "refit_confirmatory": True},
            "resample_inputs",
        ),
    ],
)
def test_spec_refuses_bad_settings_naming_them(kw, name):
    with pytest.raises(ParameterError, match=f"^{name}: expected"):
        _spec(**kw)


def test_tables_without_inputs_are_refused_naming_the_key():
    table = _table().drop(columns=["input_id"])
    with pytest.raises(ParameterError, match=r"^inference\.input_effects: expected"):
        NestedComparison(_spec(input_effects="fixed")).fit(table)
    with pytest.raises(ParameterError, match=r"^inference\.resample: expected"):
        NestedComparison(_spec(resample_inputs=True)).fit(table)
    one = _table().assign(input_id=0)  # one input per (checkpoint, length)
    with pytest.raises(ParameterError, match=r"^inference\.resample: .*got \"1 at checkpoint"):
        NestedComparison(_spec(resample_inputs=True)).fit(one)


def _design(method: int = 2, **inference) -> dict:
    return {
        "method": method,
        "metrics": {"primary": "interval_sq_loss"},
        "hypotheses": [],
        "inference": inference,
    }


def test_design_keys_reach_the_options_and_are_checked():
    assert "input_effects" not in design_options(_design())  # locked designs: unchanged
    opts = design_options(_design(input_effects="fixed", resample=["head", "input"]))
    assert opts["input_effects"] == "fixed" and opts["resample_inputs"] is True
    assert design_options(_design(resample=["head"]))["resample_inputs"] is False
    for key, bad in [
        ("input_effects", "random"),
        ("resample", ["input"]),
        ("resample", "head"),
    ]:
        with pytest.raises(ParameterError, match=rf"^inference\.{key}: expected"):
            check_design_options(_design(**{key: bad}))
    with pytest.raises(
        ParameterError, match=r"^inference\.resample: expected bootstrap = .cluster."
    ):
        check_design_options(_design(resample=["head", "input"], bootstrap="studentized"))
    # method 3's confirmatory refit bootstrap resamples heads only: state it a sensitivity
    with pytest.raises(ParameterError, match=r"^inference\.resample: expected refit_boot"):
        check_design_options(_design(3, resample=["head", "input"]))
    opts = design_options(_design(3, resample=["head", "input"], refit_bootstrap="sensitivity"))
    assert opts["resample_inputs"] is True and opts["refit_confirmatory"] is False


def _input_noise_table(rng: np.random.Generator, n_heads: int = 16, n_inputs: int = 6):
    """y = x + a shift per input + head and cell noise; ``rich__q`` is input-level noise:
    it fits these inputs' shifts but carries nothing to new inputs."""
    head = np.repeat(np.arange(n_heads), 2 * n_inputs)
    inp = np.tile(np.repeat(np.arange(n_inputs), 2), n_heads)
    shift, q, x = rng.normal(size=n_inputs), rng.normal(size=n_inputs), rng.normal(size=head.size)
    y = x + shift[inp] + 0.3 * rng.normal(size=n_heads)[head] + 0.3 * rng.normal(size=head.size)
    held = np.isin(head, rng.choice(n_heads, 6, replace=False))
    return pd.DataFrame(
        {
            "cell_key": range(head.size),
            "cluster": head,
            "held_out": held,
            "input_id": inp,
            "length": 16,
            "y_lower": y,
            "y_upper": y + 0.5,
            "base__x": x,
            "rich__q": q[inp],
        }
    )


def test_crossed_bootstrap_stops_claiming_what_new_inputs_would_not_show():
    # 200 seeded studies; for new inputs the rich model cannot help (its block is noise
    # at the input level), so a CI wholly above 0 is a false claim about them
    rng = np.random.default_rng(1)
    above = {False: 0, True: 0}
    for seed in range(200):
        table = _input_noise_table(rng)
        for crossed in (False, True):
            spec = ComparisonSpec(
                models={"M0": ["base"], "M1": ["base", "rich"]},
                family=[("M0", "M1")],
                estimator="ols",
                metrics=["interval_sq_loss"],
                n_boot=199,
                random_state=seed,
                resample_inputs=crossed,
            )
            above[crossed] += bool(NestedComparison(spec).fit(table).frame["ci_low"].iloc[0] > 0)
    assert above[False] / 200 > 0.5  # heads only: these 6 inputs are taken as fixed
    assert above[True] / 200 < 0.1
