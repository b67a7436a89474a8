"""The curated namespace: ``from analysis import profile_matrix, ...`` (as statsmodels.api)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import analysis

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", analysis.__all__)
def test_every_public_name_resolves(name):
    value = getattr(analysis, name)
    assert value is not None
    if name not in ("__version__", "datasets", "ENGINE_VERSIONS", "LATEST_ENGINE"):
        assert callable(value), name
        # the namespace re-exports the defining object, not a wrapper
        assert value.__module__.startswith("analysis."), name


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'profile_matrixx'"):
        analysis.profile_matrixx  # noqa: B018


def test_dir_lists_the_curated_names():
    assert set(analysis.__all__) <= set(dir(analysis))


def test_import_is_cheap():
    # the stages load on first use: importing the package loads no torch or transformers
    code = "import sys, analysis; print(sorted({'torch', 'transformers', 'pandas'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_one_version_for_the_package():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in meta["project"]
    assert "version" in meta["project"]["dynamic"]
    attr = meta["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "analysis.__version__"
    import analysis.brackets

    assert not hasattr(analysis.brackets, "__version__")  # engine versions are named as such
    assert analysis.LATEST_ENGINE in analysis.ENGINE_VERSIONS
