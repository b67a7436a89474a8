"""One run reads the design, its lock and the input index once each, however many stages."""

from __future__ import annotations

import pathlib
from collections import Counter

import pytest

from analysis.prereg.lock import lock_path
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study

pytestmark = pytest.mark.slow

QUIET = {"say": lambda _: None}


@pytest.fixture
def file_reads(monkeypatch):
    """Every ``Path.read_text`` of the run, counted per resolved path."""
    reads: Counter[pathlib.Path] = Counter()
    real = pathlib.Path.read_text

    def counting(self, *args, **kwargs):
        reads[self.resolve()] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", counting)
    return reads


def _shared_reads(reads: Counter, design: pathlib.Path) -> dict[str, int]:
    paths = study_paths(design)
    return {
        "design": reads[design.resolve()],
        "lock": reads[lock_path(design).resolve()],
        "extractions.json": reads[paths.extractions_file.resolve()],
    }


def test_a_run_reads_design_lock_and_index_once(tmp_path, file_reads):
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    file_reads.clear()  # writing, drawing and locking the design read it
    run = run_study(design, engine=fake_engine, **QUIET, options=StudyOptions(progress=False))
    assert run.report_files  # every stage ran, compare and report included
    # extractions.json does not exist before the first run: the index is never read
    assert _shared_reads(file_reads, design) == {
        "design": 1,
        "lock": 1,
        "extractions.json": 0,
    }
    file_reads.clear()
    run_study(
        design, engine=fake_engine, **QUIET, options=StudyOptions(progress=False)
    )  # resumes: everything is stored
    assert _shared_reads(file_reads, design) == {
        "design": 1,
        "lock": 1,
        "extractions.json": 1,
    }


def test_stop_after_extract_reads_once(tmp_path, file_reads):
    from tests.fixtures import fake_engine

    design = make_study(tmp_path)
    run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="extract"),
    )
    file_reads.clear()
    run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="brackets"),
    )
    assert _shared_reads(file_reads, design) == {
        "design": 1,
        "lock": 1,
        "extractions.json": 1,
    }
