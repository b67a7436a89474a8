"""experiments/ stands alone: no script imports benchmarks/ or writes under benchmarks/out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "experiments").glob("*.py"))


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_an_experiment_imports_nothing_of_benchmarks(path):
    bad = sorted(m for m in _imports(path) if m == "benchmarks" or m.startswith("benchmarks."))
    assert bad == [], f"{path.name} imports {bad}"
    assert "benchmarks/out" not in path.read_text(), f"{path.name} names benchmarks/out"


def test_the_scan_sees_the_scripts():
    assert len(SCRIPTS) > 20 and "experiments.common" in _imports(
        ROOT / "experiments" / "families.py"
    )
