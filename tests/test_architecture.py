"""Which way the imports point: the import-linter contracts in pyproject.toml hold.

The contracts (``[tool.importlinter]``) say, for example, that descriptors never import
the bracket engine or the comparison, that compare knows nothing of attention, that
brackets knows nothing of models, stores or studies. import-linter builds the import graph
(grimp, function-level imports included) and checks each forbidden edge, direct or not.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def import_linter():
    """Fail, never skip, without import-linter: this is the only check of the import rules."""
    if importlib.util.find_spec("importlinter") is None:
        pytest.fail(
            "import-linter is not installed: it is a dev dependency (pip install -e '.[dev]') "
            "and tests/test_architecture.py is the only check of the import rules",
            pytrace=False,
        )


def _lint(root: Path) -> subprocess.CompletedProcess:
    """Run ``lint-imports`` on the package under ``root`` (its own pyproject.toml)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())",
            str(root / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_directions_hold():
    res = _lint(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "BROKEN" not in res.stdout


def test_a_forbidden_import_is_caught(tmp_path):
    """The check is not vacuous: a descriptor block that imports the engine breaks it."""
    shutil.copytree(
        ROOT / "analysis", tmp_path / "analysis", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    native = tmp_path / "analysis" / "descriptors" / "native.py"
    native.write_text(native.read_text() + "\nimport analysis.brackets  # noqa: E402,F401\n")
    res = _lint(tmp_path)
    assert res.returncode != 0
    assert "analysis.descriptors.native -> analysis.brackets" in res.stdout
