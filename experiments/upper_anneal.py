"""Engine 5's upper anneal horizon: which policy across heads (issue 37, item 2).

Runs engine 5 (``default``) on the same MiniLM heads under several anneal policies of the
upper trials -- no stretch (engine 4's schedule), a 4x horizon from rank 48 on (engine
5's choice), a 4x horizon at every rank -- and prints the upper ends (sum and median
hi/lo per eps) and CPU-s per profile of each, at each length. The policies are swapped in
by replacing engine 5's settings table for the run (``dataclasses.replace`` of the
frozen settings); every profile is re-verified. One process, one thread. Two more
horizons and one lower variant (six lower rounds instead of three) ride along.

Usage, from the repository root::

    python -m experiments.upper_anneal [--lengths 64 128 256] [--every 12]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import pandas as pd

import analysis.brackets.search as search
from analysis.attention import fixed_torch_threads
from analysis.brackets import profile_matrix
from analysis.brackets.settings import ROWSPAN_SETTINGS
from experiments.common import EPS, command_line, minilm_attention

POLICIES = {
    "none": {"anneal_stretch": 1.0},
    "4x from rank 48": {"anneal_stretch": 4.0, "anneal_min_rank": 48},
    "4x all ranks": {"anneal_stretch": 4.0, "anneal_min_rank": 0},
    "4x from rank 64": {"anneal_stretch": 4.0, "anneal_min_rank": 64},
    "2x from rank 48": {"anneal_stretch": 2.0, "anneal_min_rank": 48},
    "4x from rank 48, 6 lower rounds": {"lower_rounds": 6},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), help="names of POLICIES")
    args = ap.parse_args()
    print("command:", command_line("experiments.upper_anneal"), flush=True)
    rows = []
    with fixed_torch_threads(1):
        for L in args.lengths:
            A = minilm_attention(L)
            for i in range(0, len(A), args.every):
                for name in args.policies:
                    change = POLICIES[name]
                    table = {
                        e: dataclasses.replace(s, **change) for e, s in ROWSPAN_SETTINGS.items()
                    }
                    search.ROWSPAN_SETTINGS = table
                    try:
                        c0 = time.process_time()
                        prof = profile_matrix(A[i], eps=EPS, effort="default", engine=5)
                        cpu = time.process_time() - c0
                    finally:
                        search.ROWSPAN_SETTINGS = ROWSPAN_SETTINGS
                    if prof.reverify(A[i]):
                        raise RuntimeError(f"N = {L}, head {i}: a witness fails re-verification")
                    for e in EPS:
                        lo, hi = prof.bracket(e)
                        rows.append(
                            dict(length=L, head=i, policy=name, eps=e, lower=lo, upper=hi, cpu=cpu)
                        )
                    print(
                        L, i, name, [tuple(prof.bracket(e)) for e in EPS], f"{cpu:.2f}s", flush=True
                    )
    df = pd.DataFrame(rows)
    df["ratio"] = df["upper"] / df["lower"].clip(lower=1)
    out = {}
    for (L, name), d in df.groupby(["length", "policy"], sort=False):
        out[f"N={L} {name}"] = {
            "sum_upper": int(d["upper"].sum()),
            "median_hi_over_lo": round(float(d["ratio"].median()), 3),
            "by_eps": {f"{e:g}": round(float(d[d.eps == e]["ratio"].median()), 3) for e in EPS},
            "cpu_per_profile_median": round(float(d.groupby("head")["cpu"].first().median()), 2),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
