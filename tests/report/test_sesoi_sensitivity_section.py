"""The SESOI sensitivity in the report: a method-3 table and section labelled a
sensitivity; a method-2 study (no stored table) has neither."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from analysis.compare.sesoi_sensitivity import SESOI_SENSITIVITY_COLUMNS
from analysis.datasets import example_report_design, example_table_results
from analysis.report import build_report
from analysis.report.study_tables import build_tables

SECTION = "### SESOI sensitivity (half and twice the declared SESOI)"


def _comparison(method3: bool) -> pd.DataFrame:
    row = {
        "pair": "M0<M1", "metric": "interval_sq_loss", "base_model": "M0", "rich_model": "M1",
        "base_value": 0.00456, "rich_value": 0.01171, "effect": -0.00715, "ci_low": -0.02238,
        "ci_high": 0.00092, "p_value": 0.9, "p_holm": 1.0, "adds_information": False,
        "status": "ok", "n_cells": 2916, "n_heads": 108, "sesoi": 0.001, "sesoi_share": 0.22,
        "equivalence": "pre-specified", "equivalence_p": 0.65, "equivalence_p_holm": 0.65,
        "decision": "non-superior only",
    }  # fmt: skip
    if method3:
        row.update(non_superiority_p=0.0175, non_superiority_p_holm=0.035)
    return pd.DataFrame([row])


def _sensitivity() -> pd.DataFrame:
    """M0<M1 on the secondary metric first (the table puts the primary first), then on
    the primary, where the decision changes with the margin."""
    rows = []
    for metric, decisions in (
        ("interval_loglik", ["inconclusive"] * 3),
        ("interval_sq_loss", ["inconclusive", "non-superior only", "equivalent within SESOI"]),
    ):
        for factor, decision in zip((0.5, 1.0, 2.0), decisions, strict=True):
            rows.append(
                {
                    "pair": "M0<M1", "base_model": "M0", "rich_model": "M1", "metric": metric,
                    "metric_role": "primary" if metric == "interval_sq_loss" else "secondary",
                    "status": "ok", "sesoi_factor": factor, "sesoi": 0.001 * factor,
                    "ci_low": -0.02238, "ci_high": 0.00092, "p_holm": 1.0,
                    "equivalence_p": 0.9 / (1 + 20 * factor),
                    "equivalence_p_holm": 0.9 / (1 + 20 * factor),
                    "non_superiority_p": 0.1 / (1 + 5 * factor),
                    "non_superiority_p_holm": 0.1 / (1 + 5 * factor), "decision": decision,
                }
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(SESOI_SENSITIVITY_COLUMNS))


def _results(method3: bool):
    design = example_report_design(
        family=(("M0", "M1"),), primary_metric="interval_sq_loss", alpha=0.05, ci_level=0.95
    )
    return replace(
        example_table_results(),
        design=design,
        comparison=_comparison(method3),
        sesoi_sensitivity=_sensitivity() if method3 else None,
    )


def test_method3_report_has_the_table_and_a_sensitivity_section(tmp_path):
    results = _results(True)
    table = {t.name: t for t in build_tables(results)}["sesoi_sensitivity"]
    assert "sensitivity, not confirmatory" in table.title
    # every stored row, primary metric first, values copied
    assert table.frame["metric"].tolist() == ["interval_sq_loss"] * 3 + ["interval_loglik"] * 3
    stored = results.sesoi_sensitivity
    pd.testing.assert_frame_equal(
        table.frame.reset_index(drop=True),
        pd.concat([stored.iloc[3:], stored.iloc[:3]], ignore_index=True),
    )
    files = build_report(results, tmp_path, figure_formats=("png",))
    assert set(files.tables["sesoi_sensitivity"]) == {"md", "csv", "tex"}
    written = pd.read_csv(files.tables["sesoi_sensitivity"]["csv"], comment="#")
    assert tuple(written.columns) == SESOI_SENSITIVITY_COLUMNS and len(written) == 6
    text = files.report.read_text(encoding="utf-8")
    assert text.count(SECTION) == 1
    section = text.split(SECTION)[1].split("\n## ")[0].split("\n### ")[0]
    assert "A sensitivity analysis, not confirmatory" in section
    assert "[CSV](tables/sesoi_sensitivity.csv)" in section
    assert (
        "**M0<M1**: the decision depends on the SESOI (x0.5: inconclusive; "
        "x1: non-superior only; x2: equivalent within SESOI)."
    ) in section
    assert "interval_loglik" not in section  # only the primary metric is embedded
    assert section.count("| equivalent within SESOI |") == 1


def test_a_decision_that_holds_at_every_margin_says_so(tmp_path):
    results = _results(True)
    results = replace(results, sesoi_sensitivity=results.sesoi_sensitivity.assign(decision="harms"))
    text = build_report(results, tmp_path, figure_formats=("png",)).report.read_text("utf-8")
    assert "**M0<M1**: harms at every margin." in text


def test_method2_report_has_neither_table_nor_section(tmp_path):
    results = _results(False)
    assert results.sesoi_sensitivity is None
    assert "sesoi_sensitivity" not in {t.name for t in build_tables(results)}
    files = build_report(results, tmp_path, figure_formats=("png",))
    assert "sesoi_sensitivity" not in files.tables
    assert "SESOI sensitivity" not in files.report.read_text(encoding="utf-8")
    assert not (tmp_path / "tables" / "sesoi_sensitivity.csv").exists()
