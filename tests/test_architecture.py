"""Which way the imports point: the import-linter contracts in pyproject.toml hold.

The contracts (``[tool.importlinter]``) say, for example, that descriptors never import
the bracket engine or the comparison, that prereg only hashes the power file and never
imports the power simulation (which may import compare and prereg's design, and which the
study calls), that compare knows nothing of attention, that
brackets knows nothing of models, stores or studies, that the store imports no engine.
import-linter builds the import graph (grimp, function-level imports included) and checks
each forbidden edge, direct or not.

An import by string (``importlib.import_module``, ``__import__``, ``find_spec``) is an edge
no linter sees, so a scan of the package's syntax trees adds two rules: no module imports
another stage's module by a string, and the store imports nothing by a string at all (it
receives the bracket engine as an object, :class:`analysis.store.engine.BracketEngine`).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analysis"

#: The stage packages: an edge between two of them must be a visible import.
STAGES = (
    "sources",
    "store",
    "brackets",
    "descriptors",
    "prereg",
    "compare",
    "power",
    "report",
    "study",
    "laws",
    "atlas",
    "cli",
    "datasets",
)
#: Calls that import a module named by a string.
DYNAMIC_IMPORTS = ("import_module", "__import__", "find_spec")


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


@pytest.mark.parametrize(
    ("module", "edge"),
    [
        ("descriptors/native.py", "analysis.descriptors.native -> analysis.brackets"),
        ("store/run.py", "analysis.store.run -> analysis.brackets"),
        ("atlas/query.py", "analysis.atlas.query -> analysis.compare"),
        ("store/keys.py", "analysis.store.keys -> analysis.atlas"),
        # the hidden cycle of old: a family loader importing the checkpoints module back
        (
            "sources/families/gguf.py",
            "analysis.sources.families.gguf -> analysis.sources.checkpoints",
        ),
        ("prereg/lock.py", "analysis.prereg.lock -> analysis.power"),
        ("compare/nested.py", "analysis.compare.nested -> analysis.power"),
        ("power/simulate.py", "analysis.power.simulate -> analysis.study"),
        ("report/markdown.py", "analysis.report.markdown -> analysis.datasets"),
        ("study/core.py", "analysis.study.core -> analysis.datasets"),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path, module, edge):
    """The check is not vacuous: a descriptor block, or the store, importing the engine
    breaks it; so do the atlas importing the comparison, the store importing the atlas, a
    family loader importing the checkpoints module that reaches it, the lock importing the
    power simulation, the comparison importing it, the power simulation importing a study,
    and a stage importing the datasets of the documentation."""
    shutil.copytree(PACKAGE, tmp_path / "analysis", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "analysis" / module
    target = edge.rsplit(" -> ", 1)[1]
    path.write_text(path.read_text() + f"\nimport {target}  # noqa: E402,F401\n")
    res = _lint(tmp_path)
    assert res.returncode != 0
    assert edge in res.stdout


# -- imports by string -------------------------------------------------------------------


def _stage_of(name: str) -> str | None:
    """The stage package a dotted name (``analysis.brackets.io``, ``analysis.x:f``) is in."""
    parts = name.split(":")[0].split(".")
    if len(parts) >= 2 and parts[0] == "analysis" and parts[1] in STAGES:
        return parts[1]
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    """``id`` of every docstring node (a module's, class's or function's first string)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def string_import_violations(source: str, stage: str | None) -> list[str]:
    """What breaks the string-import rules in a module of ``stage`` (None: ground floor).

    A module that imports by string (:data:`DYNAMIC_IMPORTS`) may not name another stage's
    module in any string of its code: the string may be the argument itself or a constant
    that reaches it (``ENGINE = "analysis.brackets"`` ... ``import_module(engine)``). A
    module of the store may not import by string at all, nor import ``importlib``.
    """
    tree = ast.parse(source)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in DYNAMIC_IMPORTS)
            or (isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_IMPORTS)
        )
    ]
    found = []
    if stage == "store":
        found += [f"line {c.lineno}: imports by string" for c in calls]
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            found += [
                f"line {node.lineno}: imports {n}" for n in names if n.startswith("importlib")
            ]
    if calls:
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
            ):
                other = _stage_of(node.value)
                if other is not None and other != stage:
                    found.append(f"line {node.lineno}: names {node.value!r} and imports by string")
    return found


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        stage = rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in STAGES else None
        yield path, stage


#: The curated namespace (``analysis/__init__.py``) loads each verb on first use (PEP 562),
#: so it names the defining modules as strings; it sits above every stage and no stage
#: imports it for a verb. tests/test_namespace.py checks each name resolves to the object
#: its module defines.
LAZY_NAMESPACE = PACKAGE / "__init__.py"


def test_no_stage_is_imported_by_a_string():
    broken = {
        str(path.relative_to(ROOT)): found
        for path, stage in _modules()
        if path != LAZY_NAMESPACE
        and (found := string_import_violations(path.read_text(encoding="utf-8"), stage))
    }
    assert not broken, broken


@pytest.mark.parametrize(
    ("source", "stage"),
    [
        # the store's old route to the engine
        (
            'import importlib\nENGINE = "analysis.brackets"\nm = importlib.import_module(ENGINE)\n',
            "store",
        ),
        ('import importlib\nm = importlib.import_module("analysis.compare.nested")\n', "report"),
        ('m = __import__("analysis.brackets")\n', "descriptors"),
        ('from importlib.util import find_spec\nok = find_spec("analysis.store")\n', "cli"),
        ("import importlib\n", "store"),
    ],
)
def test_a_string_import_is_caught(source, stage):
    """The scan is not vacuous: each of these breaks a rule."""
    assert string_import_violations(source, stage)


def test_a_stage_may_import_its_own_modules_by_string():
    """The registry's built-in blocks, the cli's command groups: no edge between stages."""
    source = 'import importlib\nfor m in ("analysis.cli.store",):\n    importlib.import_module(m)\n'
    assert string_import_violations(source, "cli") == []
    assert (
        string_import_violations('"""See analysis.brackets."""\nimport importlib\n', "laws") == []
    )


def _circles(package: str) -> list[tuple[str, str]]:
    """Pairs ``(a, b)`` of modules below ``package`` where ``a`` imports ``b`` (directly,
    at any depth of the file: function-level imports count) and ``b`` reaches ``a``."""
    import grimp  # import-linter's own graph builder

    graph = grimp.build_graph(package)
    found = []
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            if a != b and graph.chain_exists(importer=b, imported=a):
                found.append((a, b))
    return found


def test_no_module_imports_itself_back():
    """No import circle between two modules of the package (a lazy import inside a function
    hides a circle from Python but not from a reader, and the seams are meant to point one
    way). Package ``__init__`` modules re-export their children, so edges into and out of
    them are left out."""
    packages = {m for m in _package_modules() if m.endswith(".__init__")}
    circles = [
        (a, b)
        for a, b in _circles("analysis")
        if f"{a}.__init__" not in packages and f"{b}.__init__" not in packages
    ]
    assert circles == []


def _package_modules() -> list[str]:
    return [
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in p.parts
    ]
