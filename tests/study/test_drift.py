"""Descriptor drift: a block edited after the lock stops the run until it is amended.

The lock records each design block's covariate names and a version (a hash of the block's
declaration and of its module's source text); ``attnrank run`` compares them with the
registry before any work, and the compare stage compares the descriptor table's covariate
columns with them.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main
from analysis.prereg.lock import PreregistrationError, deviations_path, lock_path
from analysis.study import StudyOptions, load_results, run_study, study_paths
from tests.study.conftest import plugin_design_text, small_design_text

pytestmark = pytest.mark.slow

QUIET = {"say": lambda _: None}

PLUGIN = '''
from analysis.descriptors import descriptor


@descriptor("{block}", needs=("A",), log_scale=("first_col_mass",))
def {block}(cell):
    """Attention paid to the first key."""
    return {{"first_col_mass": float(cell.A[:, 0].{reduce}()){extra}}}


BLOCKS = [{block}]
'''


@pytest.fixture
def plugin(tmp_path):
    """Write a plugin module into the study root; forget the module afterwards."""
    names: list[tuple[str, str]] = []

    def write(module: str, block: str, *, reduce: str = "mean", extra: str = "") -> Path:
        path = tmp_path / f"{module}.py"
        path.write_text(PLUGIN.format(block=block, reduce=reduce, extra=extra), encoding="utf-8")
        importlib.invalidate_caches()
        # a fresh process would import the edited file: forget the old module
        sys.modules.pop(module, None)
        names.append((module, block))
        return path

    yield write
    for module, _ in names:
        sys.modules.pop(module, None)


def _plugin_study(root: Path, module: str, block: str) -> Path:
    """Write, draw and lock (``attnrank prereg lock``) a small design using the plugin."""
    (root / "preregistration").mkdir(parents=True, exist_ok=True)
    path = root / "preregistration" / f"{block}.toml"
    path.write_text(plugin_design_text(small_design_text(), module, block), encoding="utf-8")
    assert main(["prereg", "draw", str(path)]) == 0
    assert main(["prereg", "lock", str(path)]) == 0
    return path


def test_edited_block_source_refuses_the_run_until_amended(tmp_path, plugin, capsys):
    from tests.fixtures import fake_engine

    plugin("drift_plugin_src", "drift_src")
    design = _plugin_study(tmp_path, "drift_plugin_src", "drift_src")
    # after the lock, the block is edited: same feature name, another quantity
    plugin("drift_plugin_src", "drift_src", reduce="max")
    with pytest.raises(PreregistrationError, match=r"block drift_src.*prereg amend") as err:
        run_study(design, **QUIET, options=StudyOptions(progress=False))
    assert "source changed" in str(err.value)
    assert not (tmp_path / "data").exists()  # refused before any outcome exists
    capsys.readouterr()
    assert main(["prereg", "check", str(design)]) == 1
    assert "block drift_src" in capsys.readouterr().err

    reason = "first-key mass is the max over queries"
    assert main(["prereg", "amend", str(design), "--reason", reason]) == 0
    assert main(["prereg", "check", str(design)]) == 0
    log = deviations_path(design).read_text(encoding="utf-8")
    assert reason in log and "block drift_src" in log
    run_study(
        design,
        engine=fake_engine,
        **QUIET,
        options=StudyOptions(progress=False, stop_after="compare"),
    )
    res = load_results(design, engine=fake_engine)
    assert (res.comparison["pair"] == "M0<M4").any()


def test_changed_feature_set_is_named(tmp_path, plugin, capsys):
    plugin("drift_plugin_set", "drift_set")
    design = _plugin_study(tmp_path, "drift_plugin_set", "drift_set")
    plugin("drift_plugin_set", "drift_set", extra=', "last_col_mass": float(cell.A[:, -1].mean())')
    with pytest.raises(PreregistrationError, match=r"block drift_set.*prereg amend") as err:
        run_study(design, **QUIET, options=StudyOptions(progress=False))
    assert "drift_set__last_col_mass" in str(err.value)
    assert not (tmp_path / "data").exists()
    assert main(["prereg", "amend", str(design), "--reason", "a second sink feature"]) == 0
    log = deviations_path(design).read_text(encoding="utf-8")
    assert "last_col_mass" in log
    lock = lock_path(design).read_text(encoding="utf-8")
    assert "drift_set__last_col_mass" in lock
    run_study(
        design, **QUIET, options=StudyOptions(progress=False, stop_after="extract")
    )  # the lock check passes again


def test_compare_refuses_a_descriptor_table_unlike_the_lock(study_copy):
    paths = study_paths(study_copy)
    before = (paths.results / "comparison.csv").stat().st_mtime_ns
    for f in paths.features.glob("*.csv"):
        df = pd.read_csv(f).drop(columns=["native__kappa"])
        extra = pd.DataFrame({"native__kappa_extra": [1.0] * len(df)})
        pd.concat([df, extra], axis=1).to_csv(f, index=False)
    with pytest.raises(PreregistrationError, match=r"block native.*prereg amend") as err:
        run_study(study_copy, **QUIET, options=StudyOptions(progress=False))
    assert "native__kappa_extra" in str(err.value) and "native__kappa" in str(err.value)
    assert (paths.results / "comparison.csv").stat().st_mtime_ns == before


def test_descriptors_of_another_block_version_are_recomputed(study_copy):
    # descriptors stored by another version of a block (e.g. before an amendment of it)
    # are not reused: the stage recomputes every file with the locked blocks
    paths = study_paths(study_copy)
    record = paths.features / "blocks.json"
    locked = json.loads(record.read_text(encoding="utf-8"))
    assert set(locked) == {"baseline", "native", "intrinsic", "baseline_plus"}
    record.write_text(json.dumps(dict(locked, native="0" * 64)), encoding="utf-8")
    n_files = len(list(paths.features.glob("*.csv")))
    run = run_study(
        study_copy, **QUIET, options=StudyOptions(progress=False, stop_after="descriptors")
    )
    assert run.computed["descriptors"] == n_files == 24
    assert json.loads(record.read_text(encoding="utf-8")) == locked
    run = run_study(
        study_copy, **QUIET, options=StudyOptions(progress=False, stop_after="descriptors")
    )
    assert run.computed["descriptors"] == 0
