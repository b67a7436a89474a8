"""Before/after numbers of the MiniLM study's amendments 4 and 5 (issue 38, item 5).

Amendment 4 changed the baseline's isotonic calibration from in-sample to cross-fitted by
head (5 folds); amendment 5 changed ``[sampling.inputs] per_length`` from 1 to 2. Both
were made after outcomes existed. This recomputes the confirmatory comparison of the
shipped study (``data/offline-minilm``: its stored brackets and descriptors, nothing new
is bracketed or described) four ways:

- ``as run``: cross-fitted calibration, two inputs per length (the design now; must
  reproduce the stored ``results/comparison.csv``);
- ``in-sample calibration``: amendment 4 undone;
- ``one input per length``: amendment 5 undone (only the cells of the input the design
  drew with ``per_length = 1``, corpus seed ``seed``);
- ``as first locked``: both undone.

Only the design's estimator (``NestedComparison`` with the design's inference settings)
is fitted: no OLS refit, no head-level analysis. Writes
``experiments/out/minilm_amendments.json`` and prints a Markdown table of the primary
metric per hypothesis. Run from the repository root (the study's data under
``data/offline-minilm``)::

    nice -n 10 python -m experiments.minilm_amendments
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from experiments.common import OUT

DESIGN = Path("preregistration/offline-minilm.toml")


def _first_inputs(study) -> set[str]:
    """input ids of the first input per length (the one ``per_length = 1`` draws)."""
    seed = int(study.design.data["sampling"]["inputs"].get("seed", 0))
    ids = set()
    for task in study.plan.extractions:
        if f"corpus-seed={seed}" in task.label:
            ids |= {(study.extractions.entry(task.label) or {}).get("input_id")}
    return ids


def main(argv: list[str] | None = None) -> int:
    from analysis.compare import Calibration, ComparisonSpec, NestedComparison
    from analysis.prereg.sealing import SealedCells
    from analysis.study import Study
    from analysis.study.comparison import comparison_table
    from analysis.study.results import study_results

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--design", default=str(DESIGN))
    p.add_argument("--out", default=str(OUT / "minilm_amendments.json"))
    args = p.parse_args(argv)

    study = Study.open(args.design)
    results = study_results(study)
    table, log_cols, _ = comparison_table(study, results.brackets, results.features)
    first = _first_inputs(study)
    kw = study.design.comparison_kwargs()
    hyps = {f"{h['pair'][0]}<{h['pair'][1]}": h["id"] for h in study.design.data["hypotheses"]}
    variants = {
        "as run (cross-fitted, 2 inputs per length)": (kw["calibration"], None),
        "in-sample calibration (amendment 4 undone)": (Calibration(), None),
        "one input per length (amendment 5 undone)": (kw["calibration"], first),
        "as first locked (in-sample, 1 input per length)": (Calibration(), first),
    }
    rows, meta = [], {}
    for name, (cal, keep) in variants.items():
        t0 = time.perf_counter()
        tab = table if keep is None else table.loc[table["input_id"].isin(keep)]
        conf = SealedCells(tab.reset_index(drop=True), study.paths.design, lock=study.lock)
        data = conf.release_confirmatory()
        res = NestedComparison(
            ComparisonSpec(
                models=study.design.models,
                log_columns=log_cols,
                lock_sha256=data.lock_sha256,
                **{**kw, "calibration": cal},
                **study.registry.covariate_kwargs(data.table.columns),
            )
        ).fit(data.table)
        f = res.to_frame()
        f = f.loc[f["metric"] == kw["primary_metric"]]
        for r in f.itertuples():
            rows.append(
                {
                    "variant": name,
                    "hypothesis": hyps.get(r.pair, ""),
                    "pair": r.pair,
                    "base_value": r.base_value,
                    "effect": r.effect,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "p_value": r.p_value,
                    "p_holm": r.p_holm,
                    "adds_information": bool(r.adds_information),
                    "n_cells": int(r.n_cells),
                    "calibration": r.calibration,
                }
            )
        meta[name] = {
            "cells": len(tab),
            "held_out_cells": int(data.table["held_out"].sum()),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        print(f"{name}: {meta[name]}", flush=True)
    frame = pd.DataFrame(rows)
    # the "as run" variant must reproduce the stored confirmatory comparison
    stored = pd.read_csv(study.paths.results / "comparison.csv")
    stored = stored.loc[stored["metric"] == kw["primary_metric"]].set_index("pair")
    mine = frame.loc[frame["variant"].str.startswith("as run")].set_index("pair")
    diff = float((mine["effect"] - stored.loc[mine.index, "effect"]).abs().max())
    pdiff = float((mine["p_value"] - stored.loc[mine.index, "p_value"]).abs().max())
    meta["reproduces_stored_comparison"] = {"max_abs_effect_diff": diff, "max_abs_p_diff": pdiff}
    print(f"as run vs stored comparison.csv: max |effect diff| {diff:.3g}, |p diff| {pdiff:.3g}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "design": args.design,
                "lock_sha256": study.lock.sha256,
                "primary_metric": kw["primary_metric"],
                "computed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "variants": meta,
                "rows": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    show = frame.loc[frame["hypothesis"] != ""].copy()
    for c in ("base_value", "effect", "ci_low", "ci_high"):
        show[c] = show[c].map(lambda x: f"{x:.5f}")
    for c in ("p_value", "p_holm"):
        show[c] = show[c].map(lambda x: f"{x:.4f}")
    cols = ["variant", "hypothesis", "pair", "base_value", "effect", "ci_low", "ci_high"]
    cols += ["p_value", "p_holm", "adds_information", "n_cells"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in show[cols].itertuples(index=False):
        print("| " + " | ".join(str(v) for v in r) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
