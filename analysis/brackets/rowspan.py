"""Row-span lower witnesses: interpolation over m rows of ``A`` (engine 5).

For a size m, take m rows ``S`` of ``A`` (the first m pivots of a column-pivoted QR of
``A^T``, one factorization for every size), a right inverse ``R`` ``[N, m]`` of the row
block ``A_S`` with small row l1 norms, and ``Y = (A_S R)^-1 E_S`` ``[m, M]`` (``E_S``
selects the rows ``S``), each row scaled to unit l1 norm. Then ``Y A R`` is the identity
up to rounding and the margin of docs/method.md section 3 is about
``1 / (max_p ||y_p||_1 max_j ||R_j||_1)``. The columns of ``R`` are functions over the keys
that interpolate the m chosen rows (``A_S R = I``); the smaller their largest row l1 sum,
the larger the margin.

Every function here proposes candidates; nothing here certifies. Candidates go through a
builder's ``offer_lower`` (float32 rounding, then
:func:`analysis.brackets.verify.certified_lower_margin`) before they count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

__all__ = [
    "RowSpan",
    "computed_margin",
    "inverse_transform",
    "offer_best",
    "offer_transformed",
    "right_inverse",
    "row_order",
    "rowspan_witness",
]


def row_order(A: np.ndarray) -> np.ndarray:
    """Rows of ``A`` in the pivot order of a column-pivoted QR of ``A^T``.

    The order is nested: its first m entries are the rows chosen at size m, for every m,
    so one ``O(M N min(M, N))`` factorization serves every size and eps.

    Examples
    --------
    The identity's rows are all equally independent; two uniform blocks give one row of
    each block first:

    >>> import numpy as np
    >>> from analysis.brackets.rowspan import row_order
    >>> sorted(row_order(np.eye(4)).tolist())
    [0, 1, 2, 3]
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))
    >>> sorted(int(i) // 4 for i in row_order(A)[:2])
    [0, 1]
    """
    _, piv = scipy.linalg.qr(np.asarray(A, dtype=np.float64).T, pivoting=True, mode="r")
    return np.asarray(piv, dtype=np.int64)


def right_inverse(AS: np.ndarray, d: np.ndarray, ridge: float) -> np.ndarray | None:
    """Weighted ridge right inverse ``R = D A_S^T (A_S D A_S^T + lam I)^-1`` ``[N, m]``.

    ``d`` holds the diagonal of ``D`` (positive, one weight per column of ``A_S``) and
    ``lam = ridge * trace(A_S D A_S^T) / m``. Returns None where the system is singular.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.rowspan import right_inverse
    >>> AS = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    >>> R = right_inverse(AS, np.ones(3), 0.0)
    >>> bool(np.allclose(AS @ R, np.eye(2)))
    True
    """
    m = AS.shape[0]
    ADt = AS.T * d[:, None]  # D A_S^T, [N, m]
    gram = AS @ ADt
    lam = ridge * float(np.trace(gram)) / m
    try:
        inv_t = scipy.linalg.solve(gram + lam * np.eye(m), ADt.T, assume_a="pos")
    except (np.linalg.LinAlgError, ValueError):
        return None
    # C order: the verifier's BLAS products may round differently for a transposed
    # (Fortran-ordered) array, and a witness read back from a file is in C order, so a
    # margin certified on another layout could fail its exact re-check by an ulp.
    R = np.ascontiguousarray(inv_t.T)
    return R if np.isfinite(R).all() else None


def rowspan_witness(A: np.ndarray, S: np.ndarray, R: np.ndarray) -> np.ndarray | None:
    """``Y = (A_S R)^-1 E_S`` ``[m, M]``, each row scaled to unit l1 norm (None if singular).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.rowspan import rowspan_witness
    >>> Y = rowspan_witness(np.eye(3), np.array([2, 0]), np.eye(3)[:, [2, 0]])
    >>> Y.tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    m = len(S)
    try:
        inv = np.linalg.inv(A[S] @ R)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(inv).all():
        return None
    norms = np.abs(inv).sum(1, keepdims=True)
    if not (norms > 0).all():
        return None
    Y = np.zeros((m, A.shape[0]))
    Y[:, S] = inv / norms
    return Y


def inverse_transform(A: np.ndarray, R: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
    """``Y <- (Y A R)^-1 Y``, rows scaled to unit l1 norm (None if ``Y A R`` is singular).

    Notes
    -----
    With ``G = Y A R`` strictly diagonally dominant by rows and every ``||y_q||_1 = 1``,
    the new rows are ``y'_p = sum_q (G^-1)_pq y_q`` and ``Y' A R = I``, so the new margin
    is ``min_p 1 / (||y'_p||_1 rho)`` with ``||y'_p||_1 <= ||G^-1||_inf``. Varah's bound
    ``||G^-1||_inf <= 1 / min_p (|G_pp| - sum_(q != p) |G_pq|)`` then says the margin does
    not drop (in exact arithmetic); it rises wherever the off-diagonal mass of ``G`` was
    spent unevenly. The result is only a candidate: it is certified like any other.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.lower import normalized_margins
    >>> from analysis.brackets.rowspan import inverse_transform
    >>> A, R = np.eye(2), np.eye(2)
    >>> Y = np.array([[0.8, 0.2], [0.1, 0.9]])
    >>> round(float(normalized_margins(A, R, Y).min()), 6)
    0.6
    >>> Y2 = inverse_transform(A, R, Y)
    >>> round(float(normalized_margins(A, R, Y2).min()), 6)
    1.0
    """
    Y = Y / np.maximum(np.abs(Y).sum(1, keepdims=True), 1e-300)
    try:
        Y2 = np.linalg.solve((Y @ A) @ R, Y)
    except np.linalg.LinAlgError:
        return None
    norms = np.abs(Y2).sum(1, keepdims=True)
    if not (np.isfinite(Y2).all() and (norms > 0).all()):
        return None
    return np.ascontiguousarray(Y2 / norms)


def offer_transformed(b: Any, R: np.ndarray, Y: np.ndarray, method: str) -> float:
    """Offer ``(R, inverse_transform(R, Y))`` to the builder ``b``; its certified margin
    (``-inf`` where there is no transform).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.rowspan import offer_transformed
    >>> from analysis.brackets.stages import Builder
    >>> b = Builder(np.eye(2), None)
    >>> Y = np.array([[0.8, 0.2], [0.1, 0.9]])
    >>> round(b.offer_lower(np.eye(2), Y, "plain"), 6)
    0.6
    >>> round(offer_transformed(b, np.eye(2), Y, "plain"), 6), b.lower[2].method
    (1.0, 'plain+inv')
    """
    Y2 = inverse_transform(b.A, R, Y)
    return -np.inf if Y2 is None else b.offer_lower(R, Y2, method + "+inv")


def computed_margin(A: np.ndarray, S: np.ndarray, R: np.ndarray, Y: np.ndarray) -> float:
    """Computed (uncertified) normalized margin of a row-span member ``(R, Y)``.

    ``Y`` is zero off the rows ``S``, so ``G = Y A R = Y_S (A_S R)``: ``O(N m^2)`` instead
    of the verifier's ``O(M N m)``. Only ranks candidates; the verifier certifies.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.lower import normalized_margins
    >>> from analysis.brackets.rowspan import computed_margin, right_inverse, rowspan_witness
    >>> from analysis.datasets import example_head
    >>> A, S = example_head(seed=1), np.array([0, 3, 5])
    >>> R = right_inverse(A[S], np.ones(A.shape[1]), 1e-4)
    >>> Y = rowspan_witness(A, S, R)
    >>> bool(np.isclose(computed_margin(A, S, R, Y), normalized_margins(A, R, Y).min()))
    True
    """
    YS = Y[:, S]
    G = YS @ (A[S] @ R)
    d = np.diag(G)
    num = d - (np.abs(G).sum(1) - np.abs(d))
    den = np.abs(YS).sum(1) * float(np.abs(R).sum(1).max())
    if not (den > 0).all() or not np.isfinite(num).all():
        return -np.inf
    return float((num / den).min())


def offer_best(
    b: Any, S: np.ndarray, members: Any, method: str
) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """Offer the members ``(R, Y)`` of the row set ``S`` to the builder ``b`` in the order
    of their :func:`computed_margin`, largest first, until one certifies a positive margin;
    returns that member's ``(certified margin, R, Y)`` (``(-inf, None, None)`` if none).

    Engine 6's row-span evaluation: one certificate per row set instead of one per member
    (the members of a row set differ by their reweighting; in exact arithmetic the
    certified margin of each is its computed one less the rounding terms).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.builder import Builder
    >>> from analysis.brackets.rowspan import RowSpan, offer_best
    >>> b = Builder(np.eye(6), None)
    >>> fam = RowSpan(b.A, reweights=2, ridge=1e-4)
    >>> mu, R, Y = offer_best(b, fam.order[:4], fam.members(4), "rowspan")
    >>> 0.99 < mu < 1.0, R.shape, b.lower[4].margin == mu
    (True, (6, 4), True)
    """
    ranked = sorted(
        ((computed_margin(b.A, S, R, Y), i, R, Y) for i, (R, Y) in enumerate(members)),
        key=lambda t: (-t[0], t[1]),
    )
    for mc, _, R, Y in ranked:
        if not mc > 0:
            break
        mu = b.offer_lower(R, Y, method)
        if mu > 0:
            return mu, R, Y
    return -np.inf, None, None


class RowSpan:
    """The row-span family of one matrix: its row order and the best member per size.

    ``evaluate(b, m)`` builds the size-m members (the ridge right inverse, then
    ``reweights`` Lawson-type reweightings ``d_j <- d_j mean(rho) / rho_j``,
    ``rho_j = ||R_j||_1``), offers each to the builder ``b`` (which certifies it) and
    remembers the member of largest *certified* margin; sizes are memoized, so every eps
    shares them. With ``certify_all=False`` (engine 6) only the members of largest
    computed margin are offered, until one certifies (:func:`offer_best`).

    Examples
    --------
    The row-span witness of the 6 x 6 identity at size 4 is exact (margin 1):

    >>> import numpy as np
    >>> from analysis.brackets.rowspan import RowSpan
    >>> from analysis.brackets.stages import Builder
    >>> b = Builder(np.eye(6), None)
    >>> fam = RowSpan(b.A, reweights=2, ridge=1e-4)
    >>> mu = fam.evaluate(b, 4)
    >>> 0.99 < mu < 1.0, b.lower[4].method, b.lo(0.5)
    (True, 'rowspan', 4)
    """

    def __init__(self, A: np.ndarray, *, reweights: int, ridge: float, certify_all: bool = True):
        self.A = A
        self.certify_all = certify_all
        self.order = row_order(A)
        self.reweights = reweights
        self.ridge = ridge
        self.best: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}

    def margin(self, m: int) -> float | None:
        """Best certified margin at size m, if evaluated."""
        got = self.best.get(m)
        return None if got is None else got[0]

    def members(self, m: int):
        """Yield the size-m candidates ``(R, Y)`` (uncertified), reweighting in turn."""
        S = self.order[:m]
        AS = self.A[S]
        d = np.ones(self.A.shape[1])
        for _ in range(self.reweights + 1):
            R = right_inverse(AS, d, self.ridge)
            if R is None:
                return
            Y = rowspan_witness(self.A, S, R)
            if Y is not None:
                yield R, Y
            rho = np.abs(R).sum(1)
            d = d * (rho.mean() / np.maximum(rho, 1e-12 * rho.max() + 1e-300))
            d /= d.mean()

    def evaluate(self, b: Any, m: int) -> float:
        """Certified margin of the best size-m member (``-inf`` if none), offering all."""
        if m in self.best:
            return self.best[m][0]
        top: tuple[float, np.ndarray, np.ndarray] = (-np.inf, np.zeros(0), np.zeros(0))
        if 1 <= m <= min(self.A.shape) and not self.certify_all:
            mu, R, Y = offer_best(b, self.order[:m], self.members(m), "rowspan")
            if R is not None:
                top = (mu, R, Y)
        elif 1 <= m <= min(self.A.shape):
            for R, Y in self.members(m):
                mu = b.offer_lower(R, Y, "rowspan")
                if mu > top[0]:
                    top = (mu, R, Y)
        self.best[m] = top
        return top[0]

    def start(self, m: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The best evaluated member at size m as an ``(R, Y)`` start, if any."""
        got = self.best.get(m)
        return None if got is None or not got[0] > -np.inf else (got[1], got[2])

    def scan(self, b: Any, eps: float, lo: int, hi: int, grid: int) -> int:
        """Largest size in ``(lo, hi]`` found with a certified margin above ``eps``.

        ``grid`` sizes spread evenly over ``(lo, hi]`` first, then bisection between the
        largest size that passed and the next one tried above it (the margin falls with
        the size, not strictly). Returns ``lo`` if none passed.
        """
        if hi <= lo:
            return lo
        sizes = sorted({int(round(x)) for x in np.linspace(lo + 1, hi, grid)})
        ok, fail = lo, hi + 1
        for m in sizes:
            if self.evaluate(b, m) > eps:
                ok = m
        above = [m for m in sizes if m > ok]
        fail = above[0] if above else hi + 1
        while fail - ok > 1:
            mid = (ok + fail) // 2
            if self.evaluate(b, mid) > eps:
                ok = mid
            else:
                fail = mid
        return ok
