"""The ``Examples`` sections of the package's docstrings run as tests (doctest).

Every module of :mod:`analysis` is imported (except the ``__main__`` entry points) and the
examples of its docstrings run in a temporary folder, so an example that stops matching its
code fails here. :data:`COVERED` lists the modules whose every public name (``__all__``) has
an ``Examples`` section; a public name added there without one fails
:func:`test_every_public_name_has_examples`.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import analysis

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
ROOT = Path(__file__).resolve().parents[1]


def _modules() -> list[str]:
    names = [analysis.__name__]
    for info in pkgutil.walk_packages(analysis.__path__, prefix="analysis."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            names.append(info.name)
    return sorted(names)


MODULES = _modules()

#: Modules whose every public name has an ``Examples`` section. Exempt: the block modules
#: analysis.descriptors.baseline, .native and .intrinsic. A block's version is the SHA-256
#: of its module's source text (analysis.descriptors.versions), recorded by the locked
#: designs that ship, so any edit there, a docstring included, is drift from those locks.
#: Also exempt: analysis.cli.*, whose interface is the command line (documented by each
#: command's ``--help`` and docs/guide), not its ``register`` / ``run_*`` functions.
COVERED = (
    "analysis.atlas.build",
    "analysis.atlas.io",
    "analysis.atlas.query",
    "analysis.atlas.schema",
    "analysis.atlas.verify",
    "analysis.atomic",
    "analysis.attention",
    "analysis.brackets.approximant_tables",
    "analysis.brackets.approximants",
    "analysis.brackets.builder",
    "analysis.brackets.engine",
    "analysis.brackets.io",
    "analysis.brackets.lower",
    "analysis.brackets.lower_ascent",
    "analysis.brackets.optim",
    "analysis.brackets.profile",
    "analysis.brackets.rowspan",
    "analysis.brackets.search",
    "analysis.brackets.settings",
    "analysis.brackets.stages",
    "analysis.brackets.upper",
    "analysis.brackets.verify",
    "analysis.brackets.versions",
    "analysis.compare.bootstrap",
    "analysis.compare.bycheckpoint",
    "analysis.compare.bylength",
    "analysis.compare.covariates",
    "analysis.compare.equivalence",
    "analysis.compare.estimators",
    "analysis.compare.headfolds",
    "analysis.compare.headlevel",
    "analysis.compare.meta",
    "analysis.compare.metrics",
    "analysis.compare.nested",
    "analysis.compare.nested_checks",
    "analysis.compare.offsets",
    "analysis.compare.refit",
    "analysis.compare.sesoi_sensitivity",
    "analysis.compare.spec",
    "analysis.datasets._designs",
    "analysis.datasets._matrices",
    "analysis.datasets._results",
    "analysis.datasets._tables",
    "analysis.descriptors.builtin",
    "analysis.descriptors.check",
    "analysis.descriptors.describe",
    "analysis.descriptors.kappa",
    "analysis.descriptors.native2",
    "analysis.descriptors.registry",
    "analysis.descriptors.versions",
    "analysis.executor",
    "analysis.hashing",
    "analysis.laws.fit",
    "analysis.laws.render",
    "analysis.laws.sweep",
    "analysis.laws.theory",
    "analysis.prereg.amend",
    "analysis.power.curve",
    "analysis.power.error_rates",
    "analysis.power.file",
    "analysis.power.inputs",
    "analysis.power.rates",
    "analysis.power.result",
    "analysis.power.simulate",
    "analysis.power.spec",
    "analysis.power.widths",
    "analysis.prereg.descriptor_versions",
    "analysis.prereg.design",
    "analysis.prereg.lock",
    "analysis.prereg.lock_diff",
    "analysis.prereg.options",
    "analysis.prereg.provenance",
    "analysis.prereg.schema",
    "analysis.prereg.sealing",
    "analysis.progress",
    "analysis.report.build",
    "analysis.report.comparison_tables",
    "analysis.report.decisions",
    "analysis.report.design",
    "analysis.report.evidence",
    "analysis.report.evidence_page",
    "analysis.report.family_figures",
    "analysis.report.figures",
    "analysis.report.forest",
    "analysis.report.markdown",
    "analysis.report.plotting",
    "analysis.report.power_section",
    "analysis.report.provenance",
    "analysis.report.results",
    "analysis.report.secondary_sections",
    "analysis.report.study_tables",
    "analysis.report.tables",
    "analysis.sources.checkpoints",
    "analysis.sources.audio",
    "analysis.sources.capture",
    "analysis.sources.extract",
    "analysis.sources.files",
    "analysis.sources.families.dinov2_onnx",
    "analysis.sources.families.e5_q4",
    "analysis.sources.families.gguf",
    "analysis.sources.families.mpnet",
    "analysis.sources.families.whisper_ct2",
    "analysis.sources.inputs",
    "analysis.sources.packaged",
    "analysis.sources.synthetic",
    "analysis.store.engine",
    "analysis.store.keys",
    "analysis.store.records",
    "analysis.store.run",
    "analysis.store.store",
    "analysis.study.comparison",
    "analysis.study.core",
    "analysis.study.describe",
    "analysis.study.paths",
    "analysis.study.plan",
    "analysis.study.power",
    "analysis.study.records",
    "analysis.study.reference",
    "analysis.study.results",
    "analysis.study.runner",
    "analysis.study.stages",
    "analysis.validation",
)


def _doctests(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, name) if t.examples]


def _runs(tests: list[doctest.DocTest]) -> bool:
    """Whether some example is not marked ``+SKIP``."""
    return any(not ex.options.get(doctest.SKIP) for t in tests for ex in t.examples)


WITH_EXAMPLES = [name for name in MODULES if _runs(_doctests(name))]


def test_the_walk_finds_the_package():
    assert "analysis.brackets.verify" in MODULES and "analysis.cli.__main__" not in MODULES
    assert set(COVERED) <= set(MODULES)
    assert set(COVERED) <= set(WITH_EXAMPLES)


#: Modules whose examples load packaged weights (seconds each): marked slow, still run in CI.
LOADS_WEIGHTS = "analysis.sources.families."


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n.startswith(LOADS_WEIGHTS) else n
        for n in WITH_EXAMPLES
    ],
)
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    with np.printoptions(legacy=False):
        for test in _doctests(name):
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def _public(module) -> list[tuple[str, object]]:
    """Functions and classes the module defines and exports (``__all__``, else no ``_``)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for attr in names:
        obj = getattr(module, attr)
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__:
            out.append((attr, obj))
    return out


def _has_examples(obj) -> bool:
    return re.search(r"^Examples\n-{8}", inspect.getdoc(obj) or "", re.MULTILINE) is not None


@pytest.mark.parametrize("name", COVERED)
def test_every_public_name_has_examples(name):
    module = importlib.import_module(name)
    public = _public(module)
    assert public, f"{name} defines no public function or class in __all__"
    lacking = [attr for attr, obj in public if not _has_examples(obj)]
    assert lacking == [], f"{name}: no Examples section in {lacking}"


@pytest.mark.slow
def test_the_standard_runner_passes_and_writes_nothing_into_the_checkout():
    """``pytest --doctest-modules`` as configured (``doctest_optionflags`` in pyproject.toml,
    the root conftest.py's temporary folder per example) passes examples whose output is
    wrapped (``population``) and that write design files, and leaves the checkout's top
    folder as it was."""
    before = sorted(p.name for p in ROOT.iterdir())
    modules = ["analysis/prereg/design.py", "analysis/datasets/_designs.py"]
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--doctest-modules", "-q", "-p", "no:cacheprovider"]
        + modules,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert " passed" in res.stdout
    assert sorted(p.name for p in ROOT.iterdir()) == before
