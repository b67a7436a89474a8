"""One head at several temperatures: one profile at a time against all of them together.

For a sample of MiniLM heads (the benchmark's text at ``--length``, ``A_t`` built with
``softmax64`` from the extraction's Q and K): every temperature profiled alone, one
:func:`analysis.brackets.profile_matrix` call each ("alone"), and all of them side by side
with :func:`analysis.brackets.profile_temperatures` ("together", as the store and the
study run them). One process, one torch thread; CPU seconds (``time.process_time``).
Every witness of both is re-verified.

Prints, per temperature, the median CPU seconds and median hi/lo of each way, how many
brackets "together" made wider or narrower than "alone", and the issue's ratio: CPU of
all temperatures together divided by t = 1 alone (target <= 2.5 for five temperatures).

Usage, from the repository root::

    python -m benchmarks.bench_temperatures [--length 128] [--every 3]
        [--temperatures 0.5 0.75 1 1.5 2] [--effort default] [--skip-cold]

Per-head rows go to ``benchmarks/out/bench_temperatures_L{N}.csv``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from analysis.attention import softmax64
from analysis.brackets import profile_matrix, profile_temperatures
from analysis.study.reference import corpus_extraction
from benchmarks.common import EPS, OUT, command_line


def heads_at(length: int, temps: list[float]) -> np.ndarray:
    """``[layer * head, T, L, L]``: the benchmark text's MiniLM heads at each temperature."""
    ex = corpus_extraction("minilm", length)
    mats = [softmax64(ex.Q, ex.K, ex.scale, ex.mask, t, ex.bias) for t in temps]
    A = np.stack(mats, axis=2)  # [layer, head, T, L, L]
    return A.reshape(-1, len(temps), length, length)


def _rows(i: int, way: str, temps, profs, cpu: list[float], A) -> list[dict]:
    rows = []
    for j, (t, prof) in enumerate(zip(temps, profs, strict=True)):
        if prof.reverify(A[j]):
            raise RuntimeError(f"head {i} t={t}: a witness does not re-verify")
        for e in EPS:
            lo, hi = prof.bracket(e)
            rows.append(
                {"index": i, "way": way, "t": t, "eps": e, "lower": lo, "upper": hi, "cpu": cpu[j]}
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.5, 0.75, 1.0, 1.5, 2.0])
    ap.add_argument("--effort", default="default")
    ap.add_argument("--skip-cold", action="store_true", help="the 'together' runs only")
    args = ap.parse_args()
    print(command_line("benchmarks.bench_temperatures"), flush=True)
    import torch

    torch.set_num_threads(1)
    temps = list(args.temperatures)
    A = heads_at(args.length, temps)
    heads = list(range(0, A.shape[0], args.every))
    rows: list[dict] = []
    for i in heads:
        if not args.skip_cold:
            profs, cpu = [], []
            for j in range(len(temps)):
                c0 = time.process_time()
                profs.append(profile_matrix(A[i, j], eps=EPS, effort=args.effort))
                cpu.append(time.process_time() - c0)
            rows += _rows(i, "alone", temps, profs, cpu, A[i])
        c0 = time.process_time()
        profs = profile_temperatures(A[i], temps, eps=EPS, effort=args.effort)
        total = time.process_time() - c0
        rows += _rows(i, "together", temps, profs, [total / len(temps)] * len(temps), A[i])
        done = pd.DataFrame([r for r in rows if r["index"] == i])
        summ = done.groupby("way").cpu.sum() / len(EPS)
        print(i, {k: round(v, 2) for k, v in summ.items()}, flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / f"bench_temperatures_L{args.length}.csv", index=False)
    df["ratio"] = df.upper / df.lower.clip(lower=1)
    per = df.groupby(["way", "t"]).agg(cpu=("cpu", "median"), hi_lo=("ratio", "median"))
    print(per.round(3).to_string())
    one = df[df.eps == EPS[0]]
    tot = one.groupby(["way", "index"]).cpu.sum()
    print(
        f"together, all {len(temps)} temperatures, CPU s per head: "
        f"median {tot['together'].median():.2f}"
    )
    if not args.skip_cold:
        t1 = temps[int(np.argmin([abs(np.log(t)) for t in temps]))]
        alone1 = one[(one.way == "alone") & (one.t == t1)].set_index("index").cpu
        ratio = tot["together"] / alone1
        all_alone = tot["alone"]
        print(f"alone, t = {t1:g}, CPU s per head: median {alone1.median():.2f}")
        print(f"alone, all temperatures, CPU s per head: median {all_alone.median():.2f}")
        print(f"ratio together (all temperatures) / t = {t1:g} alone: median {ratio.median():.2f}")
        w = df[df.way == "together"].set_index(["index", "t", "eps"])
        c = df[df.way == "alone"].set_index(["index", "t", "eps"])
        wider = ((w.upper - w.lower) > (c.upper - c.lower)).sum()
        narrower = ((w.upper - w.lower) < (c.upper - c.lower)).sum()
        print(f"brackets together vs alone: {narrower} narrower, {wider} wider, of {len(w)}")


if __name__ == "__main__":
    main()
