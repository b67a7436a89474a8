"""The package's doctests run the standard way: ``pytest --doctest-modules analysis``.

Each example runs in a fresh temporary folder (an example that writes a design file or a
store writes it there, never into the checkout), with NumPy's default print options; the
option flags are ``doctest_optionflags`` in pyproject.toml. This file sits outside the
package, so the wheel does not ship it.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _doctest_in_a_temporary_folder(request: pytest.FixtureRequest) -> None:
    """Run each doctest item (and nothing else) in its own ``tmp_path``."""
    if not isinstance(getattr(request.node, "dtest", None), doctest.DocTest):
        yield
        return
    request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))
    with np.printoptions(legacy=False):
        yield
