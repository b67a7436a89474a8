"""Held-out cells outside the training range of a model's covariates (secondary).

A held-out cell is *extrapolated* for a model when any of its covariates, after the
transforms the model uses (logs, calibration, standardization; the columns of
:attr:`~analysis.compare.covariates.PreparedCovariates.matrices`), lies outside the
``[min, max]`` of that covariate over the training cells. The comparison flags every
held-out cell for every fitted model (:func:`flag_held_out`); with
``ComparisonSpec(extrapolation="clip")`` each held-out covariate is clipped to its
training range before prediction (:func:`clip_held_out`), which changes the predictions
of the extrapolated cells only. :func:`extrapolation_effects` reports, outside the Holm
family and without a decision, each pair's share of extrapolated held-out cells, its
effect on the in-range and on the extrapolated cells apart (their cell-weighted average is
the overall effect) and a robust estimate, the trimmed mean of the per-unit effects; all
with percentile CIs read from the comparison's own bootstrap resamples (unadjusted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import trim_mean

from analysis.compare.bootstrap import _Draws, percentile_ci_and_p, replicate_means
from analysis.compare.covariates import PreparedCovariates
from analysis.compare.metrics import HIGHER_IS_BETTER
from analysis.validation import ParameterError

__all__ = [
    "CELL_COLUMNS",
    "EXTRAPOLATIONS",
    "EXTRAPOLATION_COLUMNS",
    "EXTRAPOLATION_LABEL",
    "TRIM",
    "Extrapolation",
    "HeldOutScores",
    "check_ranges",
    "clip_held_out",
    "extrapolation_effects",
    "flag_held_out",
    "held_out_scores",
    "trimmed_mean_replicates",
]

#: ``ComparisonSpec.extrapolation`` (the design's ``[inference] extrapolation``):
#: ``"none"`` predicts held-out cells from their covariates as they are; ``"clip"`` clips
#: each held-out covariate to its training range first.
EXTRAPOLATIONS: tuple[str, ...] = ("none", "clip")
#: Share of the per-unit effects cut from each end by the robust estimate (10% each side,
#: as ``scipy.stats.trim_mean(d, TRIM)``).
TRIM = 0.1
#: The ``analysis`` column of every row of :meth:`Extrapolation.to_frame`.
EXTRAPOLATION_LABEL = "secondary, unadjusted"
#: The ``estimate`` values of :meth:`Extrapolation.to_frame`, in row order per pair and
#: metric.
ESTIMATES: tuple[str, ...] = ("in range", "extrapolated", "trimmed mean")
#: Columns of :attr:`Extrapolation.cells`: one row per (held-out cell, fitted model);
#: ``covariates`` names the out-of-range covariates, ``;``-separated.
CELL_COLUMNS: tuple[str, ...] = (
    "cell_key",
    "cluster",
    "model",
    "extrapolated",
    "n_out",
    "covariates",
)
#: Columns of :meth:`Extrapolation.to_frame`, in order.
EXTRAPOLATION_COLUMNS: tuple[str, ...] = (
    "analysis",
    "pair",
    "base_model",
    "rich_model",
    "metric",
    "estimate",
    "n_cells",
    "share_cells",
    "n_units",
    "effect",
    "ci_low",
    "ci_high",
    "ci_level",
    "n_boot",
    "trim",
    "extrapolation",
    "lock_sha256",
)


def _ranges(prep: PreparedCovariates, model: str, train: np.ndarray):
    X = prep.matrices[model]
    if not X.shape[1]:
        return X, np.zeros(0), np.zeros(0)
    return X, X[train].min(axis=0), X[train].max(axis=0)


def flag_held_out(prep: PreparedCovariates, held: np.ndarray) -> dict[str, np.ndarray]:
    """Which covariates of each held-out cell lie outside their training range, per model.

    Parameters
    ----------
    prep : PreparedCovariates
        The comparison's covariates (before any clipping).
    held : array of bool (n,)
        Held-out rows; the others are training rows.

    Returns
    -------
    dict
        Model -> bool array ``(n_held, k)``: column j of row i is True when held-out cell
        i's covariate ``prep.columns[model][j]`` is below its training minimum or above
        its training maximum.

    Examples
    --------
    >>> from analysis.compare.extrapolation import flag_held_out
    >>> from analysis.datasets import example_range_covariates
    >>> prep, held = example_range_covariates()  # a__x: 1, 2, 3 trained; 2, 9 held out
    >>> flag_held_out(prep, held)["M"].tolist()
    [[False], [True]]
    """
    held = np.asarray(held, dtype=bool)
    out = {}
    for m in prep.matrices:
        X, lo, hi = _ranges(prep, m, ~held)
        out[m] = (X[held] < lo) | (X[held] > hi)
    return out


def clip_held_out(prep: PreparedCovariates, held: np.ndarray) -> PreparedCovariates:
    """``prep`` with each held-out covariate clipped to its training range.

    Training rows are untouched, so the fits are the same; a held-out cell whose
    covariates all lie within their training ranges keeps its row, and so its prediction.

    Parameters
    ----------
    prep : PreparedCovariates
    held : array of bool (n,)
        Held-out rows.

    Returns
    -------
    PreparedCovariates
        A copy whose ``matrices`` are clipped on the held-out rows.

    Examples
    --------
    >>> from analysis.compare.extrapolation import clip_held_out
    >>> from analysis.datasets import example_range_covariates
    >>> prep, held = example_range_covariates()  # a__x: 1, 2, 3 trained; 2, 9 held out
    >>> clipped = clip_held_out(prep, held).matrices["M"][:, 0]
    >>> bool(clipped[4] == clipped[2]), bool(clipped[3] == prep.matrices["M"][3, 0])
    (True, True)
    """
    held = np.asarray(held, dtype=bool)
    matrices = {}
    for m in prep.matrices:
        X, lo, hi = _ranges(prep, m, ~held)
        X = X.copy()
        X[held] = np.clip(X[held], lo, hi)
        matrices[m] = X
    return replace(prep, matrices=matrices)


@dataclass(frozen=True)
class HeldOutScores:
    """What :func:`extrapolation_effects` reads of a fitted comparison.

    Attributes
    ----------
    cell_keys, clusters : numpy.ndarray
        The held-out cells' keys and heads, in table order.
    out_of_range : mapping
        Model -> bool ``(n_held, k)`` (:func:`flag_held_out`).
    columns : mapping
        Model -> its covariate columns (``PreparedCovariates.columns``).
    values : mapping
        ``(model, metric)`` -> the mean metric's value in each held-out cell.
    codes : numpy.ndarray
        Each held-out cell's resampling-unit code.
    counts : numpy.ndarray
        ``[B, units]`` counts of the comparison's bootstrap resamples.

    Examples
    --------
    Kept by :class:`~analysis.compare.nested.ComparisonResult` (``held_out``) and read by
    its ``extrapolation()``:

    >>> import numpy as np
    >>> from analysis.compare.extrapolation import HeldOutScores
    >>> s = HeldOutScores(np.array(["c1"]), np.array(["h1"]), {}, {}, {}, np.zeros(1, int),
    ...                   np.ones((99, 1), int))
    >>> s.counts.shape
    (99, 1)
    """

    cell_keys: np.ndarray = field(repr=False)
    clusters: np.ndarray = field(repr=False)
    out_of_range: Mapping[str, np.ndarray] = field(repr=False)
    columns: Mapping[str, Sequence[str]] = field(repr=False)
    values: Mapping[tuple[str, str], np.ndarray] = field(repr=False)
    codes: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)

    def extrapolated(self, model: str) -> np.ndarray:
        """Bool per held-out cell: any covariate of ``model`` out of its training range."""
        return self.out_of_range[model].any(axis=1)

    def cells(self) -> pd.DataFrame:
        """One row per (held-out cell, model), columns :data:`CELL_COLUMNS`."""
        parts = []
        for m, out in self.out_of_range.items():
            cols = np.asarray(self.columns[m], dtype=object)
            parts.append(
                pd.DataFrame(
                    {
                        "cell_key": self.cell_keys,
                        "cluster": self.clusters,
                        "model": m,
                        "extrapolated": out.any(axis=1),
                        "n_out": out.sum(axis=1).astype(int),
                        "covariates": [";".join(cols[row]) for row in out],
                    }
                )
            )
        if not parts:
            return pd.DataFrame(columns=list(CELL_COLUMNS))
        return pd.concat(parts, ignore_index=True).loc[:, list(CELL_COLUMNS)]


def check_ranges(
    prep: PreparedCovariates, held: np.ndarray, mode: str
) -> tuple[PreparedCovariates, dict[str, np.ndarray]]:
    """The held-out cells' out-of-range flags, and ``prep`` clipped when ``mode`` says so.

    Parameters
    ----------
    prep : PreparedCovariates
    held : array of bool (n,)
        Held-out rows.
    mode : {"none", "clip"}
        :data:`EXTRAPOLATIONS`.

    Returns
    -------
    (PreparedCovariates, dict)
        :func:`clip_held_out` of ``prep`` for ``"clip"``, else ``prep`` itself; and
        :func:`flag_held_out` of ``prep`` as it was (before clipping).

    Examples
    --------
    >>> from analysis.compare.extrapolation import check_ranges
    >>> from analysis.datasets import example_range_covariates
    >>> prep, held = example_range_covariates()  # a__x: 1, 2, 3 trained; 2, 9 held out
    >>> same, flags = check_ranges(prep, held, "none")
    >>> same is prep, flags["M"][:, 0].tolist()
    (True, [False, True])
    """
    if mode not in EXTRAPOLATIONS:
        raise ParameterError("extrapolation", " or ".join(EXTRAPOLATIONS), mode)
    flags = flag_held_out(prep, held)
    return (clip_held_out(prep, held) if mode == "clip" else prep), flags


def held_out_scores(
    table: pd.DataFrame,
    held: np.ndarray,
    out_of_range: Mapping[str, np.ndarray],
    prep: PreparedCovariates,
    values: Mapping[tuple[str, str], np.ndarray],
    draws: _Draws,
) -> HeldOutScores:
    """Gather what :func:`extrapolation_effects` needs of a comparison's fit.

    Parameters
    ----------
    table : pandas.DataFrame
        The comparison's table (``cell_key``, ``cluster``).
    held : array of bool (n,)
        Held-out rows.
    out_of_range : mapping
        :func:`flag_held_out`'s flags.
    prep : PreparedCovariates
        The covariates (their ``columns``).
    values : mapping
        ``(model, metric)`` -> per held-out cell values of the mean metrics.
    draws : _Draws
        The comparison's bootstrap resamples (unit codes and counts).

    Returns
    -------
    HeldOutScores

    Examples
    --------
    Called by :meth:`~analysis.compare.nested.NestedComparison.fit`; see
    :func:`extrapolation_effects`.
    """
    return HeldOutScores(
        cell_keys=table["cell_key"].to_numpy()[held],
        clusters=table["cluster"].to_numpy()[held],
        out_of_range=dict(out_of_range),
        columns=dict(prep.columns),
        values=dict(values),
        codes=draws.codes,
        counts=draws.counts,
    )


def trimmed_mean_replicates(
    values: np.ndarray, counts: np.ndarray, trim: float = TRIM
) -> np.ndarray:
    """The trimmed mean of each bootstrap resample of ``values``.

    Parameters
    ----------
    values : array (k,)
        One value per resampling unit.
    counts : array (B, k) of int
        How often each unit is drawn in each replicate.
    trim : float, default :data:`TRIM`
        Share cut from each end, in [0, 0.5).

    Returns
    -------
    numpy.ndarray (B,)
        Replicate b is ``scipy.stats.trim_mean(numpy.repeat(values, counts[b]), trim)``.

    Notes
    -----
    With the values sorted, N = ``counts[b].sum()`` and ``g = floor(trim * N)``, the
    expanded sample's positions ``g .. N - g - 1`` are kept: sorted value j covers
    positions ``[C_j - c_j, C_j)`` (C the cumulative counts) and enters with the length
    of that range's overlap with ``[g, N - g)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import trim_mean
    >>> from analysis.compare.extrapolation import trimmed_mean_replicates
    >>> values = np.array([5.0, -1.0, 0.5, 100.0, 2.0])
    >>> counts = np.array([[1, 1, 1, 1, 1], [0, 3, 0, 2, 0]])
    >>> trimmed_mean_replicates(values, counts, 0.2).tolist()
    [2.5, 32.666666666666664]
    >>> float(trim_mean(np.repeat(values, counts[1]), 0.2))
    32.666666666666664
    """
    values = np.asarray(values, float)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != values.size:
        raise ParameterError("counts", f"a (B, {values.size}) array", counts.shape)
    if not 0 <= trim < 0.5:
        raise ParameterError("trim", "a share in [0, 0.5)", trim)
    order = np.argsort(values, kind="stable")
    v, c = values[order], counts[:, order]
    n = c.sum(axis=1, keepdims=True)
    g = np.floor(trim * n)
    end = np.cumsum(c, axis=1)
    start = end - c
    weight = np.clip(np.minimum(end, n - g) - np.maximum(start, g), 0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weight @ v) / (n[:, 0] - 2 * g[:, 0])


def _ci(point: float, reps: np.ndarray, ci_level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if not np.isfinite(point) or not reps.size:
        return np.nan, np.nan
    lo, hi, _ = percentile_ci_and_p(reps, ci_level)
    return lo, hi


def _subset_effect(b, r, codes, counts, sub, sign, ci_level):
    """Point effect, CI and unit count of a pair on the held-out cells ``sub``."""
    if not sub.any():
        return np.nan, np.nan, np.nan, 0
    eff = float(sign * (r[sub].mean() - b[sub].mean()))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sign * (
            replicate_means(r[sub], codes[sub], counts)
            - replicate_means(b[sub], codes[sub], counts)
        )
    lo, hi = _ci(eff, reps, ci_level)
    return eff, lo, hi, len(np.unique(codes[sub]))


@dataclass(frozen=True)
class Extrapolation:
    """Extrapolated held-out cells and the effects apart (:func:`extrapolation_effects`).

    Attributes
    ----------
    frame : pandas.DataFrame
        Columns :data:`EXTRAPOLATION_COLUMNS`: per pair and mean metric, the rows
        ``estimate = "in range"``, ``"extrapolated"`` and ``"trimmed mean"``; use
        :meth:`to_frame` for a copy.
    cells : pandas.DataFrame
        Columns :data:`CELL_COLUMNS`, one row per (held-out cell, fitted model).
    primary_metric : str
    mode : str
        The comparison's ``extrapolation`` (:data:`EXTRAPOLATIONS`).

    Examples
    --------
    Made by ``ComparisonResult.extrapolation()``; see :func:`extrapolation_effects`.
    """

    frame: pd.DataFrame = field(repr=False)
    cells: pd.DataFrame = field(repr=False)
    primary_metric: str
    mode: str

    def to_frame(self) -> pd.DataFrame:
        """Tidy copy with the columns of :data:`EXTRAPOLATION_COLUMNS`."""
        return self.frame.loc[:, list(EXTRAPOLATION_COLUMNS)].copy()

    def summary(self) -> str:
        """Plain text: per pair, the share of extrapolated held-out cells and the three
        estimates of the primary metric."""
        lines = [
            "Extrapolation (secondary, unadjusted): held-out cells with a covariate outside "
            f"its training range; held-out covariates {'clipped' if self.mode == 'clip' else 'as they are'}"
        ]
        f = self.frame[self.frame["metric"] == self.primary_metric]
        for pair, rows in f.groupby("pair", sort=False):
            ext = rows[rows["estimate"] == "extrapolated"].iloc[0]
            parts = [
                f"{r.estimate} {r.effect:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}]"
                for r in rows.itertuples()
            ]
            lines.append(
                f"  {pair:<16} extrapolated {ext.share_cells:.1%} of cells; " + "; ".join(parts)
            )
        return "\n".join(lines)


def extrapolation_effects(scores: HeldOutScores, spec: Any) -> Extrapolation:
    """Each pair's extrapolated share and its effect apart on in-range and extrapolated
    cells, and the trimmed mean of its per-unit effects, all unadjusted.

    Parameters
    ----------
    scores : HeldOutScores
        What the comparison kept (``ComparisonResult.held_out``).
    spec : ComparisonSpec
        Its settings: pairs, metrics, ``ci_level``, ``n_boot``, ``extrapolation``
        (:class:`~analysis.compare.spec.ComparisonSpec`, which imports this module).

    Returns
    -------
    Extrapolation

    Raises
    ------
    ParameterError
        Named ``scores`` when it is None (a result not made by ``NestedComparison.fit``).

    Notes
    -----
    A held-out cell is extrapolated for a pair when it is for the base or the rich model.
    For each mean metric (``interval_sq_loss``, ``interval_loglik``; Spearman is no mean
    over cells) with sign s (+1 when higher is better, else -1) and per-cell values
    ``b_i``, ``r_i``:

    - ``in range`` / ``extrapolated``: ``s * (mean r_i - mean b_i)`` over those cells,
      with ``n_cells`` and ``share_cells`` (of all held-out cells). With ``n_in`` and
      ``n_ext`` cells, ``(n_in * effect_in + n_ext * effect_ext) / n`` is the overall
      effect.
    - ``trimmed mean``: the per-unit effects ``d_u = s * mean_{i in u} (r_i - b_i)`` over
      resampling units (heads by default), then ``scipy.stats.trim_mean(d, TRIM)`` (10%
      cut from each end; every unit counts once, whatever its number of cells).

    CIs: percentiles of the same statistic over the comparison's own bootstrap resamples
    (:func:`trimmed_mean_replicates` for the trimmed mean; a replicate that draws no unit
    with cells in a subset is left out of that subset's CI). No p-value, no Holm
    adjustment, no decision.

    Examples
    --------
    One held-out head lies beyond the training range of ``rich__z``:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> heads = np.repeat(np.arange(10), 4)
    >>> table = pd.DataFrame({
    ...     "cell_key": range(40), "cluster": heads, "held_out": heads >= 6,
    ...     "base__x": np.arange(40.0) % 7, "rich__z": np.arange(40.0) % 5 + 9 * (heads == 9),
    ... })
    >>> table["y_lower"] = table["base__x"] + table["rich__z"]
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> spec = ComparisonSpec(
    ...     models={"base": ["base"], "rich": ["base", "rich"]}, family=[("base", "rich")],
    ...     estimator="ols", n_boot=99, random_state=0, metrics=["interval_sq_loss"],
    ... )
    >>> ext = NestedComparison(spec).fit(table).extrapolation()
    >>> ext.cells.groupby("model")["extrapolated"].sum().to_dict()
    {'base': 0, 'rich': 4}
    >>> ext.to_frame()[["estimate", "n_cells", "share_cells", "n_units"]].to_dict("list")
    {'estimate': ['in range', 'extrapolated', 'trimmed mean'], 'n_cells': [12, 4, 16],
     'share_cells': [0.75, 0.25, 1.0], 'n_units': [3, 1, 4]}
    """
    if not isinstance(scores, HeldOutScores):
        raise ParameterError("scores", "the HeldOutScores of a fitted comparison", scores)
    rows = []
    n = len(scores.cell_keys)
    codes, counts = scores.codes, scores.counts
    k = counts.shape[1]
    sizes = np.bincount(codes, minlength=k)
    for met in spec.metrics:
        if (spec.pairs[0][0], met) not in scores.values:
            continue  # Spearman: not a mean over cells
        sign = 1.0 if HIGHER_IS_BETTER[met] else -1.0
        for b, r in spec.pairs:
            vb, vr = scores.values[(b, met)], scores.values[(r, met)]
            ext = scores.extrapolated(b) | scores.extrapolated(r)
            base = {
                "analysis": EXTRAPOLATION_LABEL,
                "pair": f"{b}<{r}",
                "base_model": b,
                "rich_model": r,
                "metric": met,
                "ci_level": spec.ci_level,
                "n_boot": spec.n_boot,
                "extrapolation": spec.extrapolation,
                "lock_sha256": spec.lock_sha256,
            }
            for name, sub in (("in range", ~ext), ("extrapolated", ext)):
                eff, lo, hi, units = _subset_effect(vb, vr, codes, counts, sub, sign, spec.ci_level)
                rows.append(
                    {
                        **base,
                        "estimate": name,
                        "n_cells": int(sub.sum()),
                        "share_cells": float(sub.sum() / n) if n else np.nan,
                        "n_units": units,
                        "effect": eff,
                        "ci_low": lo,
                        "ci_high": hi,
                        "trim": np.nan,
                    }
                )
            d_u = sign * np.bincount(codes, weights=vr - vb, minlength=k) / sizes
            reps = trimmed_mean_replicates(d_u, counts, TRIM)
            point = float(trim_mean(d_u, TRIM))
            lo, hi = _ci(point, reps, spec.ci_level)
            rows.append(
                {
                    **base,
                    "estimate": "trimmed mean",
                    "n_cells": n,
                    "share_cells": 1.0,
                    "n_units": k,
                    "effect": point,
                    "ci_low": lo,
                    "ci_high": hi,
                    "trim": TRIM,
                }
            )
    return Extrapolation(
        frame=pd.DataFrame(rows, columns=list(EXTRAPOLATION_COLUMNS)),
        cells=scores.cells(),
        primary_metric=spec.primary_metric,
        mode=spec.extrapolation,
    )
