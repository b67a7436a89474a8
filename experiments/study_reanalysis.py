"""An exploratory re-analysis of a locked study with the study-method options it predates.

A locked study's confirmatory answer stays as locked. This script re-reads the same stored
cells (training and held-out, as the confirmatory run released them) and refits the design's
models under the options later designs may pre-specify
(the fields of :class:`analysis.compare.ComparisonSpec`):

* ``as locked``: the design's own options (head resampling, no checkpoint effects), with an
  exploratory SESOI so every row also gets an equivalence test and a decision;
* ``kv_group`` and ``checkpoint_layer``: the bootstrap resamples coarser units (heads that
  share their keys; every head of one layer, which sees one input);
* ``checkpoint effects``: checkpoint fixed effects in every model, M0 included (features
  constant within a checkpoint dropped), with its checkpoint-equal estimand and the
  leave-one-family-out and width-stratified sensitivities;
* ``checkpoint effects + checkpoint_layer``: both;
* optionally ``refit``: R refit-bootstrap replicates (fit uncertainty in the CI).

The SESOI of each pair is ``--sesoi-share`` times the M0 held-out value of the primary
metric in the locked comparison (one number per pair, the same in every scheme), labelled
exploratory. Every row is exploratory: the options were chosen after the outcomes existed.

Writes ``reanalysis.csv`` (one row per scheme, pair and metric, plus the sensitivity rows)
and ``reanalysis.md`` (the primary metric's rows) under ``--out`` (default
``experiments/out/reanalysis/<design stem>/``).

Usage, from the repository root::

    python -m experiments.study_reanalysis preregistration/offline-families.toml
        [--root DIR] [--sesoi-share 0.05] [--refit-replicates 0] [--n-boot B] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from experiments.common import OUT, command_line

#: The schemes, in order: (label, resampling unit, checkpoint effects).
SCHEMES: tuple[tuple[str, str, bool], ...] = (
    ("as locked", "head", False),
    ("kv_group", "kv_group", False),
    ("checkpoint_layer", "checkpoint_layer", False),
    ("checkpoint effects", "head", True),
    ("checkpoint effects + checkpoint_layer", "checkpoint_layer", True),
)
COLUMNS = (
    "scheme", "pair", "metric", "metric_role", "base_value", "rich_value", "effect",
    "ci_low", "ci_high", "p_value", "p_holm", "adds_information", "sesoi", "sesoi_share",
    "equivalence_p", "equivalence_p_holm", "decision", "n_heads", "n_cells",
)  # fmt: skip


def study_table(design: Path, root: Path | None) -> tuple[pd.DataFrame, list[str], object]:
    """The stored comparison table of a study (every real cell, the unit columns its
    design or this script needs) and its log-scale columns."""
    from analysis.store.store import Store
    from analysis.study.comparison import stored_comparison_table
    from analysis.study.units import unit_column

    table, log_cols, study = stored_comparison_table(design, root=root)
    with Store(study.paths.store) as store:
        # held-out as the lock lists them (what the sealed release sets; the confirmatory
        # run already released these cells, so no second release is recorded)
        table = table.assign(held_out=table["cluster"].astype(str).isin(set(study.lock.held_out)))
        for unit in ("kv_group", "checkpoint_layer"):
            if unit not in table:
                table = unit_column(table, unit, store=store)
    return table, log_cols, study


def main(argv: list[str] | None = None) -> int:
    from analysis.compare import ComparisonSpec, NestedComparison
    from analysis.report.tables import markdown_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("design", type=Path)
    ap.add_argument("--root", type=Path, default=None, help="the study root (its data/)")
    ap.add_argument("--sesoi-share", type=float, default=0.05)
    ap.add_argument("--refit-replicates", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=None, help="default: the design's B")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if not 0 < args.sesoi_share < 1:
        ap.error(f"--sesoi-share: expected a number in (0, 1), got {args.sesoi_share}")
    out = args.out or OUT / "reanalysis" / args.design.stem
    t0 = time.perf_counter()
    table, log_cols, study = study_table(args.design, args.root)
    design = study.design
    kwargs = design.comparison_kwargs()
    for k in ("sesoi", "checkpoint_effects", "resampling_unit", "refit_replicates"):
        kwargs.pop(k)
    if args.n_boot is not None:
        kwargs["n_boot"] = args.n_boot
    common = {
        "log_columns": log_cols,
        "lock_sha256": study.lock.sha256,
        **kwargs,
        **study.registry.covariate_kwargs(table.columns),
    }
    primary = kwargs["primary_metric"]
    base = NestedComparison(ComparisonSpec(models=design.models, **common)).fit(table)
    m0 = base.to_frame().query("metric == @primary").set_index("pair")["base_value"]
    sesoi = {pair: {primary: float(args.sesoi_share * v)} for pair, v in m0.items()}
    schemes = list(SCHEMES)
    if args.refit_replicates:
        schemes.append(("refit", "head", False))
    rows, sens = [], []
    for label, unit, fe in schemes:
        spec = ComparisonSpec(
            models=design.models,
            sesoi=sesoi,
            sesoi_source="exploratory",
            checkpoint_effects=fe,
            resampling_unit=unit,
            refit_replicates=args.refit_replicates if label == "refit" else 0,
            **common,
        )
        t = time.perf_counter()
        res = NestedComparison(spec).fit(table)
        frame = res.to_frame()
        frame.insert(0, "scheme", label)
        rows.append(frame[[c for c in COLUMNS if c in frame]])
        if not res.sensitivity.empty:
            sens.append(res.sensitivity.assign(scheme=label))
        print(f"{label}: {time.perf_counter() - t:.1f} s", flush=True)
    result = pd.concat(rows, ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    header = (
        f"# command: {command_line('experiments.study_reanalysis')}\n# date: {pd.Timestamp.now('UTC'):%Y-%m-%d %H:%M} UTC\n"
        f"# exploratory: options chosen after the outcomes existed; SESOI = "
        f"{args.sesoi_share:g} x M0's held-out {primary} in the locked comparison\n"
    )
    for name, frame in (("reanalysis.csv", result), ("sensitivity.csv", _concat(sens))):
        tmp = out / (name + ".tmp")
        tmp.write_text(header + frame.to_csv(index=False))
        tmp.replace(out / name)
    md = result.query("metric == @primary").drop(columns=["metric", "metric_role"])
    (out / "reanalysis.md").write_text(header + markdown_table(md.round(5)) + "\n")
    print(md.to_string(index=False))
    print(f"wrote {out} in {time.perf_counter() - t0:.0f} s")
    return 0


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


if __name__ == "__main__":
    raise SystemExit(main())
