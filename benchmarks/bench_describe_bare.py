"""Time ``describe_matrix`` on a bare MiniLM attention matrix (issue 53, item 2).

Two ways per head, each on the model's own float32 probabilities (as a user holds them):

* ``bare``: ``describe_matrix(A, eps=...)`` (baseline, baseline_plus and intrinsic from A
  alone; needs a checkout with the bare-matrix path);
* ``workaround``: the route users took before it, ``Q = log A``, ``K = I``, ``scale = 1``
  with every built-in block, called as the checkout's ``describe_matrix`` takes it.

Each call runs as a user makes it: the BLAS thread count is whatever the process has
(``--threads 1`` caps it, as the study's workers do). Prints seconds per head (median and
max) per length and way; run it from an older checkout for the ``before`` numbers.

Run: ``python -m benchmarks.bench_describe_bare --lengths 64 128 --heads 4``
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import time

import numpy as np

from benchmarks.common import EPS, command_line, minilm_attention


def _ways(describe_matrix, eps):
    """The ways this checkout's ``describe_matrix`` can describe a bare matrix A."""
    params = inspect.signature(describe_matrix).parameters
    new = "A" in params
    ways = {}
    if new:
        ways["bare"] = lambda A: describe_matrix(A, eps=eps)

    def workaround(A):
        logA, eye = np.log(A), np.eye(A.shape[1])
        if new:
            return describe_matrix(Q=logA, K=eye, scale=1.0, eps=eps, diagnostics=True)
        return describe_matrix(logA, eye, 1.0, eps=eps)

    ways["workaround"] = workaround
    return ways


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--heads", type=int, default=4, help="heads per length (every 72/H-th)")
    parser.add_argument("--eps", type=float, nargs="+", default=list(EPS))
    parser.add_argument("--threads", type=int, default=None, help="cap BLAS threads")
    parser.add_argument("--ways", nargs="+", default=None, help="bare, workaround (default all)")
    args = parser.parse_args(argv)
    print(command_line("benchmarks.bench_describe_bare"))
    from threadpoolctl import threadpool_info, threadpool_limits

    from analysis.descriptors.describe import describe_matrix

    blas = sorted({f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info()})
    print(f"BLAS threads: {', '.join(blas)}; cap {args.threads}")
    ways = _ways(describe_matrix, args.eps)
    chosen = args.ways or list(ways)
    cap = threadpool_limits(args.threads) if args.threads else contextlib.nullcontext()
    with cap:
        for L in args.lengths:
            heads = minilm_attention(L).astype(np.float32)  # the model's probabilities
            pick = np.linspace(0, len(heads) - 1, args.heads).round().astype(int)
            for way in chosen:
                secs, cols = [], 0
                for i in pick:
                    t0 = time.perf_counter()
                    df = ways[way](heads[i])
                    secs.append(time.perf_counter() - t0)
                    cols = df.shape[1]
                print(
                    f"N = {L}, {way}: {np.median(secs):.2f} s per head (max {max(secs):.2f}, "
                    f"{len(secs)} heads {pick.tolist()}), {cols} columns"
                )


if __name__ == "__main__":
    main()
