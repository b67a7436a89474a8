"""The report's "Effects by length" section (``[inference] by_length = true``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from analysis.compare.nested import FIT_FAILED
from analysis.report.results import StudyResults
from analysis.report.tables import Table, format_value, markdown_table

__all__ = ["BY_LENGTH_SHOWN", "by_length_section"]

#: Columns of the by-length rows embedded per hypothesis in report.md.
BY_LENGTH_SHOWN = (
    "length",
    "held_out_heads",
    "held_out_cells",
    "effect",
    "ci_low",
    "ci_high",
    "p_one_sided",
)


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
    >>> from analysis.report.examples import example_table_results
    >>> from dataclasses import replace
    >>> r = replace(example_table_results(), design=ReportDesign(by_length=True))
    >>> lines = by_length_section(r, {}, {}, Path("."), metric_name="loss")
    >>> lines[0], lines[2].startswith("The by-length effects have not been computed")
    ('### Effects by length (secondary, outside the Holm family)', True)
    """
    L = ["### Effects by length (secondary, outside the Holm family)", ""]
    if "by_length" not in tab:
        why = results.skipped.get(
            "by_length",
            "the stored comparison has none (re-run `attnrank run` to compute them)"
            if results.comparison is not None
            else "the comparison has not run",
        )
        return L + [f"The by-length effects have not been computed: {why}.", ""]
    design = results.design
    primary = design.primary_metric
    frame = tab["by_length"].frame
    L += [
        "Pre-specified as a secondary analysis (`[inference] by_length = true`): does the "
        "answer change with the input length? Each pair's effect on the "
        f"{metric_name} restricted to the held-out cells of one length, with the same models "
        "as above (fitted once on all training cells, never refitted per length), a 95% "
        "percentile cluster-bootstrap CI over the held-out heads with cells of that length "
        f"(B = {format_value(design.bootstrap_replicates)}; pair i, length j in increasing "
        f"order drawn from `SeedSequence({format_value(design.seed)}, spawn_key=(2, i, j))`) "
        "and an unadjusted one-sided p. Every held-out head is in each of its lengths' "
        "rows, so the rows are not independent. No decision is taken from these rows and "
        "they are not in the Holm family.",
        "",
    ]
    links = ", ".join(
        f"[{ext.upper()}]({Path(p).relative_to(out_dir).as_posix()})"
        for ext, p in table_files["by_length"].items()
    )
    L += [f"*Table: {tab['by_length'].title}* (every metric: {links}).", ""]
    sub = frame[frame["metric"] == primary]
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
            markdown_table(rows.loc[:, list(BY_LENGTH_SHOWN)].reset_index(drop=True)),
            "",
        ]
    return L
