"""Does one more dimension in the test space help? A Gelfand-type lower bound over planes.

A lower witness of size m certifies at most the expansion constant
``lambda(Z') = min { ||A z||_inf / ||z||_inf : z in Z' }`` of an m-dimensional test space
``Z'`` (docs/engine.md, "What a lower witness can reach at best"). A test space ``Z`` of
dimension ``m + 1`` gives a bound of another kind, between that Bernstein-type value and
the approximation number ``a_m(A)`` itself:

    gamma(Z) = min over planes P in Z of max { ||A z||_inf / ||z||_inf : z in P }.

**Why it is a bound.** Let ``B`` have rank ``<= m - 1`` and ``max_i ||(A - B)_i||_1 <=
eps``. Then ``ker B`` meets ``Z`` in a subspace of dimension ``>= 2``, which contains a
plane ``P``, and on ``P`` ``||A z||_inf = ||(A - B) z||_inf <= eps ||z||_inf``. So
``gamma(Z) > eps`` proves ``r_eps(A) >= m``. Every plane of ``Z`` meets every m-dimensional
``Z' in Z``, so ``gamma(Z) >= lambda(Z')``: the bound can only gain over the best
hyperplane of ``Z``.

**What is measured.** For each MiniLM bracket of width 1 or 2 (engine at ``default``
effort, unpruned profile) with ``m = lo + 1 <= --max-size``: ``Z' = range(R_m)`` of the
engine's best size-m witness, and ``Z = Z' + span(c)`` for each column ``c`` of the
engine's size-(m + 1) witness (the first ``--columns``) and ``--random-columns`` Gaussian
columns. For each ``Z``:
``lambda`` of its m coordinate hyperplanes (N small LPs each; the best is the floor
``gamma`` cannot go below) and an estimate of ``gamma(Z)`` from above: Nelder-Mead over
planes, started from the planes through pairs of the hyperplanes' minimizers (at most
``--max-starts``, those through the engine space's own minimizer first), each plane's
maximum taken over 2,048 points of its unit circle (parametrized uniformly in ``z``) and
the final ones refined to 8,192 points and a local scalar search. A start stops the search
for that ``Z`` once it reaches the floor. The minimization is non-convex, so the estimate
is not a certificate; an estimate at the floor says the extra dimension gains nothing there.

Usage::

    python benchmarks/bench_plane_lower.py [--length 96] [--heads 72] [--workers 2]
        [--max-size 9] [--columns 3] [--random-columns 0] [--max-starts 8]
        [--max-iter 1500]

Writes ``benchmarks/out/plane_lower_L<length>.csv`` / ``.json`` and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize, minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_closure_limits import expansion_argmin  # noqa: E402
from minilm_heads import OUT, diagnostic_profile, head_table, near_misses  # noqa: E402


def _circle(points: int) -> np.ndarray:
    th = np.linspace(0.0, np.pi, points + 1)[:-1]  # z and -z give the same ratio
    return np.stack([np.cos(th), np.sin(th)])


SEARCH, FINAL = _circle(2048), _circle(8192)


def plane_max(AR: np.ndarray, R: np.ndarray, P: np.ndarray, *, refine: bool = False) -> float:
    """``max ||A R x||_inf / ||R x||_inf`` over ``x`` in ``span(P)`` (``P``: ``[q, 2]``),
    sampled on the unit circle of ``R P`` made orthonormal (so that no arc of the plane is
    sampled thinly); ``refine`` samples 8,192 points and searches around the top four."""
    RP = R @ P
    Qz, T = np.linalg.qr(RP)
    if abs(T[1, 1]) <= 1e-9 * abs(T[0, 0]):
        return np.inf  # a degenerate "plane"
    G = AR @ P @ np.linalg.inv(T)  # A z for z = Qz c

    def ratio(c: np.ndarray) -> np.ndarray:
        return np.abs(G @ c).max(0) / np.abs(Qz @ c).max(0)

    grid = FINAL if refine else SEARCH
    vals = ratio(grid)
    best = float(vals.max())
    if refine:
        h = np.pi / grid.shape[1]
        for k in np.argsort(vals)[-4:]:
            t0 = np.arctan2(grid[1, k], grid[0, k])
            res = minimize_scalar(
                lambda t: -ratio(np.array([[np.cos(t)], [np.sin(t)]]))[0],
                bounds=(t0 - h, t0 + h),
                method="bounded",
            )
            best = max(best, -float(res.fun))
    return best


def plane_search(
    A: np.ndarray, R: np.ndarray, *, max_iter: int, max_starts: int
) -> tuple[float, float, int]:
    """``(floor, estimate, starts)`` for ``Z = range(R)`` (``R``: ``[N, q]``): the best
    ``lambda`` of the q coordinate hyperplanes, the least plane maximum found, and the number
    of Nelder-Mead starts run (at most ``max_starts``; it stops at the first that reaches the
    floor). Every plane's maximum bounds ``gamma`` from above, so fewer starts only make the
    estimate, and with it the apparent gain over the floor, larger."""
    q = R.shape[1]
    AR = A @ R
    subs = []
    for i in range(q):
        keep = [c for c in range(q) if c != i]
        value, x = expansion_argmin(A, R[:, keep])
        z = np.zeros(q)
        if x is not None:
            z[keep] = x
        subs.append((value, z))
    floor = max(v for v, _ in subs)
    # planes through the last hyperplane's minimizer (the engine's own space) first
    pairs = [(q - 1, i) for i in range(q - 1)]
    pairs += [(i, j) for i in range(q - 1) for j in range(i + 1, q - 1)]
    best, runs = np.inf, 0
    for i, j in pairs[:max_starts]:
        P0 = np.stack([subs[i][1], subs[j][1]], 1)
        res = minimize(
            lambda p: plane_max(AR, R, p.reshape(q, 2)),
            P0.ravel(),
            method="Nelder-Mead",
            options={"maxiter": max_iter, "xatol": 1e-8, "fatol": 1e-10},
        )
        runs += 1
        best = min(best, plane_max(AR, R, res.x.reshape(q, 2), refine=True))
        if best <= floor * (1 + 1e-6):
            break
    return floor, best, runs


def one_head(args: tuple) -> list[dict]:
    index, A, max_size, columns, random_columns, max_iter, max_starts = args
    prof = diagnostic_profile(A)
    rng = np.random.default_rng(index)
    out = []
    for eps, lo, hi in near_misses(prof):
        m = lo + 1
        if m > max_size or m not in prof.lower:
            continue
        Rm = prof.lower[m].R
        extra = []
        if m + 1 in prof.lower:
            extra += [("engine", c) for c in prof.lower[m + 1].R.T[:columns]]
        extra += [("random", c) for c in rng.standard_normal((random_columns, A.shape[1]))]
        for kind, col in extra:
            t0 = time.perf_counter()
            floor, est, runs = plane_search(
                A, np.column_stack([Rm, col]), max_iter=max_iter, max_starts=max_starts
            )
            out.append(
                {
                    "index": index,
                    "eps": eps,
                    "lower": lo,
                    "upper": hi,
                    "size": m,
                    "engine_margin_over_eps": prof.lower[m].margin / eps,
                    "column": kind,
                    "floor_over_eps": floor / eps,
                    "plane_estimate_over_eps": est / eps,
                    "starts": runs,
                    "seconds": time.perf_counter() - t0,
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=96)
    ap.add_argument("--heads", type=int, default=72)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-size", type=int, default=9)
    ap.add_argument("--columns", type=int, default=3, help="engine size-(m + 1) columns")
    ap.add_argument("--random-columns", type=int, default=0)
    ap.add_argument("--max-starts", type=int, default=8)
    ap.add_argument("--max-iter", type=int, default=1500)
    args = ap.parse_args()
    command = "python benchmarks/bench_plane_lower.py " + " ".join(sys.argv[1:])
    print("command:", command)
    t0 = time.perf_counter()
    df = head_table(
        one_head,
        (
            args.max_size,
            args.columns,
            args.random_columns,
            args.max_iter,
            args.max_starts,
        ),
        length=args.length,
        heads=args.heads,
        workers=args.workers,
        csv_name=f"plane_lower_L{args.length}.csv",
    )
    summary: dict = {"command": command, "length": args.length, "spaces": int(len(df))}
    if len(df):
        gain = df["plane_estimate_over_eps"] - df["floor_over_eps"]
        per_bracket = df.groupby(["index", "eps"])["plane_estimate_over_eps"].max()
        summary |= {
            "brackets": int(len(per_bracket)),
            "median_floor_over_eps": float(df["floor_over_eps"].median()),
            "median_gain_over_floor_eps": float(gain.median()),
            "max_gain_over_floor_eps": float(gain.max()),
            "spaces_gaining_1e-3_eps": int((gain > 1e-3).sum()),
            "brackets_with_estimate_above_eps": int((per_bracket > 1).sum()),
            "median_seconds_per_space": float(df["seconds"].median()),
        }
    summary["wall_seconds"] = time.perf_counter() - t0
    (OUT / f"plane_lower_L{args.length}.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
