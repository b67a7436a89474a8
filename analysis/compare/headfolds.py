"""Folds of the head-level questions (:mod:`analysis.compare.headlevel`).

Within-head folds hold out one input within each length; across-head folds hold out
whole training heads. Before any fit, every fold is checked for what its training part
cannot teach its test part (:func:`_check_fold`), with the warnings that say so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.validation import ParameterError, check_choice, check_int, check_random_state

__all__ = [
    "DEFAULT_HEAD_FOLDS",
    "QUESTIONS",
    "FoldExtrapolationWarning",
    "HeadLevelWarning",
    "QuestionSkippedWarning",
    "head_level_folds",
]

#: The two questions, in report order.
QUESTIONS: tuple[str, ...] = ("within_head", "across_head")
#: Default number of across-head folds (capped at the number of training heads).
DEFAULT_HEAD_FOLDS = 5


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
    >>> from analysis.compare.headlevel import (
    ...     FoldExtrapolationWarning, HeadLevelAnalysis, HeadLevelSpec,
    ... )
    >>> table = pd.DataFrame({
    ...     "cluster": [0, 0, 1, 1, 2, 2, 3, 3], "input_id": "a",
    ...     "length": [16] * 6 + [32] * 2,
    ...     "base__x": [1.0, 2.0, 1.5, 2.5, 0.5, 3.0, 1.0, 2.0],
    ...     "y_lower": [0.0, 1, 1, 2, 0, 2, 1, 2],
    ... })
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     spec = HeadLevelSpec(
    ...         models={"base": ["base"]}, estimator="ols", n_head_folds=4, random_state=0
    ...     )
    ...     result = HeadLevelAnalysis(spec).fit(table)
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
    >>> from analysis.compare.headlevel import HeadLevelAnalysis, HeadLevelSpec
    >>> table = pd.DataFrame({  # one input per length: no within-head folds
    ...     "cluster": [0, 0, 1, 1, 2, 2], "input_id": "a", "length": [16, 32] * 3,
    ...     "base__x": [1.0, 2.0, 1.5, 2.5, 0.5, 3.0], "y_lower": [0.0, 1, 1, 2, 0, 2],
    ... })
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     spec = HeadLevelSpec(models={"base": ["base"]}, estimator="ols")
    ...     result = HeadLevelAnalysis(spec).fit(table)
    >>> [w.category.__name__ for w in caught]
    ['QuestionSkippedWarning']
    >>> result.to_frame().set_index("question")["status"].to_dict()
    {'within_head': 'skipped', 'across_head': 'ok'}
    """


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
    """Fold labels of one head-level question, as :class:`~analysis.compare.headlevel.HeadLevelAnalysis` forms them.

    Parameters
    ----------
    table : pandas.DataFrame
        Cells with ``cluster`` (the head), ``input_column`` and ``length_column``.
    question : {"within_head", "across_head"}
    input_column, length_column, n_head_folds, random_state : keyword-only
        As in :class:`~analysis.compare.headlevel.HeadLevelSpec`.

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
    >>> from analysis.datasets import example_head_table
    >>> table = example_head_table()  # 8 training heads: inputs a, b, c at 2 lengths
    >>> from analysis.compare.headfolds import head_level_folds
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
        tr, te = (pd.unique(table[col][rows].dropna()).tolist() for rows in (train, test))
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
