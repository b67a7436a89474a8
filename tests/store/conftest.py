"""Store fixtures: the stand-in profile engine (tests only) and small stores."""

from __future__ import annotations

import pytest

from tests.fixtures import fake_engine
from tests.fixtures.stores import fill_store


@pytest.fixture
def engine():
    fake_engine.CALLS.clear()
    fake_engine.FAIL_AFTER = None
    fake_engine.SLEEP = 0.0
    yield fake_engine
    fake_engine.CALLS.clear()
    fake_engine.FAIL_AFTER = None
    fake_engine.SLEEP = 0.0


@pytest.fixture
def filled_store(tmp_path):
    store = fill_store(tmp_path / "store")
    yield store
    store.close()
