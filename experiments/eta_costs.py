"""CPU of one matrix's bracket profile and descriptors at N = 32 and N = 64 (MiniLM heads):
the exponents of :mod:`analysis.progress`'s cost estimates (``N ** p``).

For ``--heads`` (layer, head) pairs of MiniLM on corpus seed ``--seed`` at both lengths,
in one process on one thread: ``run_brackets`` of the matrix at t = 0.5, 1, 2 (engine 4,
effort default, eps 0.05, 0.1, 0.2) and ``describe_frame`` of its four blocks, each timed
with ``time.process_time``. Prints the median and mean per length and the exponent
``log2(cost(64) / cost(32))`` of each.

Run from the repository root::

    python -m experiments.eta_costs
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--heads", default="0:0,1:5,2:0,3:5,4:0,5:5,0:7,2:10,4:1,5:11")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from analysis.brackets.engine import engine_for
    from analysis.sources.extract import extract
    from analysis.store import RunSpec, Store, run_brackets
    from analysis.study.describe import describe_frame

    heads = [tuple(int(v) for v in h.split(":")) for h in args.heads.split(",")]
    eng, quiet = engine_for(4), RunSpec(progress=False)
    eps, temps = (0.05, 0.1, 0.2), (0.5, 1.0, 2.0)
    blocks = ("baseline", "baseline_plus", "native", "intrinsic")
    out = {}
    with tempfile.TemporaryDirectory() as tmp, Store(f"{tmp}/s", create=True) as st:
        for n in (32, 64):
            ex = extract("sentence-transformers/all-MiniLM-L6-v2", corpus_seed=args.seed, length=n)
            prof, desc = [], []
            for key in st.add_extraction(ex, heads=heads):
                t0 = time.process_time()
                run_brackets(st, eps, engine=eng, temperatures=temps, matrix_keys=[key], run=quiet)
                prof.append(time.process_time() - t0)
                t0 = time.process_time()
                describe_frame(str(st.array_file(key)), eps, temps, blocks)
                desc.append(time.process_time() - t0)
            out[n] = {"profile": prof, "descriptors": desc}
            print(
                f"N={n}: profile (3 t) median {np.median(prof):.3f} mean {np.mean(prof):.3f} "
                f"CPU-s; descriptors median {np.median(desc):.3f} mean {np.mean(desc):.3f}"
            )
    for stage in ("profile", "descriptors"):
        for stat in (np.median, np.mean):
            ratio = stat(out[64][stage]) / stat(out[32][stage])
            print(f"{stage} {stat.__name__}: 64/32 = {ratio:.2f}, exponent {math.log2(ratio):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
