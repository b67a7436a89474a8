"""The Parameters sections of the public API agree with the signatures (numpydoc).

numpydoc's validator (:func:`numpydoc.validate.validate`) runs on every function and class
that a module of :mod:`analysis` exports (``__all__``). Where the docstring has a
``Parameters`` section, none of :data:`CHECKS` may fail: every parameter is documented
(PR01), nothing else is (PR02), in the signature's order (PR03), each with a type (PR04)
written the numpydoc way (PR05, PR06). In the modules of :data:`COVERED` every public
callable that takes a parameter also has the section (PR01 with no section at all).

Exempt: the block modules analysis.descriptors.baseline, .native and .intrinsic, whose
source text is hashed into the block versions that locked designs record (a docstring
edit there is drift from those locks).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import analysis

numpydoc_validate = pytest.importorskip("numpydoc.validate")  # dev dependency
from numpydoc.docscrape import NumpyDocString  # noqa: E402

CHECKS = ("PR01", "PR02", "PR03", "PR04", "PR05", "PR06")
EXEMPT = {
    "analysis.descriptors.baseline": "source hashed into the locked block version",
    "analysis.descriptors.native": "source hashed into the locked block version",
    "analysis.descriptors.intrinsic": "source hashed into the locked block version",
}

#: Modules whose every public callable with parameters has a ``Parameters`` section.
COVERED = (
    "analysis.brackets.engine",
    "analysis.compare.equivalence",
    "analysis.compare.sesoi_sensitivity",
    "analysis.datasets._designs",
    "analysis.datasets._matrices",
    "analysis.datasets._results",
    "analysis.datasets._tables",
    "analysis.descriptors.builtin",
    "analysis.descriptors.native2",
    "analysis.descriptors.versions",
    "analysis.hashing",
    "analysis.report.secondary_sections",
)


def _modules() -> list[str]:
    names = [analysis.__name__]
    for info in pkgutil.walk_packages(analysis.__path__, prefix="analysis."):
        if info.name.rsplit(".", 1)[-1] != "__main__" and info.name not in EXEMPT:
            names.append(info.name)
    return sorted(names)


def _public(name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(name)
    return [
        (f"{name}.{attr}", obj)
        for attr in getattr(module, "__all__", ())
        if (inspect.isfunction(obj := getattr(module, attr)) or inspect.isclass(obj))
        and obj.__module__ == name
    ]


PUBLIC = [item for name in _modules() for item in _public(name)]


def _has_parameters(obj: object) -> bool:
    return bool(NumpyDocString(inspect.getdoc(obj) or "")["Parameters"])


def _takes_parameters(obj: object) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return any(p not in ("self", "cls") for p in params)


def parameter_errors(qualname: str, checks: tuple[str, ...] = CHECKS) -> list[str]:
    """numpydoc's ``code: message`` for each check of ``checks`` that ``qualname`` fails."""
    result = numpydoc_validate.validate(qualname)
    return [f"{code}: {msg}" for code, msg in result["errors"] if code in checks]


def test_the_scan_sees_the_public_api():
    names = {q for q, _ in PUBLIC}
    assert {
        "analysis.brackets.verify.certified_upper_error",
        "analysis.datasets._matrices.example_head",
    } <= names
    assert not any(q.rsplit(".", 1)[0] in EXEMPT for q in names)  # native2 is not native
    assert set(COVERED) <= set(_modules())


def test_documented_parameters_match_the_signatures():
    broken = {
        qualname: errors
        for qualname, obj in PUBLIC
        if _has_parameters(obj) and (errors := parameter_errors(qualname))
    }
    assert broken == {}


@pytest.mark.parametrize("name", COVERED)
def test_every_public_callable_documents_its_parameters(name):
    lacking = [q for q, obj in _public(name) if _takes_parameters(obj) and not _has_parameters(obj)]
    assert lacking == []
