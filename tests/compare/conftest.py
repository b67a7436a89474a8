"""Fixtures for the compare tests."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.fixtures.compare_tables import make_table


@pytest.fixture
def table(rng) -> pd.DataFrame:
    return make_table(rng, native_effect=0.5)
