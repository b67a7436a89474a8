"""Head-level analysis (exploratory, training heads only).

Two questions, each with folds that can learn what they predict:

- **within-head**: given a head's cells on its other inputs, does a block predict its
  cells on a new input? Folds hold out one input within each length (every fold keeps
  every length and every head in training), each model with and without head fixed
  effects. Needs at least two inputs per length.
- **across-head**: does a block predict the cells of heads it was never fitted on? Folds
  hold out whole training heads, each model without head fixed effects (a head's effect
  cannot transfer to an unseen head).

Plus the within-head (intraclass) correlation of the base model's residuals.
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
from analysis.compare.estimators import fit_estimator
from analysis.compare.metrics import interval_sq_loss
from analysis.validation import ParameterError, check_choice, check_int, check_random_state

__all__ = [
    "DEFAULT_HEAD_FOLDS",
    "DESIGN_COLUMNS",
    "FoldExtrapolationWarning",
    "HEAD_LEVEL_COLUMNS",
    "HeadLevelResult",
    "HeadLevelWarning",
    "QUESTIONS",
    "QuestionSkippedWarning",
    "head_level_analysis",
    "head_level_folds",
    "residual_icc",
]

#: The two questions, in report order.
QUESTIONS: tuple[str, ...] = ("within_head", "across_head")
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
#: Default number of across-head folds (capped at the number of training heads).
DEFAULT_HEAD_FOLDS = 5
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


class HeadLevelWarning(UserWarning):
    """Base class of the head-level analysis' warnings.

    Examples
    --------
    >>> import warnings
    >>> from analysis.compare.headlevel import FoldExtrapolationWarning, HeadLevelWarning
    >>> issubclass(FoldExtrapolationWarning, HeadLevelWarning)
    True
    >>> with warnings.catch_warnings():  # silence every head-level warning at once
    ...     warnings.simplefilter("ignore", HeadLevelWarning)
    ...     warnings.warn("fold 0 extrapolates", FoldExtrapolationWarning)
    """


class FoldExtrapolationWarning(HeadLevelWarning):
    """A fold's training part leaves a design variable constant (or lacks a level) that
    its test part holds: that fold extrapolates in the variable.

    Examples
    --------
    Heads 0-2 were all seen at length 16 only, head 3 at length 32 only, so the
    across-head fold that holds out head 3 extrapolates in length:

    >>> import warnings
    >>> import pandas as pd
    >>> from analysis.compare.headlevel import FoldExtrapolationWarning, head_level_analysis
    >>> table = pd.DataFrame({
    ...     "cluster": [0, 0, 1, 1, 2, 2, 3, 3], "input_id": "a",
    ...     "length": [16] * 6 + [32] * 2,
    ...     "base__x": [1.0, 2.0, 1.5, 2.5, 0.5, 3.0, 1.0, 2.0],
    ...     "y_lower": [0.0, 1, 1, 2, 0, 2, 1, 2],
    ... })
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = head_level_analysis(
    ...         table, {"base": ["base"]}, estimator="ols", n_head_folds=4, random_state=0
    ...     )
    >>> any(w.category is FoldExtrapolationWarning for w in caught)
    True
    >>> print(result.warnings[0])  # doctest: +ELLIPSIS
    across-head fold ...: training holds only length = 16 while the test part holds [32]; ...
    """


class QuestionSkippedWarning(HeadLevelWarning):
    """A question cannot be answered on this table (the message says why and what
    design change enables it); its rows have status ``skipped``.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> from analysis.compare.headlevel import head_level_analysis
    >>> table = pd.DataFrame({  # one input per length: no within-head folds
    ...     "cluster": [0, 0, 1, 1, 2, 2], "input_id": "a", "length": [16, 32] * 3,
    ...     "base__x": [1.0, 2.0, 1.5, 2.5, 0.5, 3.0], "y_lower": [0.0, 1, 1, 2, 0, 2],
    ... })
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = head_level_analysis(table, {"base": ["base"]}, estimator="ols")
    >>> [w.category.__name__ for w in caught]
    ['QuestionSkippedWarning']
    >>> result.to_frame().set_index("question")["status"].to_dict()
    {'within_head': 'skipped', 'across_head': 'ok'}
    """


@dataclass(frozen=True)
class HeadLevelResult:
    """Result of :func:`head_level_analysis`.

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
    Made by :func:`head_level_analysis`; with three inputs at every length and eight
    heads, both questions can be answered:

    >>> from analysis.compare.examples import example_head_table
    >>> from analysis.compare.headlevel import head_level_analysis
    >>> table = example_head_table()
    >>> result = head_level_analysis(table, {"base": ["base"]}, estimator="ols")
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


class _Skip(Exception):
    """A question cannot be answered; the message says why."""


def _within_head_folds(
    table: pd.DataFrame, input_column: str, length_column: str
) -> tuple[np.ndarray, int, str]:
    """Fold = the input's position among its length's sorted inputs (leave one input out)."""
    if input_column not in table.columns:
        raise _Skip(
            f"the table has no {input_column!r} column, so inputs cannot be held out; "
            "the within-head question needs at least 2 inputs per length"
        )
    inputs = table[input_column].astype(str)
    lengths = table[length_column] if length_column in table.columns else pd.Series(0, table.index)
    per_length = inputs.groupby(lengths).nunique()
    single = sorted(per_length.index[per_length < 2].tolist())
    if single:
        where = "every length" if len(single) == len(per_length) else f"length(s) {single}"
        raise _Skip(
            f"{where} has a single input, so a fold over inputs would hold out a whole "
            "length and every fit would extrapolate in length; the within-head question "
            "needs at least 2 inputs per length (a design with [sampling.inputs] "
            "per_length >= 2)"
        )
    folds = np.empty(len(table), dtype=int)
    for _, idx in table.groupby(lengths, sort=True).indices.items():
        sub = inputs.to_numpy()[idx]
        order = {v: i for i, v in enumerate(sorted(set(sub)))}
        folds[idx] = [order[v] for v in sub]
    k = int(folds.max()) + 1
    counts = ", ".join(f"{per_length[L]} at {L}" for L in per_length.index)
    how = (
        f"leave one {input_column} out within each length ({k} folds; inputs {counts}); "
        "every fold keeps every length and every head in training"
    )
    return folds, k, how


def _head_folds(clusters: np.ndarray, n_folds: int, rng: np.random.Generator) -> tuple:
    """Fold = the head's position in a seeded permutation of the sorted heads, mod K."""
    heads = np.unique(clusters)
    if heads.size < 2:
        raise _Skip(f"{heads.size} training head(s); across-head folds need at least 2")
    k = min(n_folds, heads.size)
    fold_of = dict(zip(heads[rng.permutation(heads.size)], np.arange(heads.size) % k, strict=True))
    folds = np.array([fold_of[c] for c in clusters], dtype=int)
    how = f"{k} folds of whole training heads ({heads.size} heads, seeded permutation)"
    return folds, k, how


def head_level_folds(
    table: pd.DataFrame,
    question: str,
    *,
    input_column: str = "input_id",
    length_column: str = "length",
    n_head_folds: int = DEFAULT_HEAD_FOLDS,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, str]:
    """Fold labels of one head-level question, as :func:`head_level_analysis` forms them.

    Parameters
    ----------
    table : pandas.DataFrame
        Cells with ``cluster`` (the head), ``input_column`` and ``length_column``.
    question : {"within_head", "across_head"}
    input_column, length_column, n_head_folds, random_state : keyword-only
        As in :func:`head_level_analysis`.

    Returns
    -------
    folds : ndarray of int
        Fold label ``0 .. k-1`` of each row (test part of fold g: ``folds == g``).
    how : str
        How the folds were formed.

    Raises
    ------
    ParameterError
        ``table`` when the question cannot be answered (the message says why).

    Notes
    -----
    Within-head: the fold of a cell is the position of its input among the sorted
    distinct inputs of its length, so fold g holds out the g-th input of every length;
    with at least 2 inputs at every length, each fold's training part keeps every length
    and (when every head has every input) every head. Across-head: the sorted heads are
    permuted by ``numpy.random.default_rng(random_state)`` and head j of the permutation
    goes to fold ``j mod K``, ``K = min(n_head_folds, n_heads)``; a head is never split.

    Examples
    --------
    >>> from analysis.compare.examples import example_head_table
    >>> table = example_head_table()  # 8 training heads: inputs a, b, c at 2 lengths
    >>> from analysis.compare.headlevel import head_level_folds
    >>> folds, how = head_level_folds(table, "within_head")
    >>> folds[:6].tolist(), how  # doctest: +ELLIPSIS
    ([0, 1, 2, 0, 1, 2], 'leave one input_id out within each length (3 folds; ...')
    >>> folds, how = head_level_folds(table, "across_head", n_head_folds=4, random_state=0)
    >>> folds[::6].tolist(), how  # one fold per head, two heads per fold
    ([1, 2, 0, 2, 1, 0, 3, 3], '4 folds of whole training heads (8 heads, seeded permutation)')
    """
    check_choice("question", question, QUESTIONS)
    if not isinstance(table, pd.DataFrame) or "cluster" not in table.columns:
        raise ParameterError("table", "a DataFrame with a cluster column", type(table).__name__)
    n_head_folds = check_int("n_head_folds", n_head_folds, minimum=2)
    table = table.reset_index(drop=True)
    try:
        if question == "within_head":
            folds, _, how = _within_head_folds(table, input_column, length_column)
        else:
            clusters = table["cluster"].astype(str).to_numpy()
            rng = check_random_state(random_state)
            folds, _, how = _head_folds(clusters, n_head_folds, rng)
    except _Skip as why:
        raise ParameterError(
            "table", f"cells that can answer the {question} question", str(why)
        ) from None
    return folds, how


def _fold_values(values: pd.Series, train: np.ndarray, test: np.ndarray) -> tuple:
    tr = pd.unique(values[train].dropna())
    te = pd.unique(values[test].dropna())
    return tr, te


def _check_fold(
    table: pd.DataFrame,
    train: np.ndarray,
    test: np.ndarray,
    *,
    design_columns: Sequence[str],
    covariates: Sequence[str],
    question: str,
    fold: int,
) -> list[str]:
    """Extrapolation messages of one fold; raises :class:`_Skip` to refuse it.

    A variable held at one value in training while the test part holds another is an
    extrapolation (a message); held at one value in training while the test part varies,
    the fold cannot learn the variable at all (refused). A design variable's test
    values that training never holds are an extrapolation too.
    """
    out = []
    for col in dict.fromkeys([*design_columns, *covariates]):
        if col not in table.columns:
            continue
        tr, te = (v.tolist() for v in _fold_values(table[col], train, test))
        if len(tr) == 1 and any(v != tr[0] for v in te):
            what = (
                f"{question.replace('_', '-')} fold {fold}: training holds only {col} = "
                f"{tr[0]!r} while the test part holds {sorted(te)!r}"
            )
            if len(te) >= 2:
                raise _Skip(
                    f"{what}; the fold cannot learn {col}, which its test part varies (refused)"
                )
            out.append(f"{what}; the fold extrapolates in {col}")
        elif col in design_columns:
            unseen = sorted(set(te) - set(tr))
            if unseen:
                out.append(
                    f"{question.replace('_', '-')} fold {fold}: the test part holds "
                    f"{col} = {unseen!r}, which training never holds "
                    f"({sorted(tr)!r}); the fold extrapolates in {col}"
                )
    return out


def _dummies(clusters: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Head indicators of the training heads (first dropped), and rows whose head trains."""
    heads = np.unique(clusters[train])
    known = np.isin(clusters, heads)
    idx = np.searchsorted(heads, clusters)
    D = np.zeros((clusters.size, heads.size))
    D[np.flatnonzero(known), idx[known]] = 1.0
    return D[:, 1:], known


def head_level_analysis(
    table: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    *,
    base_model: str | None = None,
    log_columns: Sequence[str] = (),
    estimator: str = "interval",
    input_column: str = "input_id",
    length_column: str = "length",
    design_columns: Sequence[str] = DESIGN_COLUMNS,
    n_head_folds: int = DEFAULT_HEAD_FOLDS,
    random_state: int | np.random.Generator | None = None,
    calibrate_blocks: Sequence[str] = (),
    block_order: Sequence[str] = (),
    diagnostic_columns: Collection[str] = (),
    maxiter: int = 200,
) -> HeadLevelResult:
    """Cross-validated loss of each model on the within-head and across-head questions.

    Parameters
    ----------
    table : pandas.DataFrame
        Training cells only (``held_out`` absent or all False); ``cluster`` (the head),
        ``y_lower``, ``y_upper``, covariates, ``input_column`` and ``length_column``,
        and optionally the :data:`DESIGN_COLUMNS`.
    models : mapping
        Model name -> blocks.
    base_model : str, keyword-only
        Reference for ``gain_vs_base`` and the residual ICC (default: first model).
    log_columns, estimator : keyword-only
        As in :func:`~analysis.compare.nested.compare_nested`.
    input_column, length_column : str, keyword-only
        The cell's input and length. Within-head folds hold out the i-th input (sorted)
        of every length; a table without ``length_column`` is one length.
    design_columns : sequence of str, keyword-only
        Design variables checked in every fold, besides the model's covariates
        (default :data:`DESIGN_COLUMNS`; absent ones are skipped).
    n_head_folds : int, keyword-only
        Across-head folds (default :data:`DEFAULT_HEAD_FOLDS`, capped at the number of
        heads).
    random_state : keyword-only
        Seeds the across-head fold assignment (the study passes the design's inference
        seed).
    calibrate_blocks, block_order, diagnostic_columns : keyword-only
        As in :func:`~analysis.compare.nested.compare_nested` (neutral defaults: no
        calibration, each model's own block order, no diagnostics).
    maxiter : int, keyword-only
        Iteration cap of each interval fit (see
        :func:`~analysis.compare.estimators.fit_interval`).

    Returns
    -------
    HeadLevelResult

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
    Every fold learns everything (log, calibration, standardization, collinearity screen,
    coefficients) on its training part only (:func:`prepare_covariates` with the fold's
    training rows). Within-head, with head effects, head indicators enter before the
    block's columns and any covariate collinear with them (constant within every head)
    is dropped, so that loss measures what a block adds *within* heads; a block whose
    within-head gain vanishes with head effects carries head-level information only.
    Across-head, a block's gain is what it carries about heads the fit never saw; head
    effects are left out (an unseen head's effect is not estimable).

    Examples
    --------
    Eight heads with head effects; ``rich__z`` predicts within and across heads:

    >>> from analysis.compare.examples import example_head_table
    >>> table = example_head_table()  # 8 training heads: inputs a, b, c at 2 lengths
    >>> from analysis.compare.headlevel import head_level_analysis
    >>> models = {"base": ["base"], "rich": ["base", "rich"]}
    >>> result = head_level_analysis(
    ...     table, models, estimator="ols", n_head_folds=4, random_state=0
    ... )
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
    n_head_folds = check_int("n_head_folds", n_head_folds, minimum=2)
    maxiter = check_int("maxiter", maxiter, minimum=1)
    rng = check_random_state(random_state)
    if not models:
        raise ParameterError("models", "at least one model", models)
    base_model = base_model or next(iter(models))
    if base_model not in models:
        raise ParameterError("base_model", "a model name", base_model)
    table = table.reset_index(drop=True)
    lower = table["y_lower"].to_numpy(float)
    upper = table["y_upper"].to_numpy(float)
    clusters = table["cluster"].astype(str).to_numpy()
    covariates = {
        name: model_feature_columns(
            list(table.columns),
            blocks,
            block_order=block_order,
            diagnostic_columns=diagnostic_columns,
        )
        for name, blocks in models.items()
    }
    design_columns = [c for c in design_columns if c in table.columns]
    if length_column in table.columns and length_column not in design_columns:
        design_columns.append(length_column)

    def fold_scheme(question: str) -> tuple[np.ndarray, int, str]:
        if question == "within_head":
            return _within_head_folds(table, input_column, length_column)
        return _head_folds(clusters, n_head_folds, rng)

    rows: list[dict[str, Any]] = []
    folds_how: dict[str, str] = {}
    skipped: dict[str, str] = {}
    messages: list[str] = []
    for question in QUESTIONS:
        effects = (False, True) if question == "within_head" else (False,)
        try:
            folds, k, how = fold_scheme(question)
            # check every fold before fitting any, so a refused fold skips the question
            checks = {
                (name, g): _check_fold(
                    table,
                    folds != g,
                    folds == g,
                    design_columns=design_columns,
                    covariates=covariates[name],
                    question=question,
                    fold=g,
                )
                for name in models
                for g in range(k)
            }
        except _Skip as why:
            skipped[question] = str(why)
            warnings.warn(
                f"head-level {question.replace('_', '-')} question skipped: {why}",
                QuestionSkippedWarning,
                stacklevel=2,
            )
            for fe in effects:
                for name, blocks in models.items():
                    rows.append(_row(question, name, blocks, fe, status="skipped"))
            continue
        folds_how[question] = how
        for msg in dict.fromkeys(m for ms in checks.values() for m in ms):
            messages.append(msg)
            warnings.warn(msg, FoldExtrapolationWarning, stacklevel=2)
        for fe in effects:
            for name, blocks in models.items():
                loss = np.full(len(table), np.nan)
                not_converged = 0
                for g in range(k):
                    test = folds == g
                    train = ~test
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
                    if question == "within_head":
                        D, known = _dummies(clusters, train)
                        if not known[test].all():
                            msg = (
                                f"within-head fold {g}: head(s) "
                                f"{sorted(set(clusters[test & ~known]))!r} have no training "
                                "cell; their test cells are left out of the fold's loss"
                            )
                            if msg not in messages:
                                messages.append(msg)
                                warnings.warn(msg, FoldExtrapolationWarning, stacklevel=2)
                        test = test & known
                        if fe:
                            keep = greedy_independent(X[train], fixed=D[train])
                            X = np.column_stack([D, X[:, keep]])
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
                scored = np.isfinite(loss)
                rows.append(
                    _row(
                        question,
                        name,
                        blocks,
                        fe,
                        status="ok",
                        cv_loss=float(loss[scored].mean()),
                        n_folds=k,
                        n_cells=int(scored.sum()),
                        n_heads=len(np.unique(clusters[scored])),
                        fits_not_converged=int(not_converged),
                        fold_warnings=sum(bool(checks[(name, g)]) for g in range(k)),
                    )
                )
    frame = pd.DataFrame(rows)
    base = frame[frame.model == base_model].set_index(["question", "fixed_effects"])["cv_loss"]
    frame["gain_vs_base"] = [
        base[(q, fe)] - v
        for q, fe, v in zip(
            frame["question"], frame["fixed_effects"], frame["cv_loss"], strict=True
        )
    ]

    prep = prepare_covariates(
        table,
        {base_model: models[base_model]},
        np.ones(len(table), dtype=bool),
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
        folds=folds_how,
        skipped=skipped,
        warnings=tuple(messages),
    )


def _row(
    question: str,
    name: str,
    blocks: Sequence[str],
    fe: bool,
    *,
    status: str,
    cv_loss: float = float("nan"),
    n_folds: int = 0,
    n_cells: int = 0,
    n_heads: int = 0,
    fits_not_converged: int = 0,
    fold_warnings: int = 0,
) -> dict[str, Any]:
    return {
        "question": question,
        "model": name,
        "blocks": "+".join(blocks),
        "fixed_effects": fe,
        "cv_loss": cv_loss,
        "n_folds": n_folds,
        "n_cells": n_cells,
        "n_heads": n_heads,
        "fits_not_converged": fits_not_converged,
        "warnings": fold_warnings,
        "status": status,
    }
