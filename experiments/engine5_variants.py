"""Engine 5 settings variants side by side with engine 4 (issue 37, tuning round).

Per head: engine 4, then engine 5 under each variant of its settings (swapped in by
replacing engine 5's settings table for the run, ``dataclasses.replace`` of the frozen
settings), interleaved head by head in one process, one thread. Every profile is
re-verified before it counts. Prints per variant the median hi/lo (all eps and per eps),
lower / upper ends summed and the total CPU-s against engine 4's.

Usage, from the repository root::

    python -m experiments.engine5_variants [--length 256] [--every 12] [--offset 0]
                                           [--variants NAME ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

import analysis.brackets.search as search
from analysis.attention import fixed_torch_threads
from analysis.brackets import profile_matrix
from analysis.brackets.settings import ROWSPAN_SETTINGS
from experiments.common import EPS, command_line, minilm_attention

#: Variants of engine 5's settings (fields of RowSpanSettings), by name.
VARIANTS: dict[str, dict] = {
    "engine 5": {},
    "ascent to 48": {"ascent_max_size": 48},
    "ascent to 64": {"ascent_max_size": 64},
    "ascent to 64, 3 reweights": {"ascent_max_size": 64, "reweights": 3},
    "2 lower rounds": {"lower_rounds": 2},
    "groups to 12": {"group_max_size": 12},
    "no group starts": {"group_max_size": 0},
    "groups to 8": {"group_max_size": 8},
    "groups to 12, boost 2": {"group_max_size": 12, "lower_boost": 2.0},
    "ascent steps to 1.5x": {"ascent_max_factor": 1.5},
    "ascent steps to 1x": {"ascent_max_factor": 1.0},
    "4 reweights": {"reweights": 4},
    "scan grid 7": {"scan_grid": 7},
    "lr from rank 24": {"lr_rank": 24},
    "lr from rank 48": {"lr_rank": 48},
    "lr from rank 96": {"lr_rank": 96},
    "no anneal stretch": {"anneal_stretch": 1.0},
    "anneal stretch 2": {"anneal_stretch": 2.0},
}


def run(A: np.ndarray, engine: int, change: dict | None) -> tuple[list, float]:
    """Brackets ``[(lo, hi)]`` per eps and CPU-s of one profile (re-verified)."""
    saved = search.ROWSPAN_SETTINGS
    if change is not None:
        search.ROWSPAN_SETTINGS = {
            e: dataclasses.replace(s, **change) for e, s in ROWSPAN_SETTINGS.items()
        }
    try:
        c0 = time.process_time()
        prof = profile_matrix(A, eps=EPS, engine=engine)
        cpu = time.process_time() - c0
    finally:
        search.ROWSPAN_SETTINGS = saved
    fails = prof.reverify(A)
    if fails:
        raise RuntimeError(f"witnesses fail re-verification: {fails}")
    return [tuple(prof.bracket(e)) for e in EPS], cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), help="names of VARIANTS")
    args = ap.parse_args()
    print("command:", command_line("experiments.engine5_variants"), flush=True)
    A = minilm_attention(args.length)
    heads = list(range(args.offset, len(A), args.every))
    got: dict[str, list] = {"engine 4": []} | {v: [] for v in args.variants}
    with fixed_torch_threads(1):
        for i in heads:
            for name in got:
                if name == "engine 4":
                    br, cpu = run(A[i], 4, None)
                else:
                    br, cpu = run(A[i], 5, VARIANTS[name])
                got[name].append((br, cpu))
                print(f"head {i} {name}: {br} cpu {cpu:.2f}s", flush=True)
    base_cpu = sum(c for _, c in got["engine 4"])
    out = {}
    for name, res in got.items():
        lo = np.array([[b[0] for b in br] for br, _ in res], dtype=float)
        hi = np.array([[b[1] for b in br] for br, _ in res], dtype=float)
        ratio = hi / np.maximum(lo, 1)
        cpu = sum(c for _, c in res)
        out[name] = {
            "median_hi_over_lo": round(float(np.median(ratio)), 3),
            "by_eps": [round(float(np.median(ratio[:, j])), 3) for j in range(len(EPS))],
            "sum_lower": int(lo.sum()),
            "sum_upper": int(hi.sum()),
            "cpu_median": round(float(np.median([c for _, c in res])), 2),
            "cpu_vs_engine4": round(cpu / base_cpu, 3),
        }
    print(json.dumps({"heads": heads, "length": args.length} | out, indent=1))


if __name__ == "__main__":
    main()
