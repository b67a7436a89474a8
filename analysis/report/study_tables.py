"""Study tables: pure functions ``StudyResults -> DataFrame``, one per report section.

Every table function returns a new frame (or None when its source has not run) and
never mutates the :class:`~analysis.report.results.StudyResults` it reads. The only
numbers computed here are descriptive summaries of the stored tables (counts, shares,
medians, quartiles); every effect, interval and p-value is copied from the comparison
results. :func:`build_tables` collects them, in report order, as
:class:`~analysis.report.tables.Table` records for the writers of
:mod:`analysis.report.tables`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.compare.nested import RESULT_COLUMNS
from analysis.report.design import ReportDesign
from analysis.report.results import StudyResults
from analysis.report.tables import (
    Table,
    check_results,
    hypotheses,
    real_cells,
    summary_columns,
    synthetic_cells,
)
from analysis.validation import ParameterError

__all__ = [
    "BY_CHECKPOINT_TABLE_COLUMNS",
    "BY_LENGTH_TABLE_COLUMNS",
    "HEAD_LEVEL_SIDES",
    "bracket_table",
    "bracket_temperature_table",
    "build_tables",
    "by_checkpoint_table",
    "by_length_table",
    "comparison_table",
    "data_table",
    "descriptor_table",
    "head_level_table",
    "lr_table",
    "power_table",
    "synthetic_table",
]


def _ratio(df: pd.DataFrame) -> pd.Series:
    lo = df["lo"].astype(float)
    return df["hi"].astype(float) / lo.where(lo > 0)


def _bracket_summary(df: pd.DataFrame, by: list[str], *, heads: bool = True) -> pd.DataFrame:
    df = df.assign(_ratio=_ratio(df), _closed=df["closed"].astype(bool))
    agg: dict[str, tuple[str, str]] = {"cells": ("cell_key", "size")}
    if heads:
        agg["heads"] = ("head_id", "nunique")
        agg["held_out_cells"] = ("held_out", "sum")
    agg.update(
        closed_share=("_closed", "mean"),
        median_lo=("lo", "median"),
        median_hi=("hi", "median"),
        median_hi_over_lo=("_ratio", "median"),
    )
    out = df.groupby(by, sort=True, dropna=False).agg(**agg).reset_index()
    for c in ("cells", "heads", "held_out_cells"):
        if c in out:
            out[c] = out[c].astype(int)
    return out


def bracket_table(results: StudyResults) -> pd.DataFrame:
    """Real cells by checkpoint and eps: counts, closed share, median lo, hi and hi/lo.

    Notes
    -----
    ``median_hi_over_lo`` is the median over cells of ``hi / lo`` (cells with
    ``lo = 0`` are left out of it). ``held_out_cells`` counts cells of held-out heads.

    Examples
    --------
    In the toy study of :mod:`analysis.report.examples` each eps has one closed cell of two;
    at eps 0.1 the brackets are [2, 4] and [3, 3] (medians 2.5 and 3.5, hi/lo 2 and 1):

    >>> from analysis.report.examples import example_table_results
    >>> t = bracket_table(example_table_results())
    >>> t[["eps", "cells", "held_out_cells", "closed_share", "median_lo", "median_hi"]]
       eps  cells  held_out_cells  closed_share  median_lo  median_hi
    0  0.1      2               1           0.5        2.5        3.5
    1  0.2      2               1           0.5        1.5        2.0
    >>> t["median_hi_over_lo"].tolist()
    [1.5, 1.5]
    """
    cols = ["checkpoint", "family", "eps"]
    return _bracket_summary(real_cells(results), cols)


def bracket_temperature_table(results: StudyResults) -> pd.DataFrame:
    """Real cells by checkpoint, temperature and eps (as :func:`bracket_table`).

    Examples
    --------
    The toy study has one temperature, so the rows are those of :func:`bracket_table`:

    >>> from analysis.report.examples import example_table_results
    >>> t = bracket_temperature_table(example_table_results())
    >>> t[["temperature", "eps", "cells", "median_hi"]]
       temperature  eps  cells  median_hi
    0          1.0  0.1      2        3.5
    1          1.0  0.2      2        2.0
    """
    return _bracket_summary(real_cells(results), ["checkpoint", "family", "temperature", "eps"])


def synthetic_table(results: StudyResults) -> pd.DataFrame | None:
    """Synthetic (exploratory) cells by family, d, n, beta, temperature and eps.

    ``cells`` counts the seeds pooled in a row. None when the study has no synthetic
    cell.

    Examples
    --------
    The toy study's three synthetic seeds, [2, 3], [4, 5] and [9, 10], pool into one row
    (median hi/lo = 5/4; a mean would give 5 for ``median_lo``):

    >>> from analysis.report.examples import example_table_results
    >>> t = synthetic_table(example_table_results())
    >>> t[["synthetic_family", "n", "cells", "median_lo", "median_hi", "median_hi_over_lo"]]
      synthetic_family  n  cells  median_lo  median_hi  median_hi_over_lo
    0             ball  8      3        4.0        5.0               1.25
    """
    syn = synthetic_cells(results)
    if syn.empty:
        return None
    syn = syn.rename(columns={"checkpoint": "synthetic_family", "length": "n"})
    by = ["synthetic_family", "d", "n", "beta", "temperature", "eps"]
    out = _bracket_summary(syn, by, heads=False)
    out["n"] = out["n"].astype(int)
    return out


def data_table(results: StudyResults) -> pd.DataFrame:
    """What the study holds: checkpoints, heads, cells, held-out parts, exclusions.

    Returns
    -------
    pandas.DataFrame
        Columns ``item`` and ``count`` (integers). ``held_out_heads_designed`` is the
        length of the design's held-out list; ``held_out_heads`` those present here.

    Examples
    --------
    >>> from analysis.report.examples import example_table_results
    >>> t = data_table(example_table_results())
    >>> dict(zip(t["item"], t["count"].tolist()))  # doctest: +NORMALIZE_WHITESPACE
    {'checkpoints': 1, 'heads': 2, 'training_heads': 1, 'held_out_heads': 1,
     'held_out_heads_designed': 1, 'matrices': 2, 'real_cells': 4, 'held_out_cells': 2,
     'closed_real_cells': 2, 'synthetic_cells': 3}
    """
    real = real_cells(results)
    syn = synthetic_cells(results)
    held = real.loc[real["held_out"].astype(bool)]
    designed = results.design.held_out
    rows = [
        ("checkpoints", real["checkpoint"].nunique()),
        ("heads", real["head_id"].nunique()),
        ("training_heads", real.loc[~real["held_out"].astype(bool), "head_id"].nunique()),
        ("held_out_heads", held["head_id"].nunique()),
        ("held_out_heads_designed", len(designed)),
        ("matrices", real["matrix_key"].nunique()),
        ("real_cells", len(real)),
        ("held_out_cells", len(held)),
        ("closed_real_cells", int(real["closed"].astype(bool).sum())),
        ("synthetic_cells", len(syn)),
    ]
    for rule, n in sorted(results.excluded.items()):
        rows.append((f"excluded_{rule}", n))
    out = pd.DataFrame(rows, columns=["item", "count"])
    out["count"] = out["count"].astype(int)
    return out


def power_table(results: StudyResults) -> pd.DataFrame | None:
    """The simulated error rates of each hypothesis's decision (None when not simulated).

    One row per simulated hypothesis: ``hypothesis``, ``pair``, ``signal`` (the block
    carrying the simulated signal), ``size_simple`` and ``size_boundary`` with their
    Clopper-Pearson 95% intervals, ``boundary_share``, ``effect`` (the assumed share),
    ``power`` with its interval, ``mde`` and the search bracket ``mde_low``,
    ``mde_high``.

    Examples
    --------
    One simulated hypothesis without a boundary null (its columns are NaN):

    >>> from dataclasses import replace
    >>> from analysis.report.examples import example_table_results
    >>> rate = lambda x: {"rate": x, "ci_low": x / 2, "ci_high": min(1.0, 2 * x)}
    >>> sim = {"hypothesis": "H1", "pair": "M0<M1", "signal": "native", "boundary_share": 0.0,
    ...        "size_simple": rate(0.04), "power": {**rate(0.8), "share": 0.1},
    ...        "mde": 0.1, "mde_low": 0.09, "mde_high": 0.11}
    >>> t = power_table(replace(example_table_results(), power={"hypotheses": [sim]}))
    >>> t[["hypothesis", "size_simple", "size_boundary", "effect", "power", "mde"]]
      hypothesis  size_simple  size_boundary  effect  power  mde
    0         H1         0.04            NaN     0.1    0.8  0.1
    >>> power_table(example_table_results()) is None
    True
    """
    hyps = (results.power or {}).get("hypotheses")
    if not hyps:
        return None
    rows = []
    for h in hyps:
        sb = h.get("size_boundary") or {}
        ss, pw = h["size_simple"], h["power"]
        rows.append(
            {
                "hypothesis": h["hypothesis"],
                "pair": h["pair"],
                "signal": h["signal"],
                "size_simple": ss["rate"],
                "size_simple_ci_low": ss["ci_low"],
                "size_simple_ci_high": ss["ci_high"],
                "boundary_share": h["boundary_share"],
                "size_boundary": sb.get("rate", np.nan),
                "size_boundary_ci_low": sb.get("ci_low", np.nan),
                "size_boundary_ci_high": sb.get("ci_high", np.nan),
                "effect": pw["share"],
                "power": pw["rate"],
                "power_ci_low": pw["ci_low"],
                "power_ci_high": pw["ci_high"],
                "mde": h["mde"],
                "mde_low": h["mde_low"],
                "mde_high": h["mde_high"],
            }
        )
    return pd.DataFrame(rows)


def _metric_order(design: ReportDesign, metrics: Sequence[str]) -> list[str]:
    first = list(design.metrics)
    return [x for x in first if x in set(metrics)] + sorted(set(metrics) - set(first))


def comparison_table(results: StudyResults, *, estimator: str = "interval") -> pd.DataFrame | None:
    """The nested comparisons, one row per (pair, metric), with the design's labels.

    Parameters
    ----------
    results : StudyResults
    estimator : {"interval", "ols"}, keyword-only
        ``interval`` reads ``results.comparison`` (the confirmatory fits), ``ols`` the
        OLS-on-midpoints sensitivity refit ``results.comparison_ols``.

    Returns
    -------
    pandas.DataFrame or None
        ``hypothesis``, ``kind`` (from the design; empty for pairs without one),
        ``holm_family`` (the pair is in the design's Holm family), then the comparison's
        own columns ``pair`` ... ``n_heads`` and the fit diagnostics ``base_converged``
        ... ``status`` unchanged (``lock_sha256`` and the ``calibration`` columns go to
        the provenance block), then, when the comparison has them, the equivalence
        columns ``metric_role`` ... ``equivalence``
        (``analysis.compare.equivalence.EQUIVALENCE_COLUMNS``: empty without a SESOI,
        ``equivalence`` says whether the SESOI was pre-specified or exploratory). Rows
        ordered by metric (primary first) then hypothesis order. None when that
        comparison has not run.

    Examples
    --------
    Rows follow the design: the primary metric ``loss`` first, then hypothesis order; a pair
    without a hypothesis gets an empty ``hypothesis``:

    >>> from dataclasses import replace
    >>> from analysis.report.examples import example_table_results
    >>> comp = pd.DataFrame({"pair": ["M0<M2", "M0<M1", "M0<M1"], "metric": ["loss", "r2", "loss"],
    ...                      "effect": [0.0, 0.2, 0.3], "p_holm": [None, 0.02, 0.01],
    ...                      "lock_sha256": "ab"})
    >>> t = comparison_table(replace(example_table_results(), comparison=comp))
    >>> t
      hypothesis          kind  holm_family   pair metric  effect  p_holm
    0         H1  confirmatory         True  M0<M1   loss     0.3    0.01
    1                                 False  M0<M2   loss     0.0     NaN
    2         H1  confirmatory         True  M0<M1     r2     0.2    0.02
    >>> comparison_table(example_table_results(), estimator="ols") is None
    True
    """
    if estimator not in ("interval", "ols"):
        raise ParameterError("estimator", "one of interval, ols", estimator)
    frame = results.comparison if estimator == "interval" else results.comparison_ols
    if frame is None:
        return None
    hyp = {h["pair"]: h for h in hypotheses(results.design)}
    family = results.design.family_pairs
    f = frame.copy()
    out = pd.DataFrame(
        {
            "hypothesis": f["pair"].map(lambda p: hyp.get(p, {}).get("id", "")),
            "kind": f["pair"].map(lambda p: hyp.get(p, {}).get("kind", "")),
            "holm_family": f["pair"].isin(family) if family else f["p_holm"].notna(),
        }
    )
    # the hash and the calibration (one value per run) are in the provenance block
    keep = [c for c in RESULT_COLUMNS if c != "lock_sha256" and not c.startswith("calibration")]
    out = pd.concat([out, f[[c for c in keep if c in f.columns]]], axis=1)
    order = {p: i for i, p in enumerate(hyp)}
    metrics = _metric_order(results.design, list(dict.fromkeys(out["metric"])))
    out["_m"] = out["metric"].map({m: i for i, m in enumerate(metrics)})
    out["_h"] = out["pair"].map(lambda p: order.get(p, len(order)))
    out = out.sort_values(["_m", "_h", "pair"], kind="stable").drop(columns=["_m", "_h"])
    for c in ("adds_information", "base_converged", "rich_converged"):
        if c in out:
            out[c] = out[c].astype(bool)
    return out.reset_index(drop=True)


#: Columns of :func:`by_checkpoint_table`, in order.
BY_CHECKPOINT_TABLE_COLUMNS: tuple[str, ...] = (
    "hypothesis",
    "kind",
    "pair",
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
    "status",
)


def by_checkpoint_table(results: StudyResults) -> pd.DataFrame | None:
    """The secondary by-checkpoint effects, or None when the design does not ask for them.

    Returns
    -------
    pandas.DataFrame or None
        Columns :data:`BY_CHECKPOINT_TABLE_COLUMNS`, copied from
        ``results.by_checkpoint`` (``kind`` from the design), ordered by metric (primary
        first), hypothesis order, then checkpoint. None unless the design sets
        ``[inference] by_checkpoint = true`` and the effects are stored.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from analysis.report.design import ReportDesign, ReportHypothesis as H
    >>> from analysis.report.examples import example_table_results
    >>> design = ReportDesign(hypotheses=(H("H1", "confirmatory", "M0", "M1"),), by_checkpoint=True)
    >>> cols = [c for c in BY_CHECKPOINT_TABLE_COLUMNS if c != "kind"]
    >>> bc = pd.DataFrame([["H1", "M0<M1", "loss", ck, 1, 2, 1.0, 0.9, 0.1, 0.0, 0.2, 0.04, "ok"]
    ...                    for ck in ("ck-b", "ck-a")], columns=cols)
    >>> t = by_checkpoint_table(replace(example_table_results(), design=design, by_checkpoint=bc))
    >>> t[["hypothesis", "kind", "checkpoint", "effect"]]
      hypothesis          kind checkpoint  effect
    0         H1  confirmatory       ck-a     0.1
    1         H1  confirmatory       ck-b     0.1
    >>> by_checkpoint_table(replace(example_table_results(), by_checkpoint=bc)) is None  # not asked
    True
    """
    bc = results.by_checkpoint
    if not results.by_checkpoint_asked or bc is None:
        return None
    hyp = {h["pair"]: h for h in hypotheses(results.design)}
    out = bc.assign(kind=bc["pair"].map(lambda p: hyp.get(p, {}).get("kind", "")))
    out = out.loc[:, list(BY_CHECKPOINT_TABLE_COLUMNS)]
    order = {p: i for i, p in enumerate(hyp)}
    metrics = _metric_order(results.design, list(dict.fromkeys(out["metric"])))
    out["_m"] = out["metric"].map({m: i for i, m in enumerate(metrics)})
    out["_h"] = out["pair"].map(lambda p: order.get(p, len(order)))
    keys = ["_m", "_h", "pair", "checkpoint"]
    out = out.sort_values(keys, kind="stable").drop(columns=["_m", "_h"])
    return out.reset_index(drop=True)


#: Columns of :func:`by_length_table`, in order.
BY_LENGTH_TABLE_COLUMNS: tuple[str, ...] = tuple(
    "length" if c == "checkpoint" else c for c in BY_CHECKPOINT_TABLE_COLUMNS
)


def by_length_table(results: StudyResults) -> pd.DataFrame | None:
    """The secondary effects by input length, or None when the design does not ask for them.

    Returns
    -------
    pandas.DataFrame or None
        Columns :data:`BY_LENGTH_TABLE_COLUMNS`, copied from ``results.by_length``
        (``kind`` from the design), ordered by metric (primary first), hypothesis order,
        then length (increasing). None unless the design sets ``[inference] by_length =
        true`` and the effects are stored.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from analysis.report.design import ReportDesign, ReportHypothesis as H
    >>> from analysis.report.examples import example_table_results
    >>> design = ReportDesign(hypotheses=(H("H1", "confirmatory", "M0", "M1"),), by_length=True)
    >>> cols = [c for c in BY_LENGTH_TABLE_COLUMNS if c != "kind"]
    >>> bl = pd.DataFrame([["H1", "M0<M1", "loss", n, 1, 2, 1.0, 0.9, 0.1, 0.0, 0.2, 0.04, "ok"]
    ...                    for n in (257, 65)], columns=cols)
    >>> t = by_length_table(replace(example_table_results(), design=design, by_length=bl))
    >>> t[["hypothesis", "kind", "length", "effect"]]
      hypothesis          kind  length  effect
    0         H1  confirmatory      65     0.1
    1         H1  confirmatory     257     0.1
    >>> by_length_table(replace(example_table_results(), by_length=bl)) is None  # not asked
    True
    """
    bl = results.by_length
    if not results.by_length_asked or bl is None:
        return None
    hyp = {h["pair"]: h for h in hypotheses(results.design)}
    out = bl.assign(kind=bl["pair"].map(lambda p: hyp.get(p, {}).get("kind", "")))
    out = out.loc[:, list(BY_LENGTH_TABLE_COLUMNS)]
    order = {p: i for i, p in enumerate(hyp)}
    metrics = _metric_order(results.design, list(dict.fromkeys(out["metric"])))
    out["_m"] = out["metric"].map({m: i for i, m in enumerate(metrics)})
    out["_h"] = out["pair"].map(lambda p: order.get(p, len(order)))
    keys = ["_m", "_h", "pair", "length"]
    out = out.sort_values(keys, kind="stable").drop(columns=["_m", "_h"])
    return out.reset_index(drop=True)


def lr_table(results: StudyResults) -> pd.DataFrame | None:
    """In-sample likelihood-ratio tests (secondary; training cells), or None.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from analysis.report.examples import example_table_results
    >>> lr = pd.DataFrame({"pair": ["M0<M1"], "p_value": [0.03]}, index=[7])
    >>> lr_table(replace(example_table_results(), lr_tests=lr))
        pair  p_value
    0  M0<M1     0.03
    """
    lr = results.lr_tests
    return None if lr is None else lr.copy().reset_index(drop=True)


#: Side-by-side head-level columns: (question, fixed effects) -> column prefix.
HEAD_LEVEL_SIDES = {
    ("within_head", False): "within_head",
    ("within_head", True): "within_head_fe",
    ("across_head", False): "across_head",
}


def head_level_table(results: StudyResults) -> pd.DataFrame | None:
    """The head-level analysis, both questions side by side (exploratory), or None.

    One row per model: ``model``, ``blocks``, then ``<side>_loss`` and ``<side>_gain``
    (cross-validated interval squared loss and gain over the base model) for
    ``within_head`` (block alone), ``within_head_fe`` (with head fixed effects) and
    ``across_head`` (unseen heads), then ``fits_not_converged`` and ``warnings`` summed
    over the model's rows. A skipped question's columns are NaN. A frame stored before
    the two questions existed (no ``question`` column) is shown as stored.

    Examples
    --------
    Two models, each with the three (question, fixed effects) sides:

    >>> from dataclasses import replace
    >>> from analysis.report.examples import example_table_results
    >>> sides = [("within_head", False), ("within_head", True), ("across_head", False)]
    >>> hl = pd.DataFrame([dict(model=m, blocks=b, question=q, fixed_effects=fe,
    ...                         cv_loss=loss + i, gain_vs_base=gain)
    ...                    for m, b, loss, gain in (("M0", "", 1.0, 0.0), ("M1", "native", 0.5, 0.5))
    ...                    for i, (q, fe) in enumerate(sides)])
    >>> t = head_level_table(replace(example_table_results(), head_level=hl))
    >>> t[["model", "within_head_loss", "within_head_fe_loss", "across_head_loss"]]
      model  within_head_loss  within_head_fe_loss  across_head_loss
    0    M0               1.0                  2.0               3.0
    1    M1               0.5                  1.5               2.5
    >>> t["across_head_gain"].tolist()
    [0.0, 0.5]
    """
    if results.head_level is None:
        return None
    hl = results.head_level.copy().reset_index(drop=True)
    if "question" not in hl:
        if "head_effects" in hl:
            hl["head_effects"] = hl["head_effects"].astype(bool)
        return hl
    hl["fixed_effects"] = hl["fixed_effects"].astype(bool)
    models = list(dict.fromkeys(hl["model"]))
    out = pd.DataFrame(
        {"model": models, "blocks": [hl.loc[hl.model == m, "blocks"].iloc[0] for m in models]}
    )
    for (question, fe), side in HEAD_LEVEL_SIDES.items():
        part = hl[(hl.question == question) & (hl.fixed_effects == fe)].set_index("model")
        out[f"{side}_loss"] = out["model"].map(part["cv_loss"]).astype(float)
        out[f"{side}_gain"] = out["model"].map(part["gain_vs_base"]).astype(float)
    for c in ("fits_not_converged", "warnings"):
        if c in hl:
            out[c] = out["model"].map(hl.groupby("model")[c].sum()).astype(int)
    return out


def descriptor_table(results: StudyResults) -> pd.DataFrame | None:
    """Per-feature summaries over real cells: counts of finite / NaN / inf, quartiles.

    Per-r diagnostics (``intrinsic__q_r3``, ...) are left out. Quantiles are over the
    finite values. None when there is no feature column.

    Examples
    --------
    The toy study's ``native__kappa`` is 1, 2, 3 and inf; its per-r diagnostic
    ``intrinsic__q_r3`` is left out:

    >>> from analysis.report.examples import example_table_results
    >>> descriptor_table(example_table_results())[["block", "feature", "finite", "infinite", "median"]]
        block feature  finite  infinite  median
    0  native   kappa       3         1     2.0
    """
    feats = results.features
    cols, _ = summary_columns(feats)
    if not cols:
        return None
    rows = []
    for c in cols:
        x = pd.to_numeric(feats[c], errors="coerce").to_numpy(float)
        fin = x[np.isfinite(x)]
        block, _, name = c.partition("__")
        q = np.quantile(fin, [0.0, 0.25, 0.5, 0.75, 1.0]) if fin.size else np.full(5, np.nan)
        rows.append(
            {
                "block": block,
                "feature": name,
                "finite": int(fin.size),
                "nan": int(np.isnan(x).sum()),
                "infinite": int(np.isinf(x).sum()),
                "min": q[0],
                "q25": q[1],
                "median": q[2],
                "q75": q[3],
                "max": q[4],
            }
        )
    return pd.DataFrame(rows)


def build_tables(results: StudyResults) -> list[Table]:
    """Every table the report writes, in report order (absent sources skipped).

    Examples
    --------
    The toy study has no comparison, power, likelihood-ratio, head-level or by-checkpoint
    result, so those tables are skipped:

    >>> from analysis.report.examples import example_table_results
    >>> [t.name for t in build_tables(example_table_results())]
    ['data', 'brackets', 'brackets_temperature', 'descriptors', 'synthetic']
    """
    check_results(results)
    tables = [
        Table(
            "data",
            "Cells, heads and exclusions",
            data_table(results),
            "Counts of the study's real-checkpoint and synthetic cells; a cell is one "
            "(matrix, temperature, eps).",
        ),
        Table(
            "brackets",
            "Certified rank brackets of real cells by checkpoint and eps",
            bracket_table(results),
            "Medians over cells (all temperatures and lengths pooled; the figures split lengths); closed share = share of "
            "cells with lo = hi; held_out_cells counts cells of held-out heads.",
        ),
        Table(
            "brackets_temperature",
            "Certified rank brackets of real cells by checkpoint, temperature and eps",
            bracket_temperature_table(results),
            "As the brackets table, split by temperature.",
        ),
    ]
    optional = [
        (
            "comparisons",
            "Nested comparisons on held-out cells (interval estimator)",
            comparison_table(results, estimator="interval"),
            "Effect = base minus rich for losses, rich minus base otherwise (positive = "
            "the richer model helps); 95% cluster-bootstrap CI over held-out heads; "
            "one-sided p; Holm across the design's family within each metric. status "
            "'fit failed': a fit did not converge (see the converged, iterations and "
            "grad_norm columns); such a pair is no result, enters Holm with p = 1 and never "
            "adds information.",
        ),
        (
            "comparisons_ols",
            "Nested comparisons, OLS-on-midpoints sensitivity refit",
            comparison_table(results, estimator="ols"),
            "The same pairs refitted by OLS on interval midpoints (a sensitivity "
            "estimator; not the pre-specified decision). Closed form: 0 iterations; "
            "grad_norm is that of the least-squares objective.",
        ),
        (
            "by_checkpoint",
            "Effects by checkpoint (secondary, outside the Holm family)",
            by_checkpoint_table(results),
            "Each pair's effect restricted to one checkpoint's held-out cells, with the "
            "models fitted once on all training cells (no refit); 95% percentile "
            "cluster-bootstrap CI over that checkpoint's held-out heads; unadjusted "
            "one-sided p. No decision, no Holm adjustment.",
        ),
        (
            "by_length",
            "Effects by length (secondary, outside the Holm family)",
            by_length_table(results),
            "Each pair's effect restricted to the held-out cells of one input length, with "
            "the models fitted once on all training cells (no refit); 95% percentile "
            "cluster-bootstrap CI over the held-out heads with cells of that length; "
            "unadjusted one-sided p. No decision, no Holm adjustment; a head is in every "
            "length's group, so the lengths' rows are not independent.",
        ),
        (
            "power",
            "Simulated size, power and minimum detectable effect of each decision",
            power_table(results),
            "attnrank validate-comparison on this design: rates of 'adds information' "
            "in simulated studies with the design's sizes, with Clopper-Pearson 95% "
            "intervals; simple null = no signal, boundary null = signal exactly offset "
            "by the rich model's estimation cost (expected effect 0); power at the assumed "
            "effect share; MDE = effect share at power 0.8 (bisection bracket "
            "mde_low-mde_high).",
        ),
        (
            "lr_tests",
            "In-sample likelihood-ratio tests (secondary; training cells)",
            lr_table(results),
            "Ignores clustering, so anti-conservative; reported as pre-specified.",
        ),
        (
            "head_level",
            "Head-level analysis (exploratory; training heads only)",
            head_level_table(results),
            "Cross-validated interval squared loss of log2 r_eps (_loss) and its gain "
            "over the base model (_gain, positive = the block helps). within_head: one "
            "input held out within each length, block alone; within_head_fe: the same "
            "folds with head fixed effects; across_head: whole training heads held out, "
            "no head effects. – = question skipped (see the report). fits_not_converged "
            "counts fold fits whose optimizer did not converge; warnings counts folds "
            "that extrapolate in a design variable.",
        ),
        (
            "descriptors",
            "Descriptor summaries over real cells",
            descriptor_table(results),
            "Quartiles over finite values; per-r diagnostics left out.",
        ),
        (
            "synthetic",
            "Synthetic families (exploratory): rank brackets by d, n, beta and eps",
            synthetic_table(results),
            "Pooled over seeds; never part of the confirmatory comparisons.",
        ),
    ]
    tables += [Table(n, t, f, note) for n, t, f, note in optional if f is not None]
    return tables
