"""The stages of the witness search, on builders that keep the best certified witnesses.

Internal to :mod:`analysis.brackets.search`, which runs them in order (trivial witnesses,
cheap stage, refinement, closing pass, pruning) and documents them; their tuning comes
from one :class:`analysis.brackets.settings.SearchSettings`. Every candidate goes through a
:class:`Builder`, which keeps it only with its certified value (float64, see
:mod:`analysis.brackets.verify`), so no stage can make a bracket unsound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from analysis.brackets import lower as _lower
from analysis.brackets import lower_ascent as _ascent
from analysis.brackets import rowspan as _rowspan
from analysis.brackets import upper as _upper
from analysis.brackets.builder import Builder
from analysis.brackets.optim import Problems
from analysis.brackets.settings import SearchSettings


def trivial_witnesses(b: Builder) -> None:
    """The zero witness (rank 0) and the row-sum lower witness of size 1.

    Examples
    --------
    Every row sums to 1, so the zero witness is off by 1 and the row sums certify
    ``r_eps >= 1`` for eps < 1:

    >>> import numpy as np
    >>> from analysis.brackets.stages import Builder, trivial_witnesses
    >>> b = Builder(np.eye(4), None)
    >>> trivial_witnesses(b)
    >>> sorted(b.upper), sorted(b.lower)
    ([0], [1])
    >>> round(b.upper[0].error, 9), round(b.lower[1].margin, 9), b.lo(0.5)
    (1.0, 1.0, 1)
    """
    A, M, N = b.A, b.M, b.N
    b.offer_upper(np.zeros((M, 0)), np.zeros((N, 0)), "zero")
    # The identity witness (rank min(M, N), error 0) is implicit: see Profile.upper_end.
    Y = np.zeros((1, M))
    Y[0, int(A.sum(1).argmax())] = 1.0
    b.offer_lower(np.ones((N, 1)), Y, "row-sum")


def _first_below(curve: np.ndarray, eps: float) -> int | None:
    idx = np.nonzero(curve <= eps * (1 - 1e-9))[0]
    return int(idx[0]) if idx.size else None


def cheap_stage(
    b: Builder, eps_all: Sequence[float], *, group_sums: bool = False, group_stop: bool = False
) -> dict[str, Any]:
    """SVD projections, row covers and group (Gastinel-Kahan) witnesses for every eps.

    Returns the cache the later stages read: ``"svd_V"``, the right singular vectors of A,
    and ``"groups"``, per size m the best group witness's margin and column partition.
    ``group_sums`` (engine 6) builds the group witnesses by
    :func:`~analysis.brackets.lower.group_witness_sums` instead of
    :func:`~analysis.brackets.lower.group_witness`; ``group_stop`` (engine 6) builds them
    by increasing size only up to twice the largest size whose margin passes the smallest
    eps, plus 8, instead of every size up to ``hi`` (``"groups"`` then holds those sizes).

    Examples
    --------
    The uniform matrix has rank 1, and the cheap stage finds a rank-1 witness at once:

    >>> import numpy as np
    >>> from analysis.brackets.stages import Builder, cheap_stage, trivial_witnesses
    >>> b = Builder(np.full((8, 8), 1 / 8), None)
    >>> trivial_witnesses(b)
    >>> cache = cheap_stage(b, [0.1])
    >>> sorted(cache), cache["svd_V"].shape, b.hi(0.1), b.upper[1].error < 1e-12
    (['groups', 'svd_V'], (8, 8), 1, True)
    """
    A = b.A
    K = min(b.M, b.N)
    V, err_svd = _upper.svd_errors(A)
    order, radius = _upper.row_cover_order(A)
    for eps in eps_all:
        k = _first_below(err_svd, eps)
        if k is not None and 0 < k < K:
            for kk in (k, k + 1):  # k + 1 in case rounding puts k just above eps
                U, W = _upper.svd_witness(A, V, kk)
                if b.offer_upper(U, W, "svd") <= eps or kk == K:
                    break
        k = _first_below(radius, eps)
        if k is not None and 0 < k < K:
            U, W = _upper.row_cover_witness(A, order, k)
            b.offer_upper(U, W, "row-cover")
    m_cap = max(1, min(K, b.hi(min(eps_all))))
    sizes = list(range(1, m_cap + 1))
    best: dict[int, tuple[float, np.ndarray]] = {}
    witness = _lower.group_witness_sums if group_sums else _lower.group_witness
    if group_stop:
        # Sizes upwards, both partitions per size; stop past twice the largest size that
        # passes the smallest eps, plus 8 (the margins fall with the size).
        methods = ("ward", "average-cosine")
        parts = [_lower.column_partitions(A, sizes, method=x) for x in methods]
        passed, floor = 0, min(eps_all) * (1 + 1e-9)
        for m in sizes:
            if m > 2 * passed + 8:
                break
            for labels in parts:
                _, _, mg = witness(A, labels[m - 1], m)
                if m not in best or mg > best[m][0]:
                    best[m] = (mg, labels[m - 1])
            passed = m if best[m][0] > floor else passed
    else:
        for method in ("ward", "average-cosine"):
            labels = _lower.column_partitions(A, sizes, method=method)
            for m in sizes:
                _, _, mg = witness(A, labels[m - 1], m)
                if m not in best or mg > best[m][0]:
                    best[m] = (mg, labels[m - 1])
    for eps in eps_all:
        ms = [m for m in best if best[m][0] > eps * (1 + 1e-9)]
        for m in sorted(ms, reverse=True)[:2]:
            R, Y, _ = witness(A, best[m][1], m)
            if b.offer_lower(R, Y, "groups") > eps:
                break
    return {"svd_V": V, "groups": best}


def svd_cache(b: Builder) -> dict[str, Any]:
    """What the closing pass needs of :func:`cheap_stage`'s cache (the right singular
    vectors of A), for running it without the cheap stage.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.stages import Builder, svd_cache
    >>> V = svd_cache(Builder(np.full((4, 4), 0.25), None))["svd_V"]
    >>> V.shape, bool(np.allclose(V.T @ V, np.eye(4)))  # orthonormal columns
    ((4, 4), True)
    """
    return {"svd_V": _upper.svd_errors(b.A)[0]}


def _budgets(sizes: torch.Tensor, base: int, ref: int) -> torch.Tensor:
    """Step budget per problem: large problems cost more per step, so they get fewer
    steps (down to 0.5x) and small ones somewhat more (up to 1.5x) than ``base`` at ``ref``."""
    return (base * (ref / sizes.double()).clamp(0.5, 1.5)).round().long()


def _upper_start(b: Builder, cache, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Starting factors at rank k: the truncated SVD of the best refined witness of a
    larger rank (already shaped by the l1 objective), else the truncated SVD of A."""
    larger = [w for w in b.upper.values() if w.rank > k and w.method.startswith("adam")]
    if larger:
        w = min(larger, key=lambda w: w.rank)
        Ub, Sb, Vbh = np.linalg.svd(w.U @ w.W.T, full_matrices=False)
        return Ub[:, :k] * Sb[:k], Vbh[:k].T
    return _upper.svd_witness(b.A, cache["svd_V"], k)


def _stack_A(bs: Sequence[Builder], owners: Sequence[int], device=None) -> torch.Tensor:
    """``[P, M, N]`` float32 stack of each problem's matrix on ``device`` (a view when all
    are one matrix)."""
    if len(bs) == 1:
        return torch.from_numpy(bs[0].A).float().to(device).expand(len(owners), -1, -1)
    mats = torch.from_numpy(np.stack([b.A for b in bs])).float().to(device)
    return mats[torch.as_tensor(list(owners), device=mats.device)]


def _upper_round(
    bs,
    caches,
    problems,
    steps,
    *,
    svd_start=False,
    method="adam",
    device=None,
    anneal=None,
    lr_scale=None,
) -> list[bool]:
    """One batched Adam refinement over ``(matrix, eps, rank)`` problems; success per problem.

    ``bs`` and ``caches`` are the builders and cheap-stage caches of the matrices batched
    together (one shape); a problem's first entry indexes them. Starts from
    :func:`_upper_start`, or with ``svd_start`` from the truncated SVD of A. The optimizer
    runs on ``device`` (None: the CPU); its candidates come back to the CPU and are
    certified there, in float64. ``anneal``, a function of the ranks and budgets (int
    tensors), gives each problem's anneal horizon (:func:`upper.refine_upper`); None
    anneals over the budget (engine 4). ``lr_scale``, a function of the ranks, gives each
    problem's factor on the learning rate; None keeps engine 4's rate.
    """
    if not problems:
        return []
    M, N = bs[0].M, bs[0].N
    K = max(k for _, _, k in problems)
    P = len(problems)
    U0 = torch.zeros(P, M, K, dtype=torch.float32)
    W0 = torch.zeros(P, N, K, dtype=torch.float32)
    for p, (o, _, k) in enumerate(problems):
        if svd_start:
            U, W = _upper.svd_witness(bs[o].A, caches[o]["svd_V"], k)
        else:
            U, W = _upper_start(bs[o], caches[o], k)
        U0[p, :, :k] = torch.from_numpy(U)
        W0[p, :, :k] = torch.from_numpy(W)
    At = _stack_A(bs, [o for o, _, _ in problems], device)
    ranks = torch.tensor([k for _, _, k in problems])
    targets = torch.tensor([e for _, e, _ in problems], dtype=torch.float32)
    budgets = _budgets(ranks, steps, 24)
    horizons = None if anneal is None else anneal(ranks, budgets)
    scale = None if lr_scale is None else lr_scale(ranks)
    batch = Problems(ranks, targets, budgets, horizons, scale)
    U, W, _ = _upper.refine_upper(At, U0.to(At.device), W0.to(At.device), batch)
    U, W = U.cpu(), W.cpu()
    out = []
    for p, (o, eps, k) in enumerate(problems):
        b = bs[o]
        Uk = U[p, :, :k].double()
        Wk = W[p, :, :k].double()
        e = b.offer_upper(Uk.numpy(), Wk.numpy(), method)
        if eps < e < 1.3 * eps:
            # l1 refit of the rows that still violate the target (rows separate given W).
            A64 = torch.from_numpy(b.A)
            row_err = (A64 - Uk @ Wk.T).abs().sum(1)
            bad = torch.nonzero(row_err > 0.98 * eps).squeeze(1)
            if 0 < bad.numel() <= 32:
                Ub = _upper.l1_refit_rows(A64[bad][None], Uk[bad][None], Wk[None])[0]
                Uk = Uk.clone()
                Uk[bad] = Ub
                e = b.offer_upper(Uk.numpy(), Wk.numpy(), method + "+l1")
        out.append(e <= eps)
    return out


def _ascend(
    bs: Sequence[Builder],
    problems: Sequence[tuple[int, float, int]],
    starts: Sequence[tuple[np.ndarray, np.ndarray]],
    steps: torch.Tensor,
    device=None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Batched projected ascent (:func:`lower_ascent.refine_lower`) from one start per problem.

    ``problems`` are ``(matrix, eps, size)`` with the matrix an index into ``bs``,
    ``starts`` the matching ``(R [N, m], Y [m, M])``, ``steps`` the budget per problem.
    Starts are zero-padded to the largest size; returns the best ``(R, Y)`` per problem
    at its own size, in float64 (not yet certified).
    """
    M, N = bs[0].M, bs[0].N
    K = max(m for _, _, m in problems)
    P = len(problems)
    R0 = torch.zeros(P, N, K, dtype=torch.float32)
    Y0 = torch.zeros(P, K, M, dtype=torch.float32)
    for p, ((_, _, m), (R, Y)) in enumerate(zip(problems, starts, strict=True)):
        R0[p, :, :m] = torch.from_numpy(R)
        Y0[p, :m, :] = torch.from_numpy(Y)
    At = _stack_A(bs, [o for o, _, _ in problems], device)
    sizes = torch.tensor([m for _, _, m in problems])
    targets = torch.tensor([e for _, e, _ in problems], dtype=torch.float32)
    batch = Problems(sizes, targets, steps)
    R, Y, _ = _ascent.refine_lower(At, R0.to(At.device), Y0.to(At.device), batch)
    R, Y = R.cpu(), Y.cpu()
    return [
        (R[p, :, :m].double().numpy(), Y[p, :m, :].double().numpy())
        for p, (_, _, m) in enumerate(problems)
    ]


def _lower_round(bs, caches, problems, steps, settings: SearchSettings, device=None) -> list[bool]:
    """One batched projected-ascent refinement over ``(matrix, eps, size)`` problems."""
    if not problems:
        return []
    starts = [
        _lower.group_witness(bs[o].A, caches[o]["groups"][m][1], m)[:2] for o, _, m in problems
    ]
    sizes = torch.tensor([m for _, _, m in problems])
    # Each ascent step moves mostly the worst test function, so larger sizes need more
    # steps; a step costs little more at larger sizes (the products are m x M x N).
    budgets = (steps * (sizes.double() / 12).sqrt().clamp(1.0, 2.0)).round().long()
    out = []
    found = _ascend(bs, problems, starts, budgets, device)
    for (o, eps, m), (Rp, Yp) in zip(problems, found, strict=True):
        b = bs[o]
        mu = b.offer_lower(Rp, Yp, "ascent")
        if not mu > eps and m <= settings.lp_max_size and mu > settings.lp_near * eps:
            # A near miss at a small size: polish with the exact alternating LPs.
            Rl, Yl, mg = _lower.lp_polish(b.A, Rp, Yp, rounds=settings.lp_rounds)
            if mg > mu:
                mu = max(mu, b.offer_lower(Rl, Yl, "ascent+lp"))
        out.append(mu > eps)
    return out


def _next_trial(best: int, fail: int | None, first: int | None, step: float) -> int:
    """Next size to try between a certified end ``best`` and a failed trial ``fail``.

    With no failure yet, gallop from ``best`` by a fraction ``step`` of it (at least 1);
    else take the midpoint. Sign conventions are the caller's: for the upper end ``best``
    is above ``fail`` and ``step`` is negative.
    """
    if first is not None:
        return first
    if fail is None:
        return best + int(math.copysign(max(1, round(abs(step) * best)), step))
    return (best + fail) // 2 if step < 0 else (best + fail + 1) // 2


def upper_trial(lo: int, hi: int, fail: int | None, rnd: int, upper_first: float) -> int | None:
    """The rank of a refinement round's upper trial below ``hi`` (None: no rank is left).

    Between ``max(lo, 1)`` (and above the lowest failed rank ``fail``) and ``hi - 1``: in
    round 0 at ``round(upper_first * hi)``, later by :func:`_next_trial`'s gallop and
    bisection between ``hi`` and ``fail``.

    Examples
    --------
    >>> from analysis.brackets.stages import upper_trial
    >>> upper_trial(3, 10, None, 0, 0.7)  # round 0: at 0.7 hi
    7
    >>> upper_trial(3, 10, 9, 1, 0.7) is None  # rank 9 failed: nothing left below hi = 10
    True
    """
    floor_k = max(lo, 1, fail + 1 if fail is not None else 0)
    if floor_k > hi - 1:
        return None
    first = int(round(upper_first * hi)) if rnd == 0 else None
    return min(max(_next_trial(hi, fail, first, -0.15), floor_k), hi - 1)


def refine(bs, caches, targets: Sequence[float], settings: SearchSettings, device=None) -> None:
    """Per-eps search: one upper and one lower trial per matrix, eps and round, all batched.

    ``settings.rounds`` rounds. The first upper trial sits at ``settings.upper_first * hi``;
    after a success the search gallops down by 15% of the rank, after a failure it bisects
    between the failure and the certified end (likewise upwards for the lower end, starting
    at the largest size whose group witness, boosted by ``settings.lower_boost``, would
    pass). The lower search of an eps stops once fewer than ``settings.resolution * lo``
    sizes are undecided. A lower trial that misses narrowly at a small size gets the exact
    LP polish (``settings.lp_*``).
    Failed sizes only steer the search; they never enter a bracket. The matrices of
    ``bs`` search independently (each its own trials, from its own results); they only
    share the batched optimizer runs.

    Examples
    --------
    After the cheap stage of a random head, the default refinement finds a rank-6
    witness; both ends being certified, the closed bracket is ``r_0.1(A)`` itself:

    >>> from analysis.brackets import stages
    >>> from analysis.brackets.settings import search_settings
    >>> from analysis.datasets import example_head
    >>> A = example_head(seed=3)  # a random 8 x 8 head
    >>> b = stages.Builder(A, None)
    >>> stages.trivial_witnesses(b)
    >>> cache = stages.cheap_stage(b, [0.1])
    >>> b.lo(0.1), b.hi(0.1)
    (6, 8)
    >>> stages.refine([b], [cache], [0.1], search_settings("default"))
    >>> b.lo(0.1), b.hi(0.1), b.upper[6].error <= 0.1
    (6, 6, True)
    """
    keys = [(o, e) for o in range(len(bs)) for e in targets]
    up_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    low_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    for rnd in range(settings.rounds):
        up, lowp = [], []
        for o, e in keys:
            b, gk = bs[o], caches[o]["groups"]
            uf, lf = up_fail[o, e], low_fail[o, e]
            lo, hi = b.lo(e), b.hi(e)
            if lo >= hi:
                continue
            k = upper_trial(lo, hi, uf, rnd, settings.upper_first)
            if k is not None:
                up.append((o, e, k))
            ceil_m = min(hi, min(b.M, b.N), lf - 1 if lf is not None else hi)
            if lo + 1 <= ceil_m and (lf is None or ceil_m - lo >= settings.resolution * lo):
                first = None
                if rnd == 0:
                    ok = [m for m in gk if lo < m <= ceil_m and gk[m][0] * settings.lower_boost > e]
                    first = max(ok) if ok else lo + 1
                m = min(max(_next_trial(lo, lf, first, 0.15), lo + 1), ceil_m)
                if m in gk:
                    lowp.append((o, e, m))
        if not up and not lowp:
            break
        for (o, e, k), ok in zip(
            up, _upper_round(bs, caches, up, settings.upper_steps, device=device), strict=True
        ):
            if not ok:
                uf = up_fail[o, e]
                up_fail[o, e] = k if uf is None else max(uf, k)
        for (o, e, m), ok in zip(
            lowp,
            _lower_round(bs, caches, lowp, settings.lower_steps, settings, device),
            strict=True,
        ):
            if not ok:
                lf = low_fail[o, e]
                low_fail[o, e] = m if lf is None else min(lf, m)


def _close_lower_starts(b: Builder, m: int, seeds: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Named starting ``(R, Y)`` pairs at size m: the best witness so far ("prev"),
    k-means partitions (raw and unit columns, ``seeds`` seeds each) and splits of the best
    size m - 1 witness's groups, each partition turned into a Gastinel-Kahan witness."""
    A = b.A
    starts = []
    if m in b.lower:
        starts.append(("prev", b.lower[m].R, b.lower[m].Y))
    parts = [("kmeans", lab) for lab in _lower.kmeans_partitions(A, m, list(range(seeds)))]
    if m - 1 in b.lower:
        parts += [("split", lab) for lab in _lower.split_partitions(A, b.lower[m - 1].R)]
    for name, lab in parts:
        R, Y, _ = _lower.group_witness(A, lab, m)
        starts.append((name, R, Y))
    return starts


def close(
    bs, caches, targets: Sequence[float], settings: SearchSettings, device=None, *, transform=False
) -> None:
    """Closing pass: extra search at the two sizes that would close a nearly closed bracket.

    For every matrix of ``bs`` and targeted eps with ``1 <= hi - lo <= settings.close_width``:

    - upper, rank ``hi - 1`` (not below lo): a longer Adam run from the truncated SVD
      (a different start and schedule from the refinement's), then the l1 row refit;
    - lower, size ``lo + 1``: multi-start projected ascent from k-means column partitions
      (raw and unit columns), splits of the lo witness's groups and the best witness so
      far, all in one batch; the best per size then get the exact alternating LP polish.

    Which ranks and sizes qualify, the run lengths, seeds and polish (and why): the
    ``close_*`` fields of :class:`~analysis.brackets.settings.SearchSettings`; with
    ``close_upper_steps`` and ``close_lower_steps`` both 0 the pass does nothing. With
    ``transform`` (engine 5) every lower candidate is also offered after the inverse
    transform (:func:`analysis.brackets.rowspan.inverse_transform`).

    Every candidate goes through its matrix's builder (verified); the pass can only add
    witnesses, so it never widens a bracket.

    Examples
    --------
    The closing pass after the cheap stage of a random head (``fast`` has none: its
    settings leave the builder as it was); the default one finds a lower witness of
    size 5, and the closed bracket is ``r_0.2(A)`` itself:

    >>> from analysis.brackets import stages
    >>> from analysis.brackets.settings import search_settings
    >>> from analysis.datasets import example_head
    >>> A = example_head()  # a random 8 x 8 head
    >>> b = stages.Builder(A, None)
    >>> stages.trivial_witnesses(b)
    >>> cache = stages.cheap_stage(b, [0.2])
    >>> lo0, hi0 = b.lo(0.2), b.hi(0.2)
    >>> before = (dict(b.upper), dict(b.lower))
    >>> stages.close([b], [cache], [0.2], search_settings("fast"))
    >>> (b.upper, b.lower) == before
    True
    >>> lo0, hi0
    (4, 5)
    >>> stages.close([b], [cache], [0.2], search_settings("default"))
    >>> b.lo(0.2), b.hi(0.2), b.lower[5].margin > 0.2
    (5, 5, True)
    """
    if not (settings.close_upper_steps or settings.close_lower_steps):
        return
    ups: dict[tuple[int, int], float] = {}  # (matrix, rank) -> the smallest eps it would decide
    lows: dict[tuple[int, int], float] = {}  # (matrix, size) -> the largest eps it would decide
    for o, b in enumerate(bs):
        for e in targets:
            lo, hi = b.lo(e), b.hi(e)
            if not 1 <= hi - lo <= settings.close_width:
                continue
            k = hi - 1
            cur = b.upper.get(k)
            if k >= max(lo, 1) and cur is not None and cur.error < settings.close_upper_near * e:
                ups[o, k] = min(ups.get((o, k), e), e)
            m = lo + 1
            low = b.lower.get(m)
            if m <= min(hi, settings.close_max_size) and (
                low is None or low.margin > settings.close_lower_near * e
            ):
                lows[o, m] = max(lows.get((o, m), e), e)
    if ups and settings.close_upper_steps:
        problems = [(o, e, k) for (o, k), e in sorted(ups.items())]
        _upper_round(
            bs,
            caches,
            problems,
            settings.close_upper_steps,
            svd_start=True,
            method="close",
            device=device,
        )
    if not lows or not settings.close_lower_steps:
        return
    problems, starts, names = [], [], []
    for (o, m), e in sorted(lows.items()):
        for name, R, Y in _close_lower_starts(bs[o], m, settings.close_seeds):
            problems.append((o, e, m))
            starts.append((R, Y))
            names.append(name)
    budgets = torch.full((len(problems),), settings.close_lower_steps)
    found = _ascend(bs, problems, starts, budgets, device)
    scored: dict[tuple[int, int], list[tuple[float, str, np.ndarray, np.ndarray]]] = {}
    for (o, _, m), name, (Rp, Yp) in zip(problems, names, found, strict=True):
        mu = bs[o].offer_lower(Rp, Yp, f"close-{name}")
        if transform:
            mu = max(mu, _rowspan.offer_transformed(bs[o], Rp, Yp, f"close-{name}"))
        scored.setdefault((o, m), []).append((mu, name, Rp, Yp))
    for (o, m), cands in scored.items():
        b = bs[o]
        if b.lower.get(m) is not None and b.lower[m].margin > lows[o, m]:
            continue
        cands.sort(key=lambda c: -c[0])
        for _, name, Rp, Yp in cands[: settings.close_polish]:
            Rl, Yl, _ = _lower.lp_polish(b.A, Rp, Yp, rounds=settings.close_lp_rounds)
            if b.offer_lower(Rl, Yl, f"close-{name}+lp") > lows[o, m]:
                break


def prune(b: Builder, keep_eps: Sequence[float]) -> None:
    """Keep the witnesses that decide a bracket on ``keep_eps`` plus the trivial ones.

    Examples
    --------
    After the cheap stage of a random head at eps = 0.1 and 0.2, pruning to eps = 0.2
    keeps the zero and row-sum witnesses and the two ends at 0.2, so that bracket is
    unchanged:

    >>> from analysis.brackets import stages
    >>> from analysis.datasets import example_head
    >>> b = stages.Builder(example_head(), None)
    >>> stages.trivial_witnesses(b)
    >>> _ = stages.cheap_stage(b, [0.1, 0.2])
    >>> lo0, hi0 = b.lo(0.2), b.hi(0.2)
    >>> stages.prune(b, [0.2])
    >>> sorted(b.upper) == sorted({0, hi0}), sorted(b.lower) == sorted({1, lo0})
    (True, True)
    >>> (b.lo(0.2), b.hi(0.2)) == (lo0, hi0)
    True
    """
    up = {0} & set(b.upper)
    low = {1} & set(b.lower)
    for e in keep_eps:
        if b.hi(e) in b.upper:
            up.add(b.hi(e))
        m = b.lo(e)
        if m:
            low.add(m)
    b.upper = {k: b.upper[k] for k in sorted(up)}
    b.lower = {m: b.lower[m] for m in sorted(low)}
