"""The report says each hypothesis's equivalence test where its row has a SESOI."""

import math

import pandas as pd
import pytest

from analysis.datasets import example_report_design, example_study_results
from analysis.report.markdown import hypothesis_sentences


def _row(**extra):
    row = {
        "pair": "M0<M1", "metric": "interval_sq_loss", "base_model": "M0", "rich_model": "M1",
        "base_value": 0.0137, "rich_value": 0.0136, "effect": 0.0001, "ci_low": -0.0002,
        "ci_high": 0.0004, "p_value": 0.2, "p_holm": 0.2, "adds_information": False,
        "status": "ok",
    }  # fmt: skip
    row.update(extra)
    return pd.DataFrame([row])


def _sentence(frame):
    design = example_report_design(
        family=(("M0", "M1"),), primary_metric="interval_sq_loss", alpha=0.05, ci_level=0.95
    )
    results = example_study_results(design=design, comparison=frame)
    (sentence,) = hypothesis_sentences(results)
    return sentence


def test_a_row_with_a_sesoi_gets_its_equivalence_decision():
    s = _sentence(
        _row(
            sesoi=0.000685, sesoi_share=0.05, equivalence_p=0.004, equivalence_p_holm=0.004,
            decision="equivalent within SESOI", equivalence="pre-specified",
        )
    )  # fmt: skip
    assert "no incremental information detected" in s
    assert "equivalence at the pre-specified SESOI 0.000685 (5% of M0's loss)" in s
    assert s.endswith("Holm p = 0.004 → equivalent within SESOI.")


@pytest.mark.parametrize("sesoi", [None, math.nan])
def test_a_row_without_a_sesoi_reads_as_before(sesoi):
    frame = _row() if sesoi is None else _row(sesoi=sesoi, decision="no SESOI")
    s = _sentence(frame)
    assert "equivalence" not in s and "SESOI" not in s
    assert s.endswith("(Holm p ≥ 0.05; the CI reaches 0 or below).")


def test_an_exploratory_sesoi_is_named_so():
    s = _sentence(
        _row(
            sesoi=0.0007, sesoi_share=float("nan"), equivalence_p=0.3,
            equivalence_p_holm=0.3, decision="inconclusive", equivalence="exploratory",
        )
    )  # fmt: skip
    assert "equivalence at the exploratory SESOI 0.0007: Holm p = 0.3 → inconclusive." in s
