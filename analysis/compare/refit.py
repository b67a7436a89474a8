"""Refit bootstrap: fit uncertainty in the CI, as a sensitivity of a nested comparison.

The confirmatory bootstrap resamples held-out units and keeps the fits fixed, so its CI
carries the held-out sampling error only. :func:`refit_bootstrap_rows` resamples the
training units and the held-out units (each within its checkpoint when the table has
one), refits every model on the resampled training cells and recomputes each effect on
the resampled held-out cells, R times.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import replicate_summary
from analysis.compare.offsets import Refit
from analysis.compare.spec import ComparisonSpec

__all__ = ["REFIT_BOOTSTRAP", "refit_bootstrap_rows", "resample_units"]

#: ``analysis`` of the refit-bootstrap rows of ``ComparisonResult.sensitivity``.
REFIT_BOOTSTRAP = "sensitivity: refit bootstrap"


def resample_units(
    table: pd.DataFrame, unit_column: str, rng: np.random.Generator, stratum: str = "stratum"
) -> pd.DataFrame:
    """One resample of whole units, training and held-out apart, within checkpoints.

    Each (side, checkpoint) keeps its number of units; a unit drawn k times appears as
    k copies whose ``cell_key``, ``cluster`` and unit column get the suffix ``#j`` (one
    j per copy), so the copies are distinct heads to the fits, the calibration folds and
    the bootstrap.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.refit import resample_units
    >>> table = pd.DataFrame({"cell_key": range(6), "cluster": list("aabbcc"),
    ...                       "held_out": [False] * 4 + [True] * 2})
    >>> out = resample_units(table, "cluster", np.random.default_rng(0))
    >>> len(out), int(out["held_out"].sum())  # 2 training heads, 1 held-out head
    (6, 2)
    >>> out["cluster"].str.split("#").str[0].isin(["a", "b"])[:4].all()
    np.True_
    """
    units = table[unit_column].astype(str).to_numpy()
    held = table["held_out"].to_numpy(bool)
    strata = table[stratum].astype(str).to_numpy() if stratum in table else np.full(len(table), "")
    rows_of = pd.Series(np.arange(len(table))).groupby(units).apply(np.asarray).to_dict()
    keys = pd.DataFrame({"u": units, "side": held, "s": strata}).drop_duplicates("u")
    idx, copy = [], []
    j = 0
    for _, grp in keys.groupby(["side", "s"], sort=True):
        pool = grp["u"].to_numpy()
        for u in rng.choice(pool, size=pool.size, replace=True):
            idx.append(rows_of[u])
            copy.append(np.full(rows_of[u].size, j))
            j += 1
    take = np.concatenate(idx)
    suffix = "#" + pd.Series(np.concatenate(copy)).astype(str).to_numpy()
    out = table.iloc[take].reset_index(drop=True)
    for c in dict.fromkeys(["cell_key", "cluster", unit_column]):
        out[c] = out[c].astype(str).to_numpy() + suffix
    return out


def refit_bootstrap_rows(
    table: pd.DataFrame,
    frame: pd.DataFrame,
    spec: ComparisonSpec,
    *,
    rng: np.random.Generator,
    refit: Refit,
) -> pd.DataFrame:
    """Each (pair, metric)'s effect with a CI from R resample-and-refit replicates.

    Parameters
    ----------
    table : pandas.DataFrame
        The comparison's table.
    frame : pandas.DataFrame
        The comparison's decided frame (its point effects, values and status).
    spec : ComparisonSpec
        The comparison's settings: ``refit_replicates`` R, the resampling unit, the
        SESOIs and the CI level.
    rng : numpy.random.Generator, keyword-only
        The comparison's generator after its draws.
    refit : callable, keyword-only
        ``(table, spec) -> ComparisonResult``, the comparison run again.

    Returns
    -------
    pandas.DataFrame
        Rows with the columns of ``ComparisonResult.sensitivity``: ``analysis`` is
        :data:`REFIT_BOOTSTRAP`, ``effect`` the comparison's own point effect, ``ci_low``
        and ``ci_high`` the percentile CI of the R refitted effects, ``p_value``
        ``(1 + #{effect_r <= 0}) / (R + 1)`` and ``equivalence_p``
        ``(1 + #{effect_r >= SESOI}) / (R + 1)``, unadjusted; ``status`` says how many
        refits had a failed fit.

    Examples
    --------
    Run through :class:`~analysis.compare.NestedComparison` with
    ``refit_replicates=R``:

    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> spec = ComparisonSpec(
    ...     models=EXAMPLE_MODELS, family=[("base", "rich")], estimator="ols",
    ...     metrics=["interval_sq_loss"], n_boot=99, random_state=0, refit_replicates=20,
    ... )
    >>> result = NestedComparison(spec).fit(example_comparison_table())
    >>> row = result.sensitivity.iloc[0]
    >>> row["analysis"], row["subset"], bool(row["ci_low"] < row["effect"] < row["ci_high"])
    ('sensitivity: refit bootstrap', '20 refits resampling head', True)
    """
    unit = spec.resampling_unit
    unit_column = "cluster" if unit == "head" else unit
    effects: dict[tuple[str, str, str], list[float]] = {}
    failed: dict[tuple[str, str, str], int] = {}
    for _ in range(spec.refit_replicates):
        sub = resample_units(table, unit_column, rng)
        seed = int(rng.integers(2**32))
        res = refit(sub, replace(spec, random_state=seed, sensitivities=False, refit_replicates=0))
        for r in res.frame.itertuples(index=False):
            key = (r.base_model, r.rich_model, r.metric)
            effects.setdefault(key, []).append(float(r.effect))
            failed[key] = failed.get(key, 0) + (r.status != "ok")
    rows = []
    for r in frame.itertuples(index=False):
        key = (r.base_model, r.rich_model, r.metric)
        eff = np.asarray(effects.get(key, []), float)
        n_failed = failed.get(key, 0)
        rows.append(
            {
                "analysis": REFIT_BOOTSTRAP,
                "subset": f"{spec.refit_replicates} refits resampling {unit}",
                "pair": r.pair,
                "metric": r.metric,
                "base_value": r.base_value,
                "rich_value": r.rich_value,
                "effect": r.effect,
                **replicate_summary(eff, spec.sesoi_for(*key), spec.ci_level, method=spec.method),
                "n_cells": r.n_cells,
                "n_heads": r.n_heads,
                "status": r.status if not n_failed else f"{r.status}; {n_failed} refit(s) failed",
            }
        )
    return pd.DataFrame(rows)
