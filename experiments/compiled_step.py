"""Does compiling one refinement step (``torch.compile``, inductor's CPU backend) make it cheaper?

At N <= 128 a profile is thousands of optimizer steps of about 150 small torch operations
each (docs/results/engine.md, "Where the time goes"); fusing a step's elementwise work into
a few generated kernels is the lever the engine write-up names and had not tried. This
times one step of the upper Adam and one of the lower ascent, on real MiniLM heads (the
benchmark's text), three ways:

- ``eager``: the engine's own code path, one step as :func:`refine_upper` /
  :func:`refine_lower` take it (in-place, float32);
- ``functional``: the same step written without in-place updates (what a compiler traces);
- ``compiled``: ``torch.compile(functional, dynamic=True)``; the first call's compile time
  is reported apart.

One thread, float32, a batch of ``--problems`` copies of one head (as the engine batches a
matrix's eps and trial sizes), ``--steps`` steps each, CPU seconds per step. Only the
refinement's arithmetic is timed: the batch bookkeeping between checks is the same in all
three. Nothing here is certified or used by the package.

Run from the repository root::

    python -m experiments.compiled_step --lengths 64 128 256

Writes ``benchmarks/out/compiled_step.csv``.
"""

from __future__ import annotations

import argparse
import math
import time
from functools import partial

import numpy as np
import pandas as pd
import torch

from analysis.brackets.lower import lower_lr, project_rows_l1
from analysis.brackets.optim import adam_step, cosine_lr, step_fraction
from benchmarks.common import OUT, command_line, minilm_attention

B1, B2 = 0.9, 0.999


def upper_eager(X, mom, vel, A, mask, targets, budgets, step: int, M: int, lr: float = 5e-4):
    """One step of :func:`analysis.brackets.upper.refine_upper`, as written there."""
    U, W = X[:, :M], X[:, M:]
    E = A - U @ W.transpose(-1, -2)
    frac = step_fraction(step, budgets)
    delta = (1e-3 * (1e-2) ** frac)[:, None, None]
    beta = (20.0 + 480.0 * frac) / targets.clamp_min(1e-6)
    S = E * E
    S = S.add_(delta * delta).sqrt_()
    w = torch.softmax(beta[:, None] * S.sum(-1), -1)
    dE = E.div_(S).mul_(w[..., None])
    g = torch.cat([(dE @ W).neg_(), (dE.transpose(-1, -2) @ U).neg_()], 1).mul_(mask)
    adam_step(X, g, mom, vel, step + 1, cosine_lr(lr, frac, 0.02))
    return X, mom, vel


def _adam(X, g, m, v, t: int, lr):
    m = m + (1 - B1) * (g - m)
    v = v * B2 + (1 - B2) * g * g
    denom = (v / (1 - B2**t)).sqrt() + 1e-8
    step = (lr / (1 - B1**t)).reshape(-1, *([1] * (X.ndim - 1)))
    return X - m / denom * step, m, v


def upper_functional(X, mom, vel, A, mask, targets, budgets, step: int, M: int, lr: float = 5e-4):
    """The same step without in-place updates (traceable as one graph)."""
    U, W = X[:, :M], X[:, M:]
    E = A - U @ W.transpose(-1, -2)
    frac = (step / (budgets - 1).clamp_min(1)).clamp(max=1.0)
    delta = (1e-3 * (1e-2) ** frac)[:, None, None]
    beta = (20.0 + 480.0 * frac) / targets.clamp_min(1e-6)
    S = torch.sqrt(E * E + delta * delta)
    w = torch.softmax(beta[:, None] * S.sum(-1), -1)
    dE = E / S * w[..., None]
    g = torch.cat([-(dE @ W), -(dE.transpose(-1, -2) @ U)], 1) * mask
    lr_t = lr * (0.02 + 0.98 * 0.5 * (1 + torch.cos(math.pi * frac)))
    return _adam(X, g, mom, vel, step + 1, lr_t)


def lower_eager(R, Y, mR, vR, mY, vY, A, kp, cm, off, on, lr, budgets, step: int):
    """One step of :func:`analysis.brackets.lower.refine_lower`, as written there."""
    YA = Y @ A
    AR = A @ R
    G = YA @ R
    mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
    frac = step_fraction(step, budgets)
    beta = (30.0 + 970.0 * frac)[:, None]
    w = torch.softmax(-beta * mg.masked_fill(~kp, 1e3), -1)
    dG = w[..., None] * (on - off * torch.sign(G))
    lr_t = cosine_lr(lr, frac, 0.1)
    adam_step(Y, (dG @ AR.transpose(-1, -2)).neg_(), mY, vY, step + 1, lr_t)
    adam_step(R, (YA.transpose(-1, -2) @ dG).neg_(), mR, vR, step + 1, lr_t)
    R = project_rows_l1(R * cm[:, None, :])
    Y = project_rows_l1(Y).mul_(cm[:, :, None])
    return R, Y, mR, vR, mY, vY


def _project(X, iters: int = 3):
    a = X.abs()
    theta = ((a.sum(-1, keepdim=True) - 1.0) / X.shape[-1]).clamp_min(0.0)
    for _ in range(iters):
        over = (a - theta).clamp_min(0.0)
        f = over.sum(-1, keepdim=True)
        cnt = torch.sign(over).sum(-1, keepdim=True).clamp_min(1.0)
        theta = (theta + (f - 1.0) / cnt).clamp_min(0.0)
    P = (a - theta).clamp_min(0.0)
    return P * torch.sign(X) / P.sum(-1, keepdim=True).clamp_min(1.0)


def lower_functional(R, Y, mR, vR, mY, vY, A, kp, cm, off, on, lr, budgets, step: int):
    """The same step without in-place updates."""
    YA = Y @ A
    AR = A @ R
    G = YA @ R
    mg = torch.diagonal(G, dim1=-2, dim2=-1) - (G.abs() * off).sum(-1)
    frac = (step / (budgets - 1).clamp_min(1)).clamp(max=1.0)
    beta = (30.0 + 970.0 * frac)[:, None]
    w = torch.softmax(-beta * mg.masked_fill(~kp, 1e3), -1)
    dG = w[..., None] * (on - off * torch.sign(G))
    lr_t = lr * (0.1 + 0.9 * 0.5 * (1 + torch.cos(math.pi * frac)))
    Y, mY, vY = _adam(Y, -(dG @ AR.transpose(-1, -2)), mY, vY, step + 1, lr_t)
    R, mR, vR = _adam(R, -(YA.transpose(-1, -2) @ dG), mR, vR, step + 1, lr_t)
    return _project(R * cm[:, None, :]), _project(Y) * cm[:, :, None], mR, vR, mY, vY


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


def _time(fn, state, steps: int, n_state: int, extra=()) -> float:
    t0 = time.process_time()
    for s in range(steps):
        out = fn(*state, s, *extra)
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
    cu = torch.compile(upper_functional, dynamic=True)
    cl = torch.compile(lower_functional, dynamic=True)
    rows = []
    for L in args.lengths:
        A = minilm_attention(L)[args.head].astype(np.float64)
        N = A.shape[-1]
        K, m = max(2, N // 4), max(2, N // 7)
        cases = (
            (
                "upper",
                (upper_eager, upper_functional, cu),
                partial(_upper_state, A, args.problems, K),
                3,
                (N,),
            ),
            (
                "lower",
                (lower_eager, lower_functional, cl),
                partial(_lower_state, A, args.problems, m, 0),
                6,
                (),
            ),
        )
        for kind, fns, make, n_state, extra in cases:
            t0 = time.perf_counter()
            fns[2](*make(), 0, *extra)  # compile (or load from inductor's cache)
            first = time.perf_counter() - t0
            cpu = {}
            for name, fn in zip(("eager", "functional", "compiled"), fns, strict=True):
                cpu[name] = _time(fn, make(), args.steps, n_state, extra)
            rows.append(
                {
                    "N": N,
                    "step": kind,
                    "size": K if kind == "upper" else m,
                    "problems": args.problems,
                    **{f"ms_{k}": 1e3 * v for k, v in cpu.items()},
                    "compiled_over_eager": cpu["compiled"] / cpu["eager"],
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
