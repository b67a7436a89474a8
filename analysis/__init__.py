"""attnrank: certified max-row-l1 approximation ranks of softmax attention.

The curated namespace (as ``statsmodels.api``): the verbs a user calls, one import away::

    >>> import analysis
    >>> A = analysis.datasets.example_head(seed=0)      # an 8 x 8 attention matrix
    >>> lo, hi = analysis.profile_matrix(A, eps=[0.1]).bracket(0.1)
    >>> lo <= hi
    True

Stages (each a subpackage with one job): ``sources`` -> ``store`` -> ``brackets`` ->
``descriptors`` -> ``prereg`` / ``power`` / ``compare`` -> ``study`` -> ``report``, and
``atlas`` on top. Names load on first use, so ``import analysis`` stays cheap (torch,
transformers and the statistics stack are imported by the stage that needs them).

``__version__`` is the package's version (the only one: ``pyproject.toml`` reads it from
here). The bracket engine's search has versions of its own, named as such:
``ENGINE_VERSIONS`` and ``LATEST_ENGINE``; a design pins one.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_NAMES: dict[str, str] = {
    # brackets: certified [lo, hi] and their witnesses
    "profile_matrix": "analysis.brackets.search",
    "profile_matrices": "analysis.brackets.search",
    "certified_upper_error": "analysis.brackets.verify",
    "certified_lower_margin": "analysis.brackets.verify",
    "verify_result": "analysis.brackets.results",
    "check_bracket_engine": "analysis.brackets.check",
    "ENGINE_VERSIONS": "analysis.brackets.versions",
    "LATEST_ENGINE": "analysis.brackets.versions",
    # sources and the store
    "extract": "analysis.sources.extract",
    "load_extraction": "analysis.sources.files",
    "Store": "analysis.store.store",
    # descriptors
    "describe_matrix": "analysis.descriptors.describe",
    "build_registry": "analysis.descriptors.builtin",
    "check_block": "analysis.descriptors.check",
    # preregistration
    "load_design": "analysis.prereg.design",
    "lock_design": "analysis.prereg.lock",
    "check_design": "analysis.prereg.lock",
    # power of a design's decisions
    "PowerSpec": "analysis.power.spec",
    "validate_comparison": "analysis.power.error_rates",
    # comparisons
    "ComparisonSpec": "analysis.compare.spec",
    "NestedComparison": "analysis.compare.nested",
    "HeadLevelSpec": "analysis.compare.headlevel",
    "HeadLevelAnalysis": "analysis.compare.headlevel",
    # where work runs: processes, a dask cluster, a device (never what it computes)
    "RunSpec": "analysis.executor",
    "open_executor": "analysis.executor",
    # studies, reports, the atlas
    "run_study": "analysis.study.runner",
    "load_results": "analysis.study.results",
    "build_report": "analysis.report.build",
    "build_atlas": "analysis.atlas.build",
    "load_atlas": "analysis.atlas.io",
}

__all__ = ["__version__", "datasets", *sorted(_NAMES)]


def __getattr__(name: str) -> Any:
    if name == "datasets":
        return importlib.import_module("analysis.datasets")
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
