"""Is it Linformer's structure or its fixed projection? A per-head fitted projection, certified.

``attnrank approximants`` measures Linformer with segment pooling, a fixed projection ``E``
(the paper learns ``E`` with the model). Here ``E`` (``[k, N]``, signed, free) is fitted to
each head by Adam on a smoothed max-row-l1 objective of ``A - softmax(s Q (E K)^T) E``,
starting from the pooling, and the result is certified like every witness
(``U = softmax(s Q (E K)^T)``, ``W = E^T``). Fitting ``E`` to one head and one input is
optimistic against a trained Linformer (whose ``E`` serves every input), so the least rank
found here is what the Linformer *form* can reach at best, to be set against the engine's
bracket of the optimum ``r_eps``.

Per (head, eps): ranks are searched from the engine's upper end upwards (x1.25 steps, then
bisection), one fit per rank tried. Writes ``experiments/out/fitted_linformer_L{N}.csv`` and
a summary ``.json``.

Usage, from the repository root::

    python -m experiments.fitted_linformer [--length 128] [--every 6] [--steps 600]

Measured with ``--every 2 --steps 1000`` (docs/results/approximants.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from analysis.atomic import atomic_write
from analysis.brackets.approximants import approximant_ranks, linformer_witness, segment_matrix
from analysis.brackets.io import MatrixInput, profile_file
from analysis.brackets.verify import certified_upper_error
from analysis.cli.inputs import load_matrices, load_queries_keys
from analysis.executor import RunSpec
from experiments.common import EPS, OUT, minilm_extract_npz


def fit_projection(
    A: np.ndarray, Q: np.ndarray, K: np.ndarray, s: float, k: int, *, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Adam on ``E`` from segment pooling; the best certified ``(U, W)`` seen (checked every
    50 steps and at the end)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    At = torch.from_numpy(A)
    Qt = torch.from_numpy(Q) * s
    Kt = torch.from_numpy(K)
    E = torch.from_numpy(segment_matrix(K.shape[0], k)).requires_grad_(True)
    opt = torch.optim.Adam([E], lr=0.02 / math.sqrt(k))
    best = linformer_witness(Q, K, s, k)
    best_err = certified_upper_error(A, *best)
    for step in range(steps + 1):
        frac = step / steps
        P = torch.softmax(Qt @ (E @ Kt).T, dim=1)
        R = At - P @ E
        if step % 50 == 0 or step == steps:
            U, W = P.detach().numpy(), E.detach().numpy().T.copy()
            err = certified_upper_error(A, U, W)
            if err < best_err:
                best, best_err = (U.copy(), W), err
            if step == steps:
                break
        delta = 1e-3 * (1 - frac) + 1e-5
        rows = torch.sqrt(R * R + delta * delta).sum(1)
        tau = 20.0 + 480.0 * frac  # soft maximum over rows, sharper as the run goes on
        loss = torch.logsumexp(tau * rows, 0) / tau
        opt.zero_grad()
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = 0.02 / math.sqrt(k) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        opt.step()
    return best


def least_fitted_rank(A, Q, K, s, eps, start, *, steps) -> tuple[int | None, int, float]:
    """Least rank (searched upwards from ``start``) at which a fitted ``E`` certifies eps."""
    N = A.shape[1]
    tried: dict[int, float] = {}

    def ok(k: int) -> bool:
        if k not in tried:
            tried[k] = certified_upper_error(A, *fit_projection(A, Q, K, s, k, steps=steps))
        return tried[k] <= eps

    k, lo_fail = max(1, start), 0
    while not ok(k):
        lo_fail = k
        if k >= N:
            return None, len(tried), float("nan")
        k = min(N, max(k + 1, int(round(k * 1.25))))
    hi_ok = k
    while hi_ok - lo_fail > 1:
        mid = (hi_ok + lo_fail) // 2
        if ok(mid):
            hi_ok = mid
        else:
            lo_fail = mid
    return hi_ok, len(tried), tried[hi_ok]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--every", type=int, default=6, help="every n-th of the 72 heads")
    p.add_argument("--steps", type=int, default=600, help="Adam steps per fit")
    p.add_argument("--corpus-seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "x.npz"
        input_id = minilm_extract_npz(npz, args.length, corpus_seed=args.corpus_seed)
        full = load_matrices(npz)
        qk = load_queries_keys(npz, full)
    heads = list(range(0, full.A.shape[0], args.every))
    data = MatrixInput(
        full.A[heads],
        [full.layers[i] for i in heads],
        [full.heads[i] for i in heads],
        full.sha256,
        full.temperature,
        full.renormalized,
    )
    profiles = profile_file(
        data, eps=EPS, effort="default", execution=RunSpec(workers=2, progress=False)
    )
    rows = []
    for j, i in enumerate(heads):
        # Segment pooling, exactly as `attnrank approximants` measures it.
        pooled = approximant_ranks(full.A[i], EPS, qk.head(i), methods=("linformer",)).set_index(
            "eps"
        )["rank"]
        for e in EPS:
            lo, hi = profiles[j].bracket(e)
            t0 = time.perf_counter()
            k, fits, err = least_fitted_rank(
                full.A[i], qk.Q[i], qk.K[i], float(qk.scale[i]), e, hi, steps=args.steps
            )
            rows.append(
                {
                    "index": i,
                    "eps": e,
                    "lower": lo,
                    "upper": hi,
                    "pooled_rank": None if pd.isna(pooled[e]) else int(pooled[e]),
                    "fitted_rank": k,
                    "fitted_error": err,
                    "fits": fits,
                    "seconds": round(time.perf_counter() - t0, 2),
                }
            )
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    with atomic_write(OUT / f"fitted_linformer_L{args.length}.csv", mode="w") as fh:
        df.to_csv(fh, index=False)
    summary = []
    for e, g in df.groupby("eps"):
        f = g["fitted_rank"].astype(float)
        summary.append(
            {
                "eps": e,
                "heads": len(g),
                "fitted_below_full": int((f < args.length).sum()),
                "pooled_below_full": int((g["pooled_rank"].astype(float) < args.length).sum()),
                "median_fitted_rank": float(f.median()),
                "median_fitted_over_upper": float((f / g["upper"]).median()),
                "median_fitted_over_lower": float((f / g["lower"]).median()),
                "median_upper": float(g["upper"].median()),
            }
        )
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "length": args.length,
        "input": input_id,
        "heads": heads,
        "steps": args.steps,
        "seconds": round(time.perf_counter() - t_all, 1),
        "summary": summary,
    }
    with atomic_write(OUT / f"fitted_linformer_L{args.length}.json", mode="w") as fh:
        json.dump(meta, fh, indent=2)
    print(pd.DataFrame(summary).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"{meta['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
