"""Where do the engine's witnesses spend their error on causal heads, and which rows do they use?

A causal head is lower triangular: row i of ``A`` has i + 1 keys, and its first rows are
supported on the first keys only. A rank-k approximant ``B = U W^T`` is not triangular
(a lower-triangular matrix with a positive diagonal has full rank), so part of every
row's l1 error is spent on the masked entries above the diagonal, where ``A`` is exactly
0. For a sample of heads this measures, per eps, on the engine's profile (``default``
effort, unpruned, one thread; :func:`experiments.common.diagnostic_profile`):

- **upper end** (the witness at ``hi``; skipped when it is the identity): the share of the
  error ``A - U W^T`` (summed over all rows) that lies above the diagonal; the binding row
  (the row of largest l1 error) as a position ``i / (L - 1)`` and the share of its error
  above the diagonal; the mean row error, relative to eps, in the first and the last
  quarter of rows;
- **lower end** (the witness at ``lo``): the share of the row functionals' l1 weight
  (``sum_p |Y_pi|`` over rows i) in the first quarter of rows, and the share of the test
  vectors' weight (``sum_p |R_jp|`` over keys j) in the first quarter of keys.

- **the triangle's own certificate** (causal heads only): the largest k for which the
  Gastinel-Kahan witness of the leading k x k block (its first k rows, single key
  columns) has ``1 / ||A[:k, :k]^-1||_inf > eps``. For a lower-triangular A that block's
  inverse is the leading block of ``A^-1``, so one triangular solve gives every k. It is
  a float64 diagnostic, not re-certified, and no bracket uses it.

The same numbers on a bidirectional family (MiniLM; nothing is masked there) are the
reference. The heads are the extractions of ``python -m experiments.families`` (read from
``experiments/out/families/`` when there, else extracted the same way).

Usage, from the repository root::

    python -m experiments.causal_rows [--checkpoint smollm2 minilm] [--length 64]
        [--every 9 3] [--workers 2]

Writes ``experiments/out/causal_rows_L<length>.csv`` and prints the medians per family and
eps.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from experiments.common import EPS, OUT, command_line, diagnostic_profile


def _quarter(n: int) -> int:
    return max(1, n // 4)


def _one_head(job: tuple) -> list[dict]:
    alias, layer, head, Q, K, scale, mask = job
    from threadpoolctl import threadpool_limits

    from analysis.attention import softmax64

    with threadpool_limits(1):
        A = softmax64(Q, K, scale, mask)
        prof = diagnostic_profile(A)
    L = A.shape[0]
    q = _quarter(L)
    above = np.triu(np.ones((L, L), dtype=bool), 1)
    causal = bool(mask is not None and not mask.all())
    if causal:
        from scipy.linalg import solve_triangular

        inv = solve_triangular(A, np.eye(L), lower=True)
        prefix_norm = np.maximum.accumulate(np.abs(inv).sum(axis=1))  # ||A[:k,:k]^-1||_inf
    rows = []
    for e in EPS:
        lo, hi = prof.bracket(e)
        row: dict = {"alias": alias, "layer": layer, "head": head, "eps": e, "lo": lo, "hi": hi}
        if causal:
            row["prefix_gk_lower"] = int((1.0 / prefix_norm > e).sum())
        up = prof.upper_end(e)
        if up.U is not None:
            E = np.abs(A - up.U.astype(np.float64) @ up.W.astype(np.float64).T)
            err = E.sum(axis=1)
            b = int(err.argmax())
            row |= {
                "upper_error_above_diag": float(E[above].sum() / E.sum()),
                "binding_row_pos": b / (L - 1),
                "binding_row_above_diag": float(E[b, b + 1 :].sum() / err[b]),
                "first_quarter_row_error": float(err[:q].mean() / e),
                "last_quarter_row_error": float(err[-q:].mean() / e),
            }
        low = prof.lower_end(e)
        if low is not None:
            wy = np.abs(low.Y.astype(np.float64)).sum(axis=0)  # weight per row of A
            wr = np.abs(low.R.astype(np.float64)).sum(axis=1)  # weight per key
            row |= {
                "lower_Y_first_quarter": float(wy[:q].sum() / wy.sum()),
                "lower_R_first_quarter": float(wr[:q].sum() / wr.sum()),
            }
        rows.append(row)
    return rows


def _extraction(alias: str, length: int):
    from experiments.families import FAMILIES_OUT, extraction

    ex, _ = extraction(alias, length, 0, FAMILIES_OUT)
    return ex


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", nargs="+", default=["smollm2", "minilm"])
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--every", type=int, nargs="+", default=[9, 3], help="per checkpoint")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    print("command:", command_line("experiments.causal_rows"))
    jobs = []
    for alias, every in zip(args.checkpoint, args.every, strict=True):
        ex = _extraction(alias, args.length)
        n_layers, n_heads = ex.A.shape[:2]
        for i in range(0, n_layers * n_heads, every):
            li, hi = divmod(i, n_heads)
            jobs.append((alias, li, hi, ex.Q[li, hi], ex.K[li, hi], ex.scale[li, hi], ex.mask))
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        df = pd.DataFrame([r for part in pool.map(_one_head, jobs) for r in part])
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / f"causal_rows_L{args.length}.csv", index=False)
    cols = [c for c in df.columns if c not in ("alias", "layer", "head", "eps", "hi")]
    summary = df.groupby(["alias", "eps"], sort=False)[cols].median()
    summary.insert(0, "heads", df.groupby(["alias", "eps"], sort=False).size())
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary.round(3))


if __name__ == "__main__":
    main()
