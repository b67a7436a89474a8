"""A plugin block that raises in a study's descriptor stage (issue 52, item 10).

``attnrank run`` gives one line naming the block, the stored matrix and the cell, not a
traceback, and the descriptor files of the matrices described before it stay stored.
"""

from __future__ import annotations

import pytest

from analysis.study import StudyOptions, run_study
from analysis.validation import ParameterError
from tests.study.conftest import make_study, plugin_design_text, small_design_text

pytestmark = pytest.mark.slow

# Passes the lock's probe (L = 6) and the small design's length-12 heads; raises on the
# length-16 heads only.
PLUGIN = '''
from analysis.descriptors import descriptor


@descriptor("study_fragile", needs=("A",))
def study_fragile(cell):
    """Mean attention paid to the first key; fails on 16-token heads."""
    if cell.A.shape[0] == 16:
        raise ZeroDivisionError("sixteen tokens")
    return {"first_col_mass": float(cell.A[:, 0].mean())}


BLOCKS = [study_fragile]
'''


@pytest.fixture
def design(tmp_path):
    (tmp_path / "study_plugin_fragile.py").write_text(PLUGIN, encoding="utf-8")
    text = plugin_design_text(small_design_text(), "study_plugin_fragile", "study_fragile")
    return make_study(tmp_path, "fragile", text)


def _check_error(exc: ParameterError, tmp_path) -> None:
    msg = str(exc)
    assert exc.name == "blocks" and "\n" not in msg, msg
    assert "block 'study_fragile'" in msg and "ZeroDivisionError: sixteen tokens" in msg, msg
    assert "matrix " in msg and "t=1, eps=0.1" in msg, msg
    kept = list((tmp_path / "data").rglob("features/*.csv"))
    assert kept, "no descriptor file of the matrices finished before the failure was kept"


def test_a_raising_plugin_is_one_line_and_keeps_finished_descriptors(design, tmp_path):
    from tests.fixtures import fake_engine

    opts = StudyOptions(stop_after="descriptors", progress=False)
    with pytest.raises(ParameterError) as info:
        run_study(design, engine=fake_engine, say=lambda _: None, options=opts)
    _check_error(info.value, tmp_path)


def test_a_raising_plugin_in_a_worker_is_one_line(design, tmp_path):
    """The same from a pool of two workers (the error comes back pickled)."""
    from analysis.store import Store
    from analysis.study.core import Study
    from analysis.study.describe import descriptor_stage
    from tests.fixtures import fake_engine

    opts = StudyOptions(stop_after="brackets", progress=False)
    run_study(design, engine=fake_engine, say=lambda _: None, options=opts)
    study = Study.open(design)
    with Store(study.paths.store) as store:
        keys = [m.key for m in store.matrices() if m.source != "synthetic"]
        with pytest.raises(ParameterError) as info:
            descriptor_stage(study, store, keys, workers=2, progress=False)
    _check_error(info.value, tmp_path)
