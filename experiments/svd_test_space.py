"""Would top singular subspaces make better lower-witness test spaces at large rank?

On the spherical family the lower ends at large rank are what keeps the brackets wide
(docs/results/laws.md). A lower witness ``(R, Y)`` of size m certifies at most the expansion
constant of its test space ``Z = range(R)``,
``lambda(Z) = min { ||A z||_inf / ||z||_inf : z in Z }``, and the engine builds its spaces
from column groups. For a smooth kernel the span of the top-m right singular vectors of
``A`` (close to the low-degree spherical harmonics) is the obvious alternative. This script
computes, for one spherical matrix, the engine's bracket (effort ``default``) and
``lambda`` of the top-m singular subspace for the given sizes (N small LPs each,
:func:`experiments.closure_limits.expansion`), beside the m-th singular value (for contrast:
``sigma_m`` is the l2 analogue). ``lambda(Z) > eps`` would prove ``r_eps >= m`` (the proof
of docs/method.md section 3 with ``z`` in place of ``R x``); the values are uncertified LP
optima, a diagnostic only. With ``--polish-rounds R`` it also tries to fit the engine's own
certificate to the singular subspace of each size in ``--polish-sizes``: from that basis,
``R`` rounds of the exact alternating LPs (:func:`analysis.brackets.lower.lp_best_Y`, then
:func:`analysis.brackets.lower.lp_best_R`), each pair certified by the engine's verifier.

Usage, from the repository root::

    python -m experiments.svd_test_space [--n 512] [--d 3] [--beta 16] [--seed 0]
        [--eps 0.1] [--sizes 45 51 55 60] [--polish-sizes 51 --polish-rounds 0]

Prints the rows and writes ``experiments/out/svd_test_space.json``
(``svd_test_space_polish.json`` with ``--polish-rounds``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from analysis.brackets import profile_matrix
from analysis.brackets.lower import lp_best_R, lp_best_Y
from analysis.brackets.verify import certified_lower_margin
from analysis.laws.theory import harmonic_rank
from analysis.sources.synthetic import spherical
from experiments.closure_limits import expansion
from experiments.common import OUT, command_line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--beta", type=float, default=16.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--sizes", type=int, nargs="*", default=[45, 51, 55, 60])
    ap.add_argument("--polish-sizes", type=int, nargs="*", default=[51])
    ap.add_argument("--polish-rounds", type=int, default=0)
    args = ap.parse_args()
    command = command_line("experiments.svd_test_space")
    print("command:", command)
    A = spherical(args.n, args.d, args.beta, random_state=args.seed).A
    t0 = time.perf_counter()
    prof = profile_matrix(A, eps=(args.eps,), effort="default", prune=False)
    lo, hi = prof.bracket(args.eps)
    engine_seconds = time.perf_counter() - t0
    _, s, Vt = np.linalg.svd(A)

    def singular_basis(m: int) -> np.ndarray:
        """``[N, m]`` basis of the top-m right singular subspace, rows of l1 norm <= 1."""
        return Vt[:m].T / np.abs(Vt[:m].T).sum(1).max()

    rows = []
    for m in args.sizes:
        t0 = time.perf_counter()
        R = singular_basis(m)  # lambda(Z) does not depend on the basis
        w = prof.lower.get(m)
        rows.append(
            {
                "size": m,
                "svd_space_expansion_over_eps": expansion(A, R) / args.eps,
                "sigma_m_over_eps": float(s[m - 1]) / args.eps,
                "engine_margin_over_eps": None if w is None else w.margin / args.eps,
                "seconds": time.perf_counter() - t0,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    polish = []
    for m in args.polish_sizes if args.polish_rounds else []:
        t0 = time.perf_counter()
        R = singular_basis(m)
        for rnd in range(args.polish_rounds):
            Y = lp_best_Y(A, R)
            after_Y = certified_lower_margin(A, R, Y) / args.eps
            R_new = lp_best_R(A, Y)
            if R_new is None:
                break
            R = R_new
            polish.append(
                {
                    "size": m,
                    "round": rnd + 1,
                    "after_best_Y_over_eps": after_Y,
                    "after_best_R_over_eps": certified_lower_margin(A, R, Y) / args.eps,
                    "seconds": time.perf_counter() - t0,
                }
            )
            print(json.dumps(polish[-1]), flush=True)
    summary = {
        "command": command,
        "bracket": [lo, hi],
        "harmonic_count": harmonic_rank(args.d, args.beta, args.eps),
        "engine_seconds": engine_seconds,
        "sizes": rows,
        "polish": polish,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    name = "svd_test_space_polish.json" if polish else "svd_test_space.json"
    (OUT / name).write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("sizes", "polish")}))


if __name__ == "__main__":
    main()
