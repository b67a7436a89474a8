"""Secondary analysis: each pre-specified pair's held-out effect within each input length.

Like :func:`~analysis.compare.bycheckpoint.effects_by_checkpoint` (same fits, no decision,
outside the Holm family) with the table's ``length`` column as the groups: does the
held-out answer change with the length? See docs/prereg.md, section "Effects by length".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from analysis.compare.bycheckpoint import (
    BY_CHECKPOINT_COLUMNS,
    _check_inputs,
    _effects_by,
    _GroupEffects,
)
from analysis.compare.nested import ComparisonResult
from analysis.validation import ParameterError, check_int

__all__ = [
    "BY_LENGTH_COLUMNS",
    "BY_LENGTH_LABEL",
    "LENGTH",
    "LENGTH_SEED_BRANCH",
    "LengthEffects",
    "effects_by_length",
    "length_seed",
]

#: The table column whose values are the groups.
LENGTH = "length"
#: The ``analysis`` column of every row: never a confirmatory result.
BY_LENGTH_LABEL = "secondary, by length"
#: Columns of :meth:`LengthEffects.to_frame`, in order (``length`` where the
#: by-checkpoint table has ``checkpoint``).
BY_LENGTH_COLUMNS: tuple[str, ...] = tuple(
    LENGTH if c == "checkpoint" else c for c in BY_CHECKPOINT_COLUMNS
)
#: First element of every by-length spawn key. Child 0 of the inference seed assigns the
#: calibration folds, branch 1 is the by-checkpoint effects'
#: (:data:`~analysis.compare.bycheckpoint.SEED_BRANCH`), so branch 2 is a stream of its own.
LENGTH_SEED_BRANCH = 2


def length_seed(seed: int, pair_index: int, length_index: int) -> np.random.SeedSequence:
    """The seed of one (pair, length) bootstrap.

    Parameters
    ----------
    seed : int
        The design's inference seed S.
    pair_index : int
        Position of the pair among the comparison's pairs (the family, then the
        sensitivity pairs).
    length_index : int
        Position of the length among the lengths with held-out cells, in increasing order.

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence(S, spawn_key=(2, pair_index, length_index))``, the same as
        ``SeedSequence(S).spawn(3)[2].spawn(P)[pair_index].spawn(L)[length_index]``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bylength import length_seed
    >>> seq = length_seed(7, 0, 1)
    >>> seq.entropy, seq.spawn_key
    (7, (2, 0, 1))
    >>> spawned = np.random.SeedSequence(7).spawn(3)[2].spawn(2)[0].spawn(3)[1]
    >>> bool((np.random.default_rng(seq).random(3) == np.random.default_rng(spawned).random(3)).all())
    True
    """
    return np.random.SeedSequence(
        check_int("seed", seed, minimum=0),
        spawn_key=(LENGTH_SEED_BRANCH, int(pair_index), int(length_index)),
    )


@dataclass(frozen=True)
class LengthEffects(_GroupEffects):
    """Result of :func:`effects_by_length` (secondary; no decision, no Holm).

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (pair, metric, length); use :meth:`to_frame` for a copy.
    primary_metric : str
    n_boot : int
    ci_level : float
    seed : int
        The inference seed the per-(pair, length) streams derive from (:func:`length_seed`).
    lock_sha256 : str or None
        The overall comparison's stamp.

    Examples
    --------
    Made by :func:`effects_by_length` (see its example):

    >>> import pandas as pd
    >>> from analysis.compare.bylength import BY_LENGTH_COLUMNS, LengthEffects
    >>> effects = LengthEffects(  # no rows
    ...     frame=pd.DataFrame(columns=list(BY_LENGTH_COLUMNS)), primary_metric="interval_sq_loss",
    ...     n_boot=199, ci_level=0.95, seed=0, lock_sha256=None,
    ... )
    >>> print(effects.summary())  # doctest: +ELLIPSIS
    Effects by length (secondary, outside the Holm family; no decision)
    lock sha256: NONE (not a confirmatory run)
    same fits as the overall comparison; ... B = 199, 95% CI; ... unadjusted one-sided p
    """

    _columns: ClassVar[tuple[str, ...]] = BY_LENGTH_COLUMNS
    _group: ClassVar[str] = LENGTH
    _branch: ClassVar[int] = LENGTH_SEED_BRANCH

    def _group_text(self, row: Any) -> str:
        return f"length {row.length:>5}"


def effects_by_length(
    result: ComparisonResult,
    table: pd.DataFrame,
    *,
    seed: int,
    ci_level: float = 0.95,
    labels: Mapping[str, str] | None = None,
) -> LengthEffects:
    """Each compared pair's held-out effect within each input length, with the same fits.

    Parameters
    ----------
    result : ComparisonResult
        The overall comparison (:class:`~analysis.compare.NestedComparison`); its fits,
        pairs, metrics, B and lock hash are used as they are.
    table : pandas.DataFrame
        The table ``result`` was fitted on (same rows, same order), with a ``length``
        column of positive integers on the held-out rows: each value is a group.
    seed : int, keyword-only
        The design's inference seed S (see Notes).
    ci_level : float, keyword-only
        Level of the percentile CI (the design's).
    labels : mapping, optional, keyword-only
        Pair (``"M0<M1"``) -> hypothesis label (a study passes the design's ids); the
        pair itself when absent.

    Returns
    -------
    LengthEffects

    Raises
    ------
    ParameterError
        Named ``table`` without a ``length`` column, with a held-out length that is not a
        positive integer, or when it is not the fitted table; ``seed`` or ``ci_level``
        out of range.

    Notes
    -----
    The computation of :func:`~analysis.compare.bycheckpoint.effects_by_checkpoint` with
    the held-out cells of length n in place of a checkpoint's, each resampled head bringing
    its cells of length n; pair i at length j draws from
    ``numpy.random.default_rng(SeedSequence(S, spawn_key=(2, i, j)))`` (:func:`length_seed`).
    Details: docs/prereg.md, section "Effects by length (secondary, outside the Holm family)".

    Examples
    --------
    With the table and result of :func:`~analysis.datasets.example_comparison`,
    whose heads' first two cells are given length 64 and last two 128:

    >>> import numpy as np
    >>> from analysis.datasets import example_comparison
    >>> table, result = example_comparison()
    >>> table = table.assign(length=np.tile([64, 64, 128, 128], 20))
    >>> from analysis.compare.bylength import effects_by_length
    >>> effects = effects_by_length(result, table, seed=0)
    >>> cols = ["pair", "length", "held_out_heads", "held_out_cells", "spawn_key"]
    >>> print(effects.to_frame()[cols].to_string(index=False))
          pair  length  held_out_heads  held_out_cells spawn_key
     base<rich      64               6              12     2,0,0
     base<rich     128               6              12     2,0,1
    base<noisy      64               6              12     2,1,0
    base<noisy     128               6              12     2,1,1
    """
    seed, ci_level, raw = _check_inputs(result, table, LENGTH, "the input length", seed, ci_level)
    try:
        lengths = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            "table", "held-out lengths that are positive integers", raw[:5]
        ) from None
    bad = ~np.isfinite(lengths) | (lengths < 1) | (lengths != np.round(lengths))
    if bad.any():
        raise ParameterError(
            "table", "held-out lengths that are positive integers", raw[bad][:5].tolist()
        )
    lengths = lengths.astype(np.int64)
    return _effects_by(
        LengthEffects,
        result,
        table,
        lengths,
        [int(n) for n in sorted(set(lengths.tolist()))],
        seed=seed,
        ci_level=ci_level,
        labels=labels,
    )
