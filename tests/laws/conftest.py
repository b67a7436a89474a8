"""Shared fixtures of the laws tests."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.laws.theory import harmonic_rank


@pytest.fixture
def harmonic_table() -> pd.DataFrame:
    """A bracket table (d = 3, eps 0.1, betas 1-8, two seeds) built around the harmonic
    count itself, so every bracket contains it."""
    rows = []
    for beta in (1.0, 2.0, 4.0, 8.0):
        r = harmonic_rank(3, beta, 0.1)
        for seed in (0, 1):
            rows.append(
                {
                    "d": 3,
                    "eps": 0.1,
                    "n": 512,
                    "beta": beta,
                    "seed": seed,
                    "lower": r - seed,
                    "upper": r + 2,
                }
            )
    return pd.DataFrame(rows)
