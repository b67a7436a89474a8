"""Per-matrix CPU time and bracket quality of the engine on a fixed sample of MiniLM heads.

Single process, one torch / BLAS thread (as the engine runs per matrix), so CPU seconds
(``time.process_time``) are comparable across runs on a shared machine. For quick
before/after comparisons of engine changes; ``benchmarks.bench_brackets`` is the full benchmark.
``--batch 1 4`` compares block sizes of :func:`analysis.brackets.profile_matrices`
(heads profiled side by side, in consecutive blocks; per-matrix CPU is the block's
divided by its size).

Usage, from the repository root::

    python -m benchmarks.bench_brackets_sample [--length 128] [--every 3] [--batch 1 4]
                                               [--out FILE.csv]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from analysis.brackets import profile_matrices
from benchmarks.bench_brackets import bracket_quality
from benchmarks.common import EPS, command_line, minilm_attention


def run(A, heads: list[int], effort: str, batch: int) -> pd.DataFrame:
    rows = []
    for s in range(0, len(heads), batch):
        blk = heads[s : s + batch]
        c0, w0 = time.process_time(), time.perf_counter()
        profs = profile_matrices(A[blk], eps=EPS, effort=effort)
        cpu = (time.process_time() - c0) / len(blk)
        wall = (time.perf_counter() - w0) / len(blk)
        for i, prof in zip(blk, profs, strict=True):
            if prof.reverify(A[i]):
                raise RuntimeError(f"head {i}: a stored witness does not re-verify")
            for e in EPS:
                lo, hi = prof.bracket(e)
                meth = prof.stats["methods"][f"{e:g}"]
                rows.append(
                    {
                        "batch": batch,
                        "index": i,
                        "eps": e,
                        "lower": lo,
                        "upper": hi,
                        "cpu": cpu,
                        "wall": wall,
                        "upper_method": meth["upper"],
                        "lower_method": meth["lower"],
                    }
                )
            print(batch, i, [prof.bracket(e) for e in EPS], f"cpu {cpu:.2f}s", flush=True)
    return pd.DataFrame(rows)


def summarize(df: pd.DataFrame) -> dict:
    per = df.groupby("index")["cpu"].first()
    return {
        "matrices": len(per),
        "cpu_per_matrix_median": float(per.median()),
        "cpu_per_matrix_mean": float(per.mean()),
        "cpu_total": float(per.sum()),
        **bracket_quality(df),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--every", type=int, default=3, help="heads 0, every, 2*every, ...")
    ap.add_argument(
        "--heads", type=int, nargs="*", help="explicit head indices (overrides --every)"
    )
    ap.add_argument("--effort", default="default")
    ap.add_argument("--batch", type=int, nargs="+", default=[1], help="block sizes to compare")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    A = minilm_attention(args.length)
    heads = args.heads if args.heads else list(range(0, len(A), args.every))
    print("command:", command_line("benchmarks.bench_brackets_sample"))
    frames, summary = [], {}
    for batch in args.batch:
        df = run(A, heads, args.effort, batch)
        frames.append(df)
        summary[f"batch={batch}"] = summarize(df)
    if args.out:
        pd.concat(frames).to_csv(args.out, index=False)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
