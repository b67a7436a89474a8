"""What the reweighting leaves: the least max-row-l1 right inverse of a row block, by LP.

Engine 5's row-span witness at size m uses the rows ``S`` of a pivoted QR of ``A^T`` and
a reweighted ridge right inverse ``R`` of ``A_S`` (:mod:`analysis.brackets.rowspan`). For
the same ``S``, the right inverse of least ``max_j ||R_j||_1`` is a linear program
(``min t`` subject to ``A_S R = I`` and ``sum_k |R_jk| <= t`` for every row j, with
``R = P - Q``, ``P, Q >= 0``; HiGHS through :func:`scipy.optimize.linprog`). This
experiment compares the two at sizes around engine 5's scan result on MiniLM heads: the
certified margins (both witnesses go through the engine's builder: float32 rounding, then
the float64 verifier) and ``max_j ||R_j||_1``.

Usage, from the repository root::

    python -m experiments.rowspan_lp [--length 128] [--every 12] [--eps 0.1]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from analysis.attention import fixed_torch_threads
from analysis.brackets import stages
from analysis.brackets.rowspan import RowSpan, rowspan_witness
from experiments.common import command_line, minilm_attention


def lp_right_inverse(AS: np.ndarray) -> np.ndarray | None:
    """``argmin max_j ||R_j||_1`` over ``A_S R = I`` (None if HiGHS fails)."""
    m, N = AS.shape
    nv = 2 * N * m + 1  # P, Q (row-major [N, m]) and t
    # equalities: (A_S (P - Q))_{pq} = delta_pq
    eye_m = sp.identity(m, format="csr")
    AP = sp.kron(sp.csr_matrix(AS), eye_m)  # acts on vec(P) row-major [N, m]
    A_eq = sp.hstack([AP, -AP, sp.csr_matrix((m * m, 1))]).tocsr()
    b_eq = np.eye(m).ravel()
    # inequalities: sum_k (P_jk + Q_jk) - t <= 0
    rows = sp.kron(sp.identity(N), np.ones((1, m)))
    A_ub = sp.hstack([rows, rows, -np.ones((N, 1))]).tocsr()
    c = np.zeros(nv)
    c[-1] = 1.0
    res = scipy.optimize.linprog(
        c, A_ub=A_ub, b_ub=np.zeros(N), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs"
    )
    if res.status != 0:
        return None
    x = res.x
    return (x[: N * m] - x[N * m : 2 * N * m]).reshape(N, m)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--eps", type=float, default=0.1)
    args = ap.parse_args()
    print("command:", command_line("experiments.rowspan_lp"), flush=True)
    A_all = minilm_attention(args.length)
    out = []
    with fixed_torch_threads(1):
        for i in range(0, len(A_all), args.every):
            A = A_all[i]
            b = stages.Builder(A, None)
            stages.trivial_witnesses(b)
            stages.cheap_stage(b, [args.eps])
            fam = RowSpan(A, reweights=6, ridge=1e-4)
            m0 = fam.scan(b, args.eps, b.lo(args.eps), b.hi(args.eps), 9)
            for m in sorted({max(1, m0 - 2), m0, m0 + 2}):
                mu_rw = fam.evaluate(b, m)
                R_rw = fam.best[m][1] if mu_rw > -np.inf else None
                c0 = time.process_time()
                S = fam.order[:m]
                R = lp_right_inverse(A[S])
                cpu = time.process_time() - c0
                Y = None if R is None else rowspan_witness(A, S, R)
                mu_lp = -np.inf if Y is None else b.offer_lower(R, Y, "rowspan-lp")
                row = {
                    "head": i,
                    "size": m,
                    "margin_reweighted": round(float(mu_rw), 4),
                    "margin_lp": round(float(mu_lp), 4),
                    "rho_reweighted": None
                    if R_rw is None
                    else round(float(np.abs(R_rw).sum(1).max()), 3),
                    "rho_lp": None if R is None else round(float(np.abs(R).sum(1).max()), 3),
                    "lp_cpu": round(cpu, 2),
                }
                out.append(row)
                print(json.dumps(row), flush=True)
    ratios = [
        r["margin_lp"] / r["margin_reweighted"]
        for r in out
        if r["margin_reweighted"] > 0 and r["margin_lp"] > -np.inf
    ]
    print(json.dumps({"median_margin_ratio_lp_over_reweighted": float(np.median(ratios))}))


if __name__ == "__main__":
    main()
