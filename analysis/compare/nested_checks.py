"""Input checks of :class:`analysis.compare.NestedComparison`: the table, nested pairs.

Kept apart so that :mod:`analysis.compare.nested` stays readable.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.compare.covariates import model_feature_columns
from analysis.validation import ParameterError

__all__ = ["check_nested"]

#: Columns every comparison table has.
REQUIRED_COLUMNS: tuple[str, ...] = ("cell_key", "cluster", "held_out", "y_lower", "y_upper")


def _check_columns(table: pd.DataFrame) -> None:
    """A DataFrame with the columns :data:`REQUIRED_COLUMNS`."""
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    for c in REQUIRED_COLUMNS:
        if c not in table.columns:
            raise ParameterError("table", f"a column named {c}", list(table.columns)[:12])


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


def _check_pairs(table: pd.DataFrame, spec) -> None:
    """Every pair of ``spec.family`` and ``spec.extra_pairs`` nested in ``table``'s
    columns (:func:`check_nested`, named ``family[i]`` or ``extra_pairs[i]``)."""
    for name, pairs in (("family", spec.family), ("extra_pairs", spec.extra_pairs)):
        for i, (b, r) in enumerate(pairs):
            check_nested(
                list(table.columns),
                spec.models,
                b,
                r,
                name=f"{name}[{i}]",
                diagnostic_columns=spec.diagnostic_columns,
            )


def check_nested(
    columns: Sequence[str],
    models: Mapping[str, Sequence[str]],
    base: str,
    rich: str,
    *,
    name: str = "pairs",
    diagnostic_columns: Collection[str] = (),
) -> None:
    """Raise unless every covariate column of ``base`` is a column of ``rich``.

    ``diagnostic_columns`` are not covariates (see
    :func:`~analysis.compare.covariates.prepare_covariates`).

    Examples
    --------
    >>> from analysis.compare.nested_checks import check_nested
    >>> columns = ["y_lower", "y_upper", "base__x", "rich__z"]
    >>> models = {"base": ["base"], "rich": ["base", "rich"]}
    >>> check_nested(columns, models, "base", "rich")  # nested: returns None
    >>> check_nested(columns, models, "rich", "base")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: pairs: expected a nested pair: base lacks column rich__z...
    """
    for m in (base, rich):
        if m not in models:
            raise ParameterError(name, "model names among " + ", ".join(models), m)
    bcols = model_feature_columns(columns, models[base], diagnostic_columns=diagnostic_columns)
    rcols = set(model_feature_columns(columns, models[rich], diagnostic_columns=diagnostic_columns))
    for c in bcols:
        if c not in rcols:
            raise ParameterError(
                name, f"a nested pair: {rich} lacks column {c} of {base}", (base, rich)
            )
    if len(rcols) == len(bcols):
        raise ParameterError(name, f"{rich} with a column more than {base}", (base, rich))
