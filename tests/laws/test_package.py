"""The package's public surface: what benchmarks, docs and the CLI import."""

import ast
import importlib
from pathlib import Path

import analysis.laws as laws
from analysis.cli import GROUPS

ROOT = Path(__file__).resolve().parents[2]


def _laws_imports() -> dict[tuple[str, str], list[str]]:
    """``(module, name) -> [files]`` for every ``from analysis.laws... import name`` in the
    scripts of ``benchmarks/`` and ``experiments/``."""
    found: dict[tuple[str, str], list[str]] = {}
    for folder in ("benchmarks", "experiments"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "analysis.laws"
                ):
                    for alias in node.names:
                        key = (node.module, alias.name)
                        found.setdefault(key, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_public_name_resolves():
    assert all(hasattr(laws, name) for name in laws.__all__)
    for mod in ("sweep", "fit", "theory", "render"):
        m = importlib.import_module(f"analysis.laws.{mod}")
        assert all(hasattr(m, name) for name in m.__all__), mod


def test_names_the_benchmarks_use():
    """Every name the scripts import from ``analysis.laws`` exists and is public there."""
    found = _laws_imports()
    # the scan is not vacuous: bench_laws.py and the experiments import these
    assert {("analysis.laws", "run_laws"), ("analysis.laws", "make_config")} <= set(found)
    missing, private = [], []
    for (module, name), files in sorted(found.items()):
        m = importlib.import_module(module)
        if not hasattr(m, name):
            missing.append(f"{module}.{name} ({', '.join(files)})")
        elif name not in getattr(m, "__all__", ()):
            private.append(f"{module}.{name} ({', '.join(files)})")
    assert missing == [], missing
    assert private == [], private
    # what the scripts do with them
    assert callable(laws.run_laws) and callable(laws.make_config)
    assert callable(laws.harmonic_rank)
    assert 0 < laws.QUICK_TOLERANCE < 1
    assert set(laws.DEFAULT_BETAS) == set(laws.FAMILIES)


def test_the_subcommand_module_is_registered():
    assert "analysis.cli.laws" in GROUPS
    assert hasattr(importlib.import_module("analysis.cli.laws"), "register")
