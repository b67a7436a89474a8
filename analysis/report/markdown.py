"""``report.md``: a short results section built from the design and the result tables.

Sections in order: :func:`render_report`'s list. The answer comes first (the decisions
table and one plain sentence per hypothesis, :mod:`analysis.report.answer`); the lock's
status and its amendments come last. Every number is read from the
:class:`~analysis.report.results.StudyResults`; sentences only restate them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.compare.headlevel import QUESTION_TEXT, QUESTIONS
from analysis.report.answer import METRIC_NAMES, answer_section, hypothesis_sentences
from analysis.report.decisions import is_method3
from analysis.report.design import ReportDesign
from analysis.report.lock_status import lock_status_lines
from analysis.report.methods_text import calibration_sentence
from analysis.report.power_section import hypothesis_power, power_section, power_sentences
from analysis.report.provenance import amendments_section, provenance_lines
from analysis.report.results import StudyResults
from analysis.report.secondary_sections import (
    effects_by_section,
    method3_sections,
)
from analysis.report.tables import (
    Table,
    format_value,
    hypotheses,
    markdown_table,
    real_cells,
    summary_columns,
    synthetic_cells,
)
from analysis.report.tables import number_text as _n

__all__ = [
    "METRIC_NAMES",
    "calibration_sentence",
    "hypothesis_power",
    "hypothesis_sentences",
    "power_sentences",
    "render_report",
]

#: Longest table embedded in report.md; longer ones are linked only.
MAX_EMBED_ROWS = 40


def _head_level_lines(meta: Mapping[str, Any]) -> list[str]:
    """What each head-level question answers, its folds or why it was skipped."""
    folds, skipped = meta.get("folds", {}), meta.get("skipped", {})
    if isinstance(folds, str):  # stored before the two questions existed
        L = [f"Training heads only. Folds: {folds}.", ""]
    else:
        L = ["Training heads only; two questions, side by side in the table below.", ""]
        for q in QUESTIONS:
            state = (
                f"**Skipped**: {skipped[q]}."
                if q in skipped
                else f"Folds: {folds.get(q, 'not recorded')}."
            )
            L.append(f"- {q.replace('_', '-').capitalize()}: {QUESTION_TEXT[q]} {state}")
        L.append("")
    close = []
    if "residual_icc" in meta:
        close.append(
            f"Within-head correlation of {meta.get('base_model', 'M0')} residuals: "
            f"{_n(meta['residual_icc'])}."
        )
    close.append(
        "A block whose within-head gain vanishes with head fixed effects carries "
        "head-level information only; its across-head gain is what it says about heads "
        "the fit never saw."
    )
    L += [" ".join(close), ""]
    warned = list(meta.get("warnings", []))
    if warned:
        L += ["Fold warnings (a fold extrapolates in a design variable):", ""]
        L += [f"- {w}" for w in warned] + [""]
    return L


def _listing(values: Sequence[Any]) -> str:
    vals = [format_value(v) for v in values]
    return ", ".join(vals) if vals else "none"


def _embed(table: Table, files: Mapping[str, Path], out_dir: Path) -> list[str]:
    links = ", ".join(
        f"[{ext.upper()}]({Path(p).relative_to(out_dir).as_posix()})" for ext, p in files.items()
    )
    lines = [f"*Table: {table.title}.* {table.note} ({links})", ""]
    if len(table.frame) <= MAX_EMBED_ROWS:
        lines += [markdown_table(table.frame), ""]
    else:
        lines += [f"({len(table.frame)} rows; see the linked files.)", ""]
    return lines


def _compact_comparison(frame: pd.DataFrame) -> pd.DataFrame:
    cols = [
        "hypothesis",
        "pair",
        "metric",
        "base_value",
        "rich_value",
        "effect",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "adds_information",
        "status",
    ]
    if is_method3(frame):  # the method-3 decision word beside the superiority flag
        cols.insert(cols.index("status"), "decision")
    return frame.loc[:, [c for c in cols if c in frame.columns]]


class _Embeds:
    """Embeds the written tables and figures into report.md, numbering figures in order."""

    def __init__(
        self,
        out_dir: Path,
        tables: Sequence[Table],
        table_files: Mapping[str, Mapping[str, Path]],
        figures: Mapping[str, tuple[Path, Path | None, str]],
    ):
        self.out_dir = out_dir
        self.tab = {t.name: t for t in tables}
        self.table_files = table_files
        self.figures = figures
        self.fig_no: dict[str, int] = {}

    def figure(self, name: str) -> list[str]:
        if name not in self.figures:
            return []
        png, pdf, caption = self.figures[name]
        self.fig_no[name] = len(self.fig_no) + 1
        rel = Path(png).relative_to(self.out_dir).as_posix()
        link = f" ([PDF]({Path(pdf).relative_to(self.out_dir).as_posix()}))" if pdf else ""
        return [f"![{caption}]({rel})", "", f"*Figure {self.fig_no[name]}.* {caption}{link}", ""]

    def table(self, name: str, frame: pd.DataFrame | None = None) -> list[str]:
        if name not in self.tab:
            return []
        t = self.tab[name]
        if frame is not None:
            t = Table(name, t.title, frame, t.note)
        return _embed(t, self.table_files[name], self.out_dir)


def _stated(value: Any) -> str:
    return "not stated" if value is None else str(value)


def _title_section(results: StudyResults) -> list[str]:
    lock = results.provenance.get("lock_sha256")
    return [
        f"# {results.title}",
        "",
        f"Study `{results.study}`. "
        + (
            f"Confirmatory run of the locked design (lock sha256 `{lock}`)."
            if lock
            else "**This run is not locked: every result below is exploratory.**"
        ),
        "",
    ]


def _hypotheses_lines(results: StudyResults) -> list[str]:
    hyp = hypotheses(results.design)
    if not hyp:
        return []
    power = hypothesis_power(results)
    hyp_frame = pd.DataFrame(hyp).assign(
        simulated_power=[power[h["id"]]["power"] for h in hyp],
        mde=[power[h["id"]]["mde"] for h in hyp],
    )
    return [
        markdown_table(hyp_frame),
        "",
        "simulated_power: share of simulated studies of this design in which the pair "
        "adds information at the design's size (alpha), at the assumed effect share; "
        "mde: the effect share at power 0.8 (see *Power of each decision* below).",
        "",
    ]


def _decision_rule_line(design: ReportDesign) -> str:
    fam, sens = design.family, design.sensitivity_pairs
    boot = (
        f"{design.bootstrap} bootstrap over held-out {design.cluster}s"
        if design.bootstrap and design.cluster
        else "bootstrap not stated"
    )
    return (
        f"Decision rule: {design.decision or 'not stated in the design'}. "
        f"alpha = {format_value(design.alpha)}; {boot}, "
        f"B = {format_value(design.bootstrap_replicates)}, seed {format_value(design.seed)}; "
        f"Holm family: {', '.join(f'{a}<{b}' for a, b in fam) or 'none'}"
        + (
            f"; sensitivity pairs (unadjusted): {', '.join(f'{a}<{b}' for a, b in sens)}"
            if sens
            else ""
        )
        + "."
    )


def _prespecified_section(results: StudyResults) -> list[str]:
    """ "What was pre-specified": hypotheses, models, outcome, metrics, rule, held-out heads."""
    design = results.design
    L = ["## What was pre-specified", ""]
    L += _hypotheses_lines(results)
    if design.models:
        L += [
            "Models (descriptor blocks): "
            + "; ".join(f"{m} = {' + '.join(b)}" for m, b in design.models.items())
            + ".",
            "",
        ]
    outcome = design.outcome
    if outcome:
        L += [
            f"Outcome: {outcome.get('transform', '')} {outcome.get('quantity', '')}, observed "
            f"as an {outcome.get('observed_as', 'interval')} from the certified bracket "
            "[log2 lo, log2 hi].",
            "",
        ]
    primary = design.primary_metric
    secondary = design.secondary_metrics
    L += [
        "Primary metric: "
        + (f"{METRIC_NAMES.get(primary, primary)} on held-out cells" if primary else "not stated")
        + (
            "; secondary: " + ", ".join(METRIC_NAMES.get(m, m) for m in secondary)
            if secondary
            else ""
        )
        + (
            f". Estimator: {design.estimator} fits on training cells."
            if design.estimator
            else ". Estimator: not stated."
        ),
        "",
        calibration_sentence(results),
        "",
        _decision_rule_line(design),
        "",
    ]
    if not design.held_out:
        L += ["Held-out heads: the design lists none.", ""]
    else:
        L += [
            f"Held-out heads: {len(design.held_out)} whole heads "
            f"(fraction {format_value(design.held_out_fraction)}, seed "
            f"{format_value(design.held_out_seed)}), list sha256 "
            f"`{results.provenance.get('held_out_sha256') or 'not recorded'}`; drawn before any "
            "outcome existed and never used for fitting.",
            "",
        ]
    if design.held_out_estimand:
        L += [f"Held-out estimand: {design.held_out_estimand}.", ""]
    if design.exclusion_rules:
        L += ["Exclusion rules:", ""] + [f"- {r}" for r in design.exclusion_rules] + [""]
    return L


def _data_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    real, syn = real_cells(results), synthetic_cells(results)
    L = ["## Data", ""]
    if real.empty:
        L += ["The study holds no real-checkpoint cell.", ""]
    else:
        n_held = real.loc[real["held_out"].astype(bool), "head_id"].nunique()
        L += [
            f"{len(real)} real cells (one per matrix, temperature and eps) from "
            f"{real['head_id'].nunique()} heads of {real['checkpoint'].nunique()} checkpoint(s) "
            f"({_listing(sorted(real['checkpoint'].unique()))}); {n_held} held-out heads "
            f"({int(real['held_out'].astype(bool).sum())} cells). Temperatures "
            f"{_listing(sorted(real['temperature'].unique()))}; eps "
            f"{_listing(sorted(real['eps'].unique()))}; lengths "
            f"{_listing(sorted(real['length'].unique()))}. {len(syn)} synthetic cells "
            "(exploratory, never in the comparisons).",
            "",
        ]
    excl = results.excluded
    L += [
        "Exclusions: "
        + (
            "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(excl.items()))
            or "none recorded"
        )
        + ". Covariates dropped as constant or collinear: "
        + (", ".join(f"`{c}`" for c in results.dropped_columns) or "none")
        + ".",
        "",
    ]
    return L + embeds.table("data")


def _brackets_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    real = real_cells(results)
    L = ["## Certified rank brackets", ""]
    if real.empty:
        return L + ["No real-checkpoint cell was bracketed.", ""]
    closed = real["closed"].astype(bool).mean()
    L += [
        f"Every bracket [lo, hi] is backed by re-checkable witnesses; "
        f"{closed:.0%} of the real cells are closed (lo = hi).",
        "",
    ]
    L += embeds.table("brackets") + embeds.table("brackets_temperature")
    for name in ("rank_vs_eps", "bracket_width", "bracket_width_by_family", "rank_vs_temperature"):
        L += embeds.figure(name)
    return L


def _comparisons_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    """The confirmatory comparisons, by checkpoint when asked, and the power of each."""
    L = ["## Nested comparisons (confirmatory)", ""]
    if results.comparison is None:
        why = results.skipped.get("comparison", "no reason was recorded")
        L += [f"The comparison has not run: {why}.", ""]
    else:
        c0 = results.comparison.iloc[0]
        L += [
            f"Fits on training cells, metrics on {format_value(c0['n_cells'])} held-out cells "
            f"of {format_value(c0['n_heads'])} held-out heads. Effect = base loss minus rich "
            "loss (positive = the richer model predicts better).",
            "",
        ]
    L += ["Each hypothesis's decision, in words: *Answer* at the top.", ""]
    if "comparisons" in embeds.tab:
        L += embeds.table("comparisons", _compact_comparison(embeds.tab["comparisons"].frame))
    L += embeds.figure("forest")
    primary = _stated(results.design.primary_metric)
    where = (results, embeds.tab, embeds.table_files, embeds.out_dir)
    name = METRIC_NAMES.get(primary, primary)
    if results.by_checkpoint_asked:
        L += effects_by_section(*where, what="checkpoint", metric_name=name)
        L += embeds.figure("predicted_vs_bracket")
    if results.by_length_asked:
        L += effects_by_section(*where, what="length", metric_name=name)
    L += method3_sections(*where)
    return L + power_section(results) + embeds.table("power")


def _sensitivity_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    L = ["### Sensitivity", ""]
    if results.comparison_ols is None:
        why = results.skipped.get("comparison_ols", "no reason was recorded")
        L += [f"The OLS-on-midpoints refit has not run: {why}.", ""]
    else:
        L += ["OLS on interval midpoints (same pairs, same held-out cells):", ""]
        L += [f"- {s}" for s in hypothesis_sentences(results, estimator="ols")] + [""]
        frame = _compact_comparison(embeds.tab["comparisons_ols"].frame)
        L += embeds.table("comparisons_ols", frame)
    return L + embeds.table("lr_tests")


def _head_level_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    L = ["## Head-level analysis (exploratory)", ""]
    if results.head_level is None:
        why = results.skipped.get("head_level", "no reason was recorded")
        return L + [f"The head-level analysis has not run: {why}.", ""]
    return L + _head_level_lines(results.head_level_meta) + embeds.table("head_level")


def _descriptors_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    L = ["## Descriptors", ""]
    cols, per_r = summary_columns(results.features)
    if not cols:
        return L + ["No descriptor column.", ""]
    L += [
        f"{len(cols)} descriptor columns over {len(results.features)} real cells"
        + (f"; {len(per_r)} per-r diagnostic column(s) left out of the summary" if per_r else "")
        + ".",
        "",
    ]
    return L + embeds.table("descriptors") + embeds.figure("descriptors_vs_midpoint")


def _synthetic_section(results: StudyResults, embeds: _Embeds) -> list[str]:
    syn = synthetic_cells(results)
    if syn.empty:
        return []
    return [
        "## Synthetic families (exploratory)",
        "",
        f"{len(syn)} cells of {_listing(sorted(syn['checkpoint'].unique()))}; never part "
        "of the confirmatory models.",
        "",
        *embeds.figure("synthetic_rank_vs_beta"),
        *embeds.table("synthetic"),
    ]


def _lock_section(prov: Mapping[str, Any]) -> list[str]:
    """The lock's status (demoted hypotheses, when it was locked, when this run's store
    first held outcomes, the code) and every amendment: the report's last section."""
    status = lock_status_lines(prov)
    section = amendments_section(prov, first_locked=not status)  # the time once, not twice
    return section[:2] + status + section[2:]


def _provenance_section(results: StudyResults) -> list[str]:
    L = ["## Provenance", ""]
    L += [f"- {k}: `{v}`" for k, v in provenance_lines(results.provenance, study=results.study)]
    return L + ["", "Full record: [provenance.json](provenance.json).", ""]


def render_report(
    results: StudyResults,
    *,
    out_dir: Path,
    tables: Sequence[Table],
    table_files: Mapping[str, Mapping[str, Path]],
    figures: Mapping[str, tuple[Path, Path | None, str]],
) -> str:
    """The text of ``report.md``: its sections in order, one function each.

    Parameters
    ----------
    results : StudyResults
    out_dir : Path, keyword-only
        The report folder; links are relative to it.
    tables : sequence of Table, keyword-only
        As built by :func:`analysis.report.study_tables.build_tables`.
    table_files : mapping, keyword-only
        Table name -> ``{"md": path, "csv": path, "tex": path}``.
    figures : mapping, keyword-only
        Figure name -> ``(png path, pdf path or None, caption)`` of the figures written.

    Examples
    --------
    >>> from analysis.report.results import BRACKET_COLUMNS as COLS
    >>> r = StudyResults("t", "Toy", ReportDesign(), pd.DataFrame(columns=COLS), pd.DataFrame())
    >>> text = render_report(r, out_dir=Path("."), tables=[], table_files={}, figures={})
    >>> [line for line in text.splitlines() if line.startswith("# ")]
    ['# Toy']
    """
    embeds = _Embeds(out_dir, tables, table_files, figures)
    L = _title_section(results)
    L += answer_section(results)
    L += _prespecified_section(results)
    L += _data_section(results, embeds)
    L += _brackets_section(results, embeds)
    L += _comparisons_section(results, embeds)
    L += _sensitivity_section(results, embeds)
    L += _head_level_section(results, embeds)
    L += _descriptors_section(results, embeds)
    L += _synthetic_section(results, embeds)
    L += _provenance_section(results)
    L += _lock_section(results.provenance)
    return "\n".join(L)
