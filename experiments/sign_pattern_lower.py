"""Do m-row sign-pattern lower certificates close the nearly closed brackets?

The engine's lower witness ``(R, Y)`` (docs/method.md section 3) certifies at most the expansion
constant of its test space ``range(R)``; ``experiments.closure_limits`` and
``bench_topological_lower.py`` showed that better spaces, not better certificates for
them, are what the width-1 brackets miss. This script tries a certificate that needs no
test space at all: m rows of ``A`` (or m combinations ``Y``) whose exact rank-(m-1)
approximation error exceeds eps.

**Certificate.** Let ``Y`` ``[m, M]`` have rows of l1 norm ``<= 1`` and give every sign
pattern ``sigma`` in ``{-1, 1}^m`` with ``sigma_1 = 1`` a test vector ``z_sigma`` with
``||z_sigma||_inf <= 1``. If ``sigma_i (Y A z_sigma)_i > eps`` for every ``i`` and
``sigma``, then ``r_eps(A) >= m``.

Proof: let ``B`` have rank ``<= m - 1`` and ``E = A - B`` max row l1 ``<= eps``. ``Y B``
has m rows and rank ``<= m - 1``, so ``c^T Y B = 0`` for some ``c != 0``; negate ``c`` if
its first entry is negative and let ``sigma`` agree with the signs of ``c`` (``+1`` where
``c_i = 0``), so ``c_i = |c_i| sigma_i`` and ``sigma_1 = 1``. Then ``c^T Y A z_sigma =
sum_i |c_i| sigma_i (Y A z_sigma)_i > eps ||c||_1``, while ``c^T Y A z_sigma =
c^T Y E z_sigma <= sum_i |c_i| ||y_i||_1 ||E z_sigma||_inf <= eps ||c||_1``: a
contradiction.

For fixed ``Y`` the best test vectors certify exactly ``a(Y A) = min_(c != 0)
||c^T Y A||_1 / ||c||_1`` (LP duality, one LP per pattern): the least max-row-l1 error of a
rank-(m-1) approximation of the m rows ``Y A``, so with ``Y`` = m rows of ``A`` it is the
exact answer for those rows. The engine's ``(R, Y)`` is the special case
``z_sigma = R sigma``: for the same ``Y`` this form certifies at least as much, with
``2^(m-1)`` test vectors instead of m (small m only).

**What is measured.** For every bracket of width 1-2 (72 MiniLM heads, engine at
``default`` effort, unpruned profile) with ``m = lo + 1 <= --max-size`` and an engine
witness at size m: the engine's certified margin; the sign-pattern value of the engine's
own ``Y`` (best ``z_sigma`` by LP); and a local search over m-row subsets started from the
rows the engine's ``Y`` weighs most (swap one row at a time, screened by LP dual bounds,
``--max-evals`` / ``--max-seconds`` per search; ``--multistart`` adds starts from
k-means group rows and random subsets). The best of the three is certified in
float64 with a rounding allowance (:func:`certified_sign_margin`, the verifier's standard
model). The rows found are also turned into the engine's own witness form: ``Y`` = those
unit rows, the exact best ``R`` for it (:func:`analysis.brackets.lower.lp_best_R`) and two
rounds of the alternating LPs, certified by
:func:`analysis.brackets.verify.certified_lower_margin`. Where either certificate exceeds
eps the lower end rises to m (and the search goes on at m + 1 while ``m + 1 <= hi``).
Nothing here changes the engine or any stored bracket.

With ``--ascend-steps S`` the rows may also be any combinations of the rows of ``A``:
from the better of the row search's rows and the engine's ``Y``, up to ``S`` steps of
projected subgradient ascent on the certificate's value (:func:`ascend_combinations`),
certified the same way.

With ``--hyperplane C`` (sizes up to ``--hyperplane-max-size``, where rows alone certify
nothing) it also tries the (m + 1)-row form of :func:`hyperplane_search` with ``C``
candidate extra rows (those the LP duals rate best as stand-ins): an uncertified
diagnostic of whether one more row helps.

Usage, from the repository root::

    python -m experiments.sign_pattern_lower [--length 96] [--max-size 10]
        [--max-evals 40] [--max-seconds 10] [--multistart] [--ascend-steps 0]
        [--hyperplane 0 --hyperplane-max-size 6] [--heads 72] [--workers 2]

Writes ``experiments/out/sign_pattern_lower_L<length>.csv`` / ``.json`` and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog

from analysis.brackets.lower import (
    group_witness,
    kmeans_partitions,
    lp_best_R,
    lp_polish,
)
from analysis.brackets.verify import UNIT_ROUNDOFF, certified_lower_margin, gamma
from experiments.common import OUT, command_line, diagnostic_profile, head_table, near_misses


def sign_patterns(m: int) -> np.ndarray:
    """All sign patterns with first entry ``+1``: ``[2^(m-1), m]`` with entries +-1.

    Row ``k`` has ``sigma_1 = +1`` and ``sigma_(i+1) = -1`` exactly where bit ``i - 1`` of
    ``k`` is set (``i = 1 .. m - 1``), the order of the columns of ``Z``.
    """
    k = np.arange(2 ** (m - 1))[:, None]
    bits = (k >> np.arange(m - 1)[None, :]) & 1
    return np.hstack([np.ones((k.size, 1)), 1.0 - 2.0 * bits])


def pattern_values(
    G: np.ndarray, patterns: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best test vector per sign pattern for the rows ``G`` ``[m, N]``.

    For each pattern ``sigma``: ``v = max { t : sigma_i G_i z >= t, ||z||_inf <= 1 }``, all
    patterns in one block-diagonal LP (scipy's HiGHS; the blocks are independent, so the
    sum of the ``t`` is maximized block by block).

    Returns
    -------
    values : ``[K]``; Z : ``[N, K]`` the maximizers; C : ``[K, m]`` the dual vectors
    ``c = lambda * sigma`` (``lambda`` on the simplex), each a minimizer of
    ``||c^T G||_1 / ||c||_1`` over the pattern's orthant: the rows' binding combination.
    """
    m, N = G.shape
    K = patterns.shape[0]
    blocks = [sp.csr_matrix(np.hstack([-(s[:, None] * G), np.ones((m, 1))])) for s in patterns]
    cost = np.zeros(K * (N + 1))
    cost[N :: N + 1] = -1.0
    bounds = np.tile(np.append(np.full((N, 2), [-1.0, 1.0]), [[-np.inf, np.inf]], 0), (K, 1))
    res = linprog(
        cost,
        A_ub=sp.block_diag(blocks, format="csr"),
        b_ub=np.zeros(K * m),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:  # cannot happen for a bounded feasible LP; be safe, certify nothing
        return np.full(K, -np.inf), np.zeros((N, K)), np.zeros((K, m))
    x = res.x.reshape(K, N + 1)
    lam = -res.ineqlin.marginals.reshape(K, m)
    return x[:, N].copy(), x[:, :N].T.copy(), lam * patterns


def _swap_bounds(A: np.ndarray, rows: list[int], pool: np.ndarray) -> np.ndarray:
    """Upper bounds ``[m, M]`` on the value after replacing ``rows[p]`` by row ``r``:
    ``min_(c in pool) ||c^T A_S'||_1 / ||c||_1`` (any ``c`` bounds the minimum)."""
    m = len(rows)
    base = pool @ A[rows]  # [K, N]
    norm = np.abs(pool).sum(1)[:, None]
    out = np.empty((m, A.shape[0]))
    for p in range(m):
        cp = pool[:, p : p + 1]
        V = (base - cp * A[rows[p]])[:, None, :] + cp[:, :, None] * A[None, :, :]
        out[p] = (np.abs(V).sum(-1) / norm).min(0)
    out[:, rows] = -np.inf
    return out


def row_subset_search(
    A: np.ndarray,
    rows: list[int],
    eps: float,
    *,
    max_evals: int = 30,
    max_seconds: float = 10.0,
    pool_size: int = 256,
) -> tuple[list[int], np.ndarray, float]:
    """Local search over m-row subsets ``S`` for a sign-pattern witness above ``eps``.

    Parameters
    ----------
    A : array ``[M, N]``
    rows : list of m distinct row indices to start from
    eps : float
        Stop once the value exceeds it.
    max_evals, max_seconds : budget of exact evaluations (one LP over all patterns each)
        and wall seconds.
    pool_size : most dual vectors kept for screening (those binding hardest at the
        current rows).

    Returns
    -------
    rows, Z, value : the best subset found, its test vectors ``[N, 2^(m-1)]`` and its
    (uncertified) value ``min_sigma min_i sigma_i (A_S z_sigma)_i``.

    Notes
    -----
    Moves swap one row of ``S`` for another. Every dual vector ``c`` seen so far bounds
    the value of any subset from above (``||c^T A_S'||_1 / ||c||_1``), so swaps are tried
    best bound first and a swap whose bound is not above the current value is never
    evaluated; each evaluation that does not improve adds its ``c`` to the pool and
    tightens the bounds. Written by hand: no library searches row subsets for this
    certificate.
    """
    t0 = time.perf_counter()
    m = len(rows)
    P = sign_patterns(m)
    vals, Z, C = pattern_values(A[rows], P)
    cur, pool, evals = float(vals.min()), C, 1
    rows = list(rows)
    ub = _swap_bounds(A, rows, pool)
    while cur <= eps and evals < max_evals and time.perf_counter() - t0 < max_seconds:
        p, r = np.unravel_index(int(np.argmax(ub)), ub.shape)
        if not ub[p, r] > cur * (1 + 1e-9):
            break  # no swap can improve on the current value
        trial = list(rows)
        trial[p] = int(r)
        # The current test vectors stay valid for the new rows: only the patterns they no
        # longer certify above the current value need their LP solved again.
        Z2 = Z.copy()
        v2 = (P.T * (A[trial] @ Z)).min(0)
        need = np.nonzero(v2 <= cur * (1 + 1e-9))[0]
        Cn = np.zeros((0, m))
        if need.size:
            vn, Zn, Cn = pattern_values(A[trial], P[need])
            v2[need], Z2[:, need] = vn, Zn
            pool = np.vstack([Cn, pool])
            evals += 1
        if v2.min() > cur * (1 + 1e-9):
            rows, Z, cur = trial, Z2, float(v2.min())
            if pool.shape[0] > pool_size:  # keep the vectors binding hardest at the new rows
                bind = np.abs(pool @ A[rows]).sum(1) / np.abs(pool).sum(1)
                pool = pool[np.argsort(bind, kind="stable")[:pool_size]]
            ub = _swap_bounds(A, rows, pool)
        else:
            # Bounds only fall as vectors are added: update them with the new ones alone.
            ub[p, r] = -np.inf
            if Cn.shape[0]:
                ub = np.minimum(ub, _swap_bounds(A, rows, Cn))
    # Test vectors kept from earlier rows only bound their patterns from below: solve every
    # pattern once more for the final rows.
    vals, Z_final, _ = pattern_values(A[rows], P)
    if vals.min() > cur:
        Z, cur = Z_final, float(vals.min())
    return rows, Z, cur


def pattern_values_normalized(
    Y: np.ndarray, A: np.ndarray, patterns: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pattern_values` of the rows ``Y A`` with each row of ``Y`` scaled to l1 norm 1
    (the value :func:`certified_sign_margin` certifies, up to rounding)."""
    return pattern_values((Y / np.abs(Y).sum(1, keepdims=True)) @ A, patterns)


def ascend_combinations(
    A: np.ndarray, Y0: np.ndarray, eps: float, *, steps: int, lr: float = 0.05
) -> tuple[np.ndarray, np.ndarray, float]:
    """Projected subgradient ascent of the sign-pattern value over general rows ``Y``.

    ``V(Y) = min_sigma max_(||z||_inf <= 1) min_i sigma_i (y_i A z) / ||y_i||_1`` is the
    certificate's value for rows that are any combinations of the rows of ``A`` (not only
    rows of ``A``, as in :func:`row_subset_search`). By the envelope theorem a pattern's
    value changes, along ``y_i -> y_i + h g`` at ``||y_i||_1 = 1``, at the rate
    ``lambda_i (sigma_i g . A z_sigma - v_sigma d||y_i||_1)`` (``lambda`` its LP dual,
    ``z_sigma`` its test vector); the steepest such ``g`` is ``sigma_i A z - v sign(y_i)``
    on the support of ``y_i`` and its soft threshold at ``v`` off it (the l1 norm's kink).
    The step follows the mean of these over the patterns within 1% of the minimum and is
    kept only if ``V`` rises (else the step length, ``lr`` in l1 at first, halves). Stops
    above ``eps`` or after ``steps`` LP evaluations; returns the best ``Y``, its test
    vectors and (uncertified) value. Written by hand: no library optimizes this
    certificate.
    """
    P = sign_patterns(Y0.shape[0])
    Y = Y0 / np.abs(Y0).sum(1, keepdims=True)
    vals, Z, C = pattern_values_normalized(Y, A, P)
    cur = float(vals.min())
    for _ in range(steps):
        if cur > eps or lr < 1e-6:
            break
        act = np.nonzero(vals <= cur + 0.01 * abs(cur))[0]
        lam = np.abs(C[act])  # [a, m]: C = lambda * sigma
        lam /= np.maximum(lam.sum(1, keepdims=True), 1e-300)
        AZ = A @ Z[:, act]  # [M, a]
        G = np.zeros_like(Y)
        for j, k in enumerate(act):
            base = P[k][:, None] * AZ[:, j][None, :]
            on = base - vals[k] * np.sign(Y)
            off = np.sign(base) * np.maximum(np.abs(base) - vals[k], 0.0)
            G += lam[j][:, None] * np.where(Y != 0, on, off)
        norm = np.abs(G).sum(1).max()
        if not norm > 0:
            break
        Y2 = Y + lr * G / norm
        Y2 /= np.abs(Y2).sum(1, keepdims=True)
        v2, Z2, C2 = pattern_values_normalized(Y2, A, P)
        if v2.min() > cur:
            Y, vals, Z, C, cur = Y2, v2, Z2, C2, float(v2.min())
            lr *= 1.5
        else:
            lr /= 2
    return Y, Z, cur


def hyperplane_values(
    G: np.ndarray, w: np.ndarray, patterns: np.ndarray, *, cap: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """Per pattern, ``max { tau : sigma_i (G z - t w)_i >= tau, ||z||_inf <= 1, t free }``.

    The (m + 1)-row form of the certificate (:func:`hyperplane_search`): rows ``G``
    ``[m + 1, N]``, a hyperplane normal ``w``. A pattern whose orthant does not meet
    ``w^perp`` is unbounded (``t`` absorbs it); ``tau`` is capped at ``cap`` so that one LP
    holds every pattern. Returns the values ``[K]`` and ``[N + 1, K]`` (``z`` and ``t``)."""
    m1, N = G.shape
    Ge = np.hstack([G, -w[:, None]])
    K = patterns.shape[0]
    blocks = [sp.csr_matrix(np.hstack([-(s[:, None] * Ge), np.ones((m1, 1))])) for s in patterns]
    cost = np.zeros(K * (N + 2))
    cost[N + 1 :: N + 2] = -1.0
    bnd = np.vstack([np.full((N, 2), [-1.0, 1.0]), [[-np.inf, np.inf]], [[-np.inf, cap]]])
    res = linprog(
        cost,
        A_ub=sp.block_diag(blocks, format="csr"),
        b_ub=np.zeros(K * m1),
        bounds=np.tile(bnd, (K, 1)),
        method="highs",
    )
    if res.status != 0:
        return np.full(K, -np.inf), np.zeros((N + 1, K))
    x = res.x.reshape(K, N + 2)
    return x[:, N + 1].copy(), x[:, : N + 1].T.copy()


def hyperplane_search(
    A: np.ndarray, rows: list[int], extra: int, *, trials: int = 2, max_evals: int = 150
) -> float:
    """Best value of the (m + 1)-row certificate on ``rows + [extra]`` over normals ``w``.

    With ``S`` the m + 1 rows and ``w`` in ``R^(m + 1)``: if for every pattern ``sigma``
    some ``z_sigma`` (``||z_sigma||_inf <= 1``) and real ``t_sigma`` give
    ``sigma_i (A_S z_sigma - t_sigma w)_i > eps`` for all i, then ``r_eps(A) >= m``.
    Proof: a rank-(m - 1) ``B`` leaves a left null space of dimension >= 2 in ``B_S``, which
    meets the m-dimensional ``w^perp`` in some ``c != 0``; with ``sigma`` its signs,
    ``c^T A_S z_sigma = c^T (A_S z_sigma - t_sigma w) > eps ||c||_1``, while
    ``c^T A_S z_sigma = c^T (A - B)_S z_sigma <= eps ||c||_1``. With ``w`` the unit vector of
    the extra row this is the m-row certificate on ``rows``; other ``w`` reach every
    hyperplane of the (m + 1)-row space (the certificate's value on the subspace
    ``w^perp``, whose vectors need not have disjoint supports). Nelder-Mead (scipy) over
    ``w``, from that unit vector and ``trials - 1`` perturbations of it. The value is an
    uncertified diagnostic.
    """
    from scipy.optimize import minimize

    P = sign_patterns(len(rows) + 1)
    G = A[rows + [extra]]

    def neg_value(w: np.ndarray) -> float:
        v = hyperplane_values(G, w / max(np.abs(w).sum(), 1e-300), P)[0].min()
        return -v if np.isfinite(v) else 1e9

    best = -np.inf
    rng = np.random.default_rng(extra)
    for trial in range(trials):
        w0 = np.zeros(len(rows) + 1)
        w0[-1] = 1.0
        if trial:
            w0 += 0.3 * rng.standard_normal(w0.size)
        with np.errstate(invalid="ignore"):
            res = minimize(
                neg_value, w0, method="Nelder-Mead", options={"maxfev": max_evals, "xatol": 1e-4}
            )
        best = max(best, -float(res.fun))
    return best


def certified_sign_margin(A: np.ndarray, Y: np.ndarray, Z: np.ndarray) -> float:
    """Certified ``min_(sigma, i) sigma_i (Y A z_sigma)_i / (||y_i||_1 ||z_sigma||_inf)``.

    ``r_eps(A) >= m`` for every eps below it. Rounding allowance as in
    :func:`analysis.brackets.verify.certified_lower_margin`: ``|fl(fl(Y A) Z) - Y A Z| <=
    gamma_(M+N) |Y||A||Z|`` (taken with ``gamma_(M+N+m)``, inflated by 1.01), one more
    ``gamma_2`` for the subtraction, the norms inflated, the quotient rounded towards zero.
    """
    A, Y, Z = (np.asarray(X, dtype=np.float64) for X in (A, Y, Z))
    M, N = A.shape
    m = Y.shape[0]
    P = sign_patterns(m)
    if Y.shape != (m, M) or Z.shape != (N, P.shape[0]):
        raise ValueError(f"Y must be [m, {M}] and Z [{N}, 2^(m-1)]; got {Y.shape}, {Z.shape}")
    G = (Y @ A) @ Z
    D = gamma(M + N + m) * ((np.abs(Y) @ np.abs(A)) @ np.abs(Z)) * 1.01
    num = P.T * G - D
    num -= gamma(2) * (np.abs(G) + D)
    ynorm = np.abs(Y).sum(1) * (1.0 + gamma(M))
    znorm = np.abs(Z).max(0)
    if (ynorm == 0).any() or (znorm == 0).any():
        return -np.inf
    ratio = num / (ynorm[:, None] * znorm[None, :])
    ratio = np.where(ratio > 0, ratio * (1 - 4 * UNIT_ROUNDOFF), ratio * (1 + 4 * UNIT_ROUNDOFF))
    return float(ratio.min())


def start_rows(Y: np.ndarray, m: int) -> list[int]:
    """m distinct rows: each row of ``Y``'s heaviest entry, then the heaviest columns left."""
    rows = list(dict.fromkeys(np.abs(Y).argmax(1).tolist()))
    for r in np.argsort(-np.abs(Y).max(0), kind="stable"):
        if len(rows) >= m:
            break
        if int(r) not in rows:
            rows.append(int(r))
    return rows[:m]


def group_rows(A: np.ndarray, labels: np.ndarray, m: int) -> list[int]:
    """The m rows :func:`analysis.brackets.lower.group_witness` picks for a column partition."""
    Y = group_witness(A, labels, m)[1]
    return np.flatnonzero(np.abs(Y).sum(0) > 0).tolist()


def starts(A: np.ndarray, Y: np.ndarray, m: int, multistart: bool, seed: int) -> list[list[int]]:
    """Row subsets to search from: the engine witness's rows, and with ``multistart`` the
    rows of Gastinel-Kahan witnesses on k-means partitions (3 seeds, raw and unit columns)
    and 3 random subsets (seeded by the head index)."""
    out = [start_rows(Y, m)]
    if multistart:
        out += [group_rows(A, lab, m) for lab in kmeans_partitions(A, m, [0, 1, 2])]
        rng = np.random.default_rng(seed)
        out += [rng.choice(A.shape[0], m, replace=False).tolist() for _ in range(3)]
    return [S for S in out if len(set(S)) == m]


def one_head(args: tuple) -> list[dict]:
    index, A, max_size, max_evals, max_seconds, multistart, ascend_steps, hyper, hyper_max_size = (
        args
    )
    prof = diagnostic_profile(A)
    out = []
    for eps, lo, hi in near_misses(prof):
        row: dict = {"index": index, "eps": eps, "lower": lo, "upper": hi, "search_seconds": 0.0}
        new_lo, m = lo, lo + 1
        while m <= min(hi, max_size) and m in prof.lower:
            w = prof.lower[m]
            Yn = w.Y / np.abs(w.Y).sum(1, keepdims=True)
            v_same, Z_same, _ = pattern_values(Yn @ A, sign_patterns(m))
            t0 = time.perf_counter()
            v_rows = -np.inf
            for S in starts(A, w.Y, m, multistart, index):
                found = row_subset_search(A, S, eps, max_evals=max_evals, max_seconds=max_seconds)
                if found[2] > v_rows:
                    rows, Z_rows, v_rows = found
                if v_rows > eps:
                    break
            row["search_seconds"] += time.perf_counter() - t0
            Y_rows = np.eye(A.shape[0])[rows]
            cert = max(
                certified_sign_margin(A, Yn, Z_same),
                certified_sign_margin(A, Y_rows, Z_rows),
            )
            v_hyper = -np.inf
            if hyper and cert <= eps and m <= hyper_max_size:
                t0 = time.perf_counter()
                _, _, Cr = pattern_values(A[rows], sign_patterns(m))
                bound = _swap_bounds(A, rows, Cr).max(0)  # rows that could stand in
                for r in np.argsort(-bound, kind="stable")[:hyper]:
                    v_hyper = max(v_hyper, hyperplane_search(A, rows, int(r)))
                row["search_seconds"] += time.perf_counter() - t0
            v_comb = -np.inf
            if ascend_steps and cert <= eps:
                t0 = time.perf_counter()
                Y0 = Y_rows if v_rows >= v_same.min() else Yn
                Y_c, Z_c, v_comb = ascend_combinations(A, Y0, eps, steps=ascend_steps)
                row["search_seconds"] += time.perf_counter() - t0
                cert = max(cert, certified_sign_margin(A, Y_c, Z_c))
            # The same rows as the engine's own witness form: the exact best R for Y = the
            # rows, then the alternating LPs (analysis.brackets.lower), certified by the
            # engine's verifier.
            R = lp_best_R(A, Y_rows)
            mu_ry = -np.inf
            if R is not None:
                R2, Y2, _ = lp_polish(A, R, Y_rows, rounds=2)
                mu_ry = max(certified_lower_margin(A, R, Y_rows), certified_lower_margin(A, R2, Y2))
            if m == lo + 1:
                row |= {
                    "size": m,
                    "engine_margin_over_eps": w.margin / eps,
                    "same_Y_over_eps": float(v_same.min()) / eps,
                    "row_search_over_eps": v_rows / eps,
                    "certified_over_eps": cert / eps,
                    "rows_as_RY_over_eps": mu_ry / eps,
                    "combinations_over_eps": v_comb / eps,
                    "hyperplane_over_eps": v_hyper / eps,
                }
            if not max(cert, mu_ry) > eps:
                break
            new_lo, m = m, m + 1
        row["new_lower"] = new_lo
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=96)
    ap.add_argument("--max-size", type=int, default=10)
    ap.add_argument("--max-evals", type=int, default=40)
    ap.add_argument("--max-seconds", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--multistart",
        action="store_true",
        help="also search from k-means group rows (3 seeds) and 3 random subsets",
    )
    ap.add_argument(
        "--ascend-steps",
        type=int,
        default=0,
        help="then ascend over general row combinations for this many LP evaluations",
    )
    ap.add_argument(
        "--hyperplane",
        type=int,
        default=0,
        help="try this many extra rows with the (m + 1)-row hyperplane form (diagnostic)",
    )
    ap.add_argument("--hyperplane-max-size", type=int, default=6)
    ap.add_argument("--heads", type=int, default=72)
    args = ap.parse_args()
    command = command_line("experiments.sign_pattern_lower")
    print("command:", command)
    options = (
        args.max_size,
        args.max_evals,
        args.max_seconds,
        args.multistart,
        args.ascend_steps,
        args.hyperplane,
        args.hyperplane_max_size,
    )
    t0 = time.perf_counter()
    df = head_table(
        one_head,
        options,
        length=args.length,
        heads=args.heads,
        workers=args.workers,
        csv_name=f"sign_pattern_lower_L{args.length}.csv",
    )
    tried = df.dropna(subset=["engine_margin_over_eps"])
    summary = {
        "command": command,
        "length": args.length,
        "brackets_width_1_2": int(len(df)),
        "tried": int(len(tried)),
        "median_engine_margin_over_eps": float(tried["engine_margin_over_eps"].median()),
        "median_same_Y_over_eps": float(tried["same_Y_over_eps"].median()),
        "median_row_search_over_eps": float(tried["row_search_over_eps"].median()),
        "median_certified_over_eps": float(tried["certified_over_eps"].median()),
        "median_rows_as_RY_over_eps": float(tried["rows_as_RY_over_eps"].median()),
        "lower_ends_raised": int((df["new_lower"] > df["lower"]).sum()),
        "brackets_closed": int((df["new_lower"] == df["upper"]).sum()),
        "search_seconds_total": float(df["search_seconds"].sum()),
        "wall_seconds": time.perf_counter() - t0,
    }

    # Options not used, or not needed for a bracket, leave its column at -inf: summarize
    # the brackets each option was tried on (None where there were none, not -inf / NaN).
    def tried_on(column: str) -> pd.DataFrame:
        return tried[np.isfinite(tried[column])]

    if args.ascend_steps:
        comb = tried_on("combinations_over_eps")
        summary["combinations_tried"] = int(len(comb))
        summary["median_combinations_over_eps"] = (
            float(comb["combinations_over_eps"].median()) if len(comb) else None
        )
    if args.hyperplane:
        hyp = tried_on("hyperplane_over_eps")
        gain = hyp["hyperplane_over_eps"] - hyp["row_search_over_eps"]
        summary["hyperplane_tried"] = int(len(hyp))
        summary["hyperplane_above_rows"] = int((gain > 1e-6).sum())
        summary["hyperplane_largest_gain_over_eps"] = float(gain.max()) if len(hyp) else None
    print(df.round(4).to_string(index=False))
    print(json.dumps(summary, indent=1))
    (OUT / f"sign_pattern_lower_L{args.length}.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
