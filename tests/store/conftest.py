"""Store fixtures: a fake profile engine (tests only) and small stores."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fake_engine  # noqa: E402


@pytest.fixture
def engine():
    fake_engine.CALLS.clear()
    fake_engine.FAIL_AFTER = None
    fake_engine.SLEEP = 0.0
    yield fake_engine
    fake_engine.CALLS.clear()
    fake_engine.FAIL_AFTER = None
    fake_engine.SLEEP = 0.0


def fill_store(path, *, n_matrices: int = 6):
    """A store with synthetic matrices (spherical replicates and planted blocks)."""
    from analysis.sources import synthetic
    from analysis.store import Store

    store = Store(path, create=True)
    for i in range(n_matrices - 2):
        store.add_synthetic(synthetic.spherical(12, 3, 4.0, random_state=i), head=i)
    store.add_synthetic(synthetic.permuted_blocks(12, 3, random_state=0))
    store.add_synthetic(synthetic.mixed_blocks(12, 3, 0.2, random_state=0))
    return store


@pytest.fixture
def filled_store(tmp_path):
    store = fill_store(tmp_path / "store")
    yield store
    store.close()
