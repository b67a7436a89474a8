"""Repeated cross-fitting: the calibrated baseline must not depend on the fold seed.

One fold assignment is one random split of the training heads, and on a study the effect
moves with its seed by a sizeable share of its bootstrap SE (docs/results/crossfit.md).
Averaging the out-of-fold values over R assignments (``Calibration(repeats=R)``, the
default under ``method = 3``) must bring the spread across seeds below 10% of the SE;
a single assignment must not, on the same table (else the table tests nothing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.compare import (
    Calibration,
    ComparisonSpec,
    NestedComparison,
    head_folds,
    prepare_covariates,
    repeated_head_folds,
)
from analysis.prereg.schema import CALIBRATION_REPEATS_V3
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, make_table

MODELS = {"M0": ["baseline"], "M1": ["baseline", "native"]}
SEEDS = range(7)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return make_table(np.random.default_rng(11), native_effect=0.3)


def _effects(table: pd.DataFrame, calibration: Calibration) -> tuple[float, float]:
    """The primary effect of M0 < M1 and its bootstrap SE (95% CI width / 3.92)."""
    spec = ComparisonSpec(
        models=MODELS,
        family=[("M0", "M1")],
        log_columns=["baseline__scale"],
        estimator="ols",
        metrics=["interval_sq_loss"],
        n_boot=199,
        random_state=0,  # the same held-out draws for every fold seed
        calibration=calibration,
        **COVARIATES,
    )
    row = NestedComparison(spec).fit(table).frame.iloc[0]
    return float(row["effect"]), float(row["ci_high"] - row["ci_low"]) / 3.92


def _spread_over_se(table: pd.DataFrame, repeats: int) -> float:
    out = np.array([_effects(table, Calibration(folds=5, seed=s, repeats=repeats)) for s in SEEDS])
    return float(out[:, 0].std(ddof=1) / out[:, 1].mean())


def test_repeats_make_the_effect_independent_of_the_fold_seed(table):
    single = _spread_over_se(table, 1)
    repeated = _spread_over_se(table, CALIBRATION_REPEATS_V3)
    assert single >= 0.10, single  # one assignment: the seed moves the effect
    assert repeated < 0.10, repeated


def test_one_repeat_is_the_single_assignment_bit_for_bit(table):
    train = ~table["held_out"].to_numpy()
    clusters = table["cluster"].to_numpy()
    labels = repeated_head_folds(clusters, train, folds=5, seed=3, repeats=4)
    np.testing.assert_array_equal(labels[0], head_folds(clusters, train, folds=5, seed=3))
    # child r of SeedSequence(seed) does not depend on R: the first rows agree
    np.testing.assert_array_equal(
        labels[:2], repeated_head_folds(clusters, train, folds=5, seed=3, repeats=2)
    )
    assert len({tuple(r) for r in labels[:, train]}) == 4  # distinct assignments
    kw = {"log_columns": ["baseline__scale"], **COVARIATES}
    one = prepare_covariates(table, MODELS, train, calibration_folds=labels[:1], **kw)
    flat = prepare_covariates(table, MODELS, train, calibration_folds=labels[0], **kw)
    for c in flat.calibrated:
        assert flat.calibrated[c].tobytes() == one.calibrated[c].tobytes(), c


def test_repeated_values_are_the_mean_of_the_single_ones(table):
    train = ~table["held_out"].to_numpy()
    labels = repeated_head_folds(table["cluster"], train, folds=5, seed=3, repeats=3)
    kw = {"log_columns": ["baseline__scale"], **COVARIATES}
    rep = prepare_covariates(table, MODELS, train, calibration_folds=labels, **kw)
    singles = [prepare_covariates(table, MODELS, train, calibration_folds=f, **kw) for f in labels]
    for c in rep.calibrated:
        want = np.mean([s.calibrated[c] for s in singles], axis=0)
        np.testing.assert_allclose(rep.calibrated[c][train], want[train], rtol=0, atol=1e-12)
        # held-out cells keep the map fitted on all training cells
        assert rep.calibrated[c][~train].tobytes() == singles[0].calibrated[c][~train].tobytes()
        assert len(rep.fold_calibrations[c]) == 3 * 5


def test_leave_one_head_out_needs_no_seed(table):
    """K = the number of training heads: every assignment puts each head alone in a
    fold, so the calibrated values (and the effect) are the same for every seed, and
    ``Calibration(leave_one_out=True)`` (method 3's default) is that cross-fit."""
    k = table.loc[~table["held_out"], "cluster"].nunique()
    a, b = (_effects(table, Calibration(folds=k, seed=s)) for s in (0, 1))
    assert a == b
    assert _effects(table, Calibration(leave_one_out=True)) == a
    single = np.array([_effects(table, Calibration(folds=5, seed=s)) for s in SEEDS])
    assert len(set(single[:, 0])) > 1  # while a 5-fold split moves with its seed


def test_leave_one_head_out_labels():
    heads = np.array(["b", "a", "c", "a", "d"])
    train = np.array([True, True, True, True, False])
    cal = Calibration(leave_one_out=True)
    assert cal.fold_labels(heads, train).tolist() == [1, 0, 2, 0, -1]
    assert (cal.mode, cal.describe()) == (
        "cross-fitted",
        "cross-fitted by head, leave one head out",
    )
    with pytest.raises(ParameterError, match="at least 2 training heads"):
        cal.fold_labels(heads, np.array([False, True, False, True, False]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"folds": 5, "seed": 0, "repeats": 0}, "R >= 1"),
        ({"folds": 5, "seed": 0, "repeats": 2.0}, "R >= 1"),
        ({"repeats": 3}, "no repeats for in-sample"),
        ({"leave_one_out": True, "folds": 5, "seed": 0}, "no folds, seed or repeats"),
        ({"leave_one_out": True, "repeats": 2}, "no folds, seed or repeats"),
        ({"leave_one_out": 1}, "leave_one_out True or False"),
    ],
)
def test_repeats_are_validated(kwargs, match):
    with pytest.raises(ParameterError, match=match) as err:
        Calibration(**kwargs)
    assert err.value.name == "calibration"


def test_describe_names_the_repeats():
    cal = Calibration(folds=5, seed=2, repeats=3)
    assert cal.describe() == "cross-fitted by head, 5 folds, 3 repeats (seed 2)"
    assert Calibration(folds=5, seed=2).describe() == "cross-fitted by head, 5 folds (seed 2)"
