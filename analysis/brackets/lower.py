"""Lower witnesses ``(R, Y)``: test spaces on which ``A`` is diagonally dominant.

Theorem (docs/method.md section 3): with rows of ``R`` ``[N, m]`` and ``Y`` ``[m, M]`` in the l1
unit ball and ``G = Y A R``, ``min_p (G_pp - sum_(q != p) |G_pq|) > eps`` implies
``r_eps(A) >= m``. Functions here propose candidates (the projected ascent is in
:mod:`analysis.brackets.lower_ascent`); the verifier certifies them.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import linkage
from scipy.cluster.vq import kmeans2
from scipy.optimize import linprog


def column_partitions(A: np.ndarray, sizes: list[int], *, method: str = "ward") -> np.ndarray:
    """Nested partitions of the key columns, one per requested number of groups.

    Parameters
    ----------
    A : array ``[M, N]``
    sizes : list of int
        Numbers of groups wanted (each ``<= N``).
    method : {"ward", "average-cosine"}
        ``ward``: Ward linkage on the raw columns (similar query profiles, mass-aware);
        ``average-cosine``: average linkage on cosine distance (mass-blind).

    Returns
    -------
    labels : int array ``[len(sizes), N]``

    Notes
    -----
    Coarse-graining is what makes lower witnesses work on smooth heads: a group of
    similar keys is one test function that rows can dominate. One dendrogram
    (scipy.cluster.hierarchy) gives every number of groups at once.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import column_partitions
    >>> column_partitions(A, [1, 2, 8]).tolist()  # two groups: the two blocks' keys
    [[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 3, 4, 5, 6, 7]]
    """
    cols = A.T
    if method == "ward":
        Z = linkage(cols, method="ward")
    elif method == "average-cosine":
        norms = np.linalg.norm(cols, axis=1, keepdims=True)
        Z = linkage(cols / np.maximum(norms, 1e-300), method="average", metric="cosine")
    else:
        raise ValueError(f"method: expected 'ward' or 'average-cosine', got {method!r}")
    return _cut_all(Z, A.shape[1], sizes)


def kmeans_partitions(A: np.ndarray, m: int, seeds: list[int]) -> list[np.ndarray]:
    """Column partitions into exactly ``m`` groups by k-means (k-means++ starts).

    For every seed, one run on the raw columns (mass-aware) and one on the columns
    scaled to unit Euclidean norm (mass-blind). Runs that leave a group empty are
    dropped. Deterministic for given seeds (``scipy.cluster.vq.kmeans2``).

    Returns
    -------
    list of int arrays ``[N]`` with labels ``0..m-1``

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import kmeans_partitions
    >>> parts = kmeans_partitions(A, 2, [0, 1])  # raw and unit columns per seed
    >>> len(parts), all(len(set(p[:4])) == 1 and p[0] != p[4] for p in parts)
    (4, True)
    """
    cols = A.T
    unit = cols / np.maximum(np.linalg.norm(cols, axis=1, keepdims=True), 1e-300)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kmeans2 warns when a cluster empties
        for s in seeds:
            for X in (cols, unit):
                _, lab = kmeans2(X, m, seed=int(s), minit="++")
                u, lab = np.unique(lab, return_inverse=True)
                if u.size == m:
                    out.append(lab.astype(np.int64))
    return out


def split_partitions(A: np.ndarray, R: np.ndarray, *, limit: int = 3) -> list[np.ndarray]:
    """Partitions into ``m + 1`` groups from a size-m witness ``R`` ``[N, m]``.

    Each key column goes to the group where ``|R|`` is largest; then one group at a time
    (the ``limit`` largest) is split in two by 2-means on its columns, the other groups
    kept. A witness that certifies size m is a good start for size m + 1: the new test
    function only has to separate one group.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import split_partitions
    >>> R = np.ones((8, 1))  # the row-sum witness of size 1: one group of all keys
    >>> [p.tolist() for p in split_partitions(A, R)]  # its one split: the blocks
    [[1, 1, 1, 1, 0, 0, 0, 0]]
    """
    m = R.shape[1]
    lab = np.abs(R).argmax(1)
    sizes = np.bincount(lab, minlength=m)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in np.argsort(-sizes, kind="stable")[:limit]:
            idx = np.nonzero(lab == q)[0]
            if idx.size < 2:
                continue
            _, two = kmeans2(A.T[idx], 2, seed=0, minit="++")
            if two.min() == two.max():
                continue
            new = lab.copy()
            new[idx[two == 1]] = m
            u, new = np.unique(new, return_inverse=True)
            if u.size == m + 1:
                out.append(new.astype(np.int64))
    return out


def _cut_all(Z: np.ndarray, N: int, sizes: list[int]) -> np.ndarray:
    """Labels ``0..m-1`` after the first ``N - m`` merges of linkage ``Z``, for each m.

    Written by hand because ``scipy.cluster.hierarchy.cut_tree`` returns wrong partitions
    for some inputs (e.g. ``n_clusters = N`` on tied distances gives one cluster).
    """
    parent = list(range(2 * N - 1))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    want = {m: i for i, m in enumerate(sizes)}
    out = np.zeros((len(sizes), N), dtype=np.int64)

    def record(m: int) -> None:
        if m in want:
            roots = [find(j) for j in range(N)]
            _, lab = np.unique(roots, return_inverse=True)
            out[want[m]] = lab

    record(N)
    for step, (a, b) in enumerate(Z[:, :2].astype(np.int64)):
        parent[a] = N + step
        parent[b] = N + step
        record(N - step - 1)
    return out


def group_witness(
    A: np.ndarray, labels: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Gastinel-Kahan witness from a column partition into ``m`` groups.

    ``R`` is the 0/1 group indicator ``[N, m]``; one row per group is chosen greedily by
    dominance of that group's mass; ``Y`` holds the rows of ``(A_S R)^-1`` divided by
    their l1 norms, placed at the chosen rows ``S`` ``[m, M]``.

    Returns ``(R, Y, margin)`` with the computed (uncertified) margin
    ``1 / ||(A_S R)^-1||_inf``.

    Examples
    --------
    The blocks as groups: ``A_S R`` is the 2 x 2 identity, so the margin is 1, and the
    certified one exceeds any eps < 1, proving ``r_eps(A) >= 2``:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import group_witness
    >>> from analysis.brackets.verify import certified_lower_margin
    >>> R, Y, margin = group_witness(A, np.array([0, 0, 0, 0, 1, 1, 1, 1]), 2)
    >>> R.shape, Y.shape, round(margin, 9), certified_lower_margin(A, R, Y) > 0.99
    ((8, 2), (2, 8), 1.0, True)
    """
    M, N = A.shape
    R = np.zeros((N, m))
    R[np.arange(N), labels] = 1.0
    B = A @ R  # [M, m] mass of each row on each group
    score = 2 * B - B.sum(1, keepdims=True)  # B_ip - sum_(q != p) B_iq
    S = np.full(m, -1)
    taken = np.zeros(M, dtype=bool)
    # Groups whose best row is least dominant choose first.
    for p in np.argsort(score.max(0)):
        s = np.where(taken, -np.inf, score[:, p])
        S[p] = int(np.argmax(s))
        taken[S[p]] = True
    Y = np.zeros((m, M))
    try:
        inv = np.linalg.inv(B[S])
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(B[S])
    if not np.isfinite(inv).all():
        inv = np.eye(m)
    rows = np.abs(inv).sum(1, keepdims=True)
    inv /= np.maximum(rows, 1e-300)
    Y[:, S] = inv
    G = inv @ B[S]
    d = np.diag(G)
    return R, Y, float((d - (np.abs(G).sum(1) - np.abs(d))).min())


def group_witness_sums(
    A: np.ndarray, labels: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`group_witness` with the group masses ``A R`` summed column by column.

    ``A R`` for the 0/1 indicator ``R`` is a sum of the columns of each group: ``O(M N)``
    additions instead of the ``O(M N m)`` of the product (the cheap stage builds every size
    up to ``hi``, so at N = 256 the products were most of its time). The greedy row choice
    takes each group's best row from one argmax over all groups, recomputed only where
    that row is taken (the same rows as :func:`group_witness` for the same masses). The
    masses round differently from the product's, so the witness may differ from
    :func:`group_witness`'s in the last bits (engine 6; engines 4 and 5 keep
    :func:`group_witness`); it is certified like any other.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.lower import group_witness, group_witness_sums
    >>> from analysis.datasets import example_head
    >>> A = example_head(seed=2)
    >>> labels = np.arange(A.shape[1]) % 3
    >>> R1, Y1, m1 = group_witness(A, labels, 3)
    >>> R2, Y2, m2 = group_witness_sums(A, labels, 3)
    >>> bool((R1 == R2).all() and np.allclose(Y1, Y2) and np.isclose(m1, m2))
    True
    """
    M, N = A.shape
    labels = np.asarray(labels, dtype=np.int64)
    R = np.zeros((N, m))
    R[np.arange(N), labels] = 1.0
    counts = np.bincount(labels, minlength=m)
    if len(counts) != m or not (counts > 0).all():
        return group_witness(A, labels, m)  # an empty group: the plain product
    order = np.argsort(labels, kind="stable")
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    B = np.add.reduceat(A[:, order], firsts, axis=1)  # [M, m] mass of each row per group
    score = 2 * B - B.sum(1, keepdims=True)
    top = score.argmax(0)
    S = np.full(m, -1)
    taken = np.zeros(M, dtype=bool)
    for p in np.argsort(score.max(0)):
        i = int(top[p])
        if taken[i]:
            i = int(np.argmax(np.where(taken, -np.inf, score[:, p])))
        S[p] = i
        taken[i] = True
    Y = np.zeros((m, M))
    try:
        inv = np.linalg.inv(B[S])
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(B[S])
    if not np.isfinite(inv).all():
        inv = np.eye(m)
    rows = np.abs(inv).sum(1, keepdims=True)
    inv /= np.maximum(rows, 1e-300)
    Y[:, S] = inv
    G = inv @ B[S]
    d = np.diag(G)
    return R, Y, float((d - (np.abs(G).sum(1) - np.abs(d))).min())


def normalized_margins(A: np.ndarray, R: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Computed (uncertified) margins ``(G_pp - sum_(q != p) |G_pq|) / (||y_p||_1 max_i ||R_i||_1)``.

    Examples
    --------
    ``R = Y = I`` on the identity is diagonally dominant with margin 1; scaling ``Y``
    changes nothing (the margin is normalized):

    >>> import numpy as np
    >>> from analysis.brackets.lower import normalized_margins
    >>> I = np.eye(3)
    >>> normalized_margins(I, I, 2 * I).tolist()
    [1.0, 1.0, 1.0]
    """
    G = (Y @ A) @ R
    d = np.diag(G)
    num = d - (np.abs(G).sum(1) - np.abs(d))
    den = np.abs(Y).sum(1) * np.abs(R).sum(1).max()
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), -np.inf)


def lp_best_Y(A: np.ndarray, R: np.ndarray) -> np.ndarray:
    """For fixed ``R``, the exactly best row ``y_p`` (``||y_p||_1 <= 1``) for every p.

    Notes
    -----
    With ``B = A R`` and ``g = B^T y``, row p maximizes ``g_p - sum_(q != p) |g_q|``: one
    LP per p in ``y = y+ - y-`` (``y+, y- >= 0``, ``sum(y+ + y-) <= 1``) and ``t_q >= |g_q|``,
    solved by HiGHS (``scipy.optimize.linprog``). Uses all M rows of ``A`` (docs/method.md
    section 7); the verifier certifies the result.

    Examples
    --------
    With the blocks as ``R``, the best rows reach the largest possible margin, 1:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import lp_best_Y, normalized_margins
    >>> R = np.repeat(np.eye(2), 4, axis=0)
    >>> Y = lp_best_Y(A, R)
    >>> Y.shape, normalized_margins(A, R, Y).round(6).tolist()
    ((2, 8), [1.0, 1.0])
    """
    M = A.shape[0]
    m = R.shape[1]
    B = A @ R
    Y = np.zeros((m, M))
    eye = np.eye(m - 1)
    for p in range(m):
        Bq = np.delete(B, p, axis=1).T  # [m - 1, M]
        A_ub = np.vstack(
            [
                np.hstack([Bq, -Bq, -eye]),
                np.hstack([-Bq, Bq, -eye]),
                np.concatenate([np.ones(2 * M), np.zeros(m - 1)])[None],
            ]
        )
        b_ub = np.concatenate([np.zeros(2 * (m - 1)), [1.0]])
        c = np.concatenate([-B[:, p], B[:, p], np.ones(m - 1)])
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        if res.status == 0:
            Y[p] = res.x[:M] - res.x[M : 2 * M]
    return Y


def lp_best_R(A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
    """For fixed ``Y``, the signed ``R`` (rows in the l1 unit ball) with the largest margin.

    Notes
    -----
    With ``C = Y A`` and ``G = C R``: maximize ``t`` subject to
    ``G_pp - sum_(q != p) s_pq >= t``, ``-s_pq <= G_pq <= s_pq`` and
    ``sum_q (R+_jq + R-_jq) <= 1`` for every row j, ``R = R+ - R-`` (``2 N m + m^2 + 1``
    variables). One sparse LP, solved by HiGHS' interior point method with crossover
    (about twice as fast as dual simplex here from m = 6 on); None if it does not solve.

    Examples
    --------
    With one row of each block in ``Y``, the best ``R`` reaches the largest possible
    margin, 1:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import lp_best_R, normalized_margins
    >>> Y = np.zeros((2, 8))
    >>> Y[0, 0] = Y[1, 4] = 1.0
    >>> R = lp_best_R(A, Y)
    >>> R.shape, normalized_margins(A, R, Y).round(6).tolist()
    ((8, 2), [1.0, 1.0])
    """
    C = Y @ A
    m, N = C.shape
    nR = N * m
    n_var = 2 * nR + m * m + 1
    jm = np.arange(N) * m
    rows, cols, vals = [], [], []
    r = 0
    for p in range(m):
        for q in range(m):
            if q == p:
                continue
            for sgn in (1.0, -1.0):  # sgn * G_pq - s_pq <= 0
                rows.append(np.full(2 * N + 1, r))
                cols.append(np.concatenate([jm + q, nR + jm + q, [2 * nR + p * m + q]]))
                vals.append(np.concatenate([sgn * C[p], -sgn * C[p], [-1.0]]))
                r += 1
    for p in range(m):  # t - G_pp + sum_(q != p) s_pq <= 0
        s_cols = [2 * nR + p * m + q for q in range(m) if q != p]
        rows.append(np.full(2 * N + m, r))
        cols.append(np.concatenate([jm + p, nR + jm + p, s_cols, [n_var - 1]]))
        vals.append(np.concatenate([-C[p], C[p], np.ones(m - 1), [1.0]]))
        r += 1
    # row l1 norms of R
    ball_rows = r + np.repeat(np.arange(N), 2 * m)
    ball_cols = (jm[:, None] + np.concatenate([np.arange(m), nR + np.arange(m)])[None]).ravel()
    rows.append(ball_rows)
    cols.append(ball_cols)
    vals.append(np.ones(ball_cols.size))
    A_ub = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r + N, n_var)
    )
    b_ub = np.concatenate([np.zeros(r), np.ones(N)])
    c = np.zeros(n_var)
    c[-1] = -1.0
    lb = np.zeros(n_var)
    ub = np.full(n_var, np.inf)
    diag_s = 2 * nR + np.arange(m) * (m + 1)
    ub[diag_s] = 0.0
    lb[-1] = -np.inf
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=np.column_stack([lb, ub]), method="highs-ipm")
    if res.status != 0:
        return None
    return (res.x[:nR] - res.x[nR : 2 * nR]).reshape(N, m)


def lp_polish(
    A: np.ndarray, R: np.ndarray, Y: np.ndarray, *, rounds: int = 2
) -> tuple[np.ndarray, np.ndarray, float]:
    """Alternate the two exact LPs (:func:`lp_best_Y`, :func:`lp_best_R`) from ``(R, Y)``.

    Returns the best pair seen and its computed normalized margin. The margin is
    biconcave in ``(R, Y)``, so each exact block step never lowers it (up to the
    solver's tolerance, hence the best pair is kept); it stops at a block-coordinate
    optimum that projected ascent only approaches. Cost grows quickly with m (the R-LP
    has ``2 N m + m^2`` variables), so callers use it for small m.

    Examples
    --------
    From a start of negative margin to a certified witness of size 2 at eps = 0.5:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> from analysis.brackets.lower import lp_polish, normalized_margins
    >>> from analysis.brackets.verify import certified_lower_margin
    >>> rng = np.random.default_rng(0)
    >>> R0 = np.repeat(np.eye(2), 4, axis=0) + 0.3 * rng.normal(size=(8, 2))
    >>> Y0 = np.abs(rng.normal(size=(2, 8)))
    >>> R, Y, margin = lp_polish(A, R0, Y0)
    >>> bool(normalized_margins(A, R0, Y0).min() < 0 < margin)
    True
    >>> certified_lower_margin(A, R, Y) > 0.5
    True
    """
    best = (R, Y, float(normalized_margins(A, R, Y).min()))
    for _ in range(rounds):
        Y = lp_best_Y(A, R)
        mg = float(normalized_margins(A, R, Y).min())
        if mg > best[2]:
            best = (R, Y, mg)
        R_new = lp_best_R(A, Y)
        if R_new is None:
            break
        R = R_new
        mg = float(normalized_margins(A, R, Y).min())
        if mg > best[2]:
            best = (R, Y, mg)
    return best
