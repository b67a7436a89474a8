"""Why engine 5's upper trials fail at N = 256, eps 0.05 (issue 37, tuning round).

For each head: the cheap stage's upper end ``hi`` at eps, the truncated-SVD error at
ranks ``f * hi``, and one Adam run (the upper trial of engine 5 before its tuning round:
SVD start, rank-scaled budget, 4x anneal horizon, engine 4's learning rate 5e-4) per
variant of budget / horizon / early stop / learning rate, printing the best error each
reaches (in units of eps) and its CPU. Nothing here is certified; it
only shows which knob decides whether a trial can succeed.

Usage, from the repository root::

    python -m experiments.upper_stuck [--length 256] [--heads 0 12 ...] [--eps 0.05]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from analysis.attention import fixed_torch_threads
from analysis.brackets import stages
from analysis.brackets import upper as _upper
from analysis.brackets.optim import Problems
from experiments.common import command_line, minilm_attention

#: (name, budget factor vs engine 5's, horizon factor vs the budget, give_up, lr)
VARIANTS = [
    ("engine 5", 1.0, 4.0, 0.6, 5e-4),
    ("no early stop", 1.0, 4.0, 1e9, 5e-4),
    ("2x budget", 2.0, 4.0, 0.6, 5e-4),
    ("2x budget, horizon 1x", 2.0, 1.0, 0.6, 5e-4),
    ("4x budget", 4.0, 4.0, 0.6, 5e-4),
    ("4x budget, horizon 1x", 4.0, 1.0, 0.6, 5e-4),
    ("lr 1e-3", 1.0, 4.0, 0.6, 1e-3),
    ("2x budget, lr 1e-3", 2.0, 4.0, 0.6, 1e-3),
    ("2x budget, lr 2e-3", 2.0, 4.0, 0.6, 2e-3),
    ("lr 1e-4", 1.0, 4.0, 0.6, 1e-4),
    ("lr 1e-4, horizon 1x", 1.0, 1.0, 0.6, 1e-4),
    ("lr 5e-5", 1.0, 4.0, 0.6, 5e-5),
    ("lr 2e-5", 1.0, 4.0, 0.6, 2e-5),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--heads", type=int, nargs="+", default=[0, 12, 24, 36, 48, 60])
    ap.add_argument("--eps", type=float, default=0.05)
    ap.add_argument("--factors", type=float, nargs="+", default=[0.7, 0.85, 0.95])
    args = ap.parse_args()
    print("command:", command_line("experiments.upper_stuck"), flush=True)
    A = minilm_attention(args.length)
    e = args.eps
    with fixed_torch_threads(1):
        for i in args.heads:
            b = stages.Builder(A[i], None)
            stages.trivial_witnesses(b)
            cache = stages.cheap_stage(b, [e])
            hi = b.hi(e)
            V = cache["svd_V"]
            for f in args.factors:
                k = int(round(f * hi))
                U, W = _upper.svd_witness(b.A, V, k)
                e_svd = float(np.abs(b.A - U @ W.T).sum(1).max())
                budget = int(stages._budgets(torch.tensor([k]), 300, 24)[0])
                line = [f"head {i} hi {hi} k {k} svd {e_svd / e:.2f}eps budget {budget}:"]
                for name, bf, hf, gu, lr in VARIANTS:
                    steps = int(round(budget * bf))
                    c0 = time.process_time()
                    _, _, err = _upper.refine_upper(
                        torch.from_numpy(b.A).float()[None],
                        torch.from_numpy(U).float()[None],
                        torch.from_numpy(W).float()[None],
                        Problems(
                            torch.tensor([k]),
                            torch.tensor([e]),
                            torch.tensor([steps]),
                            horizons=torch.tensor([steps * hf], dtype=torch.float64),
                        ),
                        give_up=gu,
                        lr=lr,
                    )
                    cpu = time.process_time() - c0
                    line.append(f"{name} {float(err[0]) / e:.3f} ({cpu:.1f}s)")
                print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
