"""A stand-in for ``analysis.brackets``'s profile API, for store tests only.

It is NOT a bracket engine: ``bracket(eps)`` returns the numbers of singular values above
``eps`` and ``eps / 4`` as (lo, hi), just a deterministic function of the matrix and the eps
grid, with a ``previous`` that is recorded so extension can be checked.
``FAIL_AFTER`` / ``SLEEP`` make it raise or slow down, to interrupt runs.
"""

from __future__ import annotations

import time

import numpy as np

CALLS: list[dict] = []
FAIL_AFTER: int | None = None
SLEEP: float = 0.0


class Profile:
    def __init__(self, sv: list[float], eps: list[float], history: list[list[float]]):
        self.sv = sv
        self.eps = eps
        self.history = history

    def bracket(self, eps: float) -> tuple[int, int]:
        sv = np.asarray(self.sv)
        return int((sv > eps).sum()), max(int((sv > eps / 4).sum()), 1)

    def to_dict(self, witnesses: bool = True, arrays: str = "lists") -> dict:
        return {"sv": self.sv, "eps": self.eps, "history": self.history}

    @classmethod
    def from_dict(cls, d: dict) -> Profile:
        return cls(d["sv"], d["eps"], d["history"])


def profile_matrix(A, eps=(0.1,), effort="default", previous=None):
    if FAIL_AFTER is not None and len(CALLS) >= FAIL_AFTER:
        raise RuntimeError("fake engine: interrupted on purpose")
    if SLEEP:
        time.sleep(SLEEP)
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or not np.allclose(A.sum(1), 1.0):
        raise ValueError("fake engine: A must be a row-stochastic matrix")
    CALLS.append({"shape": A.shape, "eps": tuple(eps), "previous": previous is not None})
    sv = np.linalg.svd(A, compute_uv=False)
    history = ([] if previous is None else previous.history) + [list(eps)]
    return Profile([float(s) for s in sv], list(eps), history)
