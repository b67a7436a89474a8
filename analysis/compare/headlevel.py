"""Head-level analysis (exploratory, training heads only).

Two questions, each with folds that can learn what they predict: **within-head** (does a
block predict a head's cells on a new input? one input held out within each length, each
model with and without head fixed effects; needs at least two inputs per length) and
**across-head** (does a block predict heads it was never fitted on? whole training heads
held out, no head fixed effects); plus the within-head (intraclass) correlation of the base
model's residuals. The folds, their checks and the result's columns: docs/prereg.md,
section "Head-level analysis (exploratory, training heads only)".
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.compare.covariates import (
    greedy_independent,
    model_feature_columns,
    prepare_covariates,
)
from analysis.compare.estimators import ESTIMATORS, fit_estimator
from analysis.compare.headfolds import (
    DEFAULT_HEAD_FOLDS,
    QUESTIONS,
    FoldExtrapolationWarning,
    HeadLevelWarning,
    QuestionSkippedWarning,
    _check_fold,
    _dummies,
    _head_folds,
    _Skip,
    _within_head_folds,
    head_level_folds,
)
from analysis.compare.metrics import interval_sq_loss
from analysis.compare.spec import check_models, check_names
from analysis.validation import ParameterError, check_choice, check_int, check_random_state

__all__ = [
    "DEFAULT_HEAD_FOLDS",
    "DESIGN_COLUMNS",
    "FoldExtrapolationWarning",
    "HEAD_LEVEL_COLUMNS",
    "HeadLevelAnalysis",
    "HeadLevelResult",
    "HeadLevelSpec",
    "HeadLevelWarning",
    "QUESTIONS",
    "QuestionSkippedWarning",
    "head_level_folds",
    "residual_icc",
]

#: What each question answers (one sentence each; the report prints them).
QUESTION_TEXT: dict[str, str] = {
    "within_head": (
        "within a head, does the block predict the head's cells on an input it was not "
        "fitted on (folds: one input held out within each length; every length and every "
        "head stay in training)?"
    ),
    "across_head": (
        "across heads, does the block predict the cells of heads it was never fitted on "
        "(folds: whole training heads; no head fixed effects, which cannot transfer)?"
    ),
}
#: Design variables checked in every fold (when the table has them), besides each
#: model's covariates.
DESIGN_COLUMNS: tuple[str, ...] = ("length", "temperature", "eps")

HEAD_LEVEL_COLUMNS: tuple[str, ...] = (
    "question",
    "model",
    "blocks",
    "fixed_effects",
    "cv_loss",
    "gain_vs_base",
    "n_folds",
    "n_cells",
    "n_heads",
    "fits_not_converged",
    "warnings",
    "status",
)


@dataclass(frozen=True)
class HeadLevelResult:
    """Result of :meth:`HeadLevelAnalysis.fit`.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (question, model, fixed_effects); see :data:`HEAD_LEVEL_COLUMNS`.
        ``cv_loss`` is the mean cross-validated interval squared loss of log2 r_eps;
        ``gain_vs_base`` is the base model's ``cv_loss`` (same question and
        fixed_effects) minus the row's; ``fits_not_converged`` counts the row's fold
        fits whose optimizer did not converge (their cells' losses are still included);
        ``warnings`` counts the row's folds that raised a
        :class:`FoldExtrapolationWarning`; ``status`` is ``"ok"`` or ``"skipped"``
        (then the numbers are NaN / 0 and :attr:`skipped` says why).
    residual_icc : float
        Within-head (intraclass) correlation of the base model's midpoint residuals
        (in-sample fit on every training cell).
    base_model : str
    folds : mapping
        Question -> how its folds were formed (only answered questions).
    skipped : mapping
        Question -> why it was not answered.
    warnings : tuple of str
        Every distinct :class:`FoldExtrapolationWarning` message.

    Examples
    --------
    Made by :class:`HeadLevelAnalysis`; with three inputs at every length and eight
    heads, both questions can be answered:

    >>> from analysis.datasets import example_head_table
    >>> from analysis.compare.headlevel import HeadLevelAnalysis, HeadLevelSpec
    >>> spec = HeadLevelSpec(models={"base": ["base"]}, estimator="ols")
    >>> result = HeadLevelAnalysis(spec).fit(example_head_table())
    >>> result.base_model, list(result.folds), list(result.skipped)
    ('base', ['within_head', 'across_head'], [])
    >>> sorted(result.meta())
    ['base_model', 'folds', 'residual_icc', 'skipped', 'warnings']
    """

    frame: pd.DataFrame = field(repr=False)
    residual_icc: float
    base_model: str
    folds: Mapping[str, str]
    skipped: Mapping[str, str]
    warnings: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The tidy result frame (columns :data:`HEAD_LEVEL_COLUMNS`)."""
        return self.frame.loc[:, list(HEAD_LEVEL_COLUMNS)].copy()

    def meta(self) -> dict[str, Any]:
        """What :meth:`to_frame` does not carry, as JSON-ready values."""
        return {
            "residual_icc": float(self.residual_icc),
            "base_model": self.base_model,
            "folds": dict(self.folds),
            "skipped": dict(self.skipped),
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        lines = [
            "Head-level analysis (exploratory; training heads only)",
            f"within-head correlation of {self.base_model} residuals: {self.residual_icc:.3f}",
        ]
        for q in QUESTIONS:
            lines.append(f"{q.replace('_', '-')} question: {QUESTION_TEXT[q]}")
            if q in self.skipped:
                lines.append(f"  skipped: {self.skipped[q]}")
                continue
            lines.append(f"  folds: {self.folds[q]}")
            for _, r in self.frame[self.frame.question == q].iterrows():
                fe = "with head effects" if r.fixed_effects else "block alone      "
                notes = []
                if r.fits_not_converged:
                    notes.append(f"{r.fits_not_converged} fold fit(s) did not converge")
                if r.warnings:
                    notes.append(f"{r.warnings} fold(s) extrapolate")
                lines.append(
                    f"  {r.model:<8} {fe} CV loss {r.cv_loss:.4f} "
                    f"(gain vs {self.base_model} {r.gain_vs_base:+.4f})"
                    + ("; " + "; ".join(notes) if notes else "")
                )
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def residual_icc(residuals: np.ndarray, groups: np.ndarray) -> float:
    """One-way ANOVA intraclass correlation ICC(1) with unequal group sizes.

    Notes
    -----
    ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)``, ``n0 = (N - sum n_i^2 / N) / (k - 1)``.

    Examples
    --------
    Residuals that mostly move with their group correlate strongly within it:

    >>> import numpy as np
    >>> from analysis.compare.headlevel import residual_icc
    >>> groups = np.array([0, 0, 1, 1, 2, 2])
    >>> round(residual_icc(np.array([1.0, 1.2, -1.0, -1.2, 0.1, -0.1]), groups), 3)
    0.984
    >>> round(residual_icc(np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0]), groups), 3)
    -1.0
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


@dataclass(frozen=True)
class HeadLevelSpec:
    """What the head-level analysis fits and how (:class:`HeadLevelAnalysis`).

    Attributes
    ----------
    models : mapping
        Model name -> blocks.
    base_model : str or None
        Reference for ``gain_vs_base`` and the residual ICC (None: the first model).
    log_columns, estimator, calibrate_blocks, block_order, diagnostic_columns, maxiter
        As in :class:`~analysis.compare.spec.ComparisonSpec` (neutral defaults: no logs,
        interval fits, no calibration, each model's own block order, no diagnostics,
        200 iterations).
    input_column, length_column : str, default "input_id", "length"
        The cell's input and length. Within-head folds hold out the i-th input (sorted)
        of every length; a table without ``length_column`` is one length.
    design_columns : sequence of str
        Design variables checked in every fold, besides the model's covariates
        (default :data:`DESIGN_COLUMNS`; absent ones are skipped).
    n_head_folds : int
        Across-head folds (default :data:`DEFAULT_HEAD_FOLDS`, >= 2, capped at the number
        of heads).
    random_state : int, Generator or None
        Seeds the across-head fold assignment (the study passes the design's inference
        seed).

    Examples
    --------
    >>> from analysis.compare.headlevel import HeadLevelSpec
    >>> HeadLevelSpec(models={"base": ["base"], "rich": ["base", "rich"]}).base_model
    'base'
    >>> HeadLevelSpec(models={"base": ["base"]}, n_head_folds=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: n_head_folds: expected an integer >= 2, got 1...
    """

    models: Mapping[str, Sequence[str]]
    base_model: str | None = None
    log_columns: Sequence[str] = ()
    estimator: str = "interval"
    input_column: str = "input_id"
    length_column: str = "length"
    design_columns: Sequence[str] = DESIGN_COLUMNS
    n_head_folds: int = DEFAULT_HEAD_FOLDS
    random_state: int | np.random.Generator | None = None
    calibrate_blocks: Sequence[str] = ()
    block_order: Sequence[str] = ()
    diagnostic_columns: Collection[str] = ()
    maxiter: int = 200

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        put("models", check_models(self.models))
        put("base_model", self.base_model or next(iter(self.models)))
        if self.base_model not in self.models:
            raise ParameterError("base_model", "a model name", self.base_model)
        names = ("log_columns", "design_columns", *self.covariate_kwargs())
        for name in dict.fromkeys(names):
            put(name, check_names(name, getattr(self, name)))
        check_choice("estimator", self.estimator, ESTIMATORS)
        put("n_head_folds", check_int("n_head_folds", self.n_head_folds, minimum=2))
        put("maxiter", check_int("maxiter", self.maxiter, minimum=1))
        check_random_state(self.random_state)  # the generator itself is made in fit

    def covariate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of
        :func:`~analysis.compare.covariates.prepare_covariates` that the spec fixes."""
        return {
            "log_columns": self.log_columns,
            "calibrate_blocks": self.calibrate_blocks,
            "block_order": self.block_order,
            "diagnostic_columns": self.diagnostic_columns,
        }


class HeadLevelAnalysis:
    """Cross-validated loss of each model on the within-head and across-head questions.

    Parameters
    ----------
    spec : HeadLevelSpec

    Warns
    -----
    QuestionSkippedWarning
        A question cannot be answered: the within-head question with fewer than 2
        inputs at some length (a fold would hold out a whole length), the across-head
        question with fewer than 2 heads, or a fold refused because its training part
        holds a variable constant that its test part varies.
    FoldExtrapolationWarning
        A fold's training part holds a design variable or covariate at one value while
        its test part holds another, or lacks a design-variable level its test part holds.
        A test cell whose head is absent from a within-head fold's training part is
        left out of that fold's loss, with this warning.

    Notes
    -----
    Every fold learns everything on its training part only (:func:`prepare_covariates`
    with the fold's training rows). With head effects, head indicators enter before the
    block's columns and any covariate constant within every head is dropped; how to read
    the gains: docs/prereg.md, section "Head-level analysis (exploratory, training heads
    only)".

    Examples
    --------
    Eight heads with head effects; ``rich__z`` predicts within and across heads:

    >>> from analysis.datasets import example_head_table
    >>> table = example_head_table()  # 8 training heads: inputs a, b, c at 2 lengths
    >>> from analysis.compare.headlevel import HeadLevelAnalysis, HeadLevelSpec
    >>> spec = HeadLevelSpec(
    ...     models={"base": ["base"], "rich": ["base", "rich"]}, estimator="ols",
    ...     n_head_folds=4, random_state=0,
    ... )
    >>> result = HeadLevelAnalysis(spec).fit(table)
    >>> cols = ["question", "model", "fixed_effects", "cv_loss", "gain_vs_base", "n_folds"]
    >>> print(result.to_frame()[cols].round(3).to_string(index=False))
       question model  fixed_effects  cv_loss  gain_vs_base  n_folds
    within_head  base          False    0.443         0.000        3
    within_head  rich          False    0.221         0.222        3
    within_head  base           True    0.141         0.000        3
    within_head  rich           True    0.004         0.137        3
    across_head  base          False    0.453         0.000        4
    across_head  rich          False    0.271         0.182        4
    >>> round(result.residual_icc, 3)  # the head effects show in the base residuals
    0.608
    """

    def __init__(self, spec: HeadLevelSpec) -> None:
        if not isinstance(spec, HeadLevelSpec):
            raise ParameterError("spec", "a HeadLevelSpec", spec)
        self.spec = spec

    def fit(self, table: pd.DataFrame) -> HeadLevelResult:
        """Answer both questions on ``table``.

        Parameters
        ----------
        table : pandas.DataFrame
            Training cells only (``held_out`` absent or all False); ``cluster`` (the
            head), ``y_lower``, ``y_upper``, covariates, the spec's ``input_column`` and
            ``length_column``, and optionally the :data:`DESIGN_COLUMNS`.

        Returns
        -------
        HeadLevelResult
        """
        spec = self.spec
        table = _training_table(table)
        rng = check_random_state(spec.random_state)
        rows: list[dict[str, Any]] = []
        folds_how: dict[str, str] = {}
        skipped: dict[str, str] = {}
        messages: list[str] = []
        for question in QUESTIONS:
            try:
                folds, k, how = _fold_scheme(table, spec, question, rng)
                checks = _check_folds(table, spec, question, folds, k)
            except _Skip as why:
                skipped[question] = str(why)
                _warn(f"head-level {question.replace('_', '-')} question skipped: {why}", None)
                rows += [
                    _row(question, name, blocks, fe, {**_SKIPPED, "status": "skipped"})
                    for fe in _EFFECTS[question]
                    for name, blocks in spec.models.items()
                ]
                continue
            folds_how[question] = how
            for msg in dict.fromkeys(m for ms in checks.values() for m in ms):
                _warn(msg, messages)
            rows += _cv_rows(table, spec, question, (folds, k, checks), messages)
        return HeadLevelResult(
            frame=_with_gains(pd.DataFrame(rows), spec.base_model),
            residual_icc=_base_residual_icc(table, spec),
            base_model=spec.base_model,
            folds=folds_how,
            skipped=skipped,
            warnings=tuple(messages),
        )


#: The fixed-effects settings each question fits.
_EFFECTS = {"within_head": (False, True), "across_head": (False,)}


def _warn(message: str, messages: list[str] | None) -> None:
    """Warn once: a skipped question (``messages`` None), else a fold's extrapolation
    (recorded in ``messages``)."""
    if messages is None:
        warnings.warn(message, QuestionSkippedWarning, stacklevel=3)
    elif message not in messages:
        messages.append(message)
        warnings.warn(message, FoldExtrapolationWarning, stacklevel=3)


def _training_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table, checked to hold training cells with the needed columns, reindexed."""
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
    return table.reset_index(drop=True)


def _fold_scheme(
    table: pd.DataFrame, spec: HeadLevelSpec, question: str, rng: np.random.Generator
) -> tuple[np.ndarray, int, str]:
    """The question's fold labels, number of folds and how they were formed."""
    if question == "within_head":
        return _within_head_folds(table, spec.input_column, spec.length_column)
    return _head_folds(table["cluster"].astype(str).to_numpy(), spec.n_head_folds, rng)


def _check_folds(
    table: pd.DataFrame, spec: HeadLevelSpec, question: str, folds: np.ndarray, k: int
) -> dict[tuple[str, int], list[str]]:
    """Every (model, fold)'s extrapolation messages, checked before any fit so that a
    refused fold (:class:`_Skip`) skips the whole question."""
    design_columns = [c for c in spec.design_columns if c in table.columns]
    if spec.length_column in table.columns and spec.length_column not in design_columns:
        design_columns.append(spec.length_column)
    return {
        (name, g): _check_fold(
            table,
            folds != g,
            folds == g,
            design_columns=design_columns,
            covariates=model_feature_columns(
                list(table.columns),
                blocks,
                block_order=spec.block_order,
                diagnostic_columns=spec.diagnostic_columns,
            ),
            question=question,
            fold=g,
        )
        for name, blocks in spec.models.items()
        for g in range(k)
    }


def _cv_rows(
    table: pd.DataFrame,
    spec: HeadLevelSpec,
    question: str,
    scheme: tuple[np.ndarray, int, dict[tuple[str, int], list[str]]],
    messages: list[str],
) -> list[dict[str, Any]]:
    """One row per (fixed effects, model) of an answered question: its CV loss."""
    folds, k, checks = scheme
    clusters = table["cluster"].astype(str).to_numpy()
    rows = []
    for fe in _EFFECTS[question]:
        for name, blocks in spec.models.items():
            within = fe if question == "within_head" else None
            loss, not_converged = _cv_loss(table, spec, name, folds, k, within, messages)
            scored = np.isfinite(loss)
            rows.append(
                _row(
                    question,
                    name,
                    blocks,
                    fe,
                    {
                        "status": "ok",
                        "cv_loss": float(loss[scored].mean()),
                        "n_folds": k,
                        "n_cells": int(scored.sum()),
                        "n_heads": len(np.unique(clusters[scored])),
                        "fits_not_converged": int(not_converged),
                        "warnings": sum(bool(checks[(name, g)]) for g in range(k)),
                    },
                )
            )
    return rows


def _cv_loss(
    table: pd.DataFrame,
    spec: HeadLevelSpec,
    name: str,
    folds: np.ndarray,
    k: int,
    fe: bool | None,
    messages: list[str],
) -> tuple[np.ndarray, int]:
    """Each cell's held-out loss over the k folds (NaN where unscored) and the number of
    fold fits that did not converge. ``fe`` None: across heads; False or True: within
    heads, without or with head fixed effects."""
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    clusters = table["cluster"].astype(str).to_numpy()
    loss = np.full(len(table), np.nan)
    not_converged = 0
    for g in range(k):
        test = folds == g
        train = ~test
        prep = prepare_covariates(
            table, {name: spec.models[name]}, train, **spec.covariate_kwargs()
        )
        X = prep.matrices[name]
        if fe is not None:
            D, known = _dummies(clusters, train)
            if not known[test].all():
                _warn(
                    f"within-head fold {g}: head(s) "
                    f"{sorted(set(clusters[test & ~known]))!r} have no training "
                    "cell; their test cells are left out of the fold's loss",
                    messages,
                )
            test = test & known
            if fe:
                keep = greedy_independent(X[train], fixed=D[train])
                X = np.column_stack([D, X[:, keep]])
        fit = fit_estimator(
            spec.estimator,
            X[train],
            lower[train],
            upper[train],
            groups=clusters[train],
            maxiter=spec.maxiter,
        )
        not_converged += not fit.converged
        loss[test] = interval_sq_loss(fit.predict(X[test]), lower[test], upper[test])
    return loss, not_converged


def _with_gains(frame: pd.DataFrame, base_model: str) -> pd.DataFrame:
    """The frame with ``gain_vs_base``: the base model's loss (same question and fixed
    effects) minus the row's; in :data:`HEAD_LEVEL_COLUMNS` order."""
    base = frame[frame.model == base_model].set_index(["question", "fixed_effects"])["cv_loss"]
    frame["gain_vs_base"] = [
        base[(q, fe)] - v
        for q, fe, v in zip(
            frame["question"], frame["fixed_effects"], frame["cv_loss"], strict=True
        )
    ]
    return frame.loc[:, list(HEAD_LEVEL_COLUMNS)]


def _base_residual_icc(table: pd.DataFrame, spec: HeadLevelSpec) -> float:
    """:func:`residual_icc` of the base model fitted in-sample on every cell."""
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    clusters = table["cluster"].astype(str).to_numpy()
    base = spec.base_model
    every = np.ones(len(table), dtype=bool)
    X = prepare_covariates(table, {base: spec.models[base]}, every, **spec.covariate_kwargs())
    fit = fit_estimator(
        spec.estimator, X.matrices[base], lower, upper, groups=clusters, maxiter=spec.maxiter
    )
    return residual_icc(0.5 * (lower + upper) - fit.predict(X.matrices[base]), clusters)


#: The numbers of a skipped question's rows.
_SKIPPED = {"cv_loss": float("nan"), "n_folds": 0, "n_cells": 0, "n_heads": 0}


def _row(question: str, name: str, blocks: Sequence[str], fe: bool, numbers: dict) -> dict:
    """One row of the result frame (``gain_vs_base`` is added later)."""
    base = {"question": question, "model": name, "blocks": "+".join(blocks), "fixed_effects": fe}
    return {**base, "fits_not_converged": 0, "warnings": 0, **numbers}
