"""Comparison tables: the nested comparisons, their secondary effects by checkpoint and by
length, the likelihood-ratio tests and the head-level analysis, as the stored results hold
them (copied, labelled with the design's hypotheses, in design order)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.compare.equivalence import METHOD3_COLUMNS
from analysis.compare.nested import RESULT_COLUMNS
from analysis.report.design import ReportDesign
from analysis.report.results import StudyResults
from analysis.report.tables import hypotheses
from analysis.validation import ParameterError

__all__ = [
    "BY_CHECKPOINT_TABLE_COLUMNS",
    "BY_LENGTH_TABLE_COLUMNS",
    "HEAD_LEVEL_SIDES",
    "by_checkpoint_table",
    "by_length_table",
    "comparison_table",
    "head_level_table",
    "lr_table",
]


def _in_design_order(design: ReportDesign, out: pd.DataFrame, last: list[str]) -> pd.DataFrame:
    """``out``'s rows by metric (the design's first, primary leading), hypothesis order,
    pair, then ``last``."""
    order = {p: i for i, p in enumerate(dict.fromkeys(h["pair"] for h in hypotheses(design)))}
    metrics = list(dict.fromkeys(out["metric"]))
    first = list(design.metrics)
    metrics = [x for x in first if x in set(metrics)] + sorted(set(metrics) - set(first))
    out["_m"] = out["metric"].map({m: i for i, m in enumerate(metrics)})
    out["_h"] = out["pair"].map(lambda p: order.get(p, len(order)))
    return out.sort_values(["_m", "_h", "pair", *last], kind="stable").drop(columns=["_m", "_h"])


def _secondary(
    results: StudyResults, frame: pd.DataFrame, columns: Sequence[str], by: str
) -> pd.DataFrame:
    """The stored secondary effects ``frame`` (by checkpoint or by length) with each
    pair's ``kind``, in ``columns`` and design order, then ``by``."""
    hyp = {h["pair"]: h for h in hypotheses(results.design)}
    out = frame.assign(kind=frame["pair"].map(lambda p: hyp.get(p, {}).get("kind", "")))
    out = out.loc[:, list(columns)]
    return _in_design_order(results.design, out, [by]).reset_index(drop=True)


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
        ``equivalence`` says whether the SESOI was pre-specified or exploratory), and
        under method 3 ``non_superiority_p`` and ``non_superiority_p_holm``. Rows
        ordered by metric (primary first) then hypothesis order. None when that
        comparison has not run.

    Examples
    --------
    Rows follow the design: the primary metric ``loss`` first, then hypothesis order; a pair
    without a hypothesis gets an empty ``hypothesis``:

    >>> from dataclasses import replace
    >>> from analysis.datasets import example_table_results
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
    cols = RESULT_COLUMNS + METHOD3_COLUMNS  # method 3's only where the frame has them
    keep = [c for c in cols if c != "lock_sha256" and not c.startswith("calibration")]
    out = pd.concat([out, f[[c for c in keep if c in f.columns]]], axis=1)
    out = _in_design_order(results.design, out, [])
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
    >>> from analysis.datasets import example_table_results
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
    return _secondary(results, bc, BY_CHECKPOINT_TABLE_COLUMNS, "checkpoint")


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
    >>> from analysis.datasets import example_table_results
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
    return _secondary(results, bl, BY_LENGTH_TABLE_COLUMNS, "length")


def lr_table(results: StudyResults) -> pd.DataFrame | None:
    """In-sample likelihood-ratio tests (secondary; training cells), or None.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from analysis.datasets import example_table_results
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
    >>> from analysis.datasets import example_table_results
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
