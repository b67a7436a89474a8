"""Head-level analysis (exploratory, training heads only).

How much of a block's signal is between heads? Cross-validated loss of each model with
and without head fixed effects, and the within-head correlation of M0 residuals.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.compare.covariates import greedy_independent, prepare_covariates
from analysis.compare.estimators import fit_estimator
from analysis.compare.metrics import interval_sq_loss
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = ["HEAD_LEVEL_COLUMNS", "HeadLevelResult", "head_level_analysis", "residual_icc"]

HEAD_LEVEL_COLUMNS: tuple[str, ...] = (
    "model",
    "blocks",
    "head_effects",
    "cv_interval_sq_loss",
    "gain_vs_base",
    "n_folds",
    "n_cells",
    "n_heads",
    "fits_not_converged",
)


@dataclass(frozen=True)
class HeadLevelResult:
    """Result of :func:`head_level_analysis`.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (model, head_effects); see :data:`HEAD_LEVEL_COLUMNS`.
        ``fits_not_converged`` counts the row's fold fits whose optimizer did not
        converge (:attr:`~analysis.compare.estimators.FittedModel.converged`); their
        cells' losses are still included.
    residual_icc : float
        Within-head (intraclass) correlation of the base model's midpoint residuals.
    base_model : str
    folds : str
        How folds were formed.
    """

    frame: pd.DataFrame = field(repr=False)
    residual_icc: float
    base_model: str
    folds: str

    def to_frame(self) -> pd.DataFrame:
        return self.frame.loc[:, list(HEAD_LEVEL_COLUMNS)].copy()

    def summary(self) -> str:
        lines = [
            "Head-level analysis (exploratory; training heads only)",
            f"folds: {self.folds}",
            f"within-head correlation of {self.base_model} residuals: {self.residual_icc:.3f}",
        ]
        for _, r in self.frame.iterrows():
            fe = "with head effects" if r.head_effects else "block alone      "
            failed = (
                f"; {r.fits_not_converged} fold fit(s) did not converge"
                if r.fits_not_converged
                else ""
            )
            lines.append(
                f"  {r.model:<8} {fe} CV loss {r.cv_interval_sq_loss:.4f} "
                f"(gain vs {self.base_model} {r.gain_vs_base:+.4f}){failed}"
            )
        return "\n".join(lines)


def residual_icc(residuals: np.ndarray, groups: np.ndarray) -> float:
    """One-way ANOVA intraclass correlation ICC(1) with unequal group sizes.

    Notes
    -----
    ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)``, ``n0 = (N - sum n_i^2 / N) / (k - 1)``.
    """
    r = np.asarray(residuals, float)
    codes, uniq = pd.factorize(np.asarray(groups))
    k = len(uniq)
    N = r.size
    if k < 2 or N <= k:
        return float("nan")
    n_i = np.bincount(codes, minlength=k).astype(float)
    means = np.bincount(codes, weights=r, minlength=k) / n_i
    grand = r.mean()
    msb = np.sum(n_i * (means - grand) ** 2) / (k - 1)
    msw = np.sum((r - means[codes]) ** 2) / (N - k)
    n0 = (N - np.sum(n_i**2) / N) / (k - 1)
    den = msb + (n0 - 1) * msw
    return float((msb - msw) / den) if den > 0 else float("nan")


def _folds(table: pd.DataFrame, fold_columns: Sequence[str], n_folds: int, rng) -> tuple:
    if all(c in table.columns for c in fold_columns):
        codes, uniq = pd.factorize(pd.MultiIndex.from_frame(table[list(fold_columns)]))
        if len(uniq) >= 2:
            return codes, len(uniq), f"leave one ({', '.join(fold_columns)}) group out"
    # fallback: random folds of cells within each head
    folds = np.empty(len(table), dtype=int)
    for _, idx in table.groupby("cluster", sort=False).indices.items():
        folds[idx] = rng.permutation(len(idx)) % n_folds
    return folds, n_folds, f"{n_folds} random folds of cells within each head"


def head_level_analysis(
    table: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    *,
    base_model: str | None = None,
    log_columns: Sequence[str] = (),
    estimator: str = "interval",
    fold_columns: Sequence[str] = ("input_id", "length"),
    n_folds: int = 5,
    random_state: int | np.random.Generator | None = None,
    calibrate_blocks: Sequence[str] = (),
    block_order: Sequence[str] = (),
    diagnostic_columns: Collection[str] = (),
    maxiter: int = 200,
) -> HeadLevelResult:
    """Cross-validated loss of each model with and without head fixed effects.

    Parameters
    ----------
    table : pandas.DataFrame
        Training cells only (``held_out`` absent or all False); ``cluster``,
        ``y_lower``, ``y_upper``, covariates, and optionally the fold columns.
    models : mapping
        Model name -> blocks.
    base_model : str, keyword-only
        Reference for ``gain_vs_base`` and the residual ICC (default: first model).
    log_columns, estimator : keyword-only
        As in :func:`~analysis.compare.nested.compare_nested`.
    calibrate_blocks, block_order, diagnostic_columns : keyword-only
        As in :func:`~analysis.compare.nested.compare_nested` (neutral defaults: no
        calibration, each model's own block order, no diagnostics).
    fold_columns : sequence of str, keyword-only
        Folds are the groups of these columns (default ``(input_id, length)``), shared by
        every head, so each head's fixed effect is estimated on its own other-fold cells.
        When absent (or a single group), ``n_folds`` random folds within each head.
    n_folds : int, keyword-only
    random_state : keyword-only
    maxiter : int, keyword-only
        Iteration cap of each interval fit (see
        :func:`~analysis.compare.estimators.fit_interval`).

    Returns
    -------
    HeadLevelResult

    Notes
    -----
    With head effects, head indicators enter before the block's columns and any
    covariate collinear with them (constant within every head) is dropped, so the
    with-effects loss measures what a block adds *within* heads. A block whose gain
    vanishes with head effects carries head-level information only.
    """
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    if "held_out" in table.columns and table["held_out"].astype(bool).any():
        raise ParameterError(
            "table",
            "training rows only (exploratory analysis never reads held-out cells)",
            int(table["held_out"].astype(bool).sum()),
        )
    for c in ("cluster", "y_lower", "y_upper"):
        if c not in table.columns:
            raise ParameterError("table", f"a column named {c}", list(table.columns)[:12])
    n_folds = check_int("n_folds", n_folds, minimum=2)
    maxiter = check_int("maxiter", maxiter, minimum=1)
    rng = check_random_state(random_state)
    if not models:
        raise ParameterError("models", "at least one model", models)
    base_model = base_model or next(iter(models))
    if base_model not in models:
        raise ParameterError("base_model", "a model name", base_model)
    table = table.reset_index(drop=True)
    folds, k, how = _folds(table, fold_columns, n_folds, rng)
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    clusters = table["cluster"].astype(str).to_numpy()
    heads, hcode = np.unique(clusters, return_inverse=True)
    dummies = np.eye(len(heads))[hcode][:, 1:]

    rows = []
    for fe in (False, True):
        for name, blocks in models.items():
            loss = np.full(len(table), np.nan)
            not_converged = 0
            for g in range(k):
                test = folds == g
                train = ~test
                if not test.any() or not train.any():
                    continue
                prep = prepare_covariates(
                    table,
                    {name: blocks},
                    train,
                    log_columns=log_columns,
                    calibrate_blocks=calibrate_blocks,
                    block_order=block_order,
                    diagnostic_columns=diagnostic_columns,
                )
                X = prep.matrices[name]
                if fe:
                    keep = greedy_independent(X[train], fixed=dummies[train])
                    X = np.column_stack([dummies, X[:, keep]])
                fit = fit_estimator(
                    estimator,
                    X[train],
                    lower[train],
                    upper[train],
                    groups=clusters[train],
                    maxiter=maxiter,
                )
                not_converged += not fit.converged
                loss[test] = interval_sq_loss(fit.predict(X[test]), lower[test], upper[test])
            rows.append(
                {
                    "model": name,
                    "blocks": "+".join(blocks),
                    "head_effects": fe,
                    "cv_interval_sq_loss": float(np.nanmean(loss)),
                    "n_folds": k,
                    "n_cells": int(np.isfinite(loss).sum()),
                    "n_heads": len(heads),
                    "fits_not_converged": int(not_converged),
                }
            )
    frame = pd.DataFrame(rows)
    base = frame[frame.model == base_model].set_index("head_effects")["cv_interval_sq_loss"]
    frame["gain_vs_base"] = frame["head_effects"].map(base) - frame["cv_interval_sq_loss"]

    all_rows = np.ones(len(table), dtype=bool)
    prep = prepare_covariates(
        table,
        {base_model: models[base_model]},
        all_rows,
        log_columns=log_columns,
        calibrate_blocks=calibrate_blocks,
        block_order=block_order,
        diagnostic_columns=diagnostic_columns,
    )
    fit = fit_estimator(
        estimator, prep.matrices[base_model], lower, upper, groups=clusters, maxiter=maxiter
    )
    mid = 0.5 * (lower + upper)
    icc = residual_icc(mid - fit.predict(prep.matrices[base_model]), clusters)
    return HeadLevelResult(
        frame=frame.loc[:, list(HEAD_LEVEL_COLUMNS)],
        residual_icc=icc,
        base_model=base_model,
        folds=how,
    )
