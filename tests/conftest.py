"""Shared fixtures: known-answer matrices and seeded generators."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def registry_restored():
    """A test may register descriptor blocks (a docstring or a guide example): put the
    registry back as it was."""
    from analysis.descriptors import registry

    table = getattr(registry, "_REGISTRY", None)
    saved = None if table is None else dict(table)
    yield
    if saved is not None:
        table.clear()
        table.update(saved)
