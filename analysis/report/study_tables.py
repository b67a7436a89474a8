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

import numpy as np
import pandas as pd

from analysis.report.comparison_tables import (
    BY_CHECKPOINT_TABLE_COLUMNS,
    BY_LENGTH_TABLE_COLUMNS,
    HEAD_LEVEL_SIDES,
    by_checkpoint_table,
    by_length_table,
    comparison_table,
    head_level_table,
    lr_table,
)
from analysis.report.decisions import is_method3
from analysis.report.results import StudyResults
from analysis.report.secondary_sections import method3_table
from analysis.report.tables import (
    Table,
    check_results,
    real_cells,
    summary_columns,
    synthetic_cells,
)

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
    In the toy study of :mod:`analysis.datasets` each eps has one closed cell of two;
    at eps 0.1 the brackets are [2, 4] and [3, 3] (medians 2.5 and 3.5, hi/lo 2 and 1):

    >>> from analysis.datasets import example_table_results
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

    >>> from analysis.datasets import example_table_results
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

    >>> from analysis.datasets import example_table_results
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
    >>> from analysis.datasets import example_table_results
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
    >>> from analysis.datasets import example_table_results
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


def descriptor_table(results: StudyResults) -> pd.DataFrame | None:
    """Per-feature summaries over real cells: counts of finite / NaN / inf, quartiles.

    Per-r diagnostics (``intrinsic__q_r3``, ...) are left out. Quantiles are over the
    finite values. None when there is no feature column.

    Examples
    --------
    The toy study's ``native__kappa`` is 1, 2, 3 and inf; its per-r diagnostic
    ``intrinsic__q_r3`` is left out:

    >>> from analysis.datasets import example_table_results
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


#: The tables after the fixed three, in report order: (name, title, table of the results,
#: note); one whose function returns None (its source has not run) is left out.
_OPTIONAL = (
    (
        "comparisons",
        "Nested comparisons on held-out cells (interval estimator)",
        lambda r: comparison_table(r, estimator="interval"),
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
        lambda r: comparison_table(r, estimator="ols"),
        "The same pairs refitted by OLS on interval midpoints (a sensitivity "
        "estimator; not the pre-specified decision). Closed form: 0 iterations; "
        "grad_norm is that of the least-squares objective.",
    ),
    (
        "by_checkpoint",
        "Effects by checkpoint (secondary, outside the Holm family)",
        by_checkpoint_table,
        "Each pair's effect restricted to one checkpoint's held-out cells, with the "
        "models fitted once on all training cells (no refit); 95% percentile "
        "cluster-bootstrap CI over that checkpoint's held-out heads; unadjusted "
        "one-sided p. No decision, no Holm adjustment.",
    ),
    (
        "by_length",
        "Effects by length (secondary, outside the Holm family)",
        by_length_table,
        "Each pair's effect restricted to the held-out cells of one input length, with "
        "the models fitted once on all training cells (no refit); 95% percentile "
        "cluster-bootstrap CI over the held-out heads with cells of that length; "
        "unadjusted one-sided p. No decision, no Holm adjustment; a head is in every "
        "length's group, so the lengths' rows are not independent.",
    ),
    (
        "extrapolation",
        "Extrapolation: effects on in-range and extrapolated held-out cells (secondary)",
        lambda r: method3_table(r, "extrapolation"),
        "A held-out cell is extrapolated for a pair when a covariate of either model lies "
        "outside its training range; effect and 95% percentile CI over the comparison's "
        "resamples on each subset, and the 10% trimmed mean of per-unit effects. "
        "Unadjusted, no decision.",
    ),
    (
        "sesoi_sensitivity",
        "SESOI sensitivity: the family's decisions at half, once and twice the SESOI "
        "(sensitivity, not confirmatory)",
        lambda r: method3_table(r, "sesoi_sensitivity"),
        "The confirmatory family's method-3 decisions recomputed with each declared SESOI "
        "halved (sesoi_factor 0.5) and doubled (2): TOST and non-superiority p at that "
        "margin on the same bootstrap replicates, Holm-adjusted over the family within "
        "each metric; CI and superiority p_holm as confirmatory. Factor 1 repeats the "
        "confirmatory decisions; the other rows decide nothing.",
    ),
    (
        "power",
        "Simulated size, power and minimum detectable effect of each decision",
        power_table,
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
        lr_table,
        "Ignores clustering, so anti-conservative; reported as pre-specified.",
    ),
    (
        "head_level",
        "Head-level analysis (exploratory; training heads only)",
        head_level_table,
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
        descriptor_table,
        "Quartiles over finite values; per-r diagnostics left out.",
    ),
    (
        "synthetic",
        "Synthetic families (exploratory): rank brackets by d, n, beta and eps",
        synthetic_table,
        "Pooled over seeds; never part of the confirmatory comparisons.",
    ),
)


#: Method 3's titles and notes: (title, note) -> (title, note), by table name. The
#: secondary effects are labelled unadjusted; the in-sample tests are the cluster-robust
#: Wald tests (analysis.compare.lrtests); the comparisons' note names the decisions.
_METHOD3_TEXT = {
    "comparisons": lambda t, n: (
        t,
        n.replace(" and never adds information.", ", never adds information and decides nothing.")
        + " decision: adds information / harms (CI wholly below 0) / equivalent within "
        "SESOI (TOST, equivalence_p) / non-superior only (non_superiority_p, effect < "
        "+SESOI) / inconclusive; SESOI p values Holm-adjusted like p.",
    ),
    "by_checkpoint": lambda t, n: (t.replace(")", "; unadjusted CIs and p)"), n),
    "by_length": lambda t, n: (t.replace(")", "; unadjusted CIs and p)"), n),
    "lr_tests": lambda t, n: (
        "In-sample cluster-robust Wald tests of the added coefficients (secondary; "
        "training cells; unadjusted)",
        "Sandwich covariance clustered by the design's resampling unit (clusters: their "
        "number); not available for a ridge fit.",
    ),
}


def build_tables(results: StudyResults) -> list[Table]:
    """Every table the report writes, in report order (absent sources skipped).

    Examples
    --------
    The toy study has no comparison, power, likelihood-ratio, head-level or by-checkpoint
    result, so those tables are skipped:

    >>> from analysis.datasets import example_table_results
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
    method3 = is_method3(results.comparison)
    for name, title, table, note in _OPTIONAL:
        frame = table(results)
        if frame is not None:
            if method3 and name in _METHOD3_TEXT:
                title, note = _METHOD3_TEXT[name](title, note)
            tables.append(Table(name, title, frame, note))
    return tables
