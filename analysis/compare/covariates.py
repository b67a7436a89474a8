"""Covariate preparation: logs, calibration, standardization, collinearity.

Columns are named ``BLOCK__feature``; everything learned (isotonic maps, which can be
cross-fitted by head: :class:`Calibration`; means, SDs, which columns survive) is learned
on training rows only (docs/prereg.md, section "The comparison and its decision rule",
step 1). This package knows no block by name: which blocks are calibrated, their order in
the collinearity screen and which columns are diagnostics are arguments, neutral by
default; a study passes what its descriptor registry declares
(``analysis.descriptors.Registry.covariate_kwargs``).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd
from sklearn.isotonic import IsotonicRegression

from analysis.compare.calibration import (
    CALIBRATION_MODES,
    Calibration,
    head_folds,
    leave_one_head_out,
    repeated_head_folds,
)
from analysis.validation import ParameterError

__all__ = [
    "CALIBRATION_MODES",
    "Calibration",
    "PreparedCovariates",
    "greedy_independent",
    "head_folds",
    "leave_one_head_out",
    "model_feature_columns",
    "prepare_covariates",
    "repeated_head_folds",
]


#: Relative tolerance of :func:`prepare_covariates` for constant and collinear columns.
TOL = 1e-8


def model_feature_columns(
    columns: Sequence[str],
    blocks: Sequence[str],
    *,
    block_order: Sequence[str] = (),
    diagnostic_columns: Collection[str] = (),
) -> list[str]:
    """A model's covariate columns (table order within a block, ``diagnostic_columns``
    excluded) in block order; a block with none raises.

    ``block_order`` and ``diagnostic_columns`` are as in :func:`prepare_covariates`.

    Examples
    --------
    >>> from analysis.compare.covariates import model_feature_columns
    >>> columns = ["base__a", "rich__c", "base__b", "base__diag"]
    >>> model_feature_columns(
    ...     columns, ["rich", "base"], block_order=["base"], diagnostic_columns={"base__diag"}
    ... )
    ['base__a', 'base__b', 'rich__c']
    >>> model_feature_columns(columns, ["other"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: models: expected a block with other__* columns...
    """
    out: list[str] = []
    skip = set(diagnostic_columns)
    # the blocks in block_order first, in that order, then the model's others as given
    for b in [b for b in block_order if b in blocks] + [b for b in blocks if b not in block_order]:
        cols = [c for c in columns if c.startswith(b + "__") and c not in skip]
        if not cols:
            raise ParameterError("models", f"a block with {b}__* columns in the table", b)
        out.extend(cols)
    return out


@dataclass(frozen=True)
class PreparedCovariates:
    """Design matrices ready for fitting.

    Attributes
    ----------
    matrices : dict
        Model name -> float64 array (n_rows, k) of kept, standardized covariates
        (no intercept column).
    columns : dict
        Model name -> tuple of kept column names, in block order.
    dropped : pandas.DataFrame
        Columns ``model``, ``column``, ``reason`` (``constant`` or ``collinear``).
    calibrations : mapping
        Column -> ``(x, y)``, the knots of its isotonic calibration map fitted on all
        training rows (the fit's ``X_thresholds_`` and ``y_thresholds_``, on the logged
        scale for ``log_columns``); only columns of calibrated blocks whose training
        values are not all equal. It calibrates the held-out rows, and the training rows
        too when calibration is in-sample. Read-only.
    centers, scales : mapping
        Column -> training mean and SD used to standardize it (after log and
        calibration), for every covariate of the models, constant ones included.
        Read-only.
    fold_calibrations : mapping
        Cross-fitted calibration only (else empty): column -> one ``(x, y)`` per fold, in
        fold order, the knots of the map fitted on the training rows of the other folds
        and applied to this fold's training rows; with R repeated assignments, R x K
        of them, assignment by assignment (repeat r's fold k at ``r * K + k`` when every
        assignment has K folds). Read-only.
    calibration_folds : numpy.ndarray or None
        The fold of each row (-1 outside training) when cross-fitted, (n,), or one row
        of folds per assignment, (R, n), as passed to :func:`prepare_covariates`; else
        None. Read-only.
    calibrated : mapping
        Column of ``calibrations`` -> its calibrated values on every row, before
        standardization (cross-fitted on training rows when ``calibration_folds`` is
        set, averaged over the assignments when it has several). Read-only.

    Notes
    -----
    ``calibrations``, ``fold_calibrations``, ``centers``, ``scales``, ``columns`` and
    ``dropped`` are everything the preparation learns; all of it is learned on training
    rows, which is what lets a test show that held-out rows cannot change it.

    Examples
    --------
    Made by :func:`prepare_covariates`:

    >>> import numpy as np
    >>> from analysis.datasets import example_covariate_table
    >>> table = example_covariate_table()
    >>> train = np.arange(12) < 9
    >>> from analysis.compare.covariates import prepare_covariates
    >>> prepared = prepare_covariates(table, {"base": ["base"]}, train)
    >>> prepared.columns, prepared.matrices["base"].shape, prepared.centers["base__size"]
    ({'base': ('base__size',)}, (12, 1), 5.0)
    """

    matrices: dict[str, np.ndarray]
    columns: dict[str, tuple[str, ...]]
    dropped: pd.DataFrame = field(repr=False)
    calibrations: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(repr=False)
    centers: Mapping[str, float] = field(repr=False)
    scales: Mapping[str, float] = field(repr=False)
    fold_calibrations: Mapping[str, tuple[tuple[np.ndarray, np.ndarray], ...]] = field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )
    calibration_folds: np.ndarray | None = field(default=None, repr=False)
    calibrated: Mapping[str, np.ndarray] = field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )


def greedy_independent(
    M: np.ndarray, *, tol: float = TOL, fixed: np.ndarray | None = None
) -> list[int]:
    """Indices of columns of ``M`` kept by a pivoted QR in the given column order.

    Notes
    -----
    Gram-Schmidt (twice, for stability) against an intercept, the columns of ``fixed``
    (always kept) and the columns already kept; column j is kept when its residual norm
    exceeds ``sqrt(tol)`` times its norm.

    Examples
    --------
    Column 1 is twice column 0 and column 3 is the intercept; both are left out:

    >>> import numpy as np
    >>> from analysis.compare.covariates import greedy_independent
    >>> x = np.arange(5.0)
    >>> greedy_independent(np.column_stack([x, 2 * x, x**2, np.ones(5)]))
    [0, 2]
    >>> greedy_independent(np.column_stack([x, x**2]), fixed=x[:, None])  # x is kept already
    [1]
    """
    n = M.shape[0]
    basis: list[np.ndarray] = [np.full(n, 1.0 / np.sqrt(n))]
    if fixed is not None:
        for v in np.asarray(fixed, float).T:
            r = v.copy()
            for _ in range(2):
                for q in basis:
                    r -= q * (q @ r)
            if np.linalg.norm(r) > np.sqrt(tol) * max(np.linalg.norm(v), 1e-300):
                basis.append(r / np.linalg.norm(r))
    keep: list[int] = []
    for j in range(M.shape[1]):
        v = np.asarray(M[:, j], float)
        r = v.copy()
        for _ in range(2):
            for q in basis:
                r -= q * (q @ r)
        if np.linalg.norm(r) > np.sqrt(tol) * np.linalg.norm(v) and np.linalg.norm(v) > 0:
            basis.append(r / np.linalg.norm(r))
            keep.append(j)
    return keep


def _midpoints(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return 0.5 * (lower + upper)


def _read_only(a: np.ndarray, dtype: type = float) -> np.ndarray:
    out = np.array(a, dtype=dtype)  # a copy: the fitted estimator keeps its own
    out.flags.writeable = False
    return out


def _isotonic(x: np.ndarray, y: np.ndarray) -> IsotonicRegression:
    """``IsotonicRegression(increasing="auto", out_of_bounds="clip")`` fitted to (x, y)."""
    iso = IsotonicRegression(increasing="auto", out_of_bounds="clip")
    with warnings.catch_warnings():
        # "auto" picks the direction from the sign of Spearman's rho and warns when its
        # CI spans 0; the fit is valid either way
        warnings.simplefilter("ignore", UserWarning)
        iso.fit(x, y)
    return iso


def _knots(iso: IsotonicRegression) -> tuple[np.ndarray, np.ndarray]:
    return _read_only(iso.X_thresholds_), _read_only(iso.y_thresholds_)


def _check_folds(folds: object, train: np.ndarray) -> np.ndarray:
    """Validated fold labels, (n,) or (R, n) as given (each assignment's training rows:
    ints >= 0, at least two folds)."""
    f = np.asarray(folds)
    ok_shape = f.shape == train.shape or (f.ndim == 2 and f.shape[1:] == train.shape)
    if not ok_shape or f.size == 0 or not np.issubdtype(f.dtype, np.integer):
        raise ParameterError(
            "calibration_folds",
            "an integer fold label per row, or one row of labels per repeat (or None)",
            getattr(f, "shape", f),
        )
    for labels in np.atleast_2d(f):
        if np.any(labels[train] < 0) or len(np.unique(labels[train])) < 2:
            raise ParameterError(
                "calibration_folds",
                "labels >= 0 on training rows, with at least two folds",
                np.unique(labels[train]).tolist(),
            )
    return f.astype(int)


def _cross_fit(
    x: np.ndarray, mid: np.ndarray, fit_rows: np.ndarray, train: np.ndarray, folds: np.ndarray
) -> tuple[np.ndarray, tuple[tuple[np.ndarray, np.ndarray], ...]]:
    """Out-of-fold values of the training rows (others NaN), averaged over the rows of
    ``folds`` when it is (R, n), and the knots of every out-of-fold map in (repeat,
    fold) order."""
    z = np.full(len(x), np.nan)
    assignments = np.atleast_2d(folds)
    knots = []
    for r, labels in enumerate(assignments):
        for k in np.unique(labels[train]):
            rows = fit_rows & (labels != k)
            if not rows.any():
                raise ParameterError(
                    "calibration",
                    "training cells with a finite midpoint outside every fold",
                    f"none outside fold {int(k)}",
                )
            iso_k = _isotonic(x[rows], mid[rows])
            apply = train & (labels == k)
            pred = iso_k.predict(x[apply])
            # one assignment: its out-of-fold values themselves (bit for bit as before
            # repeats existed); several: their sum, divided by R below
            z[apply] = pred if r == 0 else z[apply] + pred
            knots.append(_knots(iso_k))
    if len(assignments) > 1:
        z[train] /= len(assignments)
    return z, tuple(knots)


def prepare_covariates(
    table: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    train: np.ndarray,
    *,
    log_columns: Sequence[str] = (),
    calibrate_blocks: Sequence[str] = (),
    block_order: Sequence[str] = (),
    diagnostic_columns: Collection[str] = (),
    calibration_folds: np.ndarray | None = None,
) -> PreparedCovariates:
    """Build each model's covariate matrix from a tidy table.

    Parameters
    ----------
    table : pandas.DataFrame
        Must hold ``y_lower``, ``y_upper`` and the ``BLOCK__feature`` columns.
    models : mapping
        Model name -> block names.
    train : array of bool
        Training rows (everything is learned on these).
    log_columns : sequence of str, keyword-only
        Positive scale features entered as natural logs; a non-positive value raises.
    calibrate_blocks : sequence of str, keyword-only
        Blocks whose covariates are replaced by isotonic calibrations (default none: a
        calibration is a modelling choice about a block, which only its owner can make).
    block_order : sequence of str, keyword-only
        Blocks in the order their columns enter the collinearity screen; a model's blocks
        not listed follow in the model's own order (default: each model's own order).
        One order shared by every model keeps a nested pair's kept columns nested.
    diagnostic_columns : collection of str, keyword-only
        Columns that are never covariates even when their block is in a model (default
        none: every ``block__feature`` column of a model's blocks is a covariate).
    calibration_folds : array of int or None, keyword-only
        None (default): in-sample calibration, each map fitted on all training rows and
        applied to every row. Else a fold label per row (labels of non-training rows
        are ignored; :func:`head_folds` assigns whole heads): cross-fitted
        calibration, each training row calibrated by the map fitted on the training
        rows of the other folds, every other row by the map fitted on all training rows.
        A 2-D array (R, n) holds R fold assignments (:func:`repeated_head_folds`): a
        training row's value is the mean of its R out-of-fold values.

    Returns
    -------
    PreparedCovariates

    Notes
    -----
    Steps, in order: (1) ``x <- log x`` for ``log_columns``; (2) each covariate of a
    calibrated block becomes ``g(x)``, where ``g`` is
    ``IsotonicRegression(increasing="auto", out_of_bounds="clip")`` fitted to training
    midpoints ``(a + b) / 2`` on ``x`` (training rows with a non-finite midpoint are
    skipped); cross-fitted, a training row of fold k gets ``g_(-k)(x)``, with ``g_(-k)``
    fitted the same way on the training rows outside fold k, and the other rows
    ``g(x)`` (a column whose training values are all equal is not calibrated either
    way); with R assignments (rows of ``calibration_folds``), a training row gets
    ``(1/R) sum_r g_(r, -k_r)(x)``, ``k_r`` its fold under assignment r; (3) standardization ``(x - m) / s`` with training mean and SD; a column
    with ``s <= TOL * max(1, |m|)`` is dropped as constant; (4) per model, a pivoted QR
    in ``block_order`` (then the model's other blocks), columns of a block in table
    order: column j is
    kept when the norm of its residual on the kept columns (training rows, with an
    intercept) exceeds ``sqrt(TOL)`` times its own norm, else dropped as collinear.
    Greedy order means a nested pair keeps nested columns.

    Examples
    --------
    Twelve cells, nine of them for training; ``base__twice`` duplicates ``base__size``
    and ``rich__const`` is constant:

    >>> import numpy as np
    >>> from analysis.datasets import example_covariate_table
    >>> table = example_covariate_table()
    >>> train = np.arange(12) < 9
    >>> from analysis.compare.covariates import head_folds, prepare_covariates
    >>> models = {"base": ["base"], "rich": ["base", "rich"]}
    >>> prepared = prepare_covariates(table, models, train)
    >>> prepared.columns
    {'base': ('base__size',), 'rich': ('base__size', 'rich__noise')}
    >>> print(prepared.dropped.to_string(index=False))
    model      column    reason
     base base__twice collinear
     rich rich__const  constant
     rich base__twice collinear
    >>> X = prepared.matrices["rich"]  # standardized on the training rows
    >>> np.allclose(X[train].mean(axis=0), 0.0), np.allclose(X[train].std(axis=0), 1.0)
    (True, True)

    Cross-fitted calibration of the ``base`` block, three folds of heads (one cell each):

    >>> folds = head_folds(np.arange(12), train, folds=3, seed=0)
    >>> prepared = prepare_covariates(
    ...     table, models, train, calibrate_blocks=["base"], calibration_folds=folds
    ... )
    >>> len(prepared.fold_calibrations["base__size"])  # one map per fold
    3
    >>> x, y = prepared.calibrations["base__size"]  # the map for held-out rows
    >>> x.tolist(), y.tolist()
    ([1.0, 2.0, 3.0, 5.0, 6.0, 9.0], [0.5, 1.5, 2.5, 2.5, 3.5, 3.5])
    """
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    for name, names in (
        ("log_columns", log_columns),
        ("calibrate_blocks", calibrate_blocks),
        ("block_order", block_order),
        ("diagnostic_columns", diagnostic_columns),
    ):
        if isinstance(names, str):  # a lone string would be read letter by letter
            raise ParameterError(name, "a sequence of names, not one string", names)
    train = np.asarray(train, dtype=bool)
    if train.shape != (len(table),) or not train.any():
        raise ParameterError("train", "a boolean mask with at least one training row", train)
    folds = None if calibration_folds is None else _check_folds(calibration_folds, train)
    cols_all = list(table.columns)
    model_cols = {
        m: model_feature_columns(
            cols_all, b, block_order=block_order, diagnostic_columns=diagnostic_columns
        )
        for m, b in models.items()
    }
    used = list(dict.fromkeys(c for cols in model_cols.values() for c in cols))
    for c in log_columns:
        if c not in cols_all:
            raise ParameterError("log_columns", "columns of the table", c)
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    mid = _midpoints(lower, upper)
    fit_rows = train & np.isfinite(mid)

    values: dict[str, np.ndarray] = {}
    calibrations: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    fold_calibrations: dict[str, tuple[tuple[np.ndarray, np.ndarray], ...]] = {}
    calibrated: dict[str, np.ndarray] = {}
    centers: dict[str, float] = {}
    scales: dict[str, float] = {}
    dropped: list[tuple[str, str, str]] = []
    constant: set[str] = set()
    for c in used:
        x = table[c].to_numpy(dtype=float)
        if not np.all(np.isfinite(x)):
            raise ParameterError(
                c,
                "finite values in every cell (apply exclusions first)",
                "missing or non-finite values",
            )
        if c in log_columns:
            if np.any(x <= 0):
                raise ParameterError(c, "positive values (it is in log_columns)", float(x.min()))
            x = np.log(x)
        if c.split("__", 1)[0] in calibrate_blocks:
            xf = x[fit_rows]
            if xf.size and np.ptp(xf) > 0:
                iso = _isotonic(xf, mid[fit_rows])
                calibrations[c] = _knots(iso)
                z = iso.predict(x)
                if folds is not None:
                    # out of fold: a training head never meets a map fitted on its own
                    # outcomes (an in-sample map absorbs part of each head's effect)
                    oof, fold_calibrations[c] = _cross_fit(x, mid, fit_rows, train, folds)
                    z[train] = oof[train]
                x = z
                calibrated[c] = _read_only(z)
        m = float(x[train].mean())
        s = float(x[train].std())
        centers[c], scales[c] = m, s
        if s <= TOL * max(1.0, abs(m)):
            constant.add(c)
            values[c] = np.zeros_like(x)
        else:
            values[c] = (x - m) / s

    matrices: dict[str, np.ndarray] = {}
    kept_cols: dict[str, tuple[str, ...]] = {}
    for name, cols in model_cols.items():
        candidates = [c for c in cols if c not in constant]
        dropped.extend((name, c, "constant") for c in cols if c in constant)
        M = (
            np.column_stack([values[c][train] for c in candidates])
            if candidates
            else np.zeros((int(train.sum()), 0))
        )
        keep = greedy_independent(M)
        kept = [candidates[j] for j in keep]
        dropped.extend((name, c, "collinear") for c in candidates if c not in kept)
        kept_cols[name] = tuple(kept)
        matrices[name] = (
            np.column_stack([values[c] for c in kept]) if kept else np.zeros((len(table), 0))
        )
    return PreparedCovariates(
        matrices=matrices,
        columns=kept_cols,
        dropped=pd.DataFrame(dropped, columns=["model", "column", "reason"]),
        calibrations=MappingProxyType(calibrations),
        centers=MappingProxyType(centers),
        scales=MappingProxyType(scales),
        fold_calibrations=MappingProxyType(fold_calibrations),
        calibration_folds=None if folds is None else _read_only(folds, int),
        calibrated=MappingProxyType(calibrated),
    )
