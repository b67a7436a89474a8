"""Engine versions side by side: bracket widths and CPU per profile on the same MiniLM heads.

One process, one torch / BLAS thread, the engines interleaved head by head (engine 4 then
engine 5 on one head, then the next head), so both see the same load on a shared machine.
CPU seconds are ``time.process_time`` per profile; every profile is re-verified
(``Profile.reverify``) before it counts, and a failure stops the run. ``--temperatures``
profiles five temperatures of each head together (``profile_temperatures``) instead of
t = 1 alone; CPU is then per profile (the batch's divided by five).

With more than one engine, the summary also compares every engine with the first, end by
end (``vs_first``: brackets whose lower / upper end is above, equal, below the first
engine's), and gives the total CPU ratio. Engines 5 and 6: ``--engines 5 6``.

Usage, from the repository root::

    python -m benchmarks.bench_engines [--length 256] [--every 6] [--offset 0] [--heads I ...]
                                       [--effort default] [--engines 4 5]
                                       [--temperatures] [--out FILE.csv]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.attention import fixed_torch_threads
from analysis.brackets import profile_matrix, profile_temperatures
from benchmarks.common import EPS, command_line, minilm_attention

#: Temperatures of ``--temperatures`` (t = 1 among them).
TEMPERATURES = (0.5, 0.75, 1.0, 1.5, 2.0)


def _at_temperature(A: np.ndarray, t: float) -> np.ndarray:
    """Attention at temperature t from attention at t = 1: ``softmax(log A / t)``."""
    logits = np.log(np.maximum(A, 1e-300)) / t
    logits -= logits.max(1, keepdims=True)
    P = np.exp(logits)
    return P / P.sum(1, keepdims=True)


def profile_head(A: np.ndarray, engine: int, effort: str, temperatures: bool) -> list[dict]:
    """Rows ``(engine, temperature, eps, lower, upper, cpu, methods)`` of one head."""
    temps = TEMPERATURES if temperatures else (1.0,)
    mats = [A if t == 1.0 else _at_temperature(A, t) for t in temps]
    c0 = time.process_time()
    if temperatures:
        profs = profile_temperatures(mats, temps, eps=EPS, effort=effort, engine=engine)
    else:
        profs = [profile_matrix(A, eps=EPS, effort=effort, engine=engine)]
    cpu = (time.process_time() - c0) / len(profs)
    rows = []
    for t, M, prof in zip(temps, mats, profs, strict=True):
        fails = prof.reverify(M)
        if fails:
            raise RuntimeError(f"engine {engine}, t = {t}: witnesses fail re-verification: {fails}")
        for e in EPS:
            lo, hi = prof.bracket(e)
            meth = prof.stats["methods"][f"{e:g}"]
            rows.append(
                {
                    "engine": engine,
                    "temperature": t,
                    "eps": e,
                    "lower": lo,
                    "upper": hi,
                    "cpu": cpu,
                    "upper_method": meth["upper"],
                    "lower_method": meth["lower"],
                    "stages": prof.stats["seconds"],
                }
            )
    return rows


def summarize(df: pd.DataFrame) -> dict:
    """Per engine: median hi/lo overall and per eps, closed share, median and total CPU-s
    per profile (one profile: one head at one temperature)."""
    out = {}
    for engine, d in df.groupby("engine"):
        ratio = d["upper"] / d["lower"].clip(lower=1)
        per = d.groupby(["head", "temperature"])["cpu"].first()
        out[f"engine {engine}"] = {
            "profiles": len(per),
            "median_hi_over_lo": round(float(ratio.median()), 3),
            "by_eps": {f"{e:g}": round(float(ratio[d["eps"] == e].median()), 3) for e in EPS},
            "closed_share": round(float((d["upper"] == d["lower"]).mean()), 3),
            "sum_lower": int(d["lower"].sum()),
            "sum_upper": int(d["upper"].sum()),
            "cpu_per_profile_median": round(float(per.median()), 3),
            "cpu_total": round(float(per.sum()), 2),
        }
    return out


def versus_first(df: pd.DataFrame, engines: list[int]) -> dict:
    """Per engine after the first: how many brackets (head, temperature, eps) have their
    lower / upper end above, equal to, below the first engine's."""
    key = ["head", "temperature", "eps"]
    first = df[df["engine"] == engines[0]].set_index(key)
    out = {}
    for e in engines[1:]:
        other = df[df["engine"] == e].set_index(key).reindex(first.index)
        out[f"{e} vs {engines[0]}"] = {
            end: {
                "above": int((other[end] > first[end]).sum()),
                "equal": int((other[end] == first[end]).sum()),
                "below": int((other[end] < first[end]).sum()),
            }
            for end in ("lower", "upper")
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--every", type=int, default=6, help="heads 0, every, 2*every, ...")
    ap.add_argument(
        "--offset",
        type=int,
        default=0,
        help="heads offset, offset + every, ... (a disjoint sample)",
    )
    ap.add_argument(
        "--heads", type=int, nargs="*", help="explicit head indices (overrides --every)"
    )
    ap.add_argument("--effort", default="default")
    ap.add_argument("--engines", type=int, nargs="+", default=[4, 5])
    ap.add_argument("--temperatures", action="store_true", help=f"t in {TEMPERATURES} together")
    ap.add_argument("--out", type=Path, help="per-bracket CSV")
    args = ap.parse_args()
    cmd = command_line("benchmarks.bench_engines")
    print("command:", cmd, flush=True)
    A = minilm_attention(args.length)
    heads = args.heads if args.heads else list(range(args.offset, len(A), args.every))
    rows = []
    with fixed_torch_threads(1):
        for i in heads:
            for engine in args.engines:
                got = profile_head(A[i], engine, args.effort, args.temperatures)
                rows += [r | {"head": i} for r in got]
                one = [(r["lower"], r["upper"]) for r in got if r["temperature"] == 1.0]
                st = " ".join(f"{k} {v:.2f}" for k, v in got[0]["stages"].items())
                print(
                    f"head {i} engine {engine}: {one} cpu {got[0]['cpu']:.2f}s ({st})", flush=True
                )
    df = pd.DataFrame(rows).drop(columns="stages")
    if args.out:
        df.to_csv(args.out, index=False)
    summary = {"command": cmd, "length": args.length, "effort": args.effort, "heads": heads}
    summary |= summarize(df)
    if len(args.engines) > 1:
        per = df.groupby(["engine", "head", "temperature"])["cpu"].first().groupby("engine").sum()
        summary["cpu_total_ratio"] = {
            f"{e} / {args.engines[0]}": round(float(per[e] / per[args.engines[0]]), 3)
            for e in args.engines[1:]
        }
        summary["vs_first"] = versus_first(df, args.engines)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
