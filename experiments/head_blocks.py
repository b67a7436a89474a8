"""Several heads' temperatures in one batch: does it pay at N = 64 and 128?

The store searches one matrix's temperatures side by side
(:func:`analysis.brackets.profile_temperatures`). Here blocks of ``--block`` heads, each
at every temperature, go to one :func:`analysis.brackets.profile_matrices` call, so a
batch holds ``block x temperatures`` matrices; ``--block 1`` is what the store does
today. One process, one torch thread, CPU seconds (``time.process_time``) per profile
(the batch's time over its size). Every witness is re-verified on its own matrix.

Run from the repository root::

    python -m experiments.head_blocks --length 64 --every 3 --block 1 --temperatures 0.5 1 2
    python -m experiments.head_blocks --length 64 --every 3 --block 8 --temperatures 0.5 1 2

Writes ``experiments/out/head_blocks_L{N}_B{block}_T{temperatures}.csv`` (one row per
head, temperature and eps) and prints the median and total CPU per profile and the
median hi/lo.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from analysis.brackets import profile_matrices
from experiments.common import EPS, OUT, command_line, heads_at


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--every", type=int, default=3, help="every k-th of the 72 heads")
    ap.add_argument("--block", type=int, default=1, help="heads per batch")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    args = ap.parse_args()
    print(command_line("experiments.head_blocks"), flush=True)
    torch.set_num_threads(1)
    temps = list(args.temperatures)
    A = heads_at(args.length, temps)[:: args.every]  # [H, T, L, L]
    L = args.length
    rows = []
    for s in range(0, len(A), args.block):
        stack = A[s : s + args.block].reshape(-1, L, L)
        c0 = time.process_time()
        profs = profile_matrices(list(stack), eps=EPS)
        cpu = (time.process_time() - c0) / len(profs)
        for k, prof in enumerate(profs):
            if prof.reverify(stack[k]):
                raise RuntimeError(f"batch at {s}, matrix {k}: a witness does not re-verify")
            h, j = divmod(k, len(temps))
            for e in EPS:
                lo, hi = prof.bracket(e)
                rows.append(
                    {
                        "index": (s + h) * args.every,
                        "t": temps[j],
                        "eps": e,
                        "lower": lo,
                        "upper": hi,
                        "cpu": cpu,
                    }
                )
        print(f"heads {s}..{s + len(stack) // len(temps) - 1}: {cpu:.3f} CPU s per profile")
    df = pd.DataFrame(rows)
    tag = "-".join(f"{t:g}" for t in temps)
    path = OUT / f"head_blocks_L{L}_B{args.block}_T{tag}.csv"
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    per = df.drop_duplicates(["index", "t"]).cpu
    ratio = df.upper / df.lower.clip(lower=1)
    print(f"CPU s per profile: median {per.median():.3f}, total {per.sum():.1f}")
    print(f"median hi/lo {float(np.median(ratio)):.3f}; rows in {path}")


if __name__ == "__main__":
    main()
