"""Fixtures for descriptor tests: small extract-layout npz files built from random Q, K."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.attention import softmax64


def make_arrays(
    rng: np.random.Generator,
    *,
    n_layer: int = 1,
    n_head: int = 2,
    L: int = 16,
    d: int = 4,
    causal: bool = False,
) -> dict[str, np.ndarray]:
    """Random extract-layout arrays (float64 Q, K; A from softmax64 at t = 1)."""
    Q = rng.normal(size=(n_layer, n_head, L, d))
    K = rng.normal(size=(n_layer, n_head, L, d))
    scale = np.full((n_layer, n_head), 1.0 / np.sqrt(d))
    mask = np.tril(np.ones((L, L), dtype=bool)) if causal else np.ones((L, L), dtype=bool)
    A = softmax64(Q, K, scale, mask, 1.0)
    return {"A": A, "Q": Q, "K": K, "scale": scale, "mask": mask, "causal": np.array(causal)}


def write_npz(path: Path, arrays: dict[str, np.ndarray], *, dtype=np.float32) -> Path:
    """Write arrays as ``attnrank extract`` would (float32 arrays, tokens, meta)."""
    L = arrays["Q"].shape[2]
    out = {k: (v.astype(dtype) if k in ("A", "Q", "K", "scale") else v) for k, v in arrays.items()}
    if "A" in out and "Q" in out:
        out["A"] = softmax64(out["Q"], out["K"], out["scale"], out["mask"], 1.0).astype(dtype)
    out.setdefault("tokens", np.array([f"t{i}" for i in range(L)]))
    out.setdefault("meta", np.array(json.dumps({"checkpoint": "random", "length": L})))
    np.savez(path, **out)
    return path


@pytest.fixture(name="make_arrays")
def _make_arrays_fixture():
    return make_arrays


@pytest.fixture(name="write_npz")
def _write_npz_fixture():
    return write_npz
