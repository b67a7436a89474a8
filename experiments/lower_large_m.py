"""How far can projected ascent take a lower witness at large sizes, and at what cost?

For a sample of MiniLM heads at one length: the engine's profile (``default``), then for
each eps a few sizes above its lower end (``lo * f`` for ``--factors``), the ascent of
:func:`analysis.brackets.lower_ascent.refine_lower` from the cheap stage's best group witness
(as the refinement starts), run with no early stop for ``--steps`` budgets and step sizes
``--lr-scale`` times the engine's, each candidate certified. Prints the certified margin
over eps per (budget, step size) and the CPU seconds per run.

Run from the repository root::

    python -m experiments.lower_large_m --length 256 --every 12 --steps 800 2400 6000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from analysis.brackets import lower as lw
from analysis.brackets import lower_ascent as ascent
from analysis.brackets import profile_matrix
from analysis.brackets import stages as st
from analysis.brackets.optim import Problems
from analysis.brackets.verify import certified_lower_margin
from experiments.common import EPS, OUT, command_line, minilm_attention


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--factors", type=float, nargs="+", default=[1.2, 1.5])
    ap.add_argument("--steps", type=int, nargs="+", default=[800, 2400])
    ap.add_argument("--lr-scale", type=float, nargs="+", default=[1.0])
    ap.add_argument("--eps", type=float, nargs="+", default=list(EPS))
    args = ap.parse_args()
    print(command_line("experiments.lower_large_m"), flush=True)
    torch.set_num_threads(1)
    A = minilm_attention(args.length)
    rows = []
    for i in range(0, A.shape[0], args.every):
        a = A[i]
        prof = profile_matrix(a, eps=EPS)
        b = st.Builder(a, None)
        cache = st.cheap_stage(b, list(EPS))
        At = torch.from_numpy(a).float()[None]
        for e in args.eps:
            lo, hi = prof.bracket(e)
            for f in args.factors:
                m = min(hi, max(lo + 1, int(round(lo * f))))
                if m not in cache["groups"]:
                    continue
                R0, Y0, g = lw.group_witness(a, cache["groups"][m][1], m)
                for lr_s in args.lr_scale:
                    for steps in args.steps:
                        c0 = time.process_time()
                        lr = ascent.lower_lr(torch.tensor([m])) * lr_s
                        R, Y, _ = ascent.refine_lower(
                            At,
                            torch.from_numpy(R0).float()[None],
                            torch.from_numpy(Y0).float()[None],
                            Problems(
                                torch.tensor([m]),
                                torch.tensor([10.0]),  # unreachable: no early success stop
                                torch.tensor([steps]),
                            ),
                            lr=lr,
                            give_up=1e9,  # never hopeless
                            stall=1.0,
                        )
                        cpu = time.process_time() - c0
                        mu = certified_lower_margin(a, R[0].double().numpy(), Y[0].double().numpy())
                        rows.append(
                            {
                                "head": i,
                                "eps": e,
                                "lo": lo,
                                "hi": hi,
                                "m": m,
                                "factor": f,
                                "steps": steps,
                                "lr_scale": lr_s,
                                "group_over_eps": g / e,
                                "margin_over_eps": mu / e,
                                "cpu": cpu,
                            }
                        )
                        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / f"lower_large_m_L{args.length}.csv", index=False)
    print(
        df.groupby(["factor", "lr_scale", "steps"])
        .agg(
            margin=("margin_over_eps", "median"),
            certified=("margin_over_eps", lambda x: float(np.mean(x > 1))),
            cpu=("cpu", "median"),
        )
        .round(3)
        .to_string()
    )


if __name__ == "__main__":
    main()
