"""Does compiling one refinement step (``torch.compile``, inductor's CPU backend) make it cheaper?

At N <= 128 a profile is thousands of optimizer steps of about 150 small torch operations
each (docs/results/engine.md, "Where the time goes"); fusing a step's elementwise work into
a few generated kernels is the lever the engine write-up names and had not tried. This
times one step of the upper Adam and one of the lower ascent, on real MiniLM heads (the
benchmark's text), two ways:

- ``eager``: the engine's own code (:func:`analysis.brackets.upper.upper_step`,
  :func:`analysis.brackets.lower_ascent.lower_step`, with the products before them), float32;
- ``compiled``: the same functions under ``torch.compile(..., dynamic=True)``; the first
  call's compile time is reported apart.

One thread, float32, a batch of ``--problems`` copies of one head (as the engine batches a
matrix's eps and trial sizes), ``--steps`` steps each, CPU seconds per step. Only the
refinement's arithmetic is timed: the batch bookkeeping between checks is the same in
both. Nothing here is certified or used by the package.

Run from the repository root::

    python -m experiments.compiled_step --lengths 64 128 256

Writes ``experiments/out/compiled_step.csv``.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
import pandas as pd
import torch

from analysis.brackets.lower_ascent import AscentState, lower_lr, lower_step, project_rows_l1
from analysis.brackets.upper import AdamState, upper_step
from experiments.common import OUT, command_line, minilm_attention


def upper_iter(X, mom, vel, A, mask, targets, budgets, step: int, lr: float = 5e-4):
    """One iteration of :func:`refine_upper` between checks: the residual, then the engine's
    own :func:`upper_step` (in place on ``X`` and the moments)."""
    M = A.shape[-2]
    E = A - X[:, :M] @ X[:, M:].transpose(-1, -2)
    upper_step(AdamState(X, mom, vel, A, mask, targets, budgets, budgets, lr, None), E, step)
    return X, mom, vel


def lower_iter(R, Y, mR, vR, mY, vY, A, kp, cm, off, on, lr, budgets, step: int):
    """One iteration of :func:`refine_lower` between checks: the products and margins, then
    the engine's own :func:`lower_step`."""
    YA = Y @ A
    AR = A @ R
    G = YA @ R
    mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
    mg = mg.masked_fill(~kp, float("inf"))
    s = AscentState(R, Y, mR, vR, mY, vY, A, kp, cm, None, budgets, lr, None)
    s = lower_step(s, YA, AR, G, mg, on, off, step)
    return s.R, s.Y, mR, vR, mY, vY


def _upper_state(A: np.ndarray, P: int, K: int):
    M, N = A.shape
    At = torch.as_tensor(A, dtype=torch.float32).expand(P, M, N).contiguous()
    u, s, vt = np.linalg.svd(A)
    U0 = torch.as_tensor(u[:, :K] * np.sqrt(s[:K]), dtype=torch.float32)
    W0 = torch.as_tensor(vt[:K].T * np.sqrt(s[:K]), dtype=torch.float32)
    X = torch.cat([U0, W0], 0).expand(P, M + N, K).contiguous()
    mask = torch.ones(P, 1, K)
    targets = torch.full((P,), 0.1)
    budgets = torch.full((P,), 2000.0)
    return (X, torch.zeros_like(X), torch.zeros_like(X), At, mask, targets, budgets)


def _lower_state(A: np.ndarray, P: int, m: int, seed: int):
    M, N = A.shape
    At = torch.as_tensor(A, dtype=torch.float32).expand(P, M, N).contiguous()
    g = torch.Generator().manual_seed(seed)
    R = project_rows_l1(torch.randn(P, N, m, generator=g))
    Y = project_rows_l1(torch.randn(P, m, M, generator=g))
    kp = torch.ones(P, m, dtype=torch.bool)
    off = 1.0 - torch.eye(m)
    lr = lower_lr(torch.full((P,), m)).float()
    z = [torch.zeros_like(t) for t in (R, R, Y, Y)]
    return (R, Y, *z, At, kp, kp.float(), off, 1.0 - off, lr, torch.full((P,), 2000.0))


def _time(fn, state, steps: int, n_state: int) -> float:
    t0 = time.process_time()
    for s in range(steps):
        out = fn(*state, s)
        state = (*out[:n_state], *state[n_state:])
    return (time.process_time() - t0) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--head", type=int, default=0, help="MiniLM head index")
    ap.add_argument("--problems", type=int, default=9, help="batch size P")
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    print("command:", command_line("experiments.compiled_step"), flush=True)
    torch.set_num_threads(1)
    rows = []
    for L in args.lengths:
        A = minilm_attention(L)[args.head].astype(np.float64)
        N = A.shape[-1]
        K, m = max(2, N // 4), max(2, N // 7)
        cases = (
            ("upper", upper_iter, partial(_upper_state, A, args.problems, K), 3, K),
            ("lower", lower_iter, partial(_lower_state, A, args.problems, m, 0), 6, m),
        )
        for kind, fn, make, n_state, size in cases:
            compiled = torch.compile(fn, dynamic=True)
            t0 = time.perf_counter()
            compiled(*make(), 0)  # compile (or load from inductor's cache)
            first = time.perf_counter() - t0
            eager = _time(fn, make(), args.steps, n_state)
            comp = _time(compiled, make(), args.steps, n_state)
            rows.append(
                {
                    "N": N,
                    "step": kind,
                    "size": size,
                    "problems": args.problems,
                    "ms_eager": 1e3 * eager,
                    "ms_compiled": 1e3 * comp,
                    "compiled_over_eager": comp / eager,
                    "first_call_s": first,
                }
            )
            print(pd.DataFrame(rows[-1:]).round(3).to_string(index=False), flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "compiled_step.csv", index=False)
    print(df.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
