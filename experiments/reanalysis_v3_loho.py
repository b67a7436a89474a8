"""The paper-lengths re-analysis under method 3's final cross-fit: leave one head out.

:mod:`experiments.reanalysis_v3` refitted the locked paper-lengths study under the
method-v3 rules with the calibration averaged over R = 20 fold assignments, method 3's
cross-fit when it was written. Method 3 now leaves one head out when a design states no
calibration (docs/method.md, "Calibrated baseline"): no fold seed at all. This script
refits the two variants that do not need re-extracted Q and K, from the shipped atlas,
with that calibration and everything else as in :mod:`experiments.reanalysis_v3`:

* ``(b0L) v3 decisions + leave one head out``: the locked held-out split, the held-out
  bootstrap with the fits fixed;
* ``(dL) + stratified split (native v1)``: the held-out heads redrawn under the method-3
  rule, stratified by (checkpoint, layer);

and, with ``--refits N`` (resumable, one JSON per variant), the refit bootstrap's CI and
p as the confirmatory ones. Exploratory: the rules were chosen after the outcomes.

Run from the repository root::

    python -m experiments.reanalysis_v3_loho [--refits N]

writes ``experiments/out/reanalysis_v3_loho/reanalysis_v3_loho.{csv,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from experiments.common import OUT, command_line
from experiments.reanalysis_v3 import (
    ATLAS,
    atlas_table,
    load_study,
    refit_decisions,
    refit_replicates,
    spec_for,
    stratified_held_out,
    summarize,
)

DEFAULT_OUT = OUT / "reanalysis_v3_loho"


def main(argv: list[str] | None = None) -> int:
    from analysis.compare import Calibration, NestedComparison
    from analysis.report.tables import markdown_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refits", type=int, default=0, help="refit-bootstrap replicates")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    atlas = pd.read_parquet(ATLAS)
    design, registry = load_study()
    over = {"method": 3, "calibration": Calibration(leave_one_out=True)}
    strat = set(stratified_held_out(design))
    variants = {
        "b": ("(b0L) v3 decisions + leave one head out", None),
        "d": ("(dL) + stratified split (native v1)", strat),
    }
    rows = []
    for key, (label, held) in variants.items():
        table, logs = atlas_table(atlas, design, registry, held_out=held)
        spec = spec_for(design, registry, table, logs, **over)
        t0 = time.perf_counter()
        res = NestedComparison(spec).fit(table)
        print(f"{label}: {time.perf_counter() - t0:.0f} s", flush=True)
        rows.append(summarize(label, res.to_frame(), res, design, "held-out bootstrap, fits fixed"))
        if args.refits:
            done = refit_replicates(table, spec, args.refits, out / f"refits_{key}.json")
            n = len(done["effects"])
            frame = refit_decisions(res, spec, done)
            rows.append(
                summarize(
                    f"{label} + refit bootstrap ({n})",
                    frame,
                    res,
                    design,
                    f"refit bootstrap, {n} refits",
                )  # fmt: skip
            )
    result = pd.concat(rows, ignore_index=True)
    header = (
        f"# command: {command_line('experiments.reanalysis_v3_loho')}\n"
        f"# date: {pd.Timestamp.now('UTC'):%Y-%m-%d %H:%M} UTC\n"
        "# exploratory: method-v3 rules applied after the outcomes existed; the locked "
        "report stays as run\n"
        f"# stratified split: {len(strat)} held-out heads\n"
    )
    (out / "reanalysis_v3_loho.csv").write_text(header + result.to_csv(index=False))
    (out / "reanalysis_v3_loho.md").write_text(header + markdown_table(result.round(6)) + "\n")
    print(result.drop(columns=["base_value", "rich_value"]).round(5).to_string(index=False))
    print(json.dumps({"seconds": round(time.perf_counter() - t_start)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
