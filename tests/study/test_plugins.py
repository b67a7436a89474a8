"""A design naming a plugin block: the runner imports it and compares it like any block."""

from __future__ import annotations

import pytest

from analysis.study import StudyOptions, load_results, run_study
from analysis.validation import ParameterError
from tests.study.conftest import make_study, plugin_design_text, small_design_text

pytestmark = pytest.mark.slow

PLUGIN = '''
from analysis.descriptors import descriptor


@descriptor("study_sinks", needs=("A",), log_scale=("first_col_mass",))
def study_sinks(cell):
    """Mean attention paid to the first key."""
    return {"first_col_mass": float(cell.A[:, 0].mean())}


BLOCKS = [study_sinks]
'''


def test_plugin_block_is_described_and_compared(tmp_path):
    from tests.fixtures import fake_engine

    (tmp_path / "study_plugin_sinks.py").write_text(PLUGIN, encoding="utf-8")
    design = make_study(
        tmp_path,
        "plugged",
        plugin_design_text(small_design_text(), "study_plugin_sinks", "study_sinks"),
    )
    run_study(
        design,
        engine=fake_engine,
        say=print,
        options=StudyOptions(stop_after="compare", progress=False),
    )
    res = load_results(design, engine=fake_engine)
    assert "study_sinks__first_col_mass" in res.features.columns
    assert res.features["study_sinks__first_col_mass"].between(0, 1).all()
    rows = res.comparison[res.comparison["pair"] == "M0<M4"]
    assert len(rows) == 3  # one per metric, in the Holm family
    assert rows["p_holm"].notna().all()


def test_unregistered_plugin_block_is_named(tmp_path):
    (tmp_path / "study_plugin_empty.py").write_text("BLOCKS = []\n", encoding="utf-8")
    text = plugin_design_text(small_design_text(), "study_plugin_empty", "study_nowhere")
    design = make_study(tmp_path, "unplugged", text, blocks=False)
    with pytest.raises(ParameterError, match="models.M4"):
        run_study(design, say=lambda _: None, options=StudyOptions(progress=False))
    assert not (tmp_path / "data").exists()


def test_plugin_without_blocks_list_is_named(tmp_path):
    """A module whose blocks are decorated but not listed in BLOCKS declares nothing."""
    (tmp_path / "study_plugin_unlisted.py").write_text(
        PLUGIN.replace("BLOCKS = [study_sinks]", ""), encoding="utf-8"
    )
    text = plugin_design_text(small_design_text(), "study_plugin_unlisted", "study_sinks")
    design = make_study(tmp_path, "unlisted", text, blocks=False)
    with pytest.raises(ParameterError, match="BLOCKS") as info:
        run_study(design, say=lambda _: None, options=StudyOptions(progress=False))
    assert info.value.name == "module"
    assert not (tmp_path / "data").exists()
