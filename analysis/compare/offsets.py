"""Geometry net of family: checkpoint fixed effects and the estimands beside them.

With ``ComparisonSpec(checkpoint_effects=True)`` every model gets one fixed effect per
checkpoint and loses its checkpoint labels (:func:`add_checkpoint_effects`), and the
comparison also reports the checkpoint-equal estimand, leave-one-family-out and
width-stratified sensitivity rows (:data:`SENSITIVITY_COLUMNS`, :func:`estimand_rows`);
what each is and why: docs/prereg.md, section "Geometry net of family: checkpoint effects".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import replicate_means, replicate_summary, spearman_replicates
from analysis.compare.covariates import PreparedCovariates, greedy_independent
from analysis.compare.metrics import HIGHER_IS_BETTER
from analysis.compare.spec import ComparisonSpec
from analysis.validation import ParameterError

#: ``refit(table, spec) -> ComparisonResult``: a comparison run again (a sensitivity).
Refit = Callable[[pd.DataFrame, ComparisonSpec], Any]

__all__ = [
    "CHECKPOINT_BLOCK",
    "SENSITIVITY_COLUMNS",
    "add_checkpoint_effects",
    "estimand_rows",
    "family_sensitivity",
    "width_split",
]

#: Block name of the checkpoint indicator columns (``checkpoint__<checkpoint>``).
CHECKPOINT_BLOCK = "checkpoint"
#: Columns of ``ComparisonResult.sensitivity``, in order.
SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "analysis",
    "subset",
    "pair",
    "metric",
    "base_value",
    "rich_value",
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "sesoi",
    "equivalence_p",
    "n_cells",
    "n_heads",
    "status",
)
CHECKPOINT_EQUAL = "checkpoint-equal estimand"
LEAVE_ONE_OUT = "sensitivity: leave one family out"
WIDTH_STRATIFIED = "sensitivity: width-stratified"


def add_checkpoint_effects(
    prep: PreparedCovariates, checkpoints: np.ndarray, train: np.ndarray
) -> PreparedCovariates:
    """Each model's matrix with checkpoint indicators and without checkpoint labels.

    Parameters
    ----------
    prep : PreparedCovariates
        From :func:`~analysis.compare.covariates.prepare_covariates`.
    checkpoints : array (n,)
        Each row's checkpoint.
    train : array of bool (n,)

    Returns
    -------
    PreparedCovariates
        Each model's kept columns, then ``checkpoint__<c>`` (0/1) for every checkpoint
        but the first in sorted order (the estimators add the intercept). A column whose
        training values lie in the span of the intercept and the indicators (constant
        within every checkpoint) is dropped with reason ``"constant within checkpoint"``;
        one that does so only together with columns kept before it, ``"collinear within
        checkpoint"``.

    Raises
    ------
    ParameterError
        Named ``stratum`` when a checkpoint has no training rows (its effect could not be
        fitted).

    Notes
    -----
    Why dropping rather than centring within checkpoint gives the same fits and
    predictions: docs/prereg.md, section "Geometry net of family: checkpoint effects".

    Examples
    --------
    Two checkpoints, cut at ``base__size = 4``; ``rich__label`` is 1 in the second and
    0 in the first, a checkpoint label:

    >>> import numpy as np
    >>> from analysis.compare.covariates import prepare_covariates
    >>> from analysis.datasets import example_covariate_table
    >>> from analysis.compare.offsets import add_checkpoint_effects
    >>> table = example_covariate_table()
    >>> table["rich__label"] = (table["base__size"] >= 4).astype(float)
    >>> train = np.arange(12) < 9
    >>> checkpoints = np.where(table["base__size"] < 4, "a", "b")
    >>> prep = prepare_covariates(table, {"base": ["base"], "rich": ["base", "rich"]}, train)
    >>> prep.columns["rich"]
    ('base__size', 'rich__noise', 'rich__label')
    >>> fe = add_checkpoint_effects(prep, checkpoints, train)
    >>> fe.columns["rich"], fe.columns["base"]
    (('base__size', 'rich__noise', 'checkpoint__b'), ('base__size', 'checkpoint__b'))
    >>> print(fe.dropped.iloc[-1:].to_string(index=False))
    model      column                     reason
     rich rich__label constant within checkpoint
    """
    checkpoints = np.asarray(checkpoints).astype(str)
    train = np.asarray(train, bool)
    levels = sorted(set(checkpoints))
    missing = sorted(set(levels) - set(checkpoints[train]))
    if missing:
        raise ParameterError("stratum", "training rows in every checkpoint", missing)
    D = np.zeros((len(checkpoints), len(levels) - 1))
    for k, c in enumerate(levels[1:]):
        D[:, k] = checkpoints == c
    names = tuple(f"{CHECKPOINT_BLOCK}__{c}" for c in levels[1:])
    matrices, columns, dropped = {}, {}, [prep.dropped]
    for m, X in prep.matrices.items():
        cols = prep.columns[m]
        keep = greedy_independent(X[train], fixed=D[train]) if cols else []
        rows = []
        for j, c in enumerate(cols):
            if j in keep:
                continue
            alone = greedy_independent(X[train][:, [j]], fixed=D[train])
            reason = "constant within checkpoint" if not alone else "collinear within checkpoint"
            rows.append((m, c, reason))
        dropped.append(pd.DataFrame(rows, columns=["model", "column", "reason"]))
        matrices[m] = np.column_stack([X[:, keep], D])
        columns[m] = tuple(cols[j] for j in keep) + names
    return replace(
        prep,
        matrices=matrices,
        columns=columns,
        dropped=pd.concat([d for d in dropped if len(d)], ignore_index=True)
        if any(len(d) for d in dropped)
        else prep.dropped,
    )


def width_split(lower: np.ndarray, upper: np.ndarray, train: np.ndarray) -> float:
    """The pre-specified split of the width-stratified sensitivity: the median bracket
    width ``y_upper - y_lower`` (log2) of the training cells (open brackets count as
    infinitely wide).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.offsets import width_split
    >>> lower, upper = np.zeros(4), np.array([0.5, 1.0, np.inf, 3.0])
    >>> width_split(lower, upper, np.array([True, True, True, False]))
    1.0
    """
    w = np.asarray(upper, float) - np.asarray(lower, float)
    return float(np.median(w[np.asarray(train, bool)]))


def estimand_rows(
    spec: ComparisonSpec,
    cell_vals: Mapping[tuple[str, str], np.ndarray],
    preds: Mapping[str, np.ndarray],
    mid: np.ndarray,
    codes: np.ndarray,
    counts: np.ndarray,
    subsets: Mapping[str, tuple[str, np.ndarray]],
    *,
    status: Mapping[tuple[str, str], str],
) -> list[dict]:
    """Sensitivity rows read from the main comparison's fits and bootstrap draws.

    Parameters
    ----------
    spec : ComparisonSpec
        The comparison's pairs, metrics, SESOIs and CI level.
    cell_vals, preds : mapping
        Per-cell metric values by (model, metric) and held-out predictions by model.
    mid, codes, counts : numpy.ndarray
        The held-out midpoints, each held-out cell's head code and the ``[B, heads]``
        bootstrap counts of the main comparison.
    subsets : mapping
        Subset label -> (analysis, boolean mask over held-out cells) for the
        width-stratified rows; the label ``"checkpoint-equal"`` is special: its mask is
        replaced by the checkpoint of each cell (an array of labels), and its effect is
        the mean over checkpoints of the per-checkpoint effects.
    status : mapping
        (base, rich) -> the pair's fit status.

    Returns
    -------
    list of dict
        Rows with the keys :data:`SENSITIVITY_COLUMNS`.

    Notes
    -----
    A subset's value of a model is its mean metric over the subset's held-out cells
    (Spearman: the rank correlation there); replicate b reweights the cells by their
    head's count ``c_bh`` of the main draws, so every subset and the main effect read the
    same resamples. Checkpoint-equal: ``effect = (1 / C) sum_c effect_c`` over the C
    checkpoints with held-out cells, replicate by replicate. CI percentile, one-sided p
    ``(1 + #{effect_b <= 0}) / (B + 1)`` and equivalence p
    ``(1 + #{effect_b >= SESOI}) / (B + 1)``, unadjusted: sensitivity rows decide
    nothing.

    Examples
    --------
    Two checkpoints of one held-out head each; the rich model is 0.2 better in ``a``
    and 0.4 in ``b`` with three cells in ``b`` and one in ``a``:

    >>> import numpy as np
    >>> from analysis.compare.offsets import estimand_rows
    >>> from analysis.compare.spec import ComparisonSpec
    >>> spec = ComparisonSpec(models={"M0": ["b"], "M1": ["b", "r"]}, family=[("M0", "M1")],
    ...                       metrics=["interval_sq_loss"])
    >>> ck = np.array(["a", "b", "b", "b"])
    >>> vals = {("M0", "interval_sq_loss"): np.full(4, 1.0),
    ...         ("M1", "interval_sq_loss"): np.array([0.8, 0.6, 0.6, 0.6])}
    >>> rows = estimand_rows(
    ...     spec, vals, {}, np.zeros(4), np.array([0, 1, 1, 1]), np.ones((99, 2), int),
    ...     {"checkpoint-equal": ("checkpoint-equal estimand", ck)}, status={("M0", "M1"): "ok"},
    ... )
    >>> round(rows[0]["effect"], 6)  # (0.2 + 0.4) / 2, not the cell-weighted 0.35
    0.3
    """
    rows = []
    for met in spec.metrics:
        sign = 1.0 if HIGHER_IS_BETTER[met] else -1.0
        for b, r in spec.pairs:
            for label, (analysis, mask) in subsets.items():
                groups = (
                    [(g, mask == g) for g in sorted(set(mask))]
                    if label == "checkpoint-equal"
                    else [(label, np.asarray(mask, bool))]
                )
                pts, reps, cells, heads = {b: [], r: []}, {b: [], r: []}, 0, set()
                for _, sel in groups:
                    cells += int(sel.sum())
                    heads |= set(codes[sel].tolist())
                    for m in (b, r):
                        if not sel.any():
                            pts[m].append(np.nan)
                            reps[m].append(np.full(counts.shape[0], np.nan))
                        elif met == "spearman_mid":
                            pt, rp = spearman_replicates(
                                preds[m][sel], mid[sel], codes[sel], counts
                            )
                            pts[m].append(pt)
                            reps[m].append(rp)
                        else:
                            v = cell_vals[(m, met)][sel]
                            pts[m].append(float(v.mean()))
                            with np.errstate(invalid="ignore", divide="ignore"):
                                reps[m].append(replicate_means(v, codes[sel], counts))
                pb, pr = float(np.mean(pts[b])), float(np.mean(pts[r]))
                eff_b = sign * (np.mean(reps[r], axis=0) - np.mean(reps[b], axis=0))
                rows.append(
                    {
                        "analysis": analysis,
                        "subset": "all checkpoints, equal weight"
                        if label == "checkpoint-equal"
                        else label,
                        "pair": f"{b}<{r}",
                        "metric": met,
                        "base_value": pb,
                        "rich_value": pr,
                        "effect": sign * (pr - pb),
                        **replicate_summary(
                            eff_b, spec.sesoi_for(b, r, met), spec.ci_level, method=spec.method
                        ),
                        "n_cells": cells,
                        "n_heads": len(heads),
                        "status": status[(b, r)],
                    }
                )
    return rows


#: Optional column naming each cell's family for the leave-one-family-out sensitivity
#: (the checkpoint, ``stratum``, when absent).
FAMILY = "family"


def _leave_one_family_out(
    table: pd.DataFrame, spec: ComparisonSpec, rng: np.random.Generator, refit: Refit
) -> list[dict]:
    """The comparison refitted without each family in turn (sensitivity rows)."""
    fam = table[FAMILY if FAMILY in table.columns else "stratum"].astype(str).to_numpy()
    rows = []
    for f in sorted(set(fam)):
        sub = table.loc[fam != f].reset_index(drop=True)
        label = f"without {f}"
        held = sub["held_out"].to_numpy(bool)
        if held.all() or not held.any():
            continue  # nothing left to fit or to score
        res = refit(sub, replace(spec, random_state=int(rng.integers(2**32)), sensitivities=False))
        for r in res.frame.itertuples(index=False):
            rows.append(
                {
                    "analysis": LEAVE_ONE_OUT,
                    "subset": label,
                    **{
                        c: getattr(r, c)
                        for c in SENSITIVITY_COLUMNS
                        if c not in ("analysis", "subset")
                    },
                }
            )
    return rows


def family_sensitivity(
    table: pd.DataFrame,
    frame: pd.DataFrame,
    spec: ComparisonSpec,
    *,
    scores: tuple[Mapping[tuple[str, str], np.ndarray], Mapping[str, np.ndarray], Any],
    rng: np.random.Generator,
    refit: Refit,
) -> pd.DataFrame:
    """The sensitivity rows of a comparison with checkpoint effects.

    Called by :meth:`~analysis.compare.NestedComparison.fit` with its decided ``frame``,
    its spec, its ``scores`` (per-cell values by (model, metric), held-out predictions by
    model and the bootstrap draws), its generator (after the draws) and ``refit``
    (``(table, spec) -> ComparisonResult``). Rows (:data:`SENSITIVITY_COLUMNS`): the checkpoint-equal estimand; the
    width-stratified effects on held-out cells with a log2 bracket width at most, and
    above, the median of the training cells' widths (:func:`width_split`), both from
    the same fits and draws (:func:`estimand_rows`); then, for each family (the
    table's ``family`` column, else its ``stratum``), the comparison refitted on the
    table without that family's cells, with checkpoint effects, a seed drawn from
    ``rng`` and no sensitivities of its own. None of them decides anything.

    Examples
    --------
    Run through :class:`~analysis.compare.NestedComparison` with
    ``checkpoint_effects=True``:

    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> spec = ComparisonSpec(
    ...     models=EXAMPLE_MODELS, family=[("base", "rich")], estimator="ols",
    ...     metrics=["interval_sq_loss"], n_boot=99, random_state=0, checkpoint_effects=True,
    ... )
    >>> result = NestedComparison(spec).fit(example_comparison_table())
    >>> result.columns["base"]  # M0 gets the checkpoint effect too
    ('base__x', 'checkpoint__ck-b')
    >>> result.sensitivity["subset"].tolist()  # every bracket of the table has width 1
    ['all checkpoints, equal weight', 'narrow (log2 width <= 1)', 'wide (log2 width > 1)',
     'without ck-a', 'without ck-b']
    """
    held = table["held_out"].to_numpy(bool)
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    w = width_split(lower, upper, ~held)
    width = upper[held] - lower[held]
    status = {(r.base_model, r.rich_model): r.status for r in frame.itertuples()}
    cell_vals, preds, draws = scores
    rows = estimand_rows(
        spec,
        cell_vals,
        preds,
        0.5 * (lower[held] + upper[held]),
        draws.codes,
        draws.counts,
        {
            "checkpoint-equal": (CHECKPOINT_EQUAL, table["stratum"].astype(str).to_numpy()[held]),
            f"narrow (log2 width <= {w:.4g})": (WIDTH_STRATIFIED, width <= w),
            f"wide (log2 width > {w:.4g})": (WIDTH_STRATIFIED, width > w),
        },
        status=status,
    )
    rows += _leave_one_family_out(table, spec, rng, refit)
    return pd.DataFrame(rows, columns=list(SENSITIVITY_COLUMNS))
