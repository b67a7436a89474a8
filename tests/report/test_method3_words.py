"""Method 3 in the report: each sentence names what was tested and the decision word; the
words are explained once; secondary tables say unadjusted. Method 2 reads as before."""

from dataclasses import replace
from pathlib import Path

import pandas as pd

from analysis.compare.decisions import DECISION_MEANINGS, DECISIONS
from analysis.datasets import example_report_design, example_study_results, example_table_results
from analysis.report.design import ReportDesign
from analysis.report.design import ReportHypothesis as H
from analysis.report.markdown import hypothesis_sentences, render_report
from analysis.report.study_tables import build_tables


def _row(**extra):
    row = {
        "pair": "M0<M1", "metric": "interval_sq_loss", "base_model": "M0", "rich_model": "M1",
        "base_value": 0.00456, "rich_value": 0.01171, "effect": -0.00715, "ci_low": -0.02238,
        "ci_high": 0.00092, "p_value": 0.9, "p_holm": 1.0, "adds_information": False,
        "status": "ok", "n_cells": 2916, "n_heads": 108, "sesoi": 0.001, "sesoi_share": 0.22, "equivalence": "pre-specified",
        "equivalence_p": 0.65, "equivalence_p_holm": 0.65, "non_superiority_p": 0.0175,
        "non_superiority_p_holm": 0.035, "decision": "non-superior only",
    }  # fmt: skip
    row.update(extra)
    return pd.DataFrame([row])


def _results(frame, **design):
    d = example_report_design(
        family=(("M0", "M1"),),
        primary_metric="interval_sq_loss",
        alpha=0.05,
        ci_level=0.95,
        **design,
    )
    return example_study_results(design=d, comparison=frame)


def test_a_method3_sentence_names_both_sesoi_tests_and_the_decision():
    (s,) = hypothesis_sentences(_results(_row()))
    assert "TOST (-SESOI < effect < +SESOI) Holm p = 0.65" in s
    assert "non-superiority (effect < +SESOI) Holm p = 0.035" in s
    assert s.endswith("→ **non-superior only**.")
    assert "equivalent" not in s


def test_a_harming_block_without_a_sesoi_reads_harms():
    frame = _row(
        ci_low=-0.03, ci_high=-0.01, sesoi=float("nan"), equivalence="none", decision="harms"
    )
    (s,) = hypothesis_sentences(_results(frame))
    assert s.endswith("Holm p = 1 → **harms**.")
    assert "SESOI" not in s


def test_the_method3_report_explains_each_decision_word_once():
    r = _results(_row())
    text = render_report(r, out_dir=Path("."), tables=[], table_files={}, figures={})
    for d in DECISIONS:
        assert text.count(f"- **{d}**: {DECISION_MEANINGS[d]}") == 1
    # a method-2 frame (no non_superiority_p) gets no such list
    old = _row(decision="equivalent within SESOI").drop(
        columns=["non_superiority_p", "non_superiority_p_holm"]
    )
    text2 = render_report(_results(old), out_dir=Path("."), tables=[], table_files={}, figures={})
    assert "Decisions (method 3" not in text2 and "**harms**" not in text2


def _table_results(method3: bool):
    design = ReportDesign(
        hypotheses=(H("H1", "confirmatory", "M0", "M1"),), by_checkpoint=True, by_length=True
    )
    comp = (
        _row() if method3 else _row().drop(columns=["non_superiority_p", "non_superiority_p_holm"])
    )
    secondary = {
        "hypothesis": ["H1"], "pair": ["M0<M1"], "metric": ["interval_sq_loss"],
        "held_out_heads": [3], "held_out_cells": [9], "base_value": [1.0], "rich_value": [0.9],
        "effect": [0.1], "ci_low": [0.0], "ci_high": [0.2], "p_one_sided": [0.04], "status": ["ok"],
    }  # fmt: skip
    lr = pd.DataFrame({"pair": ["M0<M1"], "statistic": [1.0], "df": [1], "p_value": [0.3]})
    return replace(
        example_table_results(),
        design=design,
        comparison=comp,
        by_checkpoint=pd.DataFrame({**secondary, "checkpoint": ["ck"]}),
        by_length=pd.DataFrame({**secondary, "length": [8]}),
        lr_tests=lr,
    )


def test_method3_tables_label_secondary_rows_unadjusted_and_method2_titles_stay():
    t3 = {t.name: t for t in build_tables(_table_results(True))}
    t2 = {t.name: t for t in build_tables(_table_results(False))}
    assert t3["by_checkpoint"].title.endswith("; unadjusted CIs and p)")
    assert t3["by_length"].title.endswith("; unadjusted CIs and p)")
    assert "cluster-robust Wald" in t3["lr_tests"].title
    assert "non-superior only" in t3["comparisons"].note
    assert list(t3["comparisons"].frame.columns[-2:]) == [
        "non_superiority_p",
        "non_superiority_p_holm",
    ]
    # method 2: the titles and notes the locked reports were written with
    assert t2["by_checkpoint"].title == "Effects by checkpoint (secondary, outside the Holm family)"
    assert t2["by_length"].title == "Effects by length (secondary, outside the Holm family)"
    assert t2["lr_tests"].title == "In-sample likelihood-ratio tests (secondary; training cells)"
    assert (
        t2["lr_tests"].note
        == "Ignores clustering, so anti-conservative; reported as pre-specified."
    )
    assert "non_superiority_p" not in t2["comparisons"].frame.columns
    assert "harms" not in t2["comparisons"].note
