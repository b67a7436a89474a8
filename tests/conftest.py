"""Shared fixtures: known-answer matrices and seeded generators; the CI skip policy."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.skip_policy import SkipPolicy


def pytest_configure(config: pytest.Config) -> None:
    # In CI a skip for a reason other than a missing GPU or the optional Gemma weights
    # fails the session (tests/skip_policy.py).
    config.pluginmanager.register(SkipPolicy(), "attnrank-skip-policy")
    # Tests never download: a Hugging Face id not in the cache fails at once (the package
    # itself leaves the user's HF_HUB_OFFLINE alone; the online tests unset it themselves).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
