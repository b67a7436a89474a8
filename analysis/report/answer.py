"""The answer at the top of ``report.md``: the decisions table and the plain words.

:func:`answer_section` opens the report (after the title): one row per design hypothesis
with its effect, CI, p values and decision (:func:`decisions_table`), one sentence per
hypothesis restating its primary-metric row (:func:`hypothesis_sentences`), and a
one-line pointer to the lock's amendments, which the report lists at its end. Every
number is read from the :class:`~analysis.report.results.StudyResults`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.compare.nested import FIT_FAILED
from analysis.report.decisions import (
    decision_meaning_lines,
    decision_words,
    equivalence_clause,
    is_method3,
    method3_clause,
)
from analysis.report.results import StudyResults
from analysis.report.tables import format_value, hypotheses, markdown_table
from analysis.report.tables import number_text as _n
from analysis.report.tables import p_text as _p

__all__ = [
    "METRIC_NAMES",
    "amendments_pointer",
    "answer_section",
    "decisions_table",
    "hypothesis_sentences",
]

METRIC_NAMES = {
    "interval_sq_loss": "interval squared loss",
    "interval_loglik": "interval log-likelihood",
    "spearman_mid": "Spearman correlation with midpoints",
}


def _stated(value: Any) -> str:
    return "not stated" if value is None else str(value)


def _fit_failure(row: Mapping[str, Any]) -> str:
    """Which of the pair's fits did not converge, with the optimizer's diagnostics."""
    bits = []
    for side in ("base", "rich"):
        if not bool(row.get(f"{side}_converged", True)):
            bits.append(
                f"{row[f'{side}_model']} did not converge "
                f"({format_value(row.get(f'{side}_iterations'))} iterations, gradient norm "
                f"{_n(row.get(f'{side}_grad_norm'))})"
            )
    return "; ".join(bits) or "a fit did not converge"


def hypothesis_sentences(results: StudyResults, *, estimator: str = "interval") -> list[str]:
    """One plain-English sentence per design hypothesis, from the primary-metric rows.

    Parameters
    ----------
    results : StudyResults
    estimator : {"interval", "ols"}, keyword-only
        Which comparison frame to read.

    Returns
    -------
    list of str
        E.g. ``"H1 (confirmatory; M0<M1): interval squared loss effect 0.012
        [−0.004, 0.031], one-sided p = 0.08, Holm p = 0.21 → no incremental information detected
        (Holm p ≥ 0.05; the CI reaches 0 or below)."`` A pair whose row has
        ``status == "fit failed"`` gets no numbers, only which fit did not converge:
        ``"H1 (confirmatory; M0<M1): fit failed: M1 did not converge (2200 iterations,
        gradient norm 0.003); no result; the pair entered Holm with p = 1."``
        Under method 3 (a frame with ``non_superiority_p``) the sentence ends with the
        TOST and non-superiority p at the SESOI and the decision word
        (:func:`~analysis.report.decisions.method3_clause`).

    Examples
    --------
    >>> from analysis.datasets import example_report_design, example_study_results
    >>> hypothesis_sentences(example_study_results(design=example_report_design(), skipped={"comparison": "x"}))
    ['**H1** (confirmatory; M0<M1): not tested; the comparison has not run (x).']
    """
    design = results.design
    frame = results.comparison if estimator == "interval" else results.comparison_ols
    primary = design.primary_metric
    alpha, level = design.alpha, design.ci_level
    family = design.family_pairs
    key = "comparison" if estimator == "interval" else "comparison_ols"
    method3 = is_method3(frame)
    out = []
    for h in hypotheses(design):
        head = f"**{h['id']}** ({h['kind']}; {h['pair']})"
        if frame is None:
            why = results.skipped.get(key, "no reason was recorded")
            out.append(f"{head}: not tested; the comparison has not run ({why}).")
            continue
        rows = frame[(frame["pair"] == h["pair"]) & (frame["metric"] == primary)]
        if rows.empty:
            out.append(f"{head}: not among the compared pairs.")
            continue
        r = rows.iloc[0]
        in_family = h["pair"] in family if family else not math.isnan(float(r["p_holm"]))
        if r.get("status") == FIT_FAILED:
            holm_note = "; the pair entered Holm with p = 1" if in_family else ""
            out.append(f"{head}: fit failed: {_fit_failure(r)}; no result{holm_note}.")
            continue
        holm = f"Holm p = {_p(r['p_holm'])}" if in_family else "outside the Holm family"
        decided = (
            method3_clause(r, in_family=in_family)
            if method3
            else f" → {decision_words(r, alpha=alpha, in_family=in_family)}"
            f"{equivalence_clause(r, in_family=in_family)}"
        )
        out.append(
            f"{head}: {METRIC_NAMES.get(primary, _stated(primary))} {r['base_model']} "
            f"{_n(r['base_value'])} vs {r['rich_model']} {_n(r['rich_value'])}, effect "
            f"{_n(r['effect'])} [{_n(r['ci_low'])}, {_n(r['ci_high'])}] ({level:.0%} CI), "
            f"one-sided p = {_p(r['p_value'])}, {holm}{decided}."
        )
    return out


def _decision_text(row: Mapping[str, Any], *, alpha: float, in_family: bool, method3: bool) -> str:
    """The decision word(s) of one primary row, without the reasons or markdown."""
    if row.get("status") == FIT_FAILED:
        return "fit failed"
    if method3:
        return str(row.get("decision", ""))
    return decision_words(row, alpha=alpha, in_family=in_family).split(" (", 1)[0].strip("*")


def decisions_table(results: StudyResults) -> pd.DataFrame | None:
    """One row per design hypothesis: its primary-metric effect, CI, p values and decision.

    Returns
    -------
    pandas.DataFrame or None
        Columns ``hypothesis``, ``kind``, ``pair``, ``effect``, ``ci``, ``p``,
        ``p_holm``, ``decision``, as text (numbers as the report's sentences write them);
        None when the comparison has not run. ``kind`` says ``"(reported as
        exploratory)"`` after a hypothesis that an amendment made after outcomes demoted;
        a pair not compared, or whose fit failed, has ``–`` for its numbers.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.datasets import example_report_design, example_study_results
    >>> from analysis.report.answer import decisions_table
    >>> design = example_report_design(primary_metric="interval_sq_loss", alpha=0.05)
    >>> row = {"pair": "M0<M1", "metric": "interval_sq_loss", "effect": 0.02, "ci_low": 0.005,
    ...        "ci_high": 0.035, "p_value": 0.01, "p_holm": 0.02, "adds_information": True}
    >>> r = example_study_results(design=design, comparison=pd.DataFrame([row]))
    >>> print(decisions_table(r).to_string(index=False))
    hypothesis         kind  pair effect             ci    p p_holm         decision
            H1 confirmatory M0<M1   0.02 [0.005, 0.035] 0.01   0.02 adds information
    """
    design = results.design
    frame = results.comparison
    if frame is None:
        return None
    demoted = dict(results.provenance.get("exploratory_hypotheses") or {})
    family = design.family_pairs
    method3 = is_method3(frame)
    rows = []
    for h in hypotheses(design):
        # a study's report design already calls a demoted hypothesis exploratory
        said = "exploratory" in h["kind"]
        kind = h["kind"] + (" (reported as exploratory)" if h["id"] in demoted and not said else "")
        base = {"hypothesis": h["id"], "kind": kind, "pair": h["pair"]}
        sel = frame[(frame["pair"] == h["pair"]) & (frame["metric"] == design.primary_metric)]
        if sel.empty:
            rows.append(base | {"decision": "not compared"})
            continue
        r = sel.iloc[0]
        in_family = h["pair"] in family if family else not math.isnan(float(r["p_holm"]))
        failed = r.get("status") == FIT_FAILED
        rows.append(
            base
            | {
                "effect": "–" if failed else _n(r["effect"]),
                "ci": "–" if failed else f"[{_n(r['ci_low'])}, {_n(r['ci_high'])}]",
                "p": "–" if failed else _p(r["p_value"]),
                "p_holm": _p(r["p_holm"]) if in_family else "outside the Holm family",
                "decision": _decision_text(
                    r, alpha=design.alpha, in_family=in_family, method3=method3
                ),
            }
        )
    cols = ["hypothesis", "kind", "pair", "effect", "ci", "p", "p_holm", "decision"]
    return pd.DataFrame(rows).reindex(columns=cols).fillna("–")


def _plain_words(table: pd.DataFrame) -> str:
    """How many hypotheses of the Holm family add information, in one sentence."""
    family = table[~table["p_holm"].isin(["–", "outside the Holm family"])]
    adds = family.loc[family["decision"] == "adds information", "hypothesis"].tolist()
    text = (
        f"In plain words: {len(adds)} of the {len(family)} hypotheses in the Holm family "
        "add information about the certified rank of held-out heads"
        + (f" ({', '.join(adds)})" if adds else "")
        + "."
    )
    if table["decision"].str.startswith("no incremental information").any():
        text += ' "No incremental information detected" is not evidence of no effect.'
    return text


def amendments_pointer(prov: Mapping[str, Any]) -> list[str]:
    """One line pointing to the lock's amendments at the end of the report (or none).

    Examples
    --------
    >>> from analysis.report.answer import amendments_pointer
    >>> amendments_pointer({"amendments": [{}, {}],
    ...                     "exploratory_hypotheses": {"H2": "amended after outcomes"}})
    ['2 amendments of the lock, listed at the end (*Amendments*); H2 reported as exploratory there.', '']
    >>> amendments_pointer({"amendments": []}), amendments_pointer({})
    ([], [])
    """
    n = len(prov.get("amendments") or [])
    demoted = sorted(dict(prov.get("exploratory_hypotheses") or {}))
    if not n and not demoted:
        return []
    text = f"{n} amendment{'' if n == 1 else 's'} of the lock, listed at the end (*Amendments*)"
    if demoted:
        text += f"; {', '.join(demoted)} reported as exploratory there"
    return [text + ".", ""]


def answer_section(results: StudyResults) -> list[str]:
    """The "Answer" section: the decisions table, then one plain sentence per hypothesis.

    Examples
    --------
    >>> from analysis.datasets import example_report_design, example_study_results
    >>> from analysis.report.answer import answer_section
    >>> r = example_study_results(design=example_report_design(), skipped={"comparison": "x"})
    >>> answer_section(r)
    ['## Answer', '', '- **H1** (confirmatory; M0<M1): not tested; the comparison has not run (x).', '']
    """
    L = ["## Answer", ""]
    table = decisions_table(results)
    if table is not None and len(table):
        design = results.design
        primary = _stated(design.primary_metric)
        level = f"{design.ci_level:.0%} CI" if design.ci_level else "CI"
        L += [
            _plain_words(table),
            "",
            f"Primary metric: {METRIC_NAMES.get(primary, primary)} on held-out cells; effect "
            "= base loss minus rich loss (positive: the richer model predicts better), "
            f"{level}; p one-sided, Holm p within the Holm family.",
            "",
            markdown_table(table),
            "",
        ]
    L += [f"- {s}" for s in hypothesis_sentences(results)] + [""]
    if is_method3(results.comparison):
        L += ["Decisions (method 3; the first that applies):", "", *decision_meaning_lines(), ""]
    return L + amendments_pointer(results.provenance)
