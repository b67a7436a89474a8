"""Does a nonlinear (Borsuk-Ulam) lower certificate close the nearly closed brackets?

The engine's lower witness ``(R, Y)`` proves ``r_eps(A) >= m`` with a *linear* test space
``range(R)`` (METHOD.md section 3). ``bench_closure_limits.py`` showed that on the width-1
brackets the best such spaces stay a few percent short of eps, and that the
diagonal-dominance form loses nothing on them, so only a better space could help. This
script tries a strictly larger family: odd piecewise-linear images of a sphere.

**Certificate.** Triangulate the boundary of the cube ``[-1, 1]^m`` (a sphere
``S^(m-1)``) centrally symmetrically (Freudenthal / Kuhn triangulation of a grid with
``k`` cells per axis), give every vertex ``x`` an image ``phi(x)`` in ``R^N`` with
``phi(-x) = -phi(x)``, extend ``phi`` linearly on every simplex, and give every simplex
``s`` one row functional ``y_s`` (``||y_s||_1 <= 1``). If for every simplex and each of
its vertices ``<y_s, A phi(x)> > eps ||phi(x)||_inf``, then ``r_eps(A) >= m``.

Proof: let ``B`` have rank ``<= m - 1`` with ``max_i ||(A - B)_i||_1 <= eps`` and write
``B = C D`` with ``D`` of size ``(m - 1) x N``. ``D phi`` is an odd continuous map from
``S^(m-1)`` to ``R^(m-1)``, so by Borsuk-Ulam it vanishes at some ``x*``; ``v = phi(x*)``
lies in a simplex ``s`` and ``B v = 0``. ``f(v) = <y_s, A v> - eps ||v||_inf`` is concave
(linear minus convex) and positive at the simplex's vertices, hence at ``v`` (so
``v != 0``). But ``<y_s, A v> <= ||A v||_inf = ||(A - B) v||_inf <= eps ||v||_inf``: a
contradiction. With ``k = 1`` and ``phi`` linear this is the diagonal-dominance
certificate (one ``y_p`` per facet ``x_p = +-1``); nonlinear ``phi`` can only certify more.

**What is measured.** For each width-1 bracket at the chosen eps (N = 128, 72 MiniLM heads,
engine at ``default`` effort, unpruned profile) with ``m = lo + 1 <= --max-size``: the
engine's best certified margin at size m, and the best ratio
``min_(s, x in s) <y_s, A phi(x)> / (||y_s||_1 ||phi(x)||_inf)`` reached by Adam on a soft
minimum of those ratios over all ``phi`` and ``y_s`` jointly, started from
``phi(x) = R x`` and the LP-best ``y_s`` of every simplex. The ratio is computed in
float64 without a rounding allowance: a diagnostic, not a certificate. A ratio above 1
(relative to eps) would be worth certifying; no bracket here uses it.

Usage::

    python benchmarks/bench_topological_lower.py [--eps 0.2] [--grid 1] [--steps 4000]
                                                 [--max-size 6] [--workers 2]

Writes ``benchmarks/out/topological_lower.csv`` and prints a summary.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minilm_heads import EPS, TOPIC, diagnostic_profile, map_heads, minilm_attention  # noqa: E402

from analysis.brackets.optim import cosine_lr  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def boundary_triangulation(m: int, k: int) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """Boundary simplices of the Freudenthal triangulation of ``[-1, 1]^m`` (``k`` cells per
    axis), one of each antipodal pair.

    Returns vertex representatives ``X`` ``[V, m]`` (first nonzero coordinate positive) and
    the simplices as lists of ``(vertex, sign)``: the simplex's point is ``sign * X[vertex]``.
    A cell with lower corner ``a`` and order ``pi`` is the path ``a, a + h e_pi(1), ...``;
    its face without the first vertex lies on the boundary when ``a_pi(1) + h = 1``, the
    face without the last when ``a_pi(m) = -1``; the triangulation is centrally symmetric
    (the negated path is a path of the same kind, in reversed order).
    """
    h = 2 / k
    reps: dict[tuple[int, ...], int] = {}

    def vid(x: np.ndarray) -> tuple[int, int]:
        g = tuple(round(c * k) for c in x)
        sign = 1 if next(c for c in g if c != 0) > 0 else -1
        g = tuple(sign * c for c in g)
        return reps.setdefault(g, len(reps)), sign

    simplices, seen = [], set()
    for a in itertools.product([-1 + h * i for i in range(k)], repeat=m):
        for pi in itertools.permutations(range(m)):
            path = [np.array(a)]
            for c in pi:
                path.append(path[-1] + h * np.eye(m)[c])
            faces = []
            if math.isclose(a[pi[0]] + h, 1):
                faces.append(path[1:])
            if math.isclose(a[pi[-1]], -1):
                faces.append(path[:-1])
            for face in faces:
                ids = [vid(x) for x in face]
                key = frozenset(ids)
                if key in seen or frozenset((i, -s) for i, s in ids) in seen:
                    continue
                seen.add(key)
                simplices.append(ids)
    X = np.zeros((len(reps), m))
    for g, i in reps.items():
        X[i] = np.array(g) / k
    return X, simplices


def lp_best_y(W: np.ndarray) -> np.ndarray:
    """``argmax_y min_i <y, w_i>`` over ``||y||_1 <= 1`` for the rows ``w_i`` of ``W`` (HiGHS)."""
    n, M = W.shape
    c = np.zeros(2 * M + 1)
    c[-1] = -1.0
    A_ub = np.vstack([np.hstack([-W, W, np.ones((n, 1))]), np.append(np.ones(2 * M), 0.0)[None]])
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.append(np.zeros(n), 1.0),
        bounds=[(0, None)] * (2 * M) + [(None, None)],
        method="highs",
    )
    return res.x[:M] - res.x[M : 2 * M]


def ratios(A, Phi, Ys, vid, sgn) -> torch.Tensor:
    """``<y_s, A phi(x)> / (||y_s||_1 ||phi(x)||_inf)`` for every simplex and vertex ``[S, m]``."""
    AP = Phi @ A.T  # [V, M]
    raw = sgn * torch.einsum("sM,siM->si", Ys, AP[vid])
    return raw / Phi.abs().amax(1)[vid] / Ys.abs().sum(1, keepdim=True)


def ascend(A: np.ndarray, R: np.ndarray, grid: int, steps: int, lr: float) -> tuple[float, int]:
    """Best min ratio (uncertified) of the odd piecewise-linear map started at ``phi = R x``."""
    X, simplices = boundary_triangulation(R.shape[1], grid)
    vid = torch.tensor([[v for v, _ in s] for s in simplices])
    sgn = torch.tensor([[g for _, g in s] for s in simplices], dtype=torch.float64)
    At = torch.from_numpy(A)
    Phi = torch.from_numpy(X @ R.T)
    AP = (Phi @ At.T).numpy()
    inf = Phi.abs().amax(1).numpy()
    Ys = torch.from_numpy(
        np.stack(
            [
                lp_best_y(sgn[s, :, None].numpy() * AP[vid[s]] / inf[vid[s], None])
                for s in range(len(simplices))
            ]
        )
    )
    Phi.requires_grad_(True)
    Ys.requires_grad_(True)
    opt = torch.optim.Adam([Phi, Ys], lr=lr)
    best = -math.inf
    for t in range(steps + 1):
        r = ratios(At, Phi, Ys, vid, sgn)
        best = max(best, float(r.detach().min()))
        if t == steps:
            break
        beta = 1000.0 + 9000.0 * t / steps  # soft minimum, tightening
        loss = torch.logsumexp(-beta * r.flatten(), 0) / beta
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():  # the ratios are scale-free; keep the scales near 1
            Phi.div_(Phi.abs().amax(1, keepdim=True))
            Ys.div_(Ys.abs().sum(1, keepdim=True))
        for g in opt.param_groups:
            g["lr"] = float(cosine_lr(lr, torch.tensor(t / steps), 0.1))
    return best, len(simplices)


def one_head(job: tuple) -> list[dict]:
    index, A, eps, grid, steps, lr, max_size = job
    prof = diagnostic_profile(A)
    lo, hi = prof.bracket(eps)
    w = prof.lower.get(lo + 1)
    if hi - lo != 1 or w is None or lo + 1 > max_size:
        return []
    t0 = time.perf_counter()
    best, n_simplices = ascend(A, w.R, grid, steps, lr)
    return [
        {
            "index": index,
            "eps": eps,
            "lower": lo,
            "upper": hi,
            "size": lo + 1,
            "simplices": n_simplices,
            "linear_margin_over_eps": w.margin / eps,
            "piecewise_ratio_over_eps": best / eps,
            "seconds": time.perf_counter() - t0,
        }
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=0.2, choices=EPS)
    ap.add_argument("--grid", type=int, default=1, help="cells per cube axis (k)")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--max-size", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print("command:", "python benchmarks/bench_topological_lower.py " + " ".join(sys.argv[1:]))
    A = minilm_attention(128, topic_index=TOPIC.get(128, 0))
    jobs = [
        (i, A[i], args.eps, args.grid, args.steps, args.lr, args.max_size) for i in range(len(A))
    ]
    t0 = time.perf_counter()
    rows = map_heads(one_head, jobs, args.workers)
    df = pd.DataFrame(rows)
    out = ROOT / "benchmarks" / "out" / "topological_lower.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.to_string(index=False))
    if len(df):
        gain = df.piecewise_ratio_over_eps - df.linear_margin_over_eps
        print(
            f"{len(df)} width-1 brackets; linear margin / eps median "
            f"{df.linear_margin_over_eps.median():.3f}, piecewise ratio / eps median "
            f"{df.piecewise_ratio_over_eps.median():.3f} (gain median {gain.median():.3f}, "
            f"max {gain.max():.3f}); above 1: {(df.piecewise_ratio_over_eps > 1).sum()}; "
            f"wall {time.perf_counter() - t0:.0f} s"
        )


if __name__ == "__main__":
    main()
