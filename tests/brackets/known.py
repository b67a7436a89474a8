"""Known-answer matrices of METHOD.md section 3, with rows and columns permuted."""

from __future__ import annotations

import numpy as np


def permute(A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return A[rng.permutation(A.shape[0])][:, rng.permutation(A.shape[1])]


def blocks(sizes: list[int], h: float = 0.0) -> np.ndarray:
    """``(1 - h) * block-diagonal uniform + h * uniform`` (square, blocks of ``sizes``)."""
    N = sum(sizes)
    B = np.zeros((N, N))
    s = 0
    for n in sizes:
        B[s : s + n, s : s + n] = 1.0 / n
        s += n
    return (1 - h) * B + h / N


def blocks_threshold(sizes: list[int], h: float) -> float:
    """``(1 - h) / (1 + h - 2 h n_min / N)``: below it ``r_eps = m`` exactly."""
    N = sum(sizes)
    return (1 - h) / (1 + h - 2 * h * min(sizes) / N)


def aI_bJ(N: int, a: float) -> np.ndarray:
    b = (1 - a) / N
    return a * np.eye(N) + b * np.ones((N, N))


def aI_bJ_threshold(N: int, a: float) -> float:
    """``1 / ||(aI + bJ)^-1||_inf`` with ``a + bN = 1``: ``a / (1 + (N - 2) b)``."""
    b = (1 - a) / N
    return a / (1 + (N - 2) * b)
