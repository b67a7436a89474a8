"""Exchange swaps on the row set of a row-span lower witness (engine 6).

Engine 5's row-span witness at size m (:mod:`analysis.brackets.rowspan`) uses the first m
pivots ``S`` of a column-pivoted QR of ``A^T``; pivoted QR picks ``S`` greedily for volume,
not for the certified margin ``~ 1 / max_j ||R_j||_1``. :func:`exchange_swaps` starts from
that ``S`` and exchanges one selected row for an unselected one wherever the exchange raises
the *certified* margin of the row set's best reweighting iterate, so its result is never
below the start (docs/results/engine.md, "Exchange swaps, tried"; measured first in
``experiments/rowspan_swaps.py``). Engine 6 uses the swapped row set as the start of its
row-span lower trials (:mod:`analysis.brackets.stages_rowspan`).

Candidates per sweep:

* rows to drop: the ``n_out`` selected rows ``p`` that weigh most in the rows of ``R``
  near the maximum, ``sum_j |R_jp| (rho_j / max rho)^8`` with ``rho_j = ||R_j||_1``;
* rows to add, per dropped row ``p``: the ``n_in`` unselected rows of largest maxvol
  coefficient ``|C_ip|`` of ``C = A A_S^+`` and the ``n_in`` unselected rows of largest
  residual ``||A_i - C_i A_S||_2``.

Every candidate is offered to a builder (float32 rounding, then
:func:`analysis.brackets.verify.certified_lower_margin`); nothing here certifies.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from analysis.brackets.rowspan import offer_best, right_inverse, rowspan_witness

__all__ = ["SwapResult", "certified_rowset", "exchange_swaps", "rowset_members"]


def rowset_members(
    A: np.ndarray, S: np.ndarray, *, reweights: int, ridge: float
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The row-span candidates ``(R, Y)`` of the row set ``S`` (uncertified).

    The iteration of :meth:`analysis.brackets.rowspan.RowSpan.members` (ridge right
    inverse, then Lawson-type reweightings) for any row set, not only a pivot prefix.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.swaps import rowset_members
    >>> [R.shape for R, Y in rowset_members(np.eye(4), np.array([3, 1]), reweights=1, ridge=0)]
    [(4, 2), (4, 2)]
    """
    AS = A[S]
    d = np.ones(A.shape[1])
    for _ in range(reweights + 1):
        R = right_inverse(AS, d, ridge)
        if R is None:
            return
        Y = rowspan_witness(A, S, R)
        if Y is not None:
            yield R, Y
        rho = np.abs(R).sum(1)
        d = d * (rho.mean() / np.maximum(rho, 1e-12 * rho.max() + 1e-300))
        d /= d.mean()


def certified_rowset(
    b: Any,
    S: np.ndarray,
    *,
    reweights: int,
    ridge: float,
    method: str = "rowspan-swap",
    certify_all: bool = True,
) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """``(margin, R, Y)`` of the best *certified* member of row set ``S``.

    Every member is offered to the builder ``b`` (which certifies it and keeps the best
    per size); ``(-inf, None, None)`` where no member exists. With ``certify_all=False``
    only the member of largest computed margin is offered (the next ones only where it
    certifies no positive margin: :func:`analysis.brackets.rowspan.offer_best`).
    """
    if not certify_all:
        return offer_best(b, S, rowset_members(b.A, S, reweights=reweights, ridge=ridge), method)
    top: tuple[float, np.ndarray | None, np.ndarray | None] = (-np.inf, None, None)
    for R, Y in rowset_members(b.A, S, reweights=reweights, ridge=ridge):
        mu = b.offer_lower(R, Y, method)
        if mu > top[0]:
            top = (mu, R, Y)
    return top


@dataclass
class SwapResult:
    """Outcome of :func:`exchange_swaps` at one size: the final row set ``rows``, its best
    member ``(R, Y)`` and that member's certified ``margin``; ``swaps`` exchanges kept,
    ``evaluations`` row sets evaluated (each: all its members certified)."""

    rows: np.ndarray
    margin: float
    R: np.ndarray | None
    Y: np.ndarray | None
    swaps: int
    evaluations: int


def _drop_order(R: np.ndarray, n_out: int) -> np.ndarray:
    """Positions in ``S`` whose columns of ``R`` weigh most in the rows near max rho."""
    rho = np.abs(R).sum(1)
    w = (rho / rho.max()) ** 8
    return np.argsort(-(w @ np.abs(R)), kind="stable")[:n_out]


def _coefficients(A: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``C = A A_S^+`` ``[M, m]`` and the residuals ``||A_i - C_i A_S||_2`` ``[M]``."""
    AS = A[S]
    C = A @ scipy.linalg.pinv(AS)
    return C, np.linalg.norm(A - C @ AS, axis=1)


def exchange_swaps(
    b: Any,
    S0: np.ndarray,
    start: tuple[float, np.ndarray, np.ndarray] | None = None,
    *,
    sweeps: int,
    n_out: int,
    n_in: int,
    reweights: int,
    ridge: float,
    certify_all: bool = True,
) -> SwapResult:
    """Greedy exchange swaps from the row set ``S0`` that raise the certified margin.

    Parameters
    ----------
    b : Builder
        Certifies every candidate (:meth:`~analysis.brackets.builder.Builder.offer_lower`)
        and keeps the best per size.
    S0 : array of int ``[m]``
        The starting row set (engine 6: the first m pivots of the row order).
    start : (margin, R, Y), optional
        The certified best member of ``S0`` if already known (engine 5's
        :meth:`~analysis.brackets.rowspan.RowSpan.evaluate`); else it is evaluated.
    sweeps, n_out, n_in : int
        Sweeps at most; rows to drop per sweep; rows to add per dropped row and per
        criterion (maxvol coefficient, residual).
    reweights : int
        Lawson-type reweightings after the first member, as in
        :class:`~analysis.brackets.rowspan.RowSpan`.
    ridge : float
        The right inverse's ridge, as in :class:`~analysis.brackets.rowspan.RowSpan`.
    certify_all : bool
        Certify every member of each row set (True, the first engine 6) or only the one of
        largest computed margin (:func:`certified_rowset`).

    Returns
    -------
    SwapResult
        A swap is kept only where the best certified member of the new row set is strictly
        above the current one, so ``margin`` is never below the start's.

    Examples
    --------
    >>> from analysis.brackets.builder import Builder
    >>> from analysis.brackets.rowspan import RowSpan
    >>> from analysis.brackets.swaps import exchange_swaps
    >>> from analysis.datasets import example_head
    >>> A = example_head(seed=1)
    >>> fam, b = RowSpan(A, reweights=6, ridge=1e-4), Builder(A, None)
    >>> mu = fam.evaluate(b, 5)
    >>> got = exchange_swaps(b, fam.order[:5], fam.best[5], sweeps=1, n_out=2, n_in=2,
    ...                      reweights=6, ridge=1e-4)
    >>> got.margin >= mu, b.lower[5].margin >= got.margin
    (True, True)
    """
    A = b.A
    S = np.array(S0, dtype=np.int64)
    kw = {"reweights": reweights, "ridge": ridge, "certify_all": certify_all}
    if start is None or not start[0] > -np.inf:
        mu, R, Y = certified_rowset(b, S, **kw)
        evals = 1
    else:
        (mu, R, Y), evals = start, 0
    swaps = 0
    for _ in range(sweeps):
        if R is None:
            break
        changed = False
        C, res = _coefficients(A, S)
        for p in _drop_order(R, n_out):
            free = np.ones(A.shape[0], dtype=bool)
            free[S] = False
            by_vol = np.where(free, np.abs(C[:, p]), -np.inf)
            by_res = np.where(free, res, -np.inf)
            cand = [int(i) for i in np.argsort(-by_vol, kind="stable")[:n_in] if free[i]]
            cand += [int(i) for i in np.argsort(-by_res, kind="stable")[:n_in] if free[i]]
            best: tuple[float, Any, Any, Any] = (mu, None, None, None)
            for i in dict.fromkeys(cand):  # unique, in order
                T = S.copy()
                T[p] = i
                got = certified_rowset(b, T, **kw)
                evals += 1
                if got[0] > best[0]:
                    best = (got[0], T, got[1], got[2])
            if best[1] is not None:
                mu, S, R, Y = best
                swaps += 1
                changed = True
                C, res = _coefficients(A, S)
        if not changed:
            break
    return SwapResult(S, mu, R, Y, swaps, evals)
