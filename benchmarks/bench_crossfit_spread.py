"""How much the fold seed of the cross-fitted calibration moves a study's effects.

On a finished study (default: the shipped ``offline-minilm`` design after ``make run``),
the confirmatory comparison is refitted with the calibration's fold seed set to each of
``--seeds`` values, everything else fixed (the held-out bootstrap's draws included), for
one fold assignment (R = 1, method 2), for R repeated assignments
(``Calibration(repeats=R)``, method 3's default when a design states K folds) and for
leave one head out (``Calibration(leave_one_out=True)``, method 3's default when it
states no calibration; no seed can move it). Per pair (primary metric): the mean
effect, its SD over the seeds, the bootstrap SE (95% CI width / 3.92, mean over seeds),
SD / SE, and the seconds per fit. ``--refits N`` then times the refit bootstrap with N
replicates (seconds per replicate, the refit CI beside the held-out bootstrap's), with
leave one head out (``--refit-calibration loho``, method 3's default) or K folds and R
repeats (``repeats``).
``--synthetic`` runs on the fixed synthetic table of the test instead of a study.

Run from the repository root: ``python -m benchmarks.bench_crossfit_spread``; writes
``benchmarks/out/crossfit_spread.csv``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.compare import Calibration, ComparisonSpec, NestedComparison
from analysis.prereg.schema import CALIBRATION_REPEATS_V3
from analysis.study.comparison import stored_comparison_table
from benchmarks.common import OUT, ROOT, command_line


def study_spec(design: Path, root: Path | None) -> tuple[pd.DataFrame, ComparisonSpec]:
    """The study's comparison table (with ``held_out``) and its confirmatory spec."""
    table, log_cols, study = stored_comparison_table(design, root=root)
    table = table.assign(held_out=table["cluster"].isin(set(study.design.held_out)))
    kw = study.design.comparison_kwargs()
    kw.update(refit_replicates=0, refit_confirmatory=False, sensitivities=False)
    spec = ComparisonSpec(
        models=study.design.models,
        log_columns=log_cols,
        **kw,
        **study.registry.covariate_kwargs(table.columns),
    )
    return table, spec


def synthetic_spec() -> tuple[pd.DataFrame, ComparisonSpec]:
    """The test's fixed synthetic table (tests/compare/test_crossfit_repeats.py: 24 heads
    of 12 cells, 6 held out, a native effect of 0.3) with the three pairs, OLS."""
    from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table

    table = make_table(np.random.default_rng(11), native_effect=0.3)
    spec = ComparisonSpec(
        models=MODELS,
        family=FAMILY,
        log_columns=["baseline__scale"],
        estimator="ols",
        metrics=["interval_sq_loss"],
        n_boot=199,
        random_state=0,
        calibration=Calibration(folds=5, seed=0),
        **COVARIATES,
    )
    return table, spec


def spread(
    table: pd.DataFrame, spec: ComparisonSpec, cals: list[Calibration], label: str
) -> pd.DataFrame:
    """One row per pair: the effect's spread over the calibrations ``cals``."""
    rows, t0 = [], time.perf_counter()
    for cal in cals:
        f = NestedComparison(replace(spec, calibration=cal)).fit(table).frame
        f = f[f["metric"] == spec.primary_metric]
        rows.append(f.assign(se=(f["ci_high"] - f["ci_low"]) / 3.92))
    seconds = (time.perf_counter() - t0) / len(cals)
    long = pd.concat(rows)
    out = long.groupby("pair", sort=False).agg(
        effect=("effect", "mean"),
        sd=("effect", lambda e: float(np.std(e, ddof=1))),
        lo=("effect", "min"),
        hi=("effect", "max"),
        se=("se", "mean"),
    )
    out["sd_over_se"] = out["sd"] / out["se"]
    return out.reset_index().assign(calibration=label, seconds_per_fit=seconds)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--design", default=str(ROOT / "preregistration" / "offline-minilm.toml"))
    ap.add_argument("--root", default=None, help="study root (default: the design's parent's)")
    ap.add_argument("--synthetic", action="store_true", help="the test's synthetic table")
    ap.add_argument("--seeds", type=int, default=7)
    ap.add_argument("--repeats", type=int, nargs="*", default=[CALIBRATION_REPEATS_V3])
    ap.add_argument("--no-loho", action="store_true", help="skip leave one head out")
    ap.add_argument("--refits", type=int, default=0, help="time N refit replicates")
    ap.add_argument(
        "--refit-calibration",
        choices=["loho", "repeats"],
        default="loho",
        help="the calibration of the timed refits: leave one head out (method 3's default) "
        "or K folds with the first --repeats",
    )
    args = ap.parse_args(argv)
    print(command_line("benchmarks.bench_crossfit_spread"))
    table, spec = synthetic_spec() if args.synthetic else study_spec(Path(args.design), args.root)
    k = spec.calibration.folds
    if k is None:
        raise SystemExit("the design's calibration is in-sample: no fold seed to vary")
    base = spec.calibration.seed
    seeds = [base + i for i in range(args.seeds)]
    n_train = table.loc[~table["held_out"], "cluster"].nunique()
    print(f"{len(table)} cells, {n_train} training heads, K = {k}, fold seeds {seeds}")
    parts = [spread(table, spec, [Calibration(folds=k, seed=s) for s in seeds], "R = 1")]
    for r in args.repeats:
        cals = [Calibration(folds=k, seed=s, repeats=r) for s in seeds]
        parts.append(spread(table, spec, cals, f"R = {r}"))
    if not args.no_loho:  # each head its own fold: no seed at all (method 3's default)
        cals = [Calibration(leave_one_out=True)] * 2  # twice: shows the fit is deterministic
        parts.append(spread(table, spec, cals, f"leave one head out (K = {n_train})"))
    out = pd.concat(parts, ignore_index=True)
    cols = ["calibration", "pair", "effect", "sd", "lo", "hi", "se", "sd_over_se"]
    with pd.option_context("display.width", 160, "display.float_format", "{:.5f}".format):
        print(out[[*cols, "seconds_per_fit"]].to_string(index=False))
    OUT.mkdir(parents=True, exist_ok=True)
    out.to_csv(OUT / "crossfit_spread.csv", index=False)
    if args.refits:
        cal = (
            Calibration(leave_one_out=True)
            if args.refit_calibration == "loho"
            else Calibration(folds=k, seed=base, repeats=args.repeats[0])
        )
        for confirm in (False, True):
            s = replace(
                spec,
                calibration=cal,
                refit_replicates=args.refits if confirm else 0,
                refit_confirmatory=confirm,
                sensitivities=True,
            )
            t0 = time.perf_counter()
            f = NestedComparison(s).fit(table).frame
            sec = time.perf_counter() - t0
            f = f[f["metric"] == spec.primary_metric]
            what = f"refit bootstrap, {args.refits} refits" if confirm else "held-out bootstrap"
            print(f"{what} ({cal.describe()}): {sec:.1f} s")
            print(f[["pair", "effect", "ci_low", "ci_high", "p_value"]].to_string(index=False))
    return out


if __name__ == "__main__":
    main()
