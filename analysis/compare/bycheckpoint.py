"""Secondary analysis: each pre-specified pair's held-out effect within each checkpoint.

Outside the Holm family and without a decision. The models are the ones the overall
comparison fitted (:class:`~analysis.compare.nested.ComparisonResult` keeps its fits and
every row's design matrix): nothing is refitted per checkpoint. A checkpoint is a value of
the table's ``stratum`` column (the unit of the held-out draw; a study passes the
checkpoint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import (
    bootstrap_counts,
    percentile_ci_and_p,
    replicate_means,
    spearman_replicates,
)
from analysis.compare.metrics import (
    HIGHER_IS_BETTER,
    interval_loglik,
    interval_sq_loss,
)
from analysis.compare.nested import (
    FIT_FAILED,
    FIT_OK,
    REQUIRED_COLUMNS,
    STRATUM,
    ComparisonResult,
)
from analysis.validation import ParameterError, check_int

__all__ = [
    "BY_CHECKPOINT_COLUMNS",
    "BY_CHECKPOINT_LABEL",
    "PREDICTION_COLUMNS",
    "SEED_BRANCH",
    "CheckpointEffects",
    "checkpoint_seed",
    "effects_by_checkpoint",
    "held_out_predictions",
]

#: The ``analysis`` column of every row: never a confirmatory result.
BY_CHECKPOINT_LABEL = "secondary, by checkpoint"
#: Columns of :meth:`CheckpointEffects.to_frame`, in order.
BY_CHECKPOINT_COLUMNS: tuple[str, ...] = (
    "analysis",
    "hypothesis",
    "pair",
    "base_model",
    "rich_model",
    "metric",
    "checkpoint",
    "held_out_heads",
    "held_out_cells",
    "base_value",
    "rich_value",
    "effect",
    "ci_low",
    "ci_high",
    "p_one_sided",
    "n_boot",
    "ci_level",
    "seed",
    "spawn_key",
    "status",
    "lock_sha256",
)
#: Columns of :func:`held_out_predictions`: one row per (held-out cell, model).
PREDICTION_COLUMNS: tuple[str, ...] = (
    "cell_key",
    "cluster",
    "checkpoint",
    "model",
    "y_hat",
    "y_lower",
    "y_upper",
)
#: First element of every by-checkpoint spawn key. Child 0 of the inference seed assigns
#: the calibration folds (:func:`~analysis.compare.covariates.head_folds`) and the
#: overall bootstrap draws from the seed itself, so branch 1 is a stream of its own.
SEED_BRANCH = 1


def checkpoint_seed(seed: int, pair_index: int, checkpoint_index: int) -> np.random.SeedSequence:
    """The seed of one (pair, checkpoint) bootstrap.

    Parameters
    ----------
    seed : int
        The design's inference seed S.
    pair_index : int
        Position of the pair among the comparison's pairs (the family, then the
        sensitivity pairs).
    checkpoint_index : int
        Position of the checkpoint among the checkpoints with held-out cells, sorted.

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence(S, spawn_key=(1, pair_index, checkpoint_index))``, the same as
        ``SeedSequence(S).spawn(2)[1].spawn(P)[pair_index].spawn(C)[checkpoint_index]``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bycheckpoint import checkpoint_seed
    >>> seq = checkpoint_seed(7, 0, 1)
    >>> seq.entropy, seq.spawn_key
    (7, (1, 0, 1))
    >>> spawned = np.random.SeedSequence(7).spawn(2)[1].spawn(2)[0].spawn(3)[1]
    >>> bool((np.random.default_rng(seq).random(3) == np.random.default_rng(spawned).random(3)).all())
    True
    """
    return np.random.SeedSequence(
        check_int("seed", seed, minimum=0),
        spawn_key=(SEED_BRANCH, int(pair_index), int(checkpoint_index)),
    )


@dataclass(frozen=True)
class _GroupEffects:
    """The fields and methods of the secondary effects by one grouping column."""

    frame: pd.DataFrame = field(repr=False)
    primary_metric: str
    n_boot: int
    ci_level: float
    seed: int
    lock_sha256: str | None

    _columns: ClassVar[tuple[str, ...]] = ()
    _group: ClassVar[str] = ""
    _branch: ClassVar[int] = 0

    def to_frame(self) -> pd.DataFrame:
        """Tidy copy with the class's fixed columns (``BY_..._COLUMNS``)."""
        return self.frame.loc[:, list(self._columns)].copy()

    def _group_text(self, row: Any) -> str:
        return f"{row.checkpoint:<40}"

    def summary(self) -> str:
        """Plain-text listing of the primary metric's rows."""
        f, g = self.frame, self._group
        lines = [
            f"Effects by {g} (secondary, outside the Holm family; no decision)",
            f"lock sha256: {self.lock_sha256 or 'NONE (not a confirmatory run)'}",
            "same fits as the overall comparison; percentile cluster bootstrap over each "
            f"{g}'s held-out heads, B = {self.n_boot}, {self.ci_level:.0%} CI; seed "
            f"SeedSequence({self.seed}, spawn_key=({self._branch}, pair, {g})); "
            "unadjusted one-sided p",
        ]
        for r in f[f["metric"] == self.primary_metric].itertuples(index=False):
            mark = " FIT FAILED (no result)" if r.status == FIT_FAILED else ""
            lines.append(
                f"  {r.hypothesis:<6} {r.pair:<16} {self._group_text(r)} heads "
                f"{r.held_out_heads:>3} cells {r.held_out_cells:>5} effect {r.effect:+.4f} "
                f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}] p {r.p_one_sided:.4f}{mark}"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class CheckpointEffects(_GroupEffects):
    """Result of :func:`effects_by_checkpoint` (secondary; no decision, no Holm).

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (pair, metric, checkpoint); use :meth:`to_frame` for a copy.
    primary_metric : str
    n_boot : int
    ci_level : float
    seed : int
        The inference seed the per-(pair, checkpoint) streams derive from
        (:func:`checkpoint_seed`).
    lock_sha256 : str or None
        The overall comparison's stamp.

    Examples
    --------
    Made by :func:`effects_by_checkpoint` (see its example):

    >>> import pandas as pd
    >>> from analysis.compare.bycheckpoint import BY_CHECKPOINT_COLUMNS, CheckpointEffects
    >>> effects = CheckpointEffects(  # no rows
    ...     frame=pd.DataFrame(columns=list(BY_CHECKPOINT_COLUMNS)), primary_metric="interval_sq_loss", n_boot=199,
    ...     ci_level=0.95, seed=0, lock_sha256=None,
    ... )
    >>> print(effects.summary())  # doctest: +ELLIPSIS
    Effects by checkpoint (secondary, outside the Holm family; no decision)
    lock sha256: NONE (not a confirmatory run)
    same fits as the overall comparison; ... B = 199, 95% CI; ... unadjusted one-sided p
    """

    _columns: ClassVar[tuple[str, ...]] = BY_CHECKPOINT_COLUMNS
    _group: ClassVar[str] = "checkpoint"
    _branch: ClassVar[int] = SEED_BRANCH


def _check_aligned(result: ComparisonResult, table: pd.DataFrame) -> None:
    if not isinstance(result, ComparisonResult):
        raise ParameterError("result", "a ComparisonResult", type(result).__name__)
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    for c in REQUIRED_COLUMNS:
        if c not in table.columns:
            raise ParameterError("table", f"a column named {c}", list(table.columns)[:12])
    n_rows = {X.shape[0] for X in result.covariates.matrices.values()}
    if n_rows != {len(table)}:
        raise ParameterError(
            "table",
            "the table the comparison was fitted on (same rows, same order)",
            f"{len(table)} rows against {sorted(n_rows)}",
        )


def _predictions(result: ComparisonResult, held: np.ndarray) -> dict[str, np.ndarray]:
    return {m: fit.predict(result.covariates.matrices[m][held]) for m, fit in result.fits.items()}


def held_out_predictions(result: ComparisonResult, table: pd.DataFrame) -> pd.DataFrame:
    """Each held-out cell's prediction by every fitted model of ``result``.

    Parameters
    ----------
    result : ComparisonResult
        The fitted comparison.
    table : pandas.DataFrame
        The table ``result`` was fitted on (same rows, same order).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`PREDICTION_COLUMNS`: ``y_hat`` is the model's predicted log2
        outcome (the fit's latent mean), ``y_lower`` / ``y_upper`` the cell's interval;
        ``checkpoint`` is the ``stratum`` value ("" without that column). Rows by model
        (the comparison's order), then cell in table order.

    Examples
    --------
    With the table and result of :func:`~analysis.datasets.example_comparison`
    (:class:`~analysis.compare.nested.NestedComparison`'s example):

    >>> from analysis.datasets import example_comparison
    >>> table, result = example_comparison()
    >>> from analysis.compare.bycheckpoint import held_out_predictions
    >>> predictions = held_out_predictions(result, table)
    >>> predictions.groupby("model").size().to_dict()  # 24 held-out cells, 3 models
    {'base': 24, 'noisy': 24, 'rich': 24}
    >>> print(predictions.head(2).round(2).to_string(index=False))
     cell_key cluster checkpoint model  y_hat  y_lower  y_upper
           28       7       ck-a  base   2.52      0.0      1.0
           29       7       ck-a  base   3.20      3.0      4.0
    """
    _check_aligned(result, table)
    held = table["held_out"].to_numpy(bool)
    sub = table.loc[held]
    ck = sub[STRATUM].astype(str).to_numpy() if STRATUM in sub else np.full(len(sub), "")
    frames = [
        pd.DataFrame(
            {
                "cell_key": sub["cell_key"].to_numpy(),
                "cluster": sub["cluster"].astype(str).to_numpy(),
                "checkpoint": ck,
                "model": m,
                "y_hat": yh,
                "y_lower": sub["y_lower"].to_numpy(float),
                "y_upper": sub["y_upper"].to_numpy(float),
            }
        )
        for m, yh in _predictions(result, held).items()
    ]
    return pd.concat(frames, ignore_index=True).loc[:, list(PREDICTION_COLUMNS)]


def _metric_values(
    metric: str, yh: np.ndarray, sigma: float, lo: np.ndarray, up: np.ndarray
) -> np.ndarray:
    if metric == "interval_sq_loss":
        return interval_sq_loss(yh, lo, up)
    return interval_loglik(yh, sigma, lo, up)


def _check_inputs(
    result: ComparisonResult, table: pd.DataFrame, column: str, what: str, seed: Any, ci_level: Any
) -> tuple[int, float, np.ndarray]:
    """The checked seed and level and the held-out values of ``column`` (the groups)."""
    _check_aligned(result, table)
    if column not in table.columns:
        raise ParameterError("table", f"a column named {column} ({what})", "missing")
    seed = check_int("seed", seed, minimum=0)
    if isinstance(ci_level, bool) or not isinstance(ci_level, (int, float)) or not 0 < ci_level < 1:
        raise ParameterError("ci_level", "a number in (0, 1)", ci_level)
    return seed, float(ci_level), table[column].to_numpy()[table["held_out"].to_numpy(bool)]


def _effects_by(
    kind: type[_GroupEffects],
    result: ComparisonResult,
    table: pd.DataFrame,
    groups: np.ndarray,
    names: Sequence[Any],
    *,
    seed: int,
    ci_level: float,
    labels: Mapping[str, str] | None,
) -> Any:
    """The ``kind`` of each (pair, group, metric): the shared core of the secondary effects.

    ``groups`` holds the group of each held-out row of ``table`` (in table order) and
    ``names`` the groups in their documented order; group j of pair i is resampled by
    ``default_rng(SeedSequence(seed, spawn_key=(kind._branch, i, j)))``. The group's value
    goes in column ``kind._group``; the rows carry ``analysis = "secondary, by <group>"``.
    Inputs are checked by the callers (:func:`_check_inputs`).
    """
    column, branch, label = kind._group, kind._branch, f"secondary, by {kind._group}"
    labels = dict(labels or {})
    frame = result.frame
    pairs = list(dict.fromkeys(zip(frame["base_model"], frame["rich_model"], strict=True)))
    metrics = list(dict.fromkeys(frame["metric"]))
    status = {(r.base_model, r.rich_model): r.status for r in frame.itertuples(index=False)}

    held = table["held_out"].to_numpy(bool)
    preds = _predictions(result, held)
    lo, up = table["y_lower"].to_numpy(float)[held], table["y_upper"].to_numpy(float)[held]
    mid = 0.5 * (lo + up)
    clusters = table["cluster"].astype(str).to_numpy()[held]

    rows = []
    for i, (b, r) in enumerate(pairs):
        for j, name in enumerate(names):
            sel = groups == name
            codes, uniq = pd.factorize(clusters[sel])
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(int(branch), i, j)))
            counts = bootstrap_counts(len(uniq), result.n_boot, rng)
            for met in metrics:
                sign = 1.0 if HIGHER_IS_BETTER[met] else -1.0
                if met == "spearman_mid":
                    point, boot = {}, {}
                    for m in (b, r):
                        point[m], boot[m] = spearman_replicates(
                            preds[m][sel], mid[sel], codes, counts
                        )
                else:
                    vals = {
                        m: _metric_values(
                            met, preds[m][sel], result.fits[m].sigma, lo[sel], up[sel]
                        )
                        for m in (b, r)
                    }
                    point = {m: float(v.mean()) for m, v in vals.items()}
                    boot = {m: replicate_means(v, codes, counts) for m, v in vals.items()}
                lo_ci, hi_ci, p = percentile_ci_and_p(sign * (boot[r] - boot[b]), ci_level)
                rows.append(
                    {
                        "analysis": label,
                        "hypothesis": labels.get(f"{b}<{r}", f"{b}<{r}"),
                        "pair": f"{b}<{r}",
                        "base_model": b,
                        "rich_model": r,
                        "metric": met,
                        column: name,
                        "held_out_heads": len(uniq),
                        "held_out_cells": int(sel.sum()),
                        "base_value": point[b],
                        "rich_value": point[r],
                        "effect": sign * (point[r] - point[b]),
                        "ci_low": lo_ci,
                        "ci_high": hi_ci,
                        "p_one_sided": p,
                        "n_boot": result.n_boot,
                        "ci_level": float(ci_level),
                        "seed": seed,
                        "spawn_key": f"{int(branch)},{i},{j}",
                        "status": status.get((b, r), FIT_OK),
                        "lock_sha256": result.lock_sha256,
                    }
                )
    return kind(
        frame=pd.DataFrame(rows, columns=list(kind._columns)),
        primary_metric=result.primary_metric,
        n_boot=result.n_boot,
        ci_level=ci_level,
        seed=seed,
        lock_sha256=result.lock_sha256,
    )


def effects_by_checkpoint(
    result: ComparisonResult,
    table: pd.DataFrame,
    *,
    seed: int,
    ci_level: float = 0.95,
    labels: Mapping[str, str] | None = None,
) -> CheckpointEffects:
    """Each compared pair's held-out effect within each checkpoint, with the same fits.

    Parameters
    ----------
    result : ComparisonResult
        The overall comparison (:class:`~analysis.compare.NestedComparison`); its fits,
        pairs, metrics, B and lock hash are used as they are.
    table : pandas.DataFrame
        The table ``result`` was fitted on (same rows, same order), with a ``stratum``
        column: each value is a checkpoint.
    seed : int, keyword-only
        The design's inference seed S (see Notes).
    ci_level : float, keyword-only
        Level of the percentile CI (the design's).
    labels : mapping, optional, keyword-only
        Pair (``"M0<M1"``) -> hypothesis label (a study passes the design's ids); the
        pair itself when absent.

    Returns
    -------
    CheckpointEffects

    Raises
    ------
    ParameterError
        Named ``table`` without a ``stratum`` column or when it is not the fitted table;
        ``seed`` or ``ci_level`` out of range.

    Notes
    -----
    The values, effects, CI, one-sided p and seed rule (pair i in checkpoint j draws from
    ``numpy.random.default_rng(SeedSequence(S, spawn_key=(1, i, j)))``,
    :func:`checkpoint_seed`; B = ``result.n_boot``): docs/prereg.md, section "Effects by
    checkpoint (secondary, outside the Holm family)". A pair with a failed fit keeps
    ``status = "fit failed"``.

    Examples
    --------
    With the table and result of :func:`~analysis.datasets.example_comparison`
    (:class:`~analysis.compare.nested.NestedComparison`'s example), three held-out heads in
    each of the checkpoints ``ck-a`` and ``ck-b``:

    >>> from analysis.datasets import example_comparison
    >>> table, result = example_comparison()
    >>> from analysis.compare.bycheckpoint import effects_by_checkpoint
    >>> effects = effects_by_checkpoint(result, table, seed=0)
    >>> cols = ["pair", "checkpoint", "held_out_heads", "effect", "ci_low", "spawn_key"]
    >>> print(effects.to_frame()[cols].round(2).to_string(index=False))
          pair checkpoint  held_out_heads  effect  ci_low spawn_key
     base<rich       ck-a               3    0.25    0.03     1,0,0
     base<rich       ck-b               3    0.22    0.05     1,0,1
    base<noisy       ck-a               3    0.03    0.02     1,1,0
    base<noisy       ck-b               3   -0.11   -0.20     1,1,1
    """
    seed, ci_level, raw = _check_inputs(result, table, STRATUM, "the checkpoint", seed, ci_level)
    strata = raw.astype(str)
    return _effects_by(
        CheckpointEffects,
        result,
        table,
        strata,
        sorted(set(strata)),
        seed=seed,
        ci_level=ci_level,
        labels=labels,
    )
