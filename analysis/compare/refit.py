"""Refit bootstrap: fit uncertainty in the CI, as a sensitivity or as the confirmatory CI.

The held-out bootstrap resamples held-out units and keeps the fits fixed, so its CI
carries the held-out sampling error only. :func:`refit_effects` resamples the
training units and the held-out units (each within its checkpoint when the table has
one), refits every model on the resampled training cells (calibration maps, folds and
standardization included) and recomputes each effect on the resampled held-out cells, R
times. :func:`refit_bootstrap_rows` reports them as a sensitivity row (every comparison
with ``refit_replicates``); with ``refit_confirmatory`` (the default under top-level
``method = 3``) :func:`refit_confirmatory` makes them the confirmatory CI and p, and
:func:`fixed_fit_rows` keeps the held-out bootstrap's as a sensitivity.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import replicate_summary
from analysis.compare.offsets import SENSITIVITY_COLUMNS, Refit
from analysis.compare.refit_runner import current_refit_runner
from analysis.compare.sesoi_sensitivity import refit_sesoi_columns
from analysis.compare.spec import ComparisonSpec
from analysis.validation import ParameterError

__all__ = [
    "FIXED_FITS",
    "REFIT_BOOTSTRAP",
    "fixed_fit_rows",
    "refit_bootstrap_rows",
    "refit_confirmatory",
    "refit_effects",
    "resample_units",
]

#: ``analysis`` of the refit-bootstrap rows of ``ComparisonResult.sensitivity``.
REFIT_BOOTSTRAP = "sensitivity: refit bootstrap"

#: ``analysis`` of the held-out bootstrap rows (fits fixed) when the refit bootstrap is
#: the confirmatory CI.
FIXED_FITS = "sensitivity: held-out bootstrap, fits fixed"

#: (base model, rich model, metric): the key of one effect.
_Key = tuple[str, str, str]

#: Bootstrap replicates of a refit's own held-out bootstrap: only its point effects are
#: read, which the draws do not touch, so the smallest ``n_boot`` a spec accepts.
_INNER_N_BOOT = 99


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
    # a unit's training part and its held-out part are two units, one on each side: a
    # (checkpoint, layer) of a draw stratified by layer holds both (each side keeps its
    # own number of units, and a draw brings one side's rows only)
    rows_of = {
        (u, bool(side)): np.asarray(rows)
        for (u, side), rows in pd.Series(np.arange(len(table))).groupby([units, held])
    }
    keys = pd.DataFrame({"u": units, "side": held, "s": strata}).drop_duplicates(["u", "side"])
    idx, copy = [], []
    j = 0
    for (side, _), grp in keys.groupby(["side", "s"], sort=True):
        pool = grp["u"].to_numpy()
        for u in rng.choice(pool, size=pool.size, replace=True):
            rows = rows_of[(u, bool(side))]
            idx.append(rows)
            copy.append(np.full(rows.size, j))
            j += 1
    take = np.concatenate(idx)
    suffix = "#" + pd.Series(np.concatenate(copy)).astype(str).to_numpy()
    out = table.iloc[take].reset_index(drop=True)
    for c in dict.fromkeys(["cell_key", "cluster", unit_column]):
        out[c] = out[c].astype(str).to_numpy() + suffix
    return out


def refit_effects(
    table: pd.DataFrame, spec: ComparisonSpec, *, rng: np.random.Generator, refit: Refit
) -> tuple[dict[_Key, np.ndarray], dict[_Key, int]]:
    """The R = ``spec.refit_replicates`` resample-and-refit effects of every (pair, metric).

    Parameters
    ----------
    table : pandas.DataFrame
        The comparison's table.
    spec : ComparisonSpec
        The comparison's settings.
    rng : numpy.random.Generator, keyword-only
        Draws each replicate's resample (:func:`resample_units` over
        ``spec.resampling_unit``) and then its refit's seed.
    refit : callable, keyword-only
        ``(table, spec) -> ComparisonResult``, the comparison run again.

    Returns
    -------
    effects : dict
        ``(base, rich, metric)`` -> float array (R,): the refitted point effects (NaN
        where a refit's row has none).
    failed : dict
        ``(base, rich, metric)`` -> how many refits had a failed fit.

    Notes
    -----
    A refit runs with ``sensitivities=False``, ``refit_replicates=0`` and its own
    held-out bootstrap at the smallest ``n_boot`` (99): only its point effects are read,
    and they do not depend on its draws. Where the refits run, and whether finished ones
    are kept for a resumed run, is the :class:`analysis.compare.refit_runner.RefitRunner`
    set around the call (default: here, one after another); the numbers are the same.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.compare.refit import refit_effects
    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> spec = ComparisonSpec(
    ...     models=EXAMPLE_MODELS, family=[("base", "rich")], estimator="ols",
    ...     metrics=["interval_sq_loss"], refit_replicates=5,
    ... )
    >>> effects, failed = refit_effects(
    ...     example_comparison_table(), spec, rng=np.random.default_rng(0),
    ...     refit=lambda t, s: NestedComparison(s).fit(t),
    ... )
    >>> effects[("base", "rich", "interval_sq_loss")].shape, failed
    ((5,), {('base', 'rich', 'interval_sq_loss'): 0})
    """
    unit = spec.resampling_unit
    unit_column = "cluster" if unit == "head" else unit
    inner = {"sensitivities": False, "refit_replicates": 0, "n_boot": _INNER_N_BOOT}
    effects: dict[_Key, list[float]] = {}
    failed: dict[_Key, int] = {}

    def plans() -> Iterator[tuple[pd.DataFrame, ComparisonSpec]]:
        # drawn here, in the serial loop's order (resample, then seed), wherever they run
        for _ in range(spec.refit_replicates):
            sub = resample_units(table, unit_column, rng)
            seed = int(rng.integers(2**32))
            yield sub, replace(spec, random_state=seed, **inner)

    for rows in current_refit_runner().run(refit, plans(), total=spec.refit_replicates):
        for base, rich, metric, effect, status in rows:
            key = (base, rich, metric)
            effects.setdefault(key, []).append(effect)
            failed[key] = failed.get(key, 0) + (status != "ok")
    return {k: np.asarray(v, float) for k, v in effects.items()}, failed


def refit_confirmatory(
    frame: pd.DataFrame, effects: dict[_Key, np.ndarray], spec: ComparisonSpec
) -> pd.DataFrame:
    """The undecided frame with each row's CI and p read from its refitted effects.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison's rows before the decision (Holm and the decision rule run
        after, on the p values this returns).
    effects : dict
        :func:`refit_effects`'s replicates.
    spec : ComparisonSpec
        The SESOIs and the CI level.

    Returns
    -------
    pandas.DataFrame
        A copy of ``frame`` whose ``ci_low``, ``ci_high``, ``p_value`` and equivalence
        p columns (every column of
        :func:`~analysis.compare.bootstrap.replicate_summary` the frame has, ``sesoi``
        excepted) are the percentile ones of the refitted effects, and so are the
        hidden p columns of the SESOI sensitivity the frame has
        (:func:`~analysis.compare.sesoi_sensitivity.refit_sesoi_columns`); the point
        effect and values stay the comparison's own.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare import ComparisonSpec
    >>> from analysis.compare.refit import refit_confirmatory
    >>> spec = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")])
    >>> frame = pd.DataFrame({"base_model": ["a"], "rich_model": ["b"],
    ...     "metric": ["interval_sq_loss"], "effect": [0.5], "ci_low": [0.4],
    ...     "ci_high": [0.6], "p_value": [0.001]})
    >>> out = refit_confirmatory(frame, {("a", "b", "interval_sq_loss"): np.arange(-1, 19.0)}, spec)
    >>> out[["effect", "p_value"]].round(4).values.tolist()
    [[0.5, 0.1429]]
    """
    out = frame.copy()
    for i, r in enumerate(frame.itertuples(index=False)):
        key = (r.base_model, r.rich_model, r.metric)
        eff = effects.get(key, np.array([]))
        sesoi = spec.sesoi_for(*key)
        summary = replicate_summary(eff, sesoi, spec.ci_level, method=spec.method)
        summary.update(refit_sesoi_columns(spec, sesoi, eff))  # method 3's, at SESOI x F
        for column, value in summary.items():
            if column in out.columns and column != "sesoi":
                out.iloc[i, out.columns.get_loc(column)] = value
    return out


def fixed_fit_rows(frame: pd.DataFrame, spec: ComparisonSpec) -> pd.DataFrame:
    """The held-out bootstrap's CI and p (fits fixed) as sensitivity rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison's rows with the held-out bootstrap's CI and p, before
        :func:`refit_confirmatory` replaces them.
    spec : ComparisonSpec
        Its ``n_boot`` and resampling unit name the rows' subset.

    Returns
    -------
    pandas.DataFrame
        One row per (pair, metric), ``analysis`` :data:`FIXED_FITS`, unadjusted p.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.compare import ComparisonSpec
    >>> from analysis.compare.refit import fixed_fit_rows
    >>> spec = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")])
    >>> frame = pd.DataFrame({"pair": ["a<b"], "metric": ["interval_sq_loss"],
    ...     "base_value": [1.0], "rich_value": [0.5], "effect": [0.5], "ci_low": [0.4],
    ...     "ci_high": [0.6], "p_value": [0.001], "sesoi": [0.1], "equivalence_p": [1.0],
    ...     "n_cells": [10], "n_heads": [5], "status": ["ok"]})
    >>> fixed_fit_rows(frame, spec)[["analysis", "subset"]].values.tolist()
    [['sensitivity: held-out bootstrap, fits fixed', '2000 replicates resampling head']]
    """
    keep = [c for c in SENSITIVITY_COLUMNS if c in frame.columns]
    out = frame.loc[:, keep].copy()
    out.insert(0, "subset", f"{spec.n_boot} replicates resampling {spec.resampling_unit}")
    out.insert(0, "analysis", FIXED_FITS)
    return out.reset_index(drop=True)


def refit_bootstrap_rows(
    table: pd.DataFrame,
    frame: pd.DataFrame,
    spec: ComparisonSpec,
    *,
    rng: np.random.Generator | None = None,
    refit: Refit | None = None,
    replicates: tuple[dict[_Key, np.ndarray], dict[_Key, int]] | None = None,
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
        The comparison's generator after its draws (unused with ``replicates``).
    refit : callable, keyword-only
        ``(table, spec) -> ComparisonResult``, the comparison run again (unused with
        ``replicates``).
    replicates : (dict, dict), keyword-only, optional
        :func:`refit_effects`'s output when the comparison has it already (the
        confirmatory refit bootstrap); else it is computed here from ``rng``.

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
    if replicates is None:
        if rng is None or refit is None:
            raise ParameterError("replicates", "refit replicates, or rng and refit", None)
        replicates = refit_effects(table, spec, rng=rng, refit=refit)
    effects, failed = replicates
    rows = []
    for r in frame.itertuples(index=False):
        key = (r.base_model, r.rich_model, r.metric)
        eff = effects.get(key, np.array([]))
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
