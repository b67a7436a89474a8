"""Lower witnesses ``(R, Y)``: test spaces on which ``A`` is diagonally dominant.

Theorem (docs/method.md section 3): with rows of ``R`` ``[N, m]`` and ``Y`` ``[m, M]`` in the l1
unit ball and ``G = Y A R``, ``min_p (G_pp - sum_(q != p) |G_pq|) > eps`` implies
``r_eps(A) >= m``. Functions here propose candidates; the verifier certifies them.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from scipy.cluster.hierarchy import linkage
from scipy.cluster.vq import kmeans2
from scipy.optimize import linprog

from analysis.brackets.optim import Batch, Problems, adam_step, cosine_lr, step_fraction


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


def project_rows_l1(X: torch.Tensor, *, iters: int = 3) -> torch.Tensor:
    """Project each row (last axis) onto the unit l1 ball; rows inside are unchanged.

    Notes
    -----
    The Euclidean projection soft-thresholds ``|x|`` at the ``theta`` solving
    ``f(theta) = sum_j max(|x_j| - theta, 0) = 1``. Michelot's fixed-point iteration
    ``theta <- (sum_(|x_j| > theta) |x_j| - 1) / #{|x_j| > theta}``, written here as
    ``theta <- theta + (f(theta) - 1) / #{|x_j| > theta}``, increases monotonically to it
    from ``theta_0 = (||x||_1 - 1) / n`` and needs no sort; after a few iterations any row
    still (slightly) outside the ball is scaled onto it (by ``f(theta)``, its l1 norm), so
    every returned row is feasible. A row inside the ball keeps ``theta = 0`` and is
    returned exactly. Used in the optimizer only: the verifier normalizes witnesses itself.

    Examples
    --------
    ``(3, 1)`` soft-thresholded at ``theta = 2`` is ``(1, 0)``; ``(0.2, 0.3)`` is inside:

    >>> import torch
    >>> from analysis.brackets.lower import project_rows_l1
    >>> X = torch.tensor([[3.0, 1.0], [0.2, 0.3]], dtype=torch.float64)
    >>> project_rows_l1(X).round(decimals=9).tolist()
    [[1.0, 0.0], [0.2, 0.3]]
    """
    a = X.abs()
    theta = ((a.sum(-1, keepdim=True) - 1.0) / X.shape[-1]).clamp_min_(0.0)
    for _ in range(iters):
        over = (a - theta).clamp_min_(0.0)
        f = over.sum(-1, keepdim=True)
        # #{|x_j| > theta} as an exact float count: over_j > 0 exactly when |x_j| > theta
        # (IEEE subtraction is exact in sign), and a float count skips a bool tensor and an
        # int64 -> float64 promotion per iteration (same theta, bit for bit).
        cnt = torch.sign(over).sum(-1, keepdim=True).clamp_min_(1.0)
        theta = (theta + (f - 1.0) / cnt).clamp_min_(0.0)
    P = (a - theta).clamp_min_(0.0)
    norm = P.sum(-1, keepdim=True).clamp_min_(1.0)
    return P.mul_(torch.sign(X)).div_(norm)


def lower_lr(sizes: torch.Tensor) -> torch.Tensor:
    """Adam step size of the lower ascent per problem: ``0.25 / m`` clamped to [0.002, 0.05].

    The entries of a witness shrink as ``m`` grows (rows of ``Y`` spread over more
    rows), and Adam's steps do not scale with the gradient, so a fixed step that suits
    ``m = 5`` destroys the group structure at ``m = 50`` (measured on MiniLM heads).

    Examples
    --------
    >>> import torch
    >>> from analysis.brackets.lower import lower_lr
    >>> lower_lr(torch.tensor([5, 50, 500])).round(decimals=9).tolist()  # 0.25 / m, clamped
    [0.05, 0.005, 0.002]
    """
    return (0.25 / sizes.double()).clamp(0.002, 0.05)


def refine_lower(
    A: torch.Tensor,
    R0: torch.Tensor,
    Y0: torch.Tensor,
    problems: Problems,
    *,
    lr: torch.Tensor | float | None = None,
    check: int = 10,
    give_up: float = 0.7,
    stall: float = 0.25,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected ascent on the diagonal-dominance margin over signed ``R`` and ``Y``.

    Parameters
    ----------
    A : tensor ``[P, M, N]``
    R0 : tensor ``[P, N, K]``, Y0 : tensor ``[P, K, M]``
        Starting witnesses; entries beyond each problem's size are zeroed.
    problems : Problems
        Each problem's size, target margin and step budget. A problem leaves the batch
        once its margin is above ``1.02 * target``, or, past 30% of its steps, when it is
        still below ``(1 - give_up * (1 - progress)) * target``.
    lr : float or tensor ``[P]``, optional
        Peak Adam step per problem (cosine decay to a tenth); default :func:`lower_lr`.
    stall : float
        A problem also leaves once its best margin has not grown by 0.1% over the last
        ``stall`` fraction of its budget (at least 50 steps).

    Returns
    -------
    R, Y : best witnesses seen per problem (by computed margin), margin : tensor ``[P]``.

    Notes
    -----
    Maximizes ``-(1/beta) log sum_p exp(-beta mg_p)``, a soft minimum of
    ``mg_p = G_pp - sum_(q != p) |G_pq|``, ``G = Y A R``. With ``w = softmax(-beta mg)``,
    ``dG_pq = w_p (delta_pq - (1 - delta_pq) sign(G_pq))``, ``dY = dG (A R)^T``,
    ``dR = (Y A)^T dG``. After each Adam step every row of ``R`` and ``Y`` is projected
    onto the l1 unit ball, so the computed margin is the normalized one. Signed ``R``
    matters: the useful test functions are differences of key groups (docs/method.md
    section 7).

    Examples
    --------
    From a perturbed start of negative margin to a witness certified above 0.5:

    >>> import numpy as np
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))  # two uniform 4 x 4 blocks: rank 2
    >>> import torch
    >>> from analysis.brackets.lower import normalized_margins, refine_lower
    >>> from analysis.brackets.optim import Problems
    >>> from analysis.brackets.verify import certified_lower_margin
    >>> rng = np.random.default_rng(0)
    >>> R0 = np.repeat(np.eye(2), 4, axis=0) + 0.3 * rng.normal(size=(8, 2))
    >>> Y0 = np.abs(rng.normal(size=(2, 8)))
    >>> bool(normalized_margins(A, R0, Y0).max() < 0)
    True
    >>> problems = Problems(torch.tensor([2]), torch.tensor([0.5], dtype=torch.float64),
    ...                     steps=torch.tensor([500]))
    >>> R, Y, margin = refine_lower(
    ...     torch.from_numpy(A)[None], torch.from_numpy(R0)[None], torch.from_numpy(Y0)[None],
    ...     problems,
    ... )
    >>> bool(margin[0] > 0.5), certified_lower_margin(A, R[0].numpy(), Y[0].numpy()) > 0.5
    (True, True)
    """
    problems.check_lower()
    P, M, N = A.shape
    K = R0.shape[-1]
    dev = A.device
    sizes = torch.as_tensor(problems.sizes, device=dev)
    kp = torch.arange(K, device=dev)[None, :] < sizes[:, None]  # [P, K]
    cm = kp.to(A.dtype)
    R = project_rows_l1(R0 * cm[:, None, :])
    Y = project_rows_l1(Y0) * cm[:, :, None]
    off = 1.0 - torch.eye(K, dtype=A.dtype, device=dev)
    on = 1.0 - off  # the identity, as 1 - off (the exact floats the gradient used before)
    best_R, best_Y = R.clone(), Y.clone()
    best = torch.full((P,), -float("inf"), dtype=A.dtype, device=dev)
    La = lower_lr(sizes) if lr is None else torch.as_tensor(lr, dtype=torch.float64, device=dev)
    s = AscentState(
        R, Y, *(torch.zeros_like(t) for t in (R, R, Y, Y)), A, kp, cm,
        targets=problems.targets.to(device=dev, dtype=A.dtype),
        budgets=torch.as_tensor(problems.steps).expand(P).to(device=dev, dtype=A.dtype),
        lr=La.expand(P).to(A.dtype),
        idx=torch.arange(P, device=dev),
    )  # fmt: skip
    # best margin as of the last improvement, and the step it happened
    ref = torch.full((P,), -float("inf"), dtype=A.dtype, device=dev)
    since = torch.zeros(P, dtype=A.dtype, device=dev)
    total = int(s.budgets.max())
    for step in range(total + 1):
        YA = s.Y @ s.A
        AR = s.A @ s.R
        G = YA @ s.R
        mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
        mg = mg.masked_fill(~s.kp, float("inf"))
        if step % check == 0 or step >= total:
            idx, Sa = s.idx, s.budgets
            cur = mg.amin(-1)
            b = cur > best[idx]
            if bool(b.any()):
                best_R[idx[b]] = s.R[b]
                best_Y[idx[b]] = s.Y[b]
                best[idx[b]] = cur[b]
            cb = best[idx]
            grew = cb - ref[idx] > 1e-3 * ref[idx].abs().nan_to_num(posinf=0.0)
            ref[idx[grew]] = cb[grew]
            since[idx[grew]] = step
            stalled = step - since[idx] > (stall * Sa).clamp_min(50)
            prog = step / Sa
            hopeless = (prog > 0.3) & (cb < (1 - give_up * (1 - prog)) * s.targets)
            keep = ~((cb > 1.02 * s.targets) | hopeless | stalled | (step >= Sa))
            if not bool(keep.any()):
                break
            if not bool(keep.all()):
                s = s.take(keep)
                YA, AR, G, mg = (t[keep] for t in (YA, AR, G, mg))
        s = lower_step(s, YA, AR, G, mg, on, off, step)
    return best_R, best_Y, best


@dataclass(frozen=True)
class AscentState(Batch):
    """The problems :func:`refine_lower` still runs, one row ``p`` per problem.

    Attributes
    ----------
    R, Y : tensors ``[p, N, K]``, ``[p, K, M]``
        The current witnesses.
    mR, vR, mY, vY : tensors
        Their Adam moments (updated in place).
    A : tensor ``[p, M, N]``
    kp, cm : tensors ``[p, K]``
        Each problem's live size, as bool and as float.
    targets, budgets, lr : tensors ``[p]``
        Target margin, step budget and peak step per problem.
    idx : int tensor ``[p]``
        Each problem's index in the whole batch.

    Examples
    --------
    :meth:`take` keeps the problems still running (here the second of two):

    >>> import torch
    >>> from analysis.brackets.lower import AscentState
    >>> s = AscentState(*(torch.tensor([[0.0], [1.0]]) for _ in range(12)), torch.arange(2))
    >>> s.take(torch.tensor([False, True])).idx.tolist()
    [1]
    """

    R: torch.Tensor
    Y: torch.Tensor
    mR: torch.Tensor
    vR: torch.Tensor
    mY: torch.Tensor
    vY: torch.Tensor
    A: torch.Tensor
    kp: torch.Tensor
    cm: torch.Tensor
    targets: torch.Tensor
    budgets: torch.Tensor
    lr: torch.Tensor
    idx: torch.Tensor


def lower_step(
    s: AscentState,
    YA: torch.Tensor,
    AR: torch.Tensor,
    G: torch.Tensor,
    mg: torch.Tensor,
    on: torch.Tensor,
    off: torch.Tensor,
    step: int,
) -> AscentState:
    """One projected ascent step of :func:`refine_lower`; returns the state with the new
    ``(R, Y)``.

    ``YA = Y A``, ``AR = A R``, ``G = YA R`` and the margins ``mg`` ``[p, K]`` are those of
    the current ``(R, Y)``; ``on`` / ``off`` are the identity and its complement
    ``[K, K]``. The Adam moments are updated in place.

    Examples
    --------
    The state :func:`refine_lower` keeps, for one problem on the 3 x 3 identity from
    ``R = Y^T = 0.1 + 0.6 I``. Adam's first step moves every entry by ``lr`` along its
    gradient's sign: the diagonal up to 0.75, the rest down to 0.05 (rows inside the l1
    ball are not projected), and the margin grows:

    >>> import torch
    >>> from analysis.brackets.lower import AscentState, lower_step, normalized_margins
    >>> f64 = dict(dtype=torch.float64)
    >>> A = torch.eye(3, **f64)[None]
    >>> R = (0.1 + 0.6 * torch.eye(3, **f64))[None]
    >>> Y = R.mT.clone()
    >>> def margin(R, Y):
    ...     mg = normalized_margins(A[0].numpy(), R[0].numpy(), Y[0].numpy())
    ...     return round(float(mg.min()), 6)
    >>> margin(R, Y)
    0.259259
    >>> kp = torch.ones(1, 3, dtype=torch.bool)
    >>> one = dict(targets=torch.tensor([0.5], **f64), budgets=torch.tensor([100.0], **f64))
    >>> s = AscentState(R, Y, *(torch.zeros_like(R) for _ in range(4)), A, kp, kp.double(),
    ...                 **one, lr=torch.tensor([0.05], **f64), idx=torch.tensor([0]))
    >>> YA, AR = Y @ A, A @ R
    >>> G = YA @ R
    >>> on = torch.eye(3, **f64)
    >>> off = 1 - on
    >>> mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
    >>> s = lower_step(s, YA, AR, G, mg, on, off, 0)
    >>> s.R[0].round(decimals=6).tolist()
    [[0.75, 0.05, 0.05], [0.05, 0.75, 0.05], [0.05, 0.05, 0.75]]
    >>> margin(s.R, s.Y)  # (0.5675 - 2 * 0.0775) / 0.85^2
    0.570934
    """
    frac = step_fraction(step, s.budgets)
    beta = (30.0 + 970.0 * frac)[:, None]
    w = torch.softmax(-beta * mg.masked_fill(~s.kp, 1e3), -1)  # [p, K]
    dG = w[..., None] * (on - off * torch.sign(G))
    lr_t = cosine_lr(s.lr, frac, 0.1)
    adam_step(s.Y, (dG @ AR.transpose(-1, -2)).neg_(), s.mY, s.vY, step + 1, lr_t)  # ascent
    adam_step(s.R, (YA.transpose(-1, -2) @ dG).neg_(), s.mR, s.vR, step + 1, lr_t)
    R = project_rows_l1(s.R * s.cm[:, None, :])
    Y = project_rows_l1(s.Y).mul_(s.cm[:, :, None])
    return dataclasses.replace(s, R=R, Y=Y)


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
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(r + N, n_var),
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
