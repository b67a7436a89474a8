"""The study runner: full run, re-run, resume after interruption, lock drift, checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.compare import FIT_FAILED, FIT_OK, RESULT_COLUMNS
from analysis.prereg.lock import PreregistrationError
from analysis.report import build_report
from analysis.study import StudyOptions, load_results, plan_study, run_study, study_paths
from analysis.validation import ParameterError
from tests.study.conftest import ROOT, make_study

pytestmark = pytest.mark.slow

QUIET = {"say": lambda _: None}


def test_full_run_writes_every_stage_and_the_report(finished_study):
    design, run = finished_study
    paths = study_paths(design)
    assert paths.store.is_dir() and paths.report.is_dir()
    # 12 heads x 2 lengths x 2 temperatures x 2 eps real cells, + 2 synthetic x 2 eps
    res = load_results(design)
    real = res.brackets[res.brackets["source"] == "checkpoint"]
    assert len(real) == 12 * 2 * 2 * 2
    assert (res.brackets["source"] == "synthetic").sum() == 4
    assert (real["lo"] <= real["hi"]).all() and (real["lo"] >= 1).all()
    assert real["held_out"].sum() == 3 * 2 * 2 * 2  # round(0.25 * 12) heads held out
    assert set(real["cell_key"]) <= set(res.features["cell_key"])
    comp = res.comparison
    assert comp is not None and set(comp["pair"]) >= {"M0<M1", "M0<M2", "M0<M3"}
    lock = json.loads(Path(str(design) + ".lock").read_text())
    assert (comp["lock_sha256"] == lock["lock_sha256"]).all()
    # the stored comparison carries each pair's fit diagnostics and status
    assert tuple(comp.columns) == RESULT_COLUMNS
    assert comp["status"].isin([FIT_OK, FIT_FAILED]).all()
    assert (comp["status"] == FIT_OK).eq(comp["base_converged"] & comp["rich_converged"]).all()
    for table in ("brackets", "comparisons", "head_level", "descriptors"):
        for ext in ("md", "csv", "tex"):
            assert (paths.report / "tables" / f"{table}.{ext}").is_file()
    for fig in ("rank_vs_eps", "bracket_width", "rank_vs_temperature", "descriptors_vs_midpoint"):
        for ext in ("png", "pdf"):
            assert (paths.report / "figures" / f"{fig}.{ext}").stat().st_size > 1000
    assert (paths.report / "figures" / "forest.png").is_file()
    prov = json.loads((paths.report / "provenance.json").read_text())
    assert prov["design_sha256"] == lock["design_sha256"]
    assert prov["lock_sha256"] == lock["lock_sha256"]
    assert {"extract", "brackets", "descriptors", "compare"} <= set(prov["stage_seconds_total"])
    text = (paths.report / "report.md").read_text()
    for hyp in ("H1", "H2", "H3"):
        assert hyp in text
    # one input per length: the head-level within-head question is skipped, said why,
    # and the across-head question answered on folds of whole training heads
    meta = res.head_level_meta
    assert "single input" in meta["skipped"]["within_head"]
    assert "whole training heads" in meta["folds"]["across_head"]
    hl = res.head_level.set_index("question")
    assert (hl.loc["within_head", "status"] == "skipped").all()
    assert (hl.loc["across_head", "status"] == "ok").all()
    assert "**Skipped**: every length has a single input" in text
    assert run.computed["brackets"] == 12 * 2 * 2 + 2


def test_rerun_computes_nothing_and_rerenders(study_copy):
    paths = study_paths(study_copy)
    before = (paths.results / "comparison.csv").stat().st_mtime_ns
    run = run_study(study_copy, **QUIET, options=StudyOptions(progress=False))
    assert run.computed == {"extract": 0, "brackets": 0, "descriptors": 0}
    assert (paths.results / "comparison.csv").stat().st_mtime_ns == before
    assert run.report_files and all(Path(p).is_file() for p in run.report_files)


def test_rerun_recomputes_and_reports_a_tampered_stored_profile(study_copy):
    """The bracket stage re-verifies every stored profile before the study reads its
    brackets: a tampered one is recomputed (the same brackets) and the count is said."""
    from analysis.store.store import Store
    from tests.fixtures.tamper import edit_store_profile, scale_upper

    paths = study_paths(study_copy)
    before = load_results(study_copy).brackets
    with Store(paths.store) as st:
        p = [p for p in st.profiles() if p.temperature == 2.0][0]
    hi = p.brackets[0.1][1]
    edit_store_profile(paths.store, p.matrix_key, 2.0, p.version, lambda d: scale_upper(d, hi, 1.5))
    said: list[str] = []
    run = run_study(study_copy, say=said.append, options=StudyOptions(progress=False))
    assert run.computed == {"extract": 0, "brackets": 1, "descriptors": 0}
    assert "brackets: 1 stored profile failed re-verification and was recomputed" in said
    pd.testing.assert_frame_equal(load_results(study_copy).brackets, before)
    said.clear()
    run = run_study(study_copy, say=said.append, options=StudyOptions(progress=False))
    assert run.computed["brackets"] == 0
    assert not any("re-verification" in line for line in said)


def test_cross_fitted_calibration_is_run_and_reported(study_copy):
    """An amended ``[descriptors] calibration`` refits the comparison cross-fitted by head
    and the result, compare.json, provenance.json and report.md say so."""
    import re

    from analysis.cli import main
    from analysis.prereg import load_design

    paths = study_paths(study_copy)
    before = pd.read_csv(paths.results / "comparison.csv")
    # the stored comparison ran with the calibration its design states (the shipped
    # designs' first free text reads as the legacy in-sample calibration)
    k = load_design(study_copy).calibration_folds
    assert (before["calibration"] == ("in-sample" if k is None else "cross-fitted")).all()
    assert (
        before["calibration_folds"].isna().all()
        if k is None
        else (before.calibration_folds == k).all()
    )
    text = study_copy.read_text(encoding="utf-8")
    study_copy.write_text(
        re.sub(r"(?m)^calibration = .*$", 'calibration = "cross-fitted by head, 3 folds"', text),
        encoding="utf-8",
    )
    assert main(["prereg", "amend", str(study_copy), "--reason", "cross-fit by head"]) == 0
    run_study(study_copy, **QUIET, options=StudyOptions(progress=False))
    comp = pd.read_csv(paths.results / "comparison.csv")
    assert tuple(comp.columns) == RESULT_COLUMNS
    assert (comp["calibration"] == "cross-fitted").all()
    assert (comp["calibration_folds"] == 3).all() and (comp["calibration_seed"] == 20261202).all()
    assert not np.allclose(comp["base_value"], before["base_value"], rtol=0, atol=0)
    record = json.loads((paths.results / "compare.json").read_text())
    assert record["calibration"] == {
        "mode": "cross-fitted",
        "folds": 3,
        "seed": 20261202,
        "description": "cross-fitted by head, 3 folds (seed 20261202)",
    }
    assert "calibration of calibrated blocks: cross-fitted by head, 3 folds" in record["summary"]
    prov = json.loads((paths.report / "provenance.json").read_text())
    assert prov["calibration"] == record["calibration"]
    report = (paths.report / "report.md").read_text()
    assert "Calibration: cross-fitted by head, 3 folds (seed 20261202): " in report


def test_report_builds_from_the_stored_study(finished_study, tmp_path):
    design, _ = finished_study
    res = load_results(design)
    files = build_report(res, tmp_path / "again")
    assert files.report.is_file()
    text = files.report.read_text()
    assert "M0" in text and "held-out" in text.lower()
    back = pd.read_csv(files.tables["brackets"]["csv"], comment="#")
    assert len(back) > 0


def test_lock_drift_stops_before_any_work(tmp_path):
    design = make_study(tmp_path)
    design.write_text(design.read_text().replace("eps = [0.1, 0.2]", "eps = [0.1, 0.3]"))
    with pytest.raises(PreregistrationError, match="drifted"):
        run_study(design, **QUIET, options=StudyOptions(progress=False))
    assert not (tmp_path / "data").exists()


def test_missing_lock_refuses(tmp_path):
    design = make_study(tmp_path)
    Path(str(design) + ".lock").unlink()
    with pytest.raises(PreregistrationError):
        run_study(design, **QUIET, options=StudyOptions(progress=False))
    assert not (tmp_path / "data").exists()


def test_resume_after_interrupted_brackets(tmp_path, monkeypatch):
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    # a real matrix's two temperatures are one task: the fourth fails midway
    finished = 3 * 2
    monkeypatch.setattr(fake_engine, "CALLS", [])
    monkeypatch.setattr(fake_engine, "FAIL_AFTER", finished + 1)
    with pytest.raises(RuntimeError, match="interrupted on purpose"):
        run_study(
            design,
            engine=fake_engine,
            **QUIET,
            options=StudyOptions(progress=False, stop_after="brackets"),
        )
    paths = study_paths(design)
    from analysis.store.store import Store

    with Store(paths.store) as st:
        assert len(list(st.profiles())) == finished  # finished tasks were committed
    monkeypatch.setattr(fake_engine, "FAIL_AFTER", None)
    monkeypatch.setattr(fake_engine, "CALLS", [])
    run = run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )
    total = 12 * 2 * 2 + 2
    assert run.computed["brackets"] == total - finished
    assert len(fake_engine.CALLS) == total - finished


def test_resume_after_interrupted_descriptors(tmp_path, monkeypatch):
    import analysis.study.describe as describe
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )
    real = describe.describe_task
    calls = []

    def flaky(*args):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(describe, "describe_task", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_study(
            design,
            engine=fake_engine,
            **QUIET,
            options=StudyOptions(progress=False, stop_after="descriptors"),
        )
    assert len(list(study_paths(design).features.glob("*.csv"))) == 5
    monkeypatch.setattr(describe, "describe_task", real)
    run = run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="descriptors"),
    )
    assert run.computed["descriptors"] == 24 - 5


def test_paper_design_lists_missing_checkpoints_at_once(tmp_path):
    design = ROOT / "preregistration" / "paper-checkpoints.toml"
    from analysis.prereg.design import load_design

    ids = plan_study(load_design(design)).checkpoints
    assert len(ids) == 5
    with pytest.raises(ParameterError) as err:
        run_study(design, root=tmp_path, **QUIET, options=StudyOptions(progress=False))
    msg = str(err.value)
    for ck in ids:
        assert ck in msg
    assert "--checkpoint ID=PATH" in msg
    assert not (tmp_path / "data").exists()


def test_unknown_checkpoint_mapping_is_named(tmp_path):
    design = make_study(tmp_path)
    with pytest.raises(ParameterError, match="checkpoint_paths"):
        run_study(
            design,
            checkpoint_paths={"nope/model": tmp_path},
            **QUIET,
            options=StudyOptions(progress=False),
        )


def test_workers_and_stop_after_are_validated(tmp_path):
    design = make_study(tmp_path)
    with pytest.raises(ParameterError, match="workers"):
        run_study(design, **QUIET, options=StudyOptions(progress=False, workers=0))
    with pytest.raises(ParameterError, match="stop_after"):
        run_study(design, **QUIET, options=StudyOptions(progress=False, stop_after="everything"))
