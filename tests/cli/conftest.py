"""Small inputs for command-line tests: a .npy stack, extract files, a synthetic store."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.attention import softmax64
from tests.fixtures.stacks import write_stack


@pytest.fixture
def stack(tmp_path):
    """Three 20 x 20 attention matrices in one .npy (float32)."""
    return write_stack(tmp_path / "A.npy")


def write_extract(path, *, seed: int = 0, layers: int = 1, heads: int = 2, length: int = 10):
    """An ``attnrank extract`` file of random queries and keys (causal mask)."""
    from analysis.sources.files import Extraction, save_extraction

    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((layers, heads, length, 4)).astype(np.float32)
    K = rng.standard_normal((layers, heads, length, 4)).astype(np.float32)
    scale = np.full((layers, heads), 0.5)
    mask = np.tril(np.ones((length, length), dtype=bool))
    A = softmax64(Q, K, scale, mask).astype(np.float32)
    tokens = np.asarray([f"t{i}" for i in range(length)])
    meta = {"checkpoint": "random", "input_id": f"seed:{seed}", "parity_max_abs": 0.0}
    save_extraction(Extraction(A, Q, K, scale, mask, True, tokens, meta), path)
    return path


@pytest.fixture
def extracts(tmp_path):
    """Two extract files (2 heads each, L = 10)."""
    return [write_extract(tmp_path / f"x{s}.npz", seed=s) for s in (0, 1)]


@pytest.fixture
def synthetic_store(tmp_path):
    """A store of three synthetic 12 x 12 matrices (closed; its path)."""
    from analysis.sources import synthetic
    from analysis.store import Store

    with Store(tmp_path / "synthetic", create=True) as store:
        for i in range(3):
            store.add_synthetic(synthetic.spherical(12, 3, 4.0, random_state=i), head=i)
    return tmp_path / "synthetic"
