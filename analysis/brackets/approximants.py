"""Efficient-attention approximants as certified upper witnesses.

Each approximant (``svd``, ``rows``, ``nystrom``, ``linformer``, ``performer``) is a rank-k
factorization ``U W^T`` (``U`` ``[M, k]``, ``W`` ``[N, k]``) of an approximation of ``A``,
so it is just another upper witness, certified by
:func:`analysis.brackets.verify.certified_upper_error`; set against a certified bracket
``[lo, hi]`` its overhead ``k / r_eps`` lies in ``[k / hi, k / lo]``. The methods, the
logit scale ``s`` of the Q/K methods and why they need every key allowed (no mask):
docs/guide/approximants.md, whose table each witness function below implements.

These witnesses are not part of the engine's profile (they rarely beat its refined
witnesses, and adding them would change its version); they are compared against it. The
factorizations are written here (a few lines each) because the reference implementations
are attention layers inside model code, which return the outputs ``A V``, not the factors
that a certificate needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.linalg

from analysis.brackets.upper import svd_witness
from analysis.brackets.verify import certified_upper_error
from analysis.validation import (
    ParameterError,
    check_eps_grid,
    check_int,
    check_positive_finite,
    check_random_state,
)

if TYPE_CHECKING:
    from analysis.brackets.io import QueriesKeys

METHODS: tuple[str, ...] = ("svd", "rows", "nystrom", "linformer", "performer")
QK_METHODS: tuple[str, ...] = ("nystrom", "linformer", "performer")
# Up to this many ranks every rank is tried; above it, a geometric grid of GRID ranks.
ALL_RANKS_UP_TO = 256
GRID = 96


def segment_matrix(n: int, k: int) -> np.ndarray:
    """``E`` ``[k, n]``: row s averages the s-th of k contiguous, nearly equal segments.

    Examples
    --------
    >>> from analysis.brackets.approximants import segment_matrix
    >>> segment_matrix(5, 2).round(3).tolist()
    [[0.333, 0.333, 0.333, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.5]]
    """
    E = np.zeros((k, n))
    for s, idx in enumerate(np.array_split(np.arange(n), k)):
        E[s, idx] = 1.0 / len(idx)
    return E


def _softmax_rows(S: np.ndarray) -> np.ndarray:
    """Row softmax with the row maximum subtracted (every exponent <= 0)."""
    e = np.exp(S - S.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rows_witness(
    A: np.ndarray, k: int, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(U, W) = (A R^+, R^T)`` with ``R`` the landmark rows ``A[order[:k]]``.

    ``order``: rows by a column-pivoted QR of ``A^T`` (computed when None).

    Examples
    --------
    Two diagonal blocks: two landmark rows span every row, so the rank-2 witness is exact
    up to rounding.

    >>> from analysis.brackets import certified_upper_error
    >>> from analysis.brackets.approximants import rows_witness
    >>> from analysis.sources.synthetic import permuted_blocks
    >>> A = permuted_blocks(6, 2, random_state=0).A
    >>> U, W = rows_witness(A, 2)
    >>> U.shape, W.shape, certified_upper_error(A, U, W) < 1e-12
    ((6, 2), (6, 2), True)
    """
    if order is None:
        order = landmark_row_order(A)
    R = A[order[:k]]
    return A @ np.linalg.pinv(R), R.T.copy()


def landmark_row_order(A: np.ndarray) -> np.ndarray:
    """Rows of ``A`` in the pivot order of a column-pivoted QR of ``A^T``.

    Examples
    --------
    >>> from analysis.brackets.approximants import landmark_row_order
    >>> from analysis.sources.synthetic import permuted_blocks
    >>> order = landmark_row_order(permuted_blocks(6, 2, random_state=0).A)
    >>> sorted(order.tolist())  # a permutation of the rows
    [0, 1, 2, 3, 4, 5]
    """
    return scipy.linalg.qr(A.T, mode="r", pivoting=True)[1]


def nystrom_witness(
    Q: np.ndarray, K: np.ndarray, s: float, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Nystromformer with k segment-mean landmarks: ``(U, W) = (F pinv(B), C^T)``.

    Parameters
    ----------
    Q : array ``[M, d]``, K : array ``[N, d]``
    s : float
        Logit scale (the model's scale divided by the temperature).
    k : int
        Landmarks, ``1 <= k <= min(M, N)``.

    Examples
    --------
    >>> from analysis.brackets import certified_upper_error
    >>> from analysis.brackets.approximants import nystrom_witness
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> U, W = nystrom_witness(head.Q, head.K, head.scale, 8)
    >>> U.shape, W.shape, round(certified_upper_error(head.A, U, W), 3)
    ((16, 8), (16, 8), 0.399)
    """
    Qt = segment_matrix(Q.shape[0], k) @ Q
    Kt = segment_matrix(K.shape[0], k) @ K
    F = _softmax_rows(s * Q @ Kt.T)  # [M, k]
    B = _softmax_rows(s * Qt @ Kt.T)  # [k, k]
    C = _softmax_rows(s * Qt @ K.T)  # [k, N]
    return F @ np.linalg.pinv(B), C.T.copy()


def linformer_witness(
    Q: np.ndarray, K: np.ndarray, s: float, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Linformer with segment-mean pooling of keys and values: ``(softmax(s Q (E K)^T), E^T)``.

    Examples
    --------
    The values are pooled by the segment means themselves: ``W = E^T``.

    >>> import numpy as np
    >>> from analysis.brackets.approximants import linformer_witness, segment_matrix
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> U, W = linformer_witness(head.Q, head.K, head.scale, 8)
    >>> U.shape, bool(np.array_equal(W, segment_matrix(16, 8).T))
    ((16, 8), True)
    """
    E = segment_matrix(K.shape[0], k)
    return _softmax_rows(s * Q @ (E @ K).T), E.T.copy()


def performer_features(d: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``[count, d]`` orthogonal random features of FAVOR+.

    Blocks of d orthonormal directions (QR of a Gaussian matrix), each row rescaled to the
    norm of an independent Gaussian vector, so every row is marginally ``N(0, I_d)``.
    The QR factor is made Haar-distributed by giving ``R`` a positive diagonal (LAPACK's
    sign convention otherwise favours some directions, and the estimator is biased).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.approximants import performer_features
    >>> F = performer_features(3, 5, np.random.default_rng(0))
    >>> D = F[:3] / np.linalg.norm(F[:3], axis=1, keepdims=True)  # the first block of 3
    >>> F.shape, bool(np.allclose(D @ D.T, np.eye(3)))  # orthogonal directions
    ((5, 3), True)
    """
    blocks = []
    for _ in range(-(-count // d)):
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        blocks.append((q * np.where(np.diag(r) < 0, -1.0, 1.0)).T)
    W = np.concatenate(blocks, axis=0)[:count]
    return W * np.linalg.norm(rng.standard_normal((count, d)), axis=1, keepdims=True)


def performer_witness(
    Q: np.ndarray, K: np.ndarray, s: float, features: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """FAVOR+ with the given features ``[k, d]``: ``(D^-1 phi(Q), phi(K))``.

    Notes
    -----
    ``exp(s q.k) = E_w[phi_w(x) phi_w(y)]`` with ``x = sqrt(s) q``, ``y = sqrt(s) k``,
    ``phi_w(x) = exp(w.x - |x|^2 / 2)``. A constant per query row and one for all keys are
    subtracted in the exponents (they cancel in ``D^-1``), so nothing overflows.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets import certified_upper_error
    >>> from analysis.brackets.approximants import performer_features, performer_witness
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> F = performer_features(3, 8, np.random.default_rng(0))
    >>> U, W = performer_witness(head.Q, head.K, head.scale, F)
    >>> U.shape, bool(np.allclose((U @ W.T).sum(axis=1), 1.0))  # rows of U W^T sum to 1
    ((16, 8), True)
    """
    r = np.sqrt(s)
    x, y = r * Q, r * K
    ex = x @ features.T - 0.5 * (x * x).sum(1, keepdims=True)
    ey = y @ features.T - 0.5 * (y * y).sum(1, keepdims=True)
    pq = np.exp(ex - ex.max(axis=1, keepdims=True))
    pk = np.exp(ey - ey.max())
    D = pq @ pk.sum(axis=0)
    return pq / D[:, None], pk


def _check_inputs(A, qk, methods):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ParameterError("A", "an array [M, N]", A.shape)
    methods = tuple(methods)
    if not methods:
        raise ParameterError("methods", "at least one of " + ", ".join(METHODS), methods)
    for m in methods:
        if m not in METHODS:
            raise ParameterError("methods", "names from " + ", ".join(METHODS), m)
    if len(set(methods)) != len(methods):
        raise ParameterError("methods", "each method once", methods)
    need_qk = [m for m in methods if m in QK_METHODS]
    if not need_qk:
        return A, None, None, None, methods
    if qk is None:
        raise ParameterError("qk", f"queries, keys and the logit scale for {need_qk}", "None")
    Q = np.asarray(qk.Q, dtype=np.float64)
    K = np.asarray(qk.K, dtype=np.float64)
    if (
        Q.ndim != 2
        or K.ndim != 2
        or Q.shape[1] != K.shape[1]
        or (Q.shape[0], K.shape[0]) != A.shape
    ):
        raise ParameterError(
            "qk.Q, qk.K", f"arrays [M, d] and [N, d] with (M, N) = {A.shape}", (Q.shape, K.shape)
        )
    s = check_positive_finite("qk.scale", qk.scale)
    if qk.mask is not None and not bool(np.all(qk.mask)):
        raise ParameterError(
            "qk.mask", f"no masked key for {need_qk} (they approximate unmasked softmax)", "a mask"
        )
    if qk.bias is not None:  # they approximate softmax(s Q K^T), not the matrix certified
        raise ParameterError("qk.bias", f"no logit bias for {need_qk}", "a bias")
    return A, Q, K, s, methods


def default_ranks(K: int) -> np.ndarray:
    """Every rank ``1..K`` up to :data:`ALL_RANKS_UP_TO`, else a geometric grid of :data:`GRID`.

    Examples
    --------
    >>> from analysis.brackets.approximants import default_ranks
    >>> default_ranks(5).tolist()
    [1, 2, 3, 4, 5]
    >>> r = default_ranks(1000)  # a geometric grid above 256
    >>> len(r), int(r[0]), int(r[-1])
    (73, 1, 1000)
    """
    if K <= ALL_RANKS_UP_TO:
        return np.arange(1, K + 1)
    return np.unique(np.round(np.geomspace(1, K, GRID)).astype(int))


def approximant_errors(
    A: np.ndarray,
    qk: QueriesKeys | None = None,
    *,
    methods: Sequence[str] = METHODS,
    ranks: Sequence[int] | None = None,
    stop_below: float | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Certified max-row-l1 error of each approximant at each rank.

    Parameters
    ----------
    A : array ``[M, N]``
        The attention matrix (for Q/K methods: ``softmax(scale Q K^T)``, the matrix the
        errors are certified against).
    qk : QueriesKeys, optional
        One head's queries and keys ``[M, d]``, ``[N, d]`` and logit scale ``s`` of
        ``A = softmax(s Q K^T)`` (model scale / temperature;
        :meth:`analysis.brackets.io.QueriesKeys.head`); needed by ``nystrom``,
        ``linformer``, ``performer``, which also need no mask and no logit bias.
    methods : sequence of str
        From :data:`METHODS`.
    ranks : sequence of int, optional
        Ranks to try, each in ``1..min(M, N)`` (default :func:`default_ranks`).
    stop_below : float, optional
        Per method, stop at the first rank (in increasing order) whose certified error is
        ``<= stop_below``: the least rank for every eps ``>= stop_below`` is then known.
    random_state : int or Generator
        Seeds the Performer features: one draw of ``min(M, N)`` features, of which rank k
        uses the first k (so the same seed gives the same witness at rank k whatever
        ``ranks`` is).

    Returns
    -------
    DataFrame with columns ``method``, ``rank``, ``error`` (certified, docs/method.md
    section 3), ``computed`` (the plain float64 error, for reference).

    Examples
    --------
    >>> from analysis.brackets.approximants import approximant_errors
    >>> from analysis.brackets.io import QueriesKeys
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> err = approximant_errors(head.A, QueriesKeys(head.Q, head.K, head.scale), ranks=[2, 8])
    >>> err[["method", "rank", "error"]].round(3)
          method  rank  error
    0        svd     2  0.741
    1        svd     8  0.108
    2       rows     2  0.926
    3       rows     8  0.211
    4    nystrom     2  1.129
    5    nystrom     8  0.399
    6  linformer     2  1.060
    7  linformer     8  0.847
    8  performer     2  1.388
    9  performer     8  0.653
    """
    A, Q, K, s, methods = _check_inputs(A, qk, methods)
    Kmax = min(A.shape)
    if ranks is None:
        rank_list = default_ranks(Kmax)
    else:
        rank_list = np.unique(np.asarray([check_int("ranks", r, minimum=1) for r in ranks]))
        if rank_list.size == 0 or rank_list[-1] > Kmax:
            raise ParameterError("ranks", f"integers in 1..{Kmax}", list(ranks))
    if stop_below is not None:
        stop_below = check_positive_finite("stop_below", stop_below)
    rng = check_random_state(random_state)
    cache: dict[str, object] = {}
    rows = []
    for method in methods:
        if method == "svd":
            cache["V"] = np.linalg.svd(A)[2].T  # right singular vectors
        elif method == "rows":
            cache["order"] = landmark_row_order(A)
        elif method == "performer":
            cache["features"] = performer_features(Q.shape[1], Kmax, rng)
        for k in rank_list:
            k = int(k)
            if method == "svd":
                U, W = svd_witness(A, cache["V"], k)
            elif method == "rows":
                U, W = rows_witness(A, k, cache["order"])
            elif method == "nystrom":
                U, W = nystrom_witness(Q, K, s, k)
            elif method == "linformer":
                U, W = linformer_witness(Q, K, s, k)
            else:
                U, W = performer_witness(Q, K, s, cache["features"][:k])
            if not (np.isfinite(U).all() and np.isfinite(W).all()):
                continue  # a degenerate factorization certifies nothing
            err = certified_upper_error(A, U, W)
            plain = float(np.abs(A - U @ W.T).sum(axis=1).max())
            rows.append({"method": method, "rank": k, "error": err, "computed": plain})
            if stop_below is not None and err <= stop_below:
                break
    return pd.DataFrame(rows, columns=["method", "rank", "error", "computed"])


def least_ranks(
    errors: pd.DataFrame,
    eps: Sequence[float],
    *,
    full_rank: int,
    methods: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per method and eps, the least tried rank whose certified error is ``<= eps``.

    Parameters
    ----------
    errors : DataFrame from :func:`approximant_errors`
    eps : sequence of float
    full_rank : int
        ``min(M, N)``; a method that reaches eps only there (or never) gains nothing over
        ``B = A``.
    methods : sequence of str, optional
        Methods to report, in this order (default: those in ``errors``); one with no
        finite witness in ``errors`` gets NA ranks.

    Returns
    -------
    DataFrame with columns ``method``, ``eps``, ``rank`` (nullable Int64; NA where no
    tried rank reaches eps), ``error`` (certified, at that rank), ``reached`` (a rank
    below ``full_rank`` reaches eps).

    Examples
    --------
    >>> from analysis.brackets.approximants import approximant_errors, least_ranks
    >>> from analysis.brackets.io import QueriesKeys
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> err = approximant_errors(head.A, QueriesKeys(head.Q, head.K, head.scale), ranks=[2, 8])
    >>> least_ranks(err, [0.5], full_rank=16)[["method", "rank", "reached"]]
          method  rank  reached
    0        svd     8     True
    1       rows     8     True
    2    nystrom     8     True
    3  linformer  <NA>    False
    4  performer  <NA>    False
    """
    eps = check_eps_grid(eps)
    if methods is None:
        methods = list(dict.fromkeys(errors["method"]))
    out = []
    for method in methods:
        g = errors[errors["method"] == method].sort_values("rank")
        for e in eps:
            ok = g[g["error"] <= e]
            if ok.empty:
                out.append({"method": method, "eps": e, "rank": pd.NA, "error": np.nan})
            else:
                r = ok.iloc[0]
                out.append(
                    {"method": method, "eps": e, "rank": int(r["rank"]), "error": r["error"]}
                )
    df = pd.DataFrame(out, columns=["method", "eps", "rank", "error"])
    df["rank"] = df["rank"].astype("Int64")
    df["reached"] = (df["rank"] < full_rank).fillna(False).astype(bool)
    return df


def approximant_ranks(
    A: np.ndarray,
    eps: Sequence[float],
    qk: QueriesKeys | None = None,
    *,
    methods: Sequence[str] = METHODS,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Least certified rank of each approximant for each eps (one matrix).

    Ranks are tried upwards (:func:`default_ranks`) until the certified error is at most
    the smallest eps. Where the ranks form a geometric grid (``min(M, N) > 256``), every
    rank between the last grid rank that misses an eps and the first that reaches it is
    tried as well, so that the least rank is exact for a method whose error falls with the
    rank. See :func:`approximant_errors` for the parameters and :func:`least_ranks` for the
    columns.

    Examples
    --------
    >>> from analysis.brackets.approximants import approximant_ranks
    >>> from analysis.brackets.io import QueriesKeys
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> qk = QueriesKeys(head.Q, head.K, head.scale)
    >>> table = approximant_ranks(head.A, [0.1, 0.3], qk, methods=("svd", "rows", "nystrom"))
    >>> table[["method", "eps", "rank"]]
        method  eps  rank
    0      svd  0.1     9
    1      svd  0.3     5
    2     rows  0.1    11
    3     rows  0.3     7
    4  nystrom  0.1    13
    5  nystrom  0.3    11
    """
    eps = check_eps_grid(eps)
    Kmax = min(np.shape(A))
    kw = {"random_state": _seed(random_state)}
    grid = default_ranks(Kmax)
    errors = approximant_errors(A, qk, methods=methods, ranks=grid, stop_below=min(eps), **kw)
    parts = [errors]
    if len(grid) < Kmax:
        for method, g in errors.groupby("method", sort=False):
            gap: set[int] = set()
            for e in eps:
                hit = g.loc[g["error"] <= e, "rank"]
                if len(hit):
                    first = int(hit.min())
                    below = grid[grid < first]
                    gap.update(range(int(below.max()) + 1 if below.size else 1, first))
            if gap:
                parts.append(approximant_errors(A, qk, methods=(method,), ranks=sorted(gap), **kw))
    errors = pd.concat(parts, ignore_index=True)
    return least_ranks(errors, eps, full_rank=Kmax, methods=methods)


def recheck_ranks(
    table: pd.DataFrame,
    A: np.ndarray,
    qk: QueriesKeys | None = None,
    *,
    random_state: int | np.random.Generator | None = 0,
) -> list[str]:
    """Re-certify a stored :func:`approximant_ranks` table of ``A``; describe each failure.

    Parameters are those the table was made with (the Performer features must be drawn
    from the same seed). Every witness is a deterministic function of ``A``, ``Q``, ``K``
    and the seed, so for each row with a rank the method's witness at that rank is built
    again and certified: the row fails when that certified error is not ``<=`` the stored
    ``error``, when the stored ``error`` is not ``<= eps``, or when ``reached`` is not
    ``rank < min(M, N)``. A row without a rank claims nothing (no tried rank reached eps;
    ``reached`` must be False).

    That a rank is the *least* one is not a certificate and is not re-checked: it would
    take the search again. A stored rank raised above the least one stays sound (its
    error is still certified); one lowered, or an error lowered, fails. The cost is one
    witness per method and distinct rank, about 5% of :func:`approximant_ranks` at 64 and
    128 tokens.

    Examples
    --------
    >>> from analysis.brackets.approximants import approximant_ranks, recheck_ranks
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> table = approximant_ranks(head.A, [0.1], methods=("svd",))
    >>> recheck_ranks(table, head.A)
    []
    >>> table.loc[0, "error"] /= 2  # a stored error lowered by hand
    >>> recheck_ranks(table, head.A)  # doctest: +ELLIPSIS
    ['svd eps=0.1: rank 9 certifies 0.0857..., stored 0.0428...']
    """
    Kmax = min(np.shape(A))
    seed = _seed(random_state)
    fails = []
    for r in table.itertuples(index=False):
        has_rank = not pd.isna(r.rank)
        if bool(r.reached) != (has_rank and int(r.rank) < Kmax):
            fails.append(f"{r.method} eps={r.eps:g}: reached={r.reached} at rank {r.rank}")
    ranked = table[table["rank"].notna()]
    for method, g in ranked.groupby("method", sort=False):
        ranks = sorted({int(k) for k in g["rank"]})
        if ranks[0] < 1 or ranks[-1] > Kmax:
            fails.append(f"{method}: ranks {ranks} outside 1..{Kmax}")
            continue
        errs = approximant_errors(A, qk, methods=(method,), ranks=ranks, random_state=seed)
        now = dict(zip(errs["rank"].astype(int), errs["error"], strict=True))
        for r in g.itertuples(index=False):
            e = now.get(int(r.rank), float("nan"))  # missing: no finite witness now
            if not (e <= r.error and r.error <= r.eps):
                fails.append(
                    f"{method} eps={r.eps:g}: rank {int(r.rank)} certifies {e!r}, "
                    f"stored {r.error!r}"
                )
    return fails


def _seed(random_state: int | np.random.Generator | None) -> int:
    """An int seed, so that several calls draw the same Performer features."""
    rng = check_random_state(random_state)
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(rng.integers(2**63 - 1))
