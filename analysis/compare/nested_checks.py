"""Input checks of the table of :class:`analysis.compare.NestedComparison`.

Kept apart so that :mod:`analysis.compare.nested` stays readable; nothing here is public.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.validation import ParameterError

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
