"""Per-matrix CPU time and bracket quality of the engine on a fixed sample of MiniLM heads.

Single process, one torch / BLAS thread (as the engine runs per matrix), so CPU seconds
(``time.process_time``) are comparable across runs on a shared machine. For quick
before/after comparisons of engine changes; ``bench_brackets.py`` is the full benchmark.

Usage::

    python benchmarks/bench_brackets_sample.py [--length 128] [--every 3] [--out FILE.csv]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_brackets import EPS, TOPIC  # noqa: E402
from minilm_heads import minilm_attention  # noqa: E402

from analysis.brackets import profile_matrix  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--every", type=int, default=3, help="heads 0, every, 2*every, ...")
    ap.add_argument(
        "--heads", type=int, nargs="*", help="explicit head indices (overrides --every)"
    )
    ap.add_argument("--effort", default="default")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    A = minilm_attention(args.length, topic_index=TOPIC.get(args.length, 0))
    heads = args.heads if args.heads else list(range(0, len(A), args.every))
    rows = []
    for i in heads:
        c0, w0 = time.process_time(), time.perf_counter()
        prof = profile_matrix(A[i], eps=EPS, effort=args.effort, random_state=0)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        assert prof.reverify(A[i]) == []
        for e in EPS:
            lo, hi = prof.bracket(e)
            meth = prof.stats["methods"][f"{e:g}"]
            rows.append(
                {
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
        print(i, [prof.bracket(e) for e in EPS], f"cpu {cpu:.2f}s", flush=True)
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
    ratio = df["upper"] / df["lower"].clip(lower=1)
    per = df.groupby("index")["cpu"].first()
    closed = df["upper"] == df["lower"]
    print(
        json.dumps(
            {
                "matrices": len(per),
                "cpu_per_matrix_median": float(per.median()),
                "cpu_per_matrix_mean": float(per.mean()),
                "cpu_total": float(per.sum()),
                "median_hi_over_lo": float(ratio.median()),
                "closed_share": float(closed.mean()),
                "by_eps": {
                    f"{e:g}": {
                        "median_hi_over_lo": float(ratio[df.eps == e].median()),
                        "closed_share": float(closed[df.eps == e].mean()),
                    }
                    for e in EPS
                },
                "upper_won_by": dict(collections.Counter(df["upper_method"])),
                "lower_won_by": dict(collections.Counter(df["lower_method"])),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
