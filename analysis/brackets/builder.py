"""The gate of the witness search: a :class:`Builder` keeps only certified witnesses.

Every candidate of every stage (:mod:`analysis.brackets.stages`) is offered to its matrix's
builder, which rounds it to float32 values, certifies it in float64
(:mod:`analysis.brackets.verify`) and keeps the best one per rank / size, so no stage can
make a bracket unsound.
"""

from __future__ import annotations

import numpy as np

from analysis.brackets.profile import (
    LowerWitness,
    Profile,
    UpperWitness,
    largest_lower,
    least_upper,
)
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError


def _f32(X: np.ndarray) -> np.ndarray:
    """Round to float32 values (held in float64): what gets certified is what is stored,
    and float32 storage of it is then exact."""
    return np.asarray(X, dtype=np.float32).astype(np.float64)


class Builder:
    """Collects candidate witnesses, keeping the best *certified* one per rank / size.

    Examples
    --------
    Before any witness, the ends are the implicit identity witness and no lower one;
    ``R = Y = I`` certifies margin 1 on the identity, so ``r_eps >= 4`` for eps < 1, and a
    candidate with no positive margin is rejected (counted, not kept):

    >>> import numpy as np
    >>> from analysis.brackets.builder import Builder
    >>> b = Builder(np.eye(4), None)
    >>> b.hi(0.5), b.lo(0.5)
    (4, 0)
    >>> b.offer_lower(np.eye(4), np.eye(4), "identity") > 0.99
    True
    >>> b.offer_lower(np.ones((4, 2)), np.eye(2, 4), "equal columns") <= 0, b.rejected
    (True, 1)
    >>> b.lo(0.5), sorted(b.lower)
    (4, [4])
    >>> bool(b.offer_upper(np.zeros((4, 0)), np.zeros((4, 0)), "zero") >= 1)  # rows of mass 1
    True
    """

    def __init__(self, A: np.ndarray, previous: Profile | None):
        self.A = A
        self.M, self.N = A.shape
        self.upper: dict[int, UpperWitness] = {}
        self.lower: dict[int, LowerWitness] = {}
        self.rejected = 0
        if previous is not None:
            if tuple(previous.shape) != A.shape:
                raise ParameterError("previous", f"a profile of shape {A.shape}", previous.shape)
            # Re-certified, never trusted: the stored errors and margins are not read, so a
            # damaged witness counts only with what it certifies now.
            try:
                for w in previous.upper.values():
                    self.offer_upper(w.U, w.W, w.method)
                for w in previous.lower.values():
                    self.offer_lower(w.R, w.Y, w.method)
            except ParameterError as exc:  # non-finite or misshapen arrays
                raise ParameterError(
                    "previous", "a profile whose witnesses are finite arrays of its shape", exc
                ) from None

    def offer_upper(self, U: np.ndarray, W: np.ndarray, method: str) -> float:
        k = U.shape[1]
        U, W = _f32(U), _f32(W)
        e = certified_upper_error(self.A, U, W)
        cur = self.upper.get(k)
        if cur is None or e < cur.error:
            self.upper[k] = UpperWitness(
                k, e, method, np.array(U, np.float64), np.array(W, np.float64)
            )
        return e

    def offer_lower(self, R: np.ndarray, Y: np.ndarray, method: str) -> float:
        m = R.shape[1]
        R, Y = _f32(R), _f32(Y)
        mu = certified_lower_margin(self.A, R, Y)
        if not mu > 0:
            self.rejected += 1
            return mu
        cur = self.lower.get(m)
        if cur is None or mu > cur.margin:
            self.lower[m] = LowerWitness(
                m, mu, method, np.array(R, np.float64), np.array(Y, np.float64)
            )
        return mu

    def hi(self, eps: float) -> int:
        w = least_upper(self.upper, eps)
        return min(self.M, self.N) if w is None else w.rank  # the implicit identity witness

    def lo(self, eps: float) -> int:
        w = largest_lower(self.lower, eps)
        return 0 if w is None else w.size
