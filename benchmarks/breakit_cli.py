"""Helpers of the break-it replay (:mod:`benchmarks.breakit`): run ``attnrank`` in a
subprocess with this checkout first on the path, and write small inputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "preregistration" / "offline-minilm.toml"

#: ``(status, why)``: status is "held", "failed" or "not replayed".
Outcome = tuple[str, str]


def cli(work: Path, *args: str, timeout: float = 120, env: dict | None = None):
    """Run ``attnrank ARGS`` in ``work``; ``(rc, stdout, stderr)`` (rc None: timed out)."""
    path = os.pathsep.join([str(ROOT), str(work), os.environ.get("PYTHONPATH", "")])
    full = {**os.environ, "PYTHONPATH": path, **(env or {})}
    cmd = [sys.executable, "-m", "analysis.cli", *args]
    try:
        p = subprocess.run(cmd, cwd=work, env=full, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout:g} s"
    return p.returncode, p.stdout, p.stderr


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return lines[-1][:150] if lines else "(no stderr)"


def _no_traceback(rc, err: str, what: str) -> Outcome:
    if "Traceback" in err:
        return "failed", f"{what}: traceback ({_one_line(err)})"
    if rc == 0:
        return "failed", f"{what}: accepted (exit 0)"
    return "held", f"{what}: exit {rc}, {_one_line(err)}"


def write_stack(path: Path, n: int = 12, count: int = 2) -> Path:
    """``count`` random ``n x n`` attention matrices (rows summing to 1) as float32 .npy."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(count, n, n)) * 2.0
    A = np.exp(X - X.max(axis=2, keepdims=True))
    np.save(path, (A / A.sum(axis=2, keepdims=True)).astype(np.float32))
    return path


def write_extract(path: Path, *, seed: int = 0, input_id: str | None = None, length: int = 10):
    """An ``attnrank extract`` file of random queries and keys (1 layer, 2 heads)."""
    from analysis.attention import softmax64
    from analysis.sources.files import Extraction, save_extraction

    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((1, 2, length, 4)).astype(np.float32)
    K = rng.standard_normal((1, 2, length, 4)).astype(np.float32)
    scale = np.full((1, 2), 0.5)
    mask = np.tril(np.ones((length, length), dtype=bool))
    A = softmax64(Q, K, scale, mask).astype(np.float32)
    tokens = np.asarray([f"t{i}" for i in range(length)])
    meta = {"checkpoint": "random", "input_id": input_id or f"seed:{seed}", "parity_max_abs": 0.0}
    save_extraction(Extraction(A, Q, K, scale, mask, True, tokens, meta), path)
    return path
