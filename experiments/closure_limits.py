"""How far are nearly closed brackets from closing, and do exact local steps close them?

For every MiniLM bracket of width 1 or 2 (engine at ``default`` effort, unpruned profile)
this measures, at the two sizes that would close it:

- **upper end, rank hi - 1**: the best certified error ``e`` (relative to eps), then
  ``--lp-rounds`` rounds of exact block-coordinate descent on the true max-row-l1 error
  from that witness: the best ``W`` for fixed ``U`` (one LP) and the best ``U`` for fixed
  ``W`` (one l1 regression per row, an LP each), certified again;
- **upper end, continued** (``--continue-steps S [S ...]``, off by default): the engine's
  own Adam refinement run on for ``S`` more steps from that rank ``hi - 1`` witness (same
  schedule, no early stop short of ``0.98 eps``), then the l1 row refit, certified again:
  whether the engine's upper runs stop before they converge;
- **upper end, other basins** (``--upper-starts S``, off by default): the engine's Adam
  refinement at rank ``hi - 1`` from ``S`` starts unlike the engine's own (which are
  truncated SVDs of ``A`` or of a larger witness): the span of
  ``k`` random rows of ``A`` (a CUR-like start), k-means centroids of the rows, and the
  rank-``hi`` witness with one of its ``hi`` singular components dropped (the largest
  first; the engine drops the smallest), each followed by the l1 row refit; all starts of
  a bracket run in one batch;
- **lower end, size lo + 1** (``--skip-lower`` leaves it out): the best certified margin
  ``mu`` (relative to eps); a long projected ascent from that witness without early stopping
  (``--ascent-steps``; the engine stops trials that stall or look hopeless) followed by the
  exact best ``Y`` (:func:`analysis.brackets.lower.lp_best_Y`), certified again; and the
  exact expansion constant of that witness's test space,
  ``lambda(Z) = min { ||A z||_inf : z in range(R), ||z||_inf = 1 }`` (N small LPs, one per
  coordinate where ``|z_j| = 1``).
  ``lambda(Z) > eps`` would already prove ``r >= lo + 1`` (the proof of docs/method.md section 3
  with ``z = R x`` in place of ``x``), and it bounds what any basis ``(R T, Y)`` of the same
  space can certify, so it says whether the certificate *form* or the *space* limits the
  lower end. It is an uncertified LP value, reported as a diagnostic only; no bracket uses
  it.

Usage, from the repository root::

    python -m experiments.closure_limits [--length 96] [--heads 72] [--workers 2]
        [--lp-rounds 2] [--ascent-steps 2000] [--continue-steps S ...] [--skip-lower]
        [--upper-starts 24 --upper-start-steps 2000]

Writes ``experiments/out/closure_limits_L<length>.csv`` / ``.json`` and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import linprog

from analysis.brackets.lower import lp_best_Y
from analysis.brackets.lower_ascent import refine_lower
from analysis.brackets.optim import Problems
from analysis.brackets.upper import l1_refit_rows, refine_upper
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from experiments.common import OUT, command_line, diagnostic_profile, head_table, near_misses


def best_W(A: np.ndarray, U: np.ndarray) -> np.ndarray | None:
    """``argmin_W max_i sum_j |A_ij - u_i . w_j|`` for fixed ``U`` (one sparse LP).

    Variables ``W`` (N k, free), ``T_ij >= |A_ij - u_i . w_j|`` and ``s >= sum_j T_ij``.
    """
    M, N = A.shape
    k = U.shape[1]
    nW, nT = N * k, M * N
    i_idx, j_idx = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    i_idx, j_idx = i_idx.ravel(), j_idx.ravel()
    r = np.arange(M * N)
    rows = np.concatenate([np.repeat(r, k), r])
    cols = np.concatenate([(j_idx[:, None] * k + np.arange(k)).ravel(), nW + r])
    uw = U[i_idx].ravel()
    shape = (M * N, nW + nT + 1)
    pos = sp.csr_matrix((np.concatenate([uw, -np.ones(M * N)]), (rows, cols)), shape=shape)
    neg = sp.csr_matrix((np.concatenate([-uw, -np.ones(M * N)]), (rows, cols)), shape=shape)
    row_sum = sp.csr_matrix(
        (
            np.concatenate([np.ones(M * N), -np.ones(M)]),
            (np.concatenate([i_idx, np.arange(M)]), np.concatenate([nW + r, np.full(M, nW + nT)])),
        ),
        shape=(M, nW + nT + 1),
    )
    a = A[i_idx, j_idx]
    c = np.zeros(nW + nT + 1)
    c[-1] = 1.0
    res = linprog(
        c,
        A_ub=sp.vstack([pos, neg, row_sum]).tocsr(),
        b_ub=np.concatenate([a, -a, np.zeros(M)]),
        bounds=[(None, None)] * nW + [(0, None)] * (nT + 1),
        method="highs-ipm",
    )
    return res.x[:nW].reshape(N, k) if res.status == 0 else None


def best_U(A: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Each row's exact l1 regression on the columns of ``W`` (one LP per row)."""
    M, N = A.shape
    k = W.shape[1]
    A_ub = np.vstack([np.hstack([W, -np.eye(N)]), np.hstack([-W, -np.eye(N)])])
    c = np.concatenate([np.zeros(k), np.ones(N)])
    U = np.zeros((M, k))
    for i in range(M):
        res = linprog(
            c,
            A_ub=A_ub,
            b_ub=np.concatenate([A[i], -A[i]]),
            bounds=[(None, None)] * k + [(0, None)] * N,
            method="highs",
        )
        U[i] = res.x[:k]
    return U


def expansion(A: np.ndarray, R: np.ndarray) -> float:
    """``min { ||A z||_inf : z = R x, ||z||_inf = 1 }`` (:func:`expansion_argmin`)."""
    return expansion_argmin(A, R)[0]


def expansion_argmin(A: np.ndarray, R: np.ndarray) -> tuple[float, np.ndarray | None]:
    """``min { ||A z||_inf : z = R x, ||z||_inf = 1 }`` and a minimizing ``x``: for each j,
    minimize ``t`` with ``|A R x| <= t``, ``|R x| <= 1`` and ``(R x)_j = 1`` (z and -z are
    the same case)."""
    M, N = A.shape
    m = R.shape[1]
    AR = A @ R
    c = np.zeros(m + 1)
    c[-1] = 1.0
    A_ub = np.vstack(
        [
            np.hstack([AR, -np.ones((M, 1))]),
            np.hstack([-AR, -np.ones((M, 1))]),
            np.hstack([R, np.zeros((N, 1))]),
            np.hstack([-R, np.zeros((N, 1))]),
        ]
    )
    b_ub = np.concatenate([np.zeros(2 * M), np.ones(2 * N)])
    best, arg = np.inf, None
    for j in range(N):
        res = linprog(
            c,
            A_ub=A_ub,
            b_ub=b_ub,
            A_eq=np.append(R[j], 0.0)[None],
            b_eq=[1.0],
            bounds=[(None, None)] * m + [(0, None)],
            method="highs",
        )
        if res.status == 0 and res.fun < best:
            best, arg = float(res.fun), res.x[:m]
    return best, arg


def long_ascent(A: np.ndarray, R: np.ndarray, Y: np.ndarray, eps: float, steps: int) -> float:
    """Certified margin after ``steps`` of ascent from ``(R, Y)`` with no early stop
    (except success), then the exact best ``Y`` for the resulting ``R``."""
    m = R.shape[1]
    Rt, Yt, _ = refine_lower(
        torch.from_numpy(A).float()[None],
        torch.from_numpy(R).float()[None],
        torch.from_numpy(Y).float()[None],
        Problems(torch.tensor([m]), torch.tensor([eps]), torch.tensor([steps])),
        give_up=1e9,
        stall=1e9,
    )
    R1, Y1 = Rt[0].double().numpy(), Yt[0].double().numpy()
    mu = certified_lower_margin(A, R1, Y1)
    return max(mu, certified_lower_margin(A, R1, lp_best_Y(A, R1)))


def refine_and_certify(
    A: np.ndarray, starts: list[tuple[np.ndarray, np.ndarray]], eps: float, steps: int
) -> list[float]:
    """Certified error of each rank-k start ``(U, W)`` after ``steps`` of the engine's Adam
    refinement (all starts in one batch, stopping early only below ``0.98 eps``) and the
    l1 row refit of every row (the better of the two)."""
    P = len(starts)
    k = starts[0][0].shape[1]
    Ut, Wt, _ = refine_upper(
        torch.from_numpy(A).float()[None].expand(P, -1, -1),
        torch.stack([torch.from_numpy(U).float() for U, _ in starts]),
        torch.stack([torch.from_numpy(W).float() for _, W in starts]),
        Problems(torch.full((P,), k), torch.full((P,), 0.98 * eps), torch.full((P,), steps)),
        give_up=1e9,
    )
    A64 = torch.from_numpy(A)[None]
    errors = []
    for U1, W1 in zip(Ut.double(), Wt.double(), strict=True):
        U2 = l1_refit_rows(A64, U1[None], W1[None])[0]
        errors.append(
            min(
                certified_upper_error(A, U1.numpy(), W1.numpy()),
                certified_upper_error(A, U2.numpy(), W1.numpy()),
            )
        )
    return errors


def continue_upper(A: np.ndarray, U: np.ndarray, W: np.ndarray, eps: float, steps: int) -> float:
    """Certified error after ``steps`` more of the engine's Adam refinement from ``(U, W)``
    (stopping early only below ``0.98 eps``), then the l1 row refit of every row."""
    return refine_and_certify(A, [(U, W)], eps, steps)[0]


def upper_starts(
    A: np.ndarray, k: int, larger: tuple[np.ndarray, np.ndarray] | None, count: int, seed: int
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``count`` named rank-k starts ``(U, W)`` unlike the engine's (module docstring):
    cycling through random row spans, k-means row centroids and drop-one truncations of
    the larger witness ``larger`` (``U W^T`` of rank k + 1)."""
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    M = A.shape[0]
    drops: list[tuple[str, np.ndarray, np.ndarray]] = []
    if larger is not None:
        Ub, Sb, Vbh = np.linalg.svd(larger[0] @ larger[1].T, full_matrices=False)
        for j in range(k + 1):
            keep = [i for i in range(k + 1) if i != j]
            drops.append((f"drop{j}", Ub[:, keep] * Sb[keep], Vbh[keep].T))

    def span(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Q, _ = np.linalg.qr(rows.T)  # [N, k]
        return A @ Q, Q

    out: list[tuple[str, np.ndarray, np.ndarray]] = []
    i = 0
    while len(out) < count:
        kind = i % 3
        if kind == 0:
            out.append(("rows", *span(A[rng.choice(M, size=k, replace=False)])))
        elif kind == 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cent, lab = kmeans2(A, k, seed=int(rng.integers(2**31)), minit="++")
            if np.unique(lab).size == k:
                out.append(("kmeans", *span(cent)))
        elif drops:
            # The largest component first: dropping the smallest is the engine's own start.
            out.append(drops.pop(0))
        i += 1
    return out


def multistart_upper(
    A: np.ndarray,
    k: int,
    eps: float,
    larger: tuple[np.ndarray, np.ndarray] | None,
    count: int,
    steps: int,
    seed: int,
) -> tuple[float, str]:
    """Best certified error at rank k over :func:`upper_starts` refined in one batch
    (no early stop short of ``0.98 eps``), each then l1-refit; with the winning start."""
    starts = upper_starts(A, k, larger, count, seed)
    errors = refine_and_certify(A, [(U, W) for _, U, W in starts], eps, steps)
    p = int(np.argmin(errors))
    return errors[p], starts[p][0]


def one_head(args: tuple) -> list[dict]:
    index, A, lp_rounds, ascent_steps, continue_steps, skip_lower, n_starts, start_steps = args
    prof = diagnostic_profile(A)
    rows = []
    for eps, lo, hi in near_misses(prof):
        row = {"index": index, "eps": eps, "lower": lo, "upper": hi}
        up = prof.upper.get(hi - 1)
        if up is not None and hi - 1 >= 1:
            t0 = time.perf_counter()
            U, W, e_lp = up.U, up.W, up.error
            for _ in range(lp_rounds):
                W_new = best_W(A, U)
                if W_new is None:
                    break
                W = W_new
                U = best_U(A, W)
                e_lp = min(e_lp, certified_upper_error(A, U, W))
            row |= {
                "upper_rank": hi - 1,
                "upper_error_over_eps": up.error / eps,
                "upper_error_lp_over_eps": e_lp / eps,
                "upper_lp_seconds": time.perf_counter() - t0,
            }
            for steps in continue_steps:
                e_c = continue_upper(A, up.U, up.W, eps, steps)
                row[f"upper_error_cont{steps}_over_eps"] = e_c / eps
            if n_starts:
                t0 = time.perf_counter()
                big = prof.upper.get(hi)
                larger = (big.U, big.W) if big is not None else None
                e_m, kind = multistart_upper(
                    A, hi - 1, eps, larger, n_starts, start_steps, seed=index
                )
                row |= {
                    "upper_error_multistart_over_eps": e_m / eps,
                    "upper_multistart_best_start": kind,
                    "upper_multistart_seconds": time.perf_counter() - t0,
                }
        low = prof.lower.get(lo + 1)
        if low is not None and not skip_lower:
            row |= {
                "lower_size": lo + 1,
                "lower_margin_over_eps": low.margin / eps,
                "lower_margin_long_over_eps": long_ascent(A, low.R, low.Y, eps, ascent_steps) / eps,
                "lower_expansion_over_eps": expansion(A, low.R) / eps,
            }
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=96)
    ap.add_argument("--heads", type=int, default=72)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lp-rounds", type=int, default=2)
    ap.add_argument("--ascent-steps", type=int, default=2000)
    ap.add_argument("--continue-steps", type=int, nargs="*", default=[])
    ap.add_argument("--skip-lower", action="store_true", help="no lower-end diagnostics")
    ap.add_argument("--upper-starts", type=int, default=0, help="other-basin starts at hi - 1")
    ap.add_argument("--upper-start-steps", type=int, default=1200)
    args = ap.parse_args()
    print("command:", command_line("experiments.closure_limits"))
    options = (
        args.lp_rounds,
        args.ascent_steps,
        tuple(args.continue_steps),
        args.skip_lower,
        args.upper_starts,
        args.upper_start_steps,
    )
    t0 = time.perf_counter()
    df = head_table(
        one_head,
        options,
        length=args.length,
        heads=args.heads,
        workers=args.workers,
        csv_name=f"closure_limits_L{args.length}.csv",
    )
    up = df.dropna(subset=["upper_error_over_eps"])
    summary: dict = {"length": args.length, "brackets_width_1_2": int(len(df))}
    summary["upper"] = {
        "cases": int(len(up)),
        "median_error_over_eps": float(up["upper_error_over_eps"].median()),
    }
    if args.lp_rounds:
        summary["upper"] |= {
            "median_error_after_exact_lp_over_eps": float(up["upper_error_lp_over_eps"].median()),
            "closed_by_exact_lp": int((up["upper_error_lp_over_eps"] <= 1).sum()),
            "median_lp_seconds": float(up["upper_lp_seconds"].median()),
        }
    width1 = up["upper"] - up["lower"] == 1
    for steps in args.continue_steps:
        e_c = up[f"upper_error_cont{steps}_over_eps"]
        summary["upper"][f"continued_{steps}_steps"] = {
            "median_error_over_eps": float(e_c.median()),
            "median_ratio_to_engine": float((e_c / up["upper_error_over_eps"]).median()),
            "upper_ends_lowered": int((e_c <= 1).sum()),
            "brackets_closed": int(((e_c <= 1) & width1).sum()),
        }
    if args.upper_starts:
        e_m = up["upper_error_multistart_over_eps"]
        summary["upper"]["multistart"] = {
            "starts": args.upper_starts,
            "steps": args.upper_start_steps,
            "median_error_over_eps": float(e_m.median()),
            "median_ratio_to_engine": float((e_m / up["upper_error_over_eps"]).median()),
            "upper_ends_lowered": int((e_m <= 1).sum()),
            "brackets_closed": int(((e_m <= 1) & width1).sum()),
            "winning_starts": up.loc[e_m <= 1, "upper_multistart_best_start"].tolist(),
            "median_seconds": float(up["upper_multistart_seconds"].median()),
        }
    if not args.skip_lower:
        low = df.dropna(subset=["lower_margin_over_eps"])
        summary["lower"] = {
            "cases": int(len(low)),
            "median_margin_over_eps": float(low["lower_margin_over_eps"].median()),
            "median_margin_long_ascent_over_eps": float(low["lower_margin_long_over_eps"].median()),
            "closed_by_long_ascent": int((low["lower_margin_long_over_eps"] > 1).sum()),
            "median_expansion_over_eps": float(low["lower_expansion_over_eps"].median()),
            "median_expansion_over_margin": float(
                (low["lower_expansion_over_eps"] / low["lower_margin_over_eps"]).median()
            ),
            "expansion_above_eps": int((low["lower_expansion_over_eps"] > 1).sum()),
        }
    summary["wall_seconds"] = time.perf_counter() - t0
    print(df.round(4).to_string(index=False))
    print(json.dumps(summary, indent=1))
    (OUT / f"closure_limits_L{args.length}.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
