"""The report's secondary sections: "Effects by checkpoint" (``[inference] by_checkpoint =
true``), "Effects by length" (``[inference] by_length = true``), and for method-3
designs "Extrapolation" and "SESOI sensitivity (half and twice the declared SESOI)"."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from analysis.compare.nested import FIT_FAILED
from analysis.report.decisions import is_method3
from analysis.report.design import ReportDesign
from analysis.report.results import StudyResults
from analysis.report.tables import Table, format_value, markdown_table
from analysis.validation import ParameterError

__all__ = [
    "BY_CHECKPOINT_SHOWN",
    "BY_LENGTH_SHOWN",
    "EXTRAPOLATION_SHOWN",
    "SESOI_SENSITIVITY_SHOWN",
    "effects_by_section",
    "METHOD3_TABLES",
    "method3_sections",
    "method3_table",
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
#: The stored tables of method-3 designs (``StudyResults`` fields), in report order.
METHOD3_TABLES = ("extrapolation", "sesoi_sensitivity")
#: Columns of the SESOI sensitivity rows embedded per pair in report.md.
SESOI_SENSITIVITY_SHOWN = (
    "sesoi_factor",
    "sesoi",
    "equivalence_p_holm",
    "non_superiority_p_holm",
    "decision",
)


def _links(files: Mapping[str, Path], out_dir: Path) -> str:
    """Markdown links to a table's written files, relative to ``out_dir``."""
    return ", ".join(
        f"[{ext.upper()}]({Path(p).relative_to(out_dir).as_posix()})" for ext, p in files.items()
    )


def _checkpoint_intro(design: ReportDesign, metric_name: str) -> str:
    return (
        "Pre-specified as a secondary analysis (`[inference] by_checkpoint = true`): each "
        f"pair's effect on the {metric_name} restricted to one "
        "checkpoint's held-out cells, with the same models as above (fitted once on all "
        "training cells, never refitted per checkpoint), a 95% percentile cluster-bootstrap "
        "CI over that checkpoint's held-out heads (B = "
        f"{format_value(design.bootstrap_replicates)}; pair i, checkpoint j drawn from "
        f"`SeedSequence({format_value(design.seed)}, spawn_key=(1, i, j))`) and an unadjusted "
        "one-sided p. No decision is taken from these rows and they are not in the Holm family."
    )


def _length_intro(design: ReportDesign, metric_name: str) -> str:
    return (
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


#: ``what`` of :func:`effects_by_section` -> (its intro, the columns shown).
_BY = {
    "checkpoint": (_checkpoint_intro, BY_CHECKPOINT_SHOWN),
    "length": (_length_intro, BY_LENGTH_SHOWN),
}


def effects_by_section(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
    *,
    what: str,
    metric_name: str,
) -> list[str]:
    """Markdown lines of "Effects by checkpoint" or "Effects by length": the primary
    metric's rows, one small table per hypothesis, or why they are missing.

    Parameters
    ----------
    results : StudyResults
    tab : mapping
        The report's tables by name (``"by_checkpoint"`` or ``"by_length"`` when
        computed).
    table_files : mapping
        Each table's written files by extension.
    out_dir : Path
        The report folder (links are relative to it).
    what : {"checkpoint", "length"}, keyword-only
        Which secondary effects (``[inference] by_checkpoint`` or ``by_length``).
    metric_name : str, keyword-only
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
    >>> effects_by_section(r, {}, {}, Path("."), what="checkpoint", metric_name="loss")[0]
    '### Effects by checkpoint (secondary, outside the Holm family)'
    >>> r = replace(example_table_results(), design=ReportDesign(by_length=True))
    >>> lines = effects_by_section(r, {}, {}, Path("."), what="length", metric_name="loss")
    >>> lines[0], lines[2].startswith("The by-length effects have not been computed")
    ('### Effects by length (secondary, outside the Holm family)', True)
    """
    if what not in _BY:
        raise ParameterError("what", " or ".join(_BY), what)
    make_intro, shown = _BY[what]
    intro = make_intro(results.design, metric_name)
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
    links = _links(table_files[name], out_dir)
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


def method3_table(results: StudyResults, name: str) -> pd.DataFrame | None:
    """A stored method-3 table of ``results``, primary metric first; None without it
    (every method-2 study).

    Parameters
    ----------
    results : StudyResults
    name : {"extrapolation", "sesoi_sensitivity"}
        Which: ``results.extrapolation`` or ``results.sesoi_sensitivity``.

    Returns
    -------
    pandas.DataFrame or None
        A copy, ordered by metric (primary first), else in the stored order.

    Examples
    --------
    >>> from analysis.datasets import example_table_results
    >>> method3_table(example_table_results(), "extrapolation") is None  # a method-2 study
    True
    """
    if name not in METHOD3_TABLES:
        raise ParameterError("name", " or ".join(METHOD3_TABLES), name)
    stored = getattr(results, name)
    if stored is None:
        return None
    order = (stored["metric"] != results.design.primary_metric).astype(int)
    return stored.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o")


def method3_sections(
    results: StudyResults,
    tab: Mapping[str, Table],
    table_files: Mapping[str, Mapping[str, Path]],
    out_dir: Path,
) -> list[str]:
    """Markdown lines of the method-3 secondary sections, each empty without its table.

    "Extrapolation": per pair, the share of extrapolated held-out cells and the primary
    metric's effect on in-range and on extrapolated cells apart, with the trimmed mean of
    per-unit effects. "SESOI sensitivity (half and twice the declared SESOI)": per family
    pair with a SESOI, the primary metric's decision at each margin.

    Parameters
    ----------
    results : StudyResults
    tab : mapping
        The report's tables by name (those of :data:`METHOD3_TABLES` when stored).
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
    >>> method3_sections(example_table_results(), {}, {}, Path("."))
    []
    """
    L: list[str] = []
    for name, lines in (
        ("extrapolation", _extrapolation_lines),
        ("sesoi_sensitivity", _sesoi_lines),
    ):
        if name in tab:
            L += lines(results, tab[name], _links(table_files[name], out_dir))
    return L


def _extrapolation_lines(results: StudyResults, table: Table, links: str) -> list[str]:
    frame = table.frame
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
        f"*Table: {table.title}* (every metric: {links}).",
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


def _sesoi_lines(results: StudyResults, table: Table, links: str) -> list[str]:
    frame = table.frame
    L = [
        "### SESOI sensitivity (half and twice the declared SESOI)",
        "",
        "A sensitivity analysis, not confirmatory: the family's decisions recomputed with "
        "each declared SESOI halved and doubled. At each margin the TOST and the "
        "non-superiority test are run on the same bootstrap replicates as the confirmatory "
        "tests, Holm-adjusted over the family within each metric, and the decision rule "
        "above is applied unchanged; the CI and the superiority test do not depend on the "
        "SESOI. Factor 1 repeats the confirmatory decisions; the rows at 0.5 and 2 decide "
        "nothing, they show how much the equivalence words rest on the SESOI's value.",
        "",
        f"*Table: {table.title}* (every metric: {links}).",
        "",
    ]
    sub = frame[frame["metric"] == results.design.primary_metric]
    if sub.empty:
        return L + ["No pair of the family has a SESOI on the primary metric.", ""]
    for pair in dict.fromkeys(sub["pair"]):
        rows = sub[sub["pair"] == pair]
        words = dict(zip(rows["sesoi_factor"], rows["decision"], strict=True))
        same = len(set(words.values())) == 1
        L += [
            f"**{pair}**: "
            + (
                f"{next(iter(words.values()))} at every margin."
                if same
                else "the decision depends on the SESOI ("
                + "; ".join(f"x{format_value(f)}: {w}" for f, w in words.items())
                + ")."
            ),
            "",
            markdown_table(rows.loc[:, list(SESOI_SENSITIVITY_SHOWN)].reset_index(drop=True)),
            "",
        ]
    return L
