"""Does the current engine reproduce a study store's profiles bit for bit?

An engine change meant to be a pure speed-up (the same arithmetic, fewer temporaries, a
CPU flag) must not move a single witness: a stored study's outcomes were computed with
the old code, and its engine version is not bumped for such a change. This experiment
re-profiles ``--per-group`` stored matrices of every (checkpoint, length) of a study store
with the engine as it is now (each matrix's temperatures together, as the brackets stage
does: one thread, the design's eps and effort) and compares each result with the stored
profile: brackets, certified errors and margins, and every witness array (as stored,
float32), everything but the timings. It also reports the engine's CPU seconds, for a
before/after comparison of the same sample (run it once on each commit).

``--flush-subnormals`` runs the whole re-profiling with the CPU flushing subnormal floats
to zero (``torch.set_flush_denormal(True)``), the verifier included: a diagnostic of how
much time the optimizers lose to subnormal arithmetic and whether flushing moves a
witness (the engine does not flush).

Run from the repository root after ``make study`` (or any run of the design)::

    python -m experiments.engine_identity --per-group 2 --seed 99 [--flush-subnormals]

Writes ``experiments/out/engine_identity.csv`` (one row per re-profiled profile).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import pandas as pd
import torch

from analysis.brackets import profile_temperatures
from analysis.prereg import load_design
from analysis.store.store import Store
from analysis.study.plan import plan_study
from experiments.common import OUT, command_line
from experiments.descriptor_cost import add_sample_arguments, sampled_matrices


def without_timings(x: Any) -> Any:
    """The profile dict without its ``seconds`` entries (wall-clock, never reproducible)."""
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_sample_arguments(ap, per_group=2, seed=99)
    ap.add_argument("--flush-subnormals", action="store_true", help="CPU flushes subnormals")
    args = ap.parse_args()
    print(command_line("experiments.engine_identity"), flush=True)
    torch.set_num_threads(1)
    if args.flush_subnormals and not torch.set_flush_denormal(True):
        raise SystemExit("--flush-subnormals: this CPU cannot flush subnormals")
    plan = plan_study(load_design(args.design))
    eps, temps = plan.eps, list(plan.temperatures)
    rows = []
    with Store(args.store) as store:
        for ckpt, length, _, rec in sampled_matrices(store, args.per_group, args.seed):
            key = rec.key
            arrays = store.arrays(key)
            start = time.process_time()
            profs = profile_temperatures(
                [arrays.at(t) for t in temps],
                temps,
                eps=eps,
                effort=plan.effort,
                previous=[None] * len(temps),
            )
            cpu = time.process_time() - start
            for t, prof in zip(temps, profs, strict=True):
                old = store.profile(key, t, plan.effort)
                if old is None:
                    raise SystemExit(f"no stored profile of {key} at t = {t}: run the study")
                # JSON round trip: the stored dict was JSON, so tuples became lists
                new = json.loads(json.dumps(prof.to_dict(arrays="float32-base64")))
                same = without_timings(old.profile_dict()) == without_timings(new)
                rows.append(
                    {
                        "checkpoint": ckpt,
                        "length": length,
                        "key": key,
                        "temperature": t,
                        "identical": same,
                        "cpu_s": cpu / len(temps),
                    }
                )
            print(f"{ckpt} N={length} {key}: {cpu:.1f} CPU-s", flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "engine_identity.csv", index=False)
    print(
        f"{int(df.identical.sum())} of {len(df)} profiles identical to the stored ones "
        f"(timings aside); engine CPU {df.cpu_s.sum():.1f} s"
    )


if __name__ == "__main__":
    main()
