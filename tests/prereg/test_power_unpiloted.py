"""A design checkpoint the pilot has no heads of (`[power] unpiloted = "pooled"`): its part
of the power simulator is the pooled fit; without the key it is refused, naming the key."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.power import SIMULATED_COVARIATES, PowerAssumptions, StudySizes, simulate_study
from analysis.power.fit import TrainingCells, fit_assumptions
from analysis.prereg.options import design_power
from analysis.study.pilot import _unpiloted_strata
from analysis.validation import ParameterError

MODELS = {"M0": ["baseline"], "M1": ["baseline", "native"]}
SIZES = StudySizes(
    n_heads=120,
    n_held_out=20,
    lengths=(64, 128),
    temperatures=(1.0,),
    eps=(0.1,),
    inputs_per_length=2,
    strata=(("org/a", 60, 10), ("org/b", 60, 10)),
    layers=(("org/a", 6), ("org/b", 6)),
)
TRUTH = PowerAssumptions(
    residual_sd=0.3,
    icc=0.6,
    layer_share=0.2,
    width_bins=1,
    strata_effects=(("org/a", 0.2, 1.2), ("org/b", -0.2, 0.8)),
)


def _pilot_cells(**kw) -> TrainingCells:
    """Training cells of checkpoint org/a only: the pilot has no heads of org/b."""
    table = simulate_study(SIZES, _widths(), share=0.0, assumptions=TRUTH, random_state=3)
    keep = ~table["held_out"] & (table["stratum"] == "org/a")
    ck = dict(SIMULATED_COVARIATES)
    logs = ck.pop("log_columns")
    return TrainingCells(
        table.loc[keep].drop(columns="held_out"),
        MODELS,
        log_columns=logs,
        covariate_kwargs=ck,
        **kw,
    )


def _widths():
    import pandas as pd

    w = pd.DataFrame({"eps": 0.1, "lower": [4, 2, 8, 6], "upper": [4, 4, 8, 12]})
    return w.assign(width=np.log2(w["upper"] / w["lower"]))


def test_pooled_strata_give_an_unfitted_checkpoint_the_pooled_fit():
    cells = _pilot_cells()
    plain = fit_assumptions(cells, truth_position=TRUTH.truth_position)
    # without the pooled stratum the simulator cannot simulate the design's org/b
    with pytest.raises(ParameterError, match="strata_effects|widths"):
        simulate_study(
            SIZES, plain.widths, share=0.0, assumptions=plain.assumptions(), random_state=0
        )
    fit = fit_assumptions(cells, truth_position=TRUTH.truth_position, pooled_strata=["org/b"])
    rows = {s[0]: s for s in fit.strata}
    assert rows["org/b"][1:5] == (0, 0, 0.0, 1.0)  # no heads, no cells, offset 0, scale 1
    assert rows["org/a"] == {s[0]: s for s in plain.strata}["org/a"]  # the fitted one unchanged
    assert [m[0] for m in fit.widths.models] == ["org/a", "org/b"]
    assert any("org/b" in n and "pooled" in n for n in fit.notes)
    # org/b's widths are every fitted cell's: the same bins as org/a's (the only stratum)
    a, b = fit.widths.for_stratum("org/a"), fit.widths.for_stratum("org/b")
    assert all(
        np.array_equal(x, y)
        for (_, xa), (_, yb) in zip(a.bins, b.bins, strict=True)
        for x, y in zip(xa, yb, strict=True)
    )
    table = simulate_study(
        SIZES, fit.widths, share=0.0, assumptions=fit.assumptions(), random_state=0
    )
    assert set(table["stratum"]) == {"org/a", "org/b"}
    # a stratum the cells hold is never replaced by the pooled fit
    same = fit_assumptions(cells, truth_position=TRUTH.truth_position, pooled_strata=["org/a"])
    assert same.strata == plain.strata


def test_unpiloted_checkpoints_are_refused_without_the_key():
    cells = _pilot_cells()
    with pytest.raises(ParameterError, match=r"power\.unpiloted.*org/b"):
        _unpiloted_strata(SIZES, cells, None)
    assert _unpiloted_strata(SIZES, cells, "pooled") == ["org/b"]
    with pytest.raises(ParameterError, match=r"power\.unpiloted"):
        _unpiloted_strata(SIZES, cells, "nearest")


def test_design_power_reads_unpiloted():
    base = {"sampling": {"inputs": {"seed": 0}}}
    data = {**base, "power": {"fit": "pilot", "pilot_input_seed": 1, "unpiloted": "pooled"}}
    assert design_power(data) == {"fit": "pilot", "pilot_input_seed": 1, "unpiloted": "pooled"}
    for bad in (
        {"fit": "pilot", "pilot_input_seed": 1, "unpiloted": "zero"},
        {"unpiloted": "pooled"},
    ):
        with pytest.raises(ParameterError, match=r"power\.unpiloted"):
            design_power({**base, "power": bad})
    # a design without the key reads as before
    assert "unpiloted" not in design_power(
        {**base, "power": {"fit": "pilot", "pilot_input_seed": 1}}
    )


def test_pooled_strata_get_the_pooled_reference_m0_loss():
    # with the design's comparison settings the reference M0 loss is measured (cross-fit
    # over the pilot's heads): the unfitted checkpoint is calibrated to the pooled one
    cells = _pilot_cells(comparison_kwargs={"estimator": "ols"})
    fit = fit_assumptions(cells, truth_position=TRUTH.truth_position, pooled_strata=["org/b"])
    refs = dict(fit.reference_by_stratum)
    assert set(refs) == {"org/a", "org/b"}
    assert refs["org/b"] == fit.reference_m0_loss > 0
    assert refs["org/a"] == dict(fit_assumptions(cells).reference_by_stratum).get(
        "org/a", fit.reference_m0_loss
    )
