"""Input checks of :func:`analysis.compare.compare_nested` (the table, the settings).

Kept apart so that :mod:`analysis.compare.nested` stays readable; nothing here is public.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import BOOTSTRAPS
from analysis.compare.covariates import Calibration
from analysis.compare.estimators import ESTIMATORS
from analysis.compare.metrics import METRICS
from analysis.validation import ParameterError, check_int, check_random_state

__all__: list[str] = []

#: Columns every comparison table has.
REQUIRED_COLUMNS: tuple[str, ...] = ("cell_key", "cluster", "held_out", "y_lower", "y_upper")


def _check_columns(table: pd.DataFrame) -> None:
    """A DataFrame with the columns :data:`REQUIRED_COLUMNS`."""
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    for c in REQUIRED_COLUMNS:
        if c not in table.columns:
            raise ParameterError("table", f"a column named {c}", list(table.columns)[:12])


def _check_settings(
    *,
    estimator: str,
    metrics: Sequence[str],
    primary_metric: str,
    bootstrap: str,
    n_boot: int,
    maxiter: int,
    alpha: float,
    ci_level: float,
    random_state: int | np.random.Generator | None,
    calibration: Calibration | None,
) -> tuple[Calibration, int, int, np.random.Generator]:
    """Check the estimator, metric and bootstrap settings of :func:`compare_nested`.

    Returns the calibration (None: the in-sample ``Calibration()``), ``n_boot``,
    ``maxiter`` and the random generator of the bootstrap.
    """
    if estimator not in ESTIMATORS:
        raise ParameterError("estimator", "one of " + ", ".join(ESTIMATORS), estimator)
    for m in metrics:
        if m not in METRICS:
            raise ParameterError("metrics", "among " + ", ".join(METRICS), m)
    if primary_metric not in metrics:
        raise ParameterError("primary_metric", "one of the computed metrics", primary_metric)
    if bootstrap not in BOOTSTRAPS:
        raise ParameterError("bootstrap", "one of " + ", ".join(BOOTSTRAPS), bootstrap)
    n_boot = check_int("n_boot", n_boot, minimum=99)
    maxiter = check_int("maxiter", maxiter, minimum=1)
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ParameterError("alpha", "a number in (0, 1)", alpha)
    if not isinstance(ci_level, (int, float)) or not 0 < ci_level < 1:
        raise ParameterError("ci_level", "a number in (0, 1)", ci_level)
    rng = check_random_state(random_state)
    if calibration is None:
        calibration = Calibration()
    if not isinstance(calibration, Calibration):
        raise ParameterError("calibration", "a Calibration or None", calibration)
    return calibration, n_boot, maxiter, rng


def _check_table(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``held_out`` (bool, whole clusters, both sides present), the clusters as str and
    the interval ends ``y_lower <= y_upper`` (no NaN)."""
    held = table["held_out"].to_numpy()
    if held.dtype != bool:
        raise ParameterError("held_out", "a boolean column", str(held.dtype))
    if held.all() or not held.any():
        raise ParameterError("held_out", "both training and held-out rows", int(held.sum()))
    clusters = table["cluster"].astype(str).to_numpy()
    overlap = set(clusters[held]) & set(clusters[~held])
    if overlap:
        raise ParameterError(
            "held_out",
            "whole clusters held out",
            f"{len(overlap)} cluster(s) on both sides, e.g. {min(overlap)}",
        )
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower > upper):
        raise ParameterError(
            "y_lower/y_upper", "intervals with y_lower <= y_upper", "NaN or reversed intervals"
        )
    return held, clusters, lower, upper
