"""Benchmark the bracket engine on real MiniLM heads.

Measures, per length and effort: median hi/lo, share of closed brackets, time per matrix,
which construction won each end; and the wall time of the whole 72-head stack at N = 128
with witnesses (profiles, JSON with witnesses, written to disk). Writes the per-bracket
table to ``benchmarks/out/`` and appends one line per (effort, length) to
``benchmarks/out/bench_brackets_runs.jsonl`` (start time, load average, wall time: no run's
timing is lost when the next one overwrites the summary).

The reference widths that ``attnrank validate-comparison`` reads
(``data/reference/minilm_bracket_widths.csv``, training heads only) are the package's to
write: ``attnrank reference-widths --design preregistration/offline-minilm.toml --lengths
96 128 --workers 2 --out data/reference/minilm_bracket_widths.csv``. It brackets the same
heads, each training head alone, so its lower ends can differ by one from this benchmark's
blocks of 4 (docs/results/engine.md, Heads side by side).

Usage, from the repository root::

    python -m benchmarks.bench_brackets [--lengths 96 128] [--efforts default]
                                        [--workers 2] [--heads 72] [--batch 4]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import time
from pathlib import Path

import pandas as pd

from analysis.brackets.io import MatrixInput, profile_file, result_json
from analysis.executor import BATCH, RunSpec
from benchmarks.common import EPS, OUT, command_line, minilm_attention


def run(
    length: int, effort: str, workers: int, n_heads: int, out_dir: Path, batch: int = BATCH
) -> pd.DataFrame:
    A = minilm_attention(length)[:n_heads]
    data = MatrixInput(
        A,
        [i // 12 for i in range(len(A))],
        [i % 12 for i in range(len(A))],
        f"minilm-L{length}",
        None,
        False,
    )
    t0 = time.perf_counter()
    profiles = profile_file(
        data, eps=EPS, effort=effort, execution=RunSpec(workers=workers, batch=batch)
    )
    res = result_json(data, profiles, eps=EPS, effort=effort, witnesses=True)
    (out_dir / f"minilm_L{length}_{effort}.json").write_text(json.dumps(res))
    wall = time.perf_counter() - t0
    rows = []
    for i, (prof, m) in enumerate(zip(profiles, res["matrices"], strict=True)):
        for b in m["brackets"]:
            meth = prof.stats["methods"][f"{b['eps']:g}"]
            rows.append(
                {
                    "length": length,
                    "effort": effort,
                    "index": i,
                    "layer": i // 12,
                    "head": i % 12,
                    "eps": b["eps"],
                    "lower": b["lower"],
                    "upper": b["upper"],
                    "upper_method": meth["upper"],
                    "lower_method": meth["lower"],
                    "seconds": prof.stats["seconds"]["total"],
                }
            )
    df = pd.DataFrame(rows)
    df.attrs["wall"] = wall
    return df


def bracket_quality(df: pd.DataFrame) -> dict:
    """Median / mean hi/lo, closed share (overall and per eps) and the construction that
    won each end, from a per-bracket table (``upper``, ``lower``, ``eps``, ``*_method``)."""
    ratio = df["upper"] / df["lower"].clip(lower=1)
    closed = df["upper"] == df["lower"]
    return {
        "median_hi_over_lo": float(ratio.median()),
        "mean_hi_over_lo": float(ratio.mean()),
        "closed_share": float(closed.mean()),
        "by_eps": {
            f"{e:g}": {
                "median_hi_over_lo": float(ratio[df["eps"] == e].median()),
                "closed_share": float(closed[df["eps"] == e].mean()),
            }
            for e in EPS
        },
        "upper_won_by": dict(collections.Counter(df["upper_method"])),
        "lower_won_by": dict(collections.Counter(df["lower_method"])),
    }


def summarize(df: pd.DataFrame) -> dict:
    per_matrix = df.groupby("index")["seconds"].first()
    return {
        "brackets": len(df),
        **bracket_quality(df),
        "seconds_per_matrix_median": float(per_matrix.median()),
        "seconds_per_matrix_mean": float(per_matrix.mean()),
        "wall_seconds": float(df.attrs["wall"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[96, 128])
    ap.add_argument("--efforts", nargs="+", default=["default"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=72)
    ap.add_argument(
        "--batch", type=int, default=BATCH, help="matrices profiled side by side per job"
    )
    args = ap.parse_args()
    out_dir = OUT
    out_dir.mkdir(parents=True, exist_ok=True)
    print("command:", command_line("benchmarks.bench_brackets"))
    frames, summary = [], {}
    for effort in args.efforts:
        for L in args.lengths:
            started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
            load = os.getloadavg()[0]
            df = run(L, effort, args.workers, args.heads, out_dir, args.batch)
            frames.append(df)
            s = summarize(df)
            s["workers"], s["batch"] = args.workers, args.batch
            summary[f"{effort}/N={L}"] = s
            log = {"started": started, "load_before": load, "effort": effort, "length": L}
            keep = ("wall_seconds", "seconds_per_matrix_mean", "median_hi_over_lo", "closed_share")
            log |= {k: s[k] for k in keep} | {"workers": args.workers, "batch": args.batch}
            with open(out_dir / "bench_brackets_runs.jsonl", "a") as fh:  # a log: append only
                fh.write(json.dumps(log) + "\n")
            print(
                f"\n== effort={effort} N={L}: {len(df) // 3} matrices,"
                f" workers={args.workers}, batch={args.batch}"
            )
            print(json.dumps(s, indent=1))
    allr = pd.concat(frames)
    allr.to_csv(out_dir / "bench_brackets.csv", index=False)
    (out_dir / "bench_brackets_summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
