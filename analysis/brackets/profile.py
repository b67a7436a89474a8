"""Certified rank profiles: best verified upper errors ``e_k`` and lower margins ``mu_m``.

A profile belongs to one matrix. Brackets for any eps are read off it:
``hi(eps) = min{k : e_k <= eps}``, ``lo(eps) = max{m : mu_m > eps}`` (0 if none), so they
are monotone in eps by construction. Every stored value is a certified number from
:mod:`analysis.brackets.verify`; a candidate that fails verification is discarded.

This module holds the profile and its witnesses (reading brackets, serialization,
re-verification); :mod:`analysis.brackets.search` computes profiles.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.attention import check_attention
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import check_choice, check_eps_grid

PROFILE_FORMAT = 1


@dataclass(frozen=True)
class UpperWitness:
    """Rank-k witness ``B = U W^T`` with certified error ``error``; ``U`` ``[M, k]``, ``W`` ``[N, k]``."""

    rank: int
    error: float
    method: str
    U: np.ndarray = field(repr=False)
    W: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class LowerWitness:
    """Size-m witness ``(R, Y)`` with certified margin ``margin``; ``R`` ``[N, m]``, ``Y`` ``[m, M]``."""

    size: int
    margin: float
    method: str
    R: np.ndarray = field(repr=False)
    Y: np.ndarray = field(repr=False)


@dataclass
class Profile:
    """Best certified witnesses of one matrix, by rank (upper) and size (lower).

    Attributes
    ----------
    shape : (M, N)
    upper : dict rank -> UpperWitness
    lower : dict size -> LowerWitness
    eps_targets : the eps values refinement aimed at (sorted)
    effort : how it was computed (the search is deterministic: no seed)
    stats : timings (seconds) and the method behind each targeted end
    """

    shape: tuple[int, int]
    upper: dict[int, UpperWitness]
    lower: dict[int, LowerWitness]
    eps_targets: tuple[float, ...]
    effort: str
    stats: dict[str, Any] = field(default_factory=dict)

    # -- reading brackets ---------------------------------------------------------
    def upper_end(self, eps: float) -> UpperWitness:
        """The least-rank stored witness with certified error <= eps.

        Where none reaches eps, the identity witness ``B = A`` (``U = A, W = I``, or
        ``U = I, W = A^T`` when ``M < N``) of rank ``min(M, N)`` and error exactly 0: it is
        derived from ``A`` itself, so it is not stored (``U`` and ``W`` are None here;
        :func:`identity_witness` builds them).
        """
        ok = [w for w in self.upper.values() if w.error <= eps]
        if not ok:
            return UpperWitness(min(self.shape), 0.0, "identity", None, None)
        return min(ok, key=lambda w: w.rank)

    def lower_end(self, eps: float) -> LowerWitness | None:
        ok = [w for w in self.lower.values() if w.margin > eps]
        return max(ok, key=lambda w: w.size) if ok else None

    def bracket(self, eps: float) -> tuple[int, int]:
        """Certified ``(lo, hi)`` with ``lo <= r_eps(A) <= hi``."""
        (eps,) = check_eps_grid([eps])
        hi = self.upper_end(eps).rank
        low = self.lower_end(eps)
        lo = 0 if low is None else low.size
        if hi == 0:
            lo = 0
        if lo > hi:  # both certified: impossible unless the verifier is wrong
            raise RuntimeError(f"inconsistent certificates at eps={eps}: lo={lo} > hi={hi}")
        return lo, hi

    def brackets(self, eps: Sequence[float]) -> list[dict[str, Any]]:
        out = []
        for e in check_eps_grid(eps):
            lo, hi = self.bracket(e)
            out.append({"eps": e, "lower": lo, "upper": hi})
        return out

    def errors(self) -> np.ndarray:
        """``e_k`` for k = 0..min(M, N): running minimum of stored certified errors (inf if none)."""
        K = min(self.shape)
        e = np.full(K + 1, np.inf)
        for w in self.upper.values():
            e[w.rank] = min(e[w.rank], w.error)
        return np.minimum.accumulate(e)

    def margins(self) -> np.ndarray:
        """``mu_m`` for m = 0..min(M, N): best stored margin at size >= m (-inf if none)."""
        K = min(self.shape)
        mu = np.full(K + 2, -np.inf)
        for w in self.lower.values():
            mu[w.size] = max(mu[w.size], w.margin)
        return np.maximum.accumulate(mu[::-1])[::-1][: K + 1]

    # -- serialization --------------------------------------------------------------
    def to_dict(self, *, witnesses: bool = True, arrays: str = "lists") -> dict[str, Any]:
        """JSON-able form.

        ``arrays="lists"`` writes witness matrices as nested lists of floats;
        ``arrays="float32-base64"`` as base64 of their float32 bytes (little endian, row
        major), about four times smaller and still exact, because every stored witness is
        rounded to float32 *before* it is certified.
        """
        check_choice("arrays", arrays, ("lists", "float32-base64"))

        def enc(a: np.ndarray) -> Any:
            if arrays == "lists":
                return a.tolist()
            return base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")

        def up(w: UpperWitness) -> dict[str, Any]:
            d = {"rank": w.rank, "error": w.error, "method": w.method}
            if witnesses:
                d |= {"U": enc(w.U), "W": enc(w.W)}
            return d

        def lo(w: LowerWitness) -> dict[str, Any]:
            d = {"size": w.size, "margin": w.margin, "method": w.method}
            if witnesses:
                d |= {"R": enc(w.R), "Y": enc(w.Y)}
            return d

        return {
            "format": PROFILE_FORMAT,
            "arrays": arrays,
            "shape": list(self.shape),
            "eps_targets": list(self.eps_targets),
            "effort": self.effort,
            "stats": self.stats,
            "upper": [up(self.upper[k]) for k in sorted(self.upper)],
            "lower": [lo(self.lower[m]) for m in sorted(self.lower)],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        """Restore a profile written by :meth:`to_dict` (with witnesses)."""
        M, N = d["shape"]
        b64 = d.get("arrays", "lists") == "float32-base64"

        def arr(x, rows, cols):
            if b64:
                a = np.frombuffer(base64.b64decode(x), dtype="<f4").astype(np.float64)
            else:
                a = np.asarray(x, dtype=np.float64)
            return a.reshape(rows, cols)

        upper = {
            int(w["rank"]): UpperWitness(
                int(w["rank"]),
                float(w["error"]),
                w["method"],
                arr(w["U"], M, w["rank"]),
                arr(w["W"], N, w["rank"]),
            )
            for w in d["upper"]
        }
        lower = {
            int(w["size"]): LowerWitness(
                int(w["size"]),
                float(w["margin"]),
                w["method"],
                arr(w["R"], N, w["size"]),
                arr(w["Y"], w["size"], M),
            )
            for w in d["lower"]
        }
        return cls(
            (M, N),
            upper,
            lower,
            tuple(d["eps_targets"]),
            d["effort"],
            dict(d.get("stats", {})),
        )

    def witness_arrays(self, w: UpperWitness, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, W)`` of an upper witness, built from ``A`` for the identity witness."""
        return identity_witness(A) if w.U is None else (w.U, w.W)

    def reverify(self, A: np.ndarray) -> list[str]:
        """Re-check every stored witness against ``A``; return a description of each failure."""
        A = check_attention(A)[0]
        fails = []
        for w in self.upper.values():
            if not certified_upper_error(A, *self.witness_arrays(w, A)) <= w.error:
                fails.append(f"upper rank {w.rank}")
        for w in self.lower.values():
            if not certified_lower_margin(A, w.R, w.Y) >= w.margin:
                fails.append(f"lower size {w.size}")
        return fails


def identity_witness(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``B = A`` as a rank-``min(M, N)`` factorization: ``(A, I)`` or ``(I, A^T)``."""
    M, N = A.shape
    return (A.copy(), np.eye(N)) if N <= M else (np.eye(M), A.T.copy())
