"""Held-out cells cannot leak into anything a comparison fits.

:class:`NestedComparison` learns everything on training cells and reads the held-out cells
only to score the fitted models. So whatever is done to the held-out cells' brackets
(permuted among themselves, shifted, replaced by a constant), every fitted object must
stay bit-identical: the isotonic calibration maps, the standardization (training means
and SDs), the collinearity screen's kept and dropped columns, the design matrices, every
model's coefficients, sigma and in-sample log-likelihood, and the in-sample
likelihood-ratio tests. Only the held-out metrics may move, and they must, or the
perturbation was never seen. The same holds for the held-out cells' covariates, except
that their own rows of the design matrices move with them. Both calibrations are run:
in-sample, and cross-fitted by head (then the fold assignment, every out-of-fold map and
the training rows' cross-fitted values must stay bit-identical too).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analysis.compare import Calibration, ComparisonResult, ComparisonSpec, NestedComparison
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table

LOG_COLUMNS = ["baseline__scale"]
HELD_OUT_METRICS = ["base_value", "rich_value", "effect", "ci_low", "ci_high", "p_value"]
#: Columns read from the held-out metrics: the decisions and the equivalence test.
HELD_OUT_DECISIONS = [
    "p_holm",
    "adds_information",
    "sesoi_share",
    "equivalence_p",
    "equivalence_p_holm",
    "decision",
]
#: (table, held-out mask, generator) -> a table that differs on held-out rows only
Perturbation = Callable[[pd.DataFrame, np.ndarray, np.random.Generator], pd.DataFrame]


def _table() -> pd.DataFrame:
    """A comparison table whose screen drops a constant and a collinear column."""
    t = make_table(np.random.default_rng(2024), native_effect=0.5)
    return t.assign(
        native__const=1.0,
        native__dup=2.0 * t["native__q"] + 1.0,
        baseline__x1_copy=t["baseline__x1"],
    )


CALIBRATIONS = {"in_sample": Calibration(), "cross_fitted": Calibration(folds=4, seed=5)}


def _run(table: pd.DataFrame, estimator: str, calibration: str) -> ComparisonResult:
    return NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=FAMILY,
            extra_pairs=[("M2", "M3")],
            log_columns=LOG_COLUMNS,
            estimator=estimator,
            n_boot=199,
            random_state=0,
            calibration=CALIBRATIONS[calibration],
            **COVARIATES,
        )
    ).fit(table)


def _permute_brackets(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    rows = np.flatnonzero(held)
    perm = rng.permutation(rows)
    assert (perm != rows).any()
    out = t.copy()
    ends = ["y_lower", "y_upper"]
    out.loc[rows, ends] = t.loc[perm, ends].to_numpy()
    return out


def _shift_brackets(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    out = t.copy()
    out.loc[held, ["y_lower", "y_upper"]] += 5.0
    return out


def _constant_brackets(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    # every held-out cell becomes the same closed bracket (a point observation)
    return t.assign(
        y_lower=np.where(held, 3.0, t["y_lower"]), y_upper=np.where(held, 3.0, t["y_upper"])
    )


def _widen_brackets(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    # every other held-out cell one-sided: non-finite midpoints on held-out cells only
    # (each held-out head keeps finite ones, so every bootstrap Spearman is defined)
    rows = np.flatnonzero(held)[::2]
    out = t.copy()
    out.loc[rows, "y_lower"] = -np.inf
    return out


def _permute_covariates(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    rows = np.flatnonzero(held)
    perm = rng.permutation(rows)
    cols = [c for c in t.columns if "__" in c]
    out = t.copy()
    out.loc[rows, cols] = t.loc[perm, cols].to_numpy()
    return out


def _scale_covariates(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    # far outside the training range, so a calibration map fitted on them would differ
    cols = [c for c in t.columns if "__" in c]
    out = t.copy()
    out.loc[held, cols] = 10.0 * t.loc[held, cols].to_numpy() + 3.0
    return out


def _jitter_covariates(t: pd.DataFrame, held: np.ndarray, rng) -> pd.DataFrame:
    # independent multiplicative noise per cell and column (signs, and so the log
    # column's positivity, kept): on held-out rows the constant column varies and the
    # copy and the affine duplicate are no longer collinear, so a screen or a
    # standardization that looked at held-out rows would decide differently
    cols = [c for c in t.columns if "__" in c]
    out = t.copy()
    noise = np.exp(rng.normal(size=(int(held.sum()), len(cols))))
    out.loc[held, cols] = t.loc[held, cols].to_numpy() * noise
    return out


BRACKETS: dict[str, Perturbation] = {
    "permuted": _permute_brackets,
    "shifted": _shift_brackets,
    "constant": _constant_brackets,
    "one_sided": _widen_brackets,
}
COVARIATE_CHANGES: dict[str, Perturbation] = {
    "permuted": _permute_covariates,
    "scaled": _scale_covariates,
    "jittered": _jitter_covariates,
}


def _same_bits(a, b, what: str) -> None:
    """Equal as raw bytes: equal floats are not enough (``-0.0 == 0.0``)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert a.tobytes() == b.tobytes(), f"{what} differs: {a!r} vs {b!r}"


def _assert_same_fit(a: ComparisonResult, b: ComparisonResult, rows: np.ndarray) -> None:
    """Everything learned is bit-identical; design matrices compared on ``rows``."""
    pa, pb = a.covariates, b.covariates
    # the baseline block is calibrated (COVARIATES), so the maps exist to be compared
    calibrated = {"baseline__x1", "baseline__x1_copy", "baseline__scale"}
    assert set(pa.calibrations) == set(pb.calibrations) == calibrated
    for c, (xa, ya) in pa.calibrations.items():
        xb, yb = pb.calibrations[c]
        _same_bits(xa, xb, f"calibration knots x of {c}")
        _same_bits(ya, yb, f"calibration knots y of {c}")
    assert a.calibration == b.calibration
    if a.calibration.folds is None:
        assert not pa.fold_calibrations and pa.calibration_folds is None
    else:
        # cross-fitted: the folds, each out-of-fold map and the values it gave
        _same_bits(pa.calibration_folds, pb.calibration_folds, "fold assignment")
        assert set(pa.fold_calibrations) == set(pb.fold_calibrations) == calibrated
        for c, maps in pa.fold_calibrations.items():
            assert len(maps) == len(pb.fold_calibrations[c]) == a.calibration.folds
            for k, ((xa, ya), (xb, yb)) in enumerate(
                zip(maps, pb.fold_calibrations[c], strict=True)
            ):
                _same_bits(xa, xb, f"fold {k} calibration knots x of {c}")
                _same_bits(ya, yb, f"fold {k} calibration knots y of {c}")
    assert set(pa.calibrated) == set(pb.calibrated) == calibrated
    for c in pa.calibrated:  # calibrated values before standardization, on ``rows``
        _same_bits(pa.calibrated[c][rows], pb.calibrated[c][rows], f"calibrated values of {c}")
    assert list(pa.centers) == list(pb.centers) and list(pa.scales) == list(pb.scales)
    for c in pa.centers:
        _same_bits(pa.centers[c], pb.centers[c], f"training mean of {c}")
        _same_bits(pa.scales[c], pb.scales[c], f"training SD of {c}")
    assert pa.columns == pb.columns == a.columns == b.columns
    pd.testing.assert_frame_equal(pa.dropped, pb.dropped, check_exact=True)
    assert set(a.dropped["reason"]) == {"constant", "collinear"}
    for m, X in pa.matrices.items():
        _same_bits(X[rows], pb.matrices[m][rows], f"design matrix of {m}")
    assert list(a.fits) == list(b.fits)
    for m, fa in a.fits.items():
        fb = b.fits[m]
        _same_bits(fa.coef, fb.coef, f"coefficients of {m}")
        _same_bits(fa.sigma, fb.sigma, f"sigma of {m}")
        _same_bits(fa.loglik, fb.loglik, f"in-sample log-likelihood of {m}")
        assert (fa.n_params, fa.alpha, fa.converged) == (fb.n_params, fb.alpha, fb.converged)
        assert (fa.bse is None) == (fb.bse is None)
        if fa.bse is not None:
            _same_bits(fa.bse, fb.bse, f"standard errors of {m}")
    pd.testing.assert_frame_equal(a.lr_tests, b.lr_tests, check_exact=True)


def _assert_scores_moved(a: ComparisonResult, b: ComparisonResult) -> None:
    """The held-out metrics saw the perturbation (else the test would prove nothing)."""
    fa, fb = a.to_frame(), b.to_frame()
    pd.testing.assert_frame_equal(
        fa.drop(columns=HELD_OUT_METRICS + HELD_OUT_DECISIONS),
        fb.drop(columns=HELD_OUT_METRICS + HELD_OUT_DECISIONS),
        check_exact=True,
    )
    moved = ~np.isclose(fa["base_value"], fb["base_value"], rtol=0, atol=0, equal_nan=True)
    assert moved.any(), "the held-out metrics did not change: the held-out rows were not read"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return _table()


@pytest.fixture(
    scope="module",
    params=[(e, c) for c in CALIBRATIONS for e in ("interval", "ols", "ridge")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def reference(request, table) -> tuple[tuple[str, str], ComparisonResult]:
    return request.param, _run(table, *request.param)


@pytest.mark.parametrize("change", list(BRACKETS))
def test_held_out_brackets_change_no_fitted_object(table, reference, change):
    setting, before = reference
    held = table["held_out"].to_numpy()
    changed = BRACKETS[change](table, held, np.random.default_rng(7))
    pd.testing.assert_frame_equal(changed.loc[~held], table.loc[~held], check_exact=True)
    assert not changed.loc[held, ["y_lower", "y_upper"]].equals(
        table.loc[held, ["y_lower", "y_upper"]]
    )
    after = _run(changed, *setting)
    every_row = np.ones(len(table), dtype=bool)
    _assert_same_fit(before, after, every_row)
    _assert_scores_moved(before, after)


@pytest.mark.parametrize("change", list(COVARIATE_CHANGES))
def test_held_out_covariates_change_no_fitted_object(table, reference, change):
    setting, before = reference
    held = table["held_out"].to_numpy()
    changed = COVARIATE_CHANGES[change](table, held, np.random.default_rng(7))
    pd.testing.assert_frame_equal(changed.loc[~held], table.loc[~held], check_exact=True)
    after = _run(changed, *setting)
    _assert_same_fit(before, after, ~held)
    _assert_scores_moved(before, after)
