"""The report's secondary sections: "Effects by checkpoint" (``[inference] by_checkpoint =
true``), "Effects by length" (``[inference] by_length = true``) and "Extrapolation"
(method-3 designs)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from analysis.compare.nested import FIT_FAILED
from analysis.report.decisions import is_method3
from analysis.report.results import StudyResults
from analysis.report.tables import Table, format_value, markdown_table

__all__ = [
    "BY_CHECKPOINT_SHOWN",
    "BY_LENGTH_SHOWN",
    "EXTRAPOLATION_SHOWN",
    "by_checkpoint_section",
    "by_length_section",
    "extrapolation_section",
    "extrapolation_table",
]

#: Columns of the by-checkpoint rows embedded per hypothesis in report.md.
BY_CHECKPOINT_SHOWN = (
    "checkpoint",
    "held_out_heads",
    "held_out_cells",
    "effect",
    "ci_low",
    "ci_high",
    "p_one_sided",
)
#: Columns of the by-length rows embedded per hypothesis in report.md.
BY_LENGTH_SHOWN = ("length", *BY_CHECKPOINT_SHOWN[1:])
#: Columns of the extrapolation rows embedded per pair in report.md.
EXTRAPOLATION_SHOWN = (
    "estimate",
    "n_cells",
    "share_cells",
    "n_units",
    "effect",
    "ci_low",
    "ci_high",
)


def _section(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
    what: str,
    intro: str,
    shown: tuple[str, ...],
) -> list[str]:
    """ "Effects by ``what``": ``intro``, then the primary metric's rows of the table
    ``by_<what>``, one small table per hypothesis; or why they are missing."""
    name = f"by_{what}"
    method3 = is_method3(results.comparison)
    label = "secondary, outside the Holm family" + ("; unadjusted" if method3 else "")
    L = [f"### Effects by {what} ({label})", ""]
    if method3:
        intro += (
            " The CIs and p of these rows are unadjusted for the many rows: they "
            "describe, they do not test."
        )
    if name not in tab:
        why = results.skipped.get(
            name,
            "the stored comparison has none (re-run `attnrank run` to compute them)"
            if results.comparison is not None
            else "the comparison has not run",
        )
        return L + [f"The by-{what} effects have not been computed: {why}.", ""]
    links = ", ".join(
        f"[{ext.upper()}]({Path(p).relative_to(out_dir).as_posix()})"
        for ext, p in table_files[name].items()
    )
    L += [intro, "", f"*Table: {tab[name].title}* (every metric: {links}).", ""]
    frame = tab[name].frame
    sub = frame[frame["metric"] == results.design.primary_metric]
    for pair in dict.fromkeys(sub["pair"]):
        rows = sub[sub["pair"] == pair]
        r0 = rows.iloc[0]
        failed = (rows["status"] == FIT_FAILED).any()
        L += [
            f"**{r0['hypothesis']}** ({pair}"
            + (f", {r0['kind']}" if r0["kind"] else "")
            + ")"
            + (": a fit failed, so these rows are no result." if failed else ""),
            "",
            markdown_table(rows.loc[:, list(shown)].reset_index(drop=True)),
            "",
        ]
    return L


def by_checkpoint_section(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
    *,
    metric_name: str,
) -> list[str]:
    """Markdown lines of "Effects by checkpoint".

    Parameters
    ----------
    results : StudyResults
    tab : mapping
        The report's tables by name (``"by_checkpoint"`` when computed).
    table_files : mapping
        Each table's written files by extension.
    out_dir : Path
        The report folder (links are relative to it).
    metric_name : str
        The primary metric in words.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.report.design import ReportDesign
    >>> from analysis.datasets import example_table_results
    >>> from dataclasses import replace
    >>> r = replace(example_table_results(), design=ReportDesign(by_checkpoint=True))
    >>> by_checkpoint_section(r, {}, {}, Path("."), metric_name="loss")[0]
    '### Effects by checkpoint (secondary, outside the Holm family)'
    """
    design = results.design
    intro = (
        "Pre-specified as a secondary analysis (`[inference] by_checkpoint = true`): each "
        f"pair's effect on the {metric_name} restricted to one "
        "checkpoint's held-out cells, with the same models as above (fitted once on all "
        "training cells, never refitted per checkpoint), a 95% percentile cluster-bootstrap "
        "CI over that checkpoint's held-out heads (B = "
        f"{format_value(design.bootstrap_replicates)}; pair i, checkpoint j drawn from "
        f"`SeedSequence({format_value(design.seed)}, spawn_key=(1, i, j))`) and an unadjusted "
        "one-sided p. No decision is taken from these rows and they are not in the Holm family."
    )
    return _section(results, tab, table_files, out_dir, "checkpoint", intro, BY_CHECKPOINT_SHOWN)


def by_length_section(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
    *,
    metric_name: str,
) -> list[str]:
    """Markdown lines of "Effects by length": the primary metric's rows, one small table
    per hypothesis, or why they are missing.

    Parameters
    ----------
    results : StudyResults
    tab : mapping
        The report's tables by name (``"by_length"`` when computed).
    table_files : mapping
        Each table's written files by extension.
    out_dir : Path
        The report folder (links are relative to it).
    metric_name : str
        The primary metric in words.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.report.design import ReportDesign
    >>> from analysis.datasets import example_table_results
    >>> from dataclasses import replace
    >>> r = replace(example_table_results(), design=ReportDesign(by_length=True))
    >>> lines = by_length_section(r, {}, {}, Path("."), metric_name="loss")
    >>> lines[0], lines[2].startswith("The by-length effects have not been computed")
    ('### Effects by length (secondary, outside the Holm family)', True)
    """
    design = results.design
    intro = (
        "Pre-specified as a secondary analysis (`[inference] by_length = true`): does the "
        "answer change with the input length? Each pair's effect on the "
        f"{metric_name} restricted to the held-out cells of one length, with the same models "
        "as above (fitted once on all training cells, never refitted per length), a 95% "
        "percentile cluster-bootstrap CI over the held-out heads with cells of that length "
        f"(B = {format_value(design.bootstrap_replicates)}; pair i, length j in increasing "
        f"order drawn from `SeedSequence({format_value(design.seed)}, spawn_key=(2, i, j))`) "
        "and an unadjusted one-sided p. Every held-out head is in each of its lengths' "
        "rows, so the rows are not independent. No decision is taken from these rows and "
        "they are not in the Holm family."
    )
    return _section(results, tab, table_files, out_dir, "length", intro, BY_LENGTH_SHOWN)


def extrapolation_table(results: StudyResults) -> pd.DataFrame | None:
    """The stored extrapolation rows (``results.extrapolation``), or None without them.

    Parameters
    ----------
    results : StudyResults

    Returns
    -------
    pandas.DataFrame or None
        A copy, ordered by metric (primary first) with the stored pair order.

    Examples
    --------
    >>> from analysis.datasets import example_table_results
    >>> extrapolation_table(example_table_results()) is None  # a method-2 study
    True
    """
    ex = results.extrapolation
    if ex is None:
        return None
    primary = results.design.primary_metric
    order = (ex["metric"] != primary).astype(int)
    return ex.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o")


def extrapolation_section(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
) -> list[str]:
    """Markdown lines of "Extrapolation": per pair, the share of extrapolated held-out
    cells and the primary metric's effect on in-range and on extrapolated cells apart,
    with the trimmed mean of per-unit effects; empty without the table.

    Parameters
    ----------
    results : StudyResults
    tab : mapping
        The report's tables by name (``"extrapolation"`` when stored).
    table_files : mapping
        Each table's written files by extension.
    out_dir : Path
        The report folder (links are relative to it).

    Returns
    -------
    list of str

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.datasets import example_table_results
    >>> extrapolation_section(example_table_results(), {}, {}, Path("."))
    []
    """
    if "extrapolation" not in tab:
        return []
    frame = tab["extrapolation"].frame
    links = ", ".join(
        f"[{ext.upper()}]({Path(p).relative_to(out_dir).as_posix()})"
        for ext, p in table_files["extrapolation"].items()
    )
    mode = frame["extrapolation"].iloc[0] if len(frame) else "none"
    L = [
        "### Extrapolation (secondary, unadjusted)",
        "",
        "A held-out cell is extrapolated for a pair when a covariate of either model lies "
        "outside its range over the training cells (after logs, calibration and "
        "standardization); held-out covariates were "
        + ("clipped to that range before prediction" if mode == "clip" else "used as they are")
        + f' (`[inference] extrapolation = "{mode}"`). Each pair\'s effect on the in-range '
        "and on the extrapolated cells apart (their cell-weighted average is the effect "
        "above), and the 10% trimmed mean of the per-unit effects, each with a 95% "
        "percentile CI from the comparison's own bootstrap resamples; unadjusted, no "
        "decision.",
        "",
        f"*Table: {tab['extrapolation'].title}* (every metric: {links}).",
        "",
    ]
    sub = frame[frame["metric"] == results.design.primary_metric]
    for pair in dict.fromkeys(sub["pair"]):
        rows = sub[sub["pair"] == pair]
        share = rows.loc[rows["estimate"] == "extrapolated", "share_cells"]
        L += [
            f"**{pair}**: {float(share.iloc[0]):.1%} of the held-out cells extrapolated.",
            "",
            markdown_table(rows.loc[:, list(EXTRAPOLATION_SHOWN)].reset_index(drop=True)),
            "",
        ]
    return L
