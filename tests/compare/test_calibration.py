"""Cross-fitted calibration: folds of whole training heads, out-of-fold maps.

A training head's calibrated covariates must come from maps that never saw its own
outcomes; held-out cells keep the map fitted on all training heads; the folds are a
deterministic function of the training heads and the seed.
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
)
from analysis.compare.equivalence import EQUIVALENCE_COLUMNS
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table

LOG_COLUMNS = ["baseline__scale"]
CALIBRATED = ("baseline__x1", "baseline__scale")
SEED = 20261202


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return make_table(np.random.default_rng(11), native_effect=0.5)


def _prepare(table: pd.DataFrame, folds: np.ndarray | None):
    train = ~table["held_out"].to_numpy()
    return prepare_covariates(
        table,
        MODELS,
        train,
        log_columns=LOG_COLUMNS,
        calibration_folds=folds,
        **COVARIATES,
    )


def _folds(table: pd.DataFrame, k: int = 5, seed: int = SEED) -> np.ndarray:
    return head_folds(table["cluster"], ~table["held_out"].to_numpy(), folds=k, seed=seed)


def _perturb_head(table: pd.DataFrame, head: str) -> pd.DataFrame:
    """The head's brackets moved and reshuffled: its own outcomes, nothing else."""
    rows = (table["cluster"] == head).to_numpy()
    out = table.copy()
    shift = np.random.default_rng(3).normal(scale=2.0, size=int(rows.sum()))
    out.loc[rows, "y_lower"] += shift
    out.loc[rows, "y_upper"] += shift
    return out


def _bits(a) -> bytes:
    return np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes()


def test_a_training_heads_values_do_not_depend_on_its_own_outcomes(table):
    folds = _folds(table)
    train = ~table["held_out"].to_numpy()
    head = sorted(set(table.loc[train, "cluster"]))[0]
    rows = (table["cluster"] == head).to_numpy()
    changed = _perturb_head(table, head)
    k = int(folds[rows][0])
    other_folds = train & (folds != k)

    a, b = _prepare(table, folds), _prepare(changed, folds)
    assert set(a.calibrated) == set(CALIBRATED)
    for c in CALIBRATED:
        # the head's own calibrated values: bit-identical (its fold's map never saw it)
        assert _bits(a.calibrated[c][rows]) == _bits(b.calibrated[c][rows]), c
        assert _bits(a.fold_calibrations[c][k][0]) == _bits(b.fold_calibrations[c][k][0])
        assert _bits(a.fold_calibrations[c][k][1]) == _bits(b.fold_calibrations[c][k][1])
        # the other folds' maps did see it
        assert not np.array_equal(a.calibrated[c][other_folds], b.calibrated[c][other_folds]), c

    # in-sample, the same perturbation moves the head's own calibrated values: the
    # in-sample map follows its outcomes (what cross-fitting removes)
    a0, b0 = _prepare(table, None), _prepare(changed, None)
    assert any(
        not np.array_equal(a0.calibrated[c][rows], b0.calibrated[c][rows]) for c in CALIBRATED
    )


def test_held_out_values_use_the_map_fitted_on_all_training_heads(table):
    held = table["held_out"].to_numpy()
    cross, insample = _prepare(table, _folds(table)), _prepare(table, None)
    for c in CALIBRATED:
        # the all-training map is the in-sample map, knot for knot
        for i in (0, 1):
            assert _bits(cross.calibrations[c][i]) == _bits(insample.calibrations[c][i])
        assert _bits(cross.calibrated[c][held]) == _bits(insample.calibrated[c][held]), c
        x = table[c].to_numpy(float)
        x = np.log(x) if c in LOG_COLUMNS else x
        knots_x, knots_y = cross.calibrations[c]
        np.testing.assert_allclose(
            cross.calibrated[c][held], np.interp(x[held], knots_x, knots_y), rtol=0, atol=1e-12
        )
        # and training rows are not the all-training map's values
        assert not np.array_equal(cross.calibrated[c][~held], insample.calibrated[c][~held])
    # standardization is on the cross-fitted training values
    c = "baseline__x1"
    assert cross.centers[c] == pytest.approx(cross.calibrated[c][~held].mean(), abs=1e-12)
    assert cross.scales[c] == pytest.approx(cross.calibrated[c][~held].std(), abs=1e-12)


def test_each_fold_map_is_fitted_on_the_other_folds_only(table):
    folds = _folds(table)
    train = ~table["held_out"].to_numpy()
    prep = _prepare(table, folds)
    x = table["baseline__x1"].to_numpy()
    for k in range(5):
        # outcomes of fold k's training rows replaced: fold k's own map must not move
        rows = train & (folds == k)
        other = _prepare(
            table.assign(
                y_lower=np.where(rows, 0.0, table["y_lower"]),
                y_upper=np.where(rows, 0.0, table["y_upper"]),
            ),
            folds,
        )
        kx, ky = prep.fold_calibrations["baseline__x1"][k]
        ox, oy = other.fold_calibrations["baseline__x1"][k]
        assert _bits(kx) == _bits(ox) and _bits(ky) == _bits(oy), k
        np.testing.assert_allclose(
            prep.calibrated["baseline__x1"][rows], np.interp(x[rows], kx, ky), atol=1e-12
        )


def test_folds_are_whole_heads_and_deterministic_from_the_seed(table):
    train = ~table["held_out"].to_numpy()
    clusters = table["cluster"].to_numpy()
    f = _folds(table)
    assert (f[~train] == -1).all() and (f[train] >= 0).all()
    per_head = pd.Series(f[train]).groupby(clusters[train]).nunique()
    assert (per_head == 1).all()  # every head in exactly one fold
    sizes = np.bincount(pd.Series(f[train]).groupby(clusters[train]).first().to_numpy())
    assert len(sizes) == 5 and sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(f, _folds(table))
    assert not np.array_equal(f, _folds(table, seed=SEED + 1))
    # the documented rule, literally
    heads = np.unique(clusters[train].astype(str))
    order = np.random.default_rng(np.random.SeedSequence(SEED).spawn(1)[0]).permutation(len(heads))
    want = {heads[h]: i % 5 for i, h in enumerate(order)}
    assert all(f[i] == want[c] for i, c in enumerate(clusters) if train[i])
    # held-out rows play no part: renaming or dropping them leaves the folds as they are
    renamed = np.where(train, clusters, "zz-" + clusters)
    np.testing.assert_array_equal(head_folds(renamed, train, folds=5, seed=SEED)[train], f[train])
    np.testing.assert_array_equal(
        head_folds(clusters[train], np.ones(train.sum(), bool), folds=5, seed=SEED), f[train]
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"folds": 1, "seed": 0}, "K >= 2"),
        ({"folds": 2.0, "seed": 0}, "K >= 2"),
        ({"folds": True, "seed": 0}, "K >= 2"),
        ({"folds": 5, "seed": None}, "seed"),
        ({"folds": 5, "seed": -1}, "seed"),
        ({"folds": None, "seed": 3}, "in-sample"),
    ],
)
def test_calibration_is_validated(kwargs, match):
    with pytest.raises(ParameterError, match=match) as err:
        Calibration(**kwargs)
    assert err.value.name == "calibration"


def test_more_folds_than_training_heads_is_refused(table):
    n_train = table.loc[~table["held_out"], "cluster"].nunique()
    with pytest.raises(ParameterError, match=f"training heads \\({n_train}\\)") as err:
        _folds(table, k=n_train + 1)
    assert err.value.name == "calibration"
    with pytest.raises(ParameterError) as err:
        NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=FAMILY,
                n_boot=99,
                calibration=Calibration(folds=n_train + 1, seed=0),
                **COVARIATES,
            )
        ).fit(table)
    assert err.value.name == "calibration"
    assert _folds(table, k=n_train).max() == n_train - 1  # one head per fold is allowed


def test_fold_labels_are_validated(table):
    train = ~table["held_out"].to_numpy()
    with pytest.raises(ParameterError) as err:
        _prepare(table, np.zeros(len(table), dtype=int))  # a single fold
    assert err.value.name == "calibration_folds"
    with pytest.raises(ParameterError):
        _prepare(table, np.where(train, 0.5, -1.0))  # not integers
    with pytest.raises(ParameterError):
        _prepare(table, np.zeros(3, dtype=int))  # wrong length


def test_the_comparison_states_its_calibration(table):
    def run(cal):
        return NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=FAMILY,
                log_columns=LOG_COLUMNS,
                n_boot=199,
                random_state=0,
                calibration=cal,
                **COVARIATES,
            )
        ).fit(table)

    cross = run(Calibration(folds=5, seed=SEED))
    assert cross.calibration == Calibration(folds=5, seed=SEED)
    f = cross.to_frame()
    cal_cols = ["calibration", "calibration_folds", "calibration_seed"]
    n_eq = len(EQUIVALENCE_COLUMNS)  # added after the calibration columns
    assert list(f.columns[-3 - n_eq : -n_eq]) == cal_cols
    assert (f["calibration"] == "cross-fitted").all()
    assert (f["calibration_folds"] == 5).all() and (f["calibration_seed"] == SEED).all()
    assert f"calibration of calibrated blocks: cross-fitted by head, 5 folds (seed {SEED})" in (
        cross.summary()
    )
    np.testing.assert_array_equal(cross.covariates.calibration_folds, _folds(table))

    default = run(None)
    assert default.calibration == Calibration() and default.calibration.mode == "in-sample"
    g = default.to_frame()
    assert (g["calibration"] == "in-sample").all() and g["calibration_folds"].isna().all()
    assert "calibration of calibrated blocks: in-sample" in default.summary()
    assert default.covariates.calibration_folds is None
    # None and Calibration() are the same in-sample calibration
    pd.testing.assert_frame_equal(
        g.drop(columns=["calibration", "calibration_folds", "calibration_seed"]),
        run(Calibration())
        .to_frame()
        .drop(columns=["calibration", "calibration_folds", "calibration_seed"]),
        check_exact=True,
    )
    # cross-fitting changes the training design, so the fits (and the held-out losses)
    assert not np.array_equal(cross.fits["M0"].coef, default.fits["M0"].coef)
    with pytest.raises(ParameterError) as err:
        run("cross-fitted by head, 5 folds")
    assert err.value.name == "calibration"
