"""CPU of the replication's compare stage, on a simulated table of its size.

The replication (``preregistration/replication.toml``, issue 54) decides under method 3
with the refit bootstrap in the confirmatory CI (``refit_replicates = 200``), leave one
head out calibration, checkpoint effects and (checkpoint, layer) resampling; the compare
stage is one process. This times ``NestedComparison.fit`` on one simulated study of the
design's size (its heads, held-out heads, layers and cells per head; the block column
counts the registry gives its blocks now; ``analysis.power.simulate_study`` at the
hand-set assumptions, the MiniLM reference widths) with those settings, first without refits and then with
``--refits`` of them, and prints the CPU seconds of each (``time.process_time``, one
thread) and the projection to the design's 200 refits; ``--studies N`` also times N
simulated studies as the power stage runs them (fits fixed, no refits); ``--count-studies N``\ncounts the studies the method-3 decision powers run at N, on the toy sizes. No outcome of the design is read.

Run from the repository root: ``python -m benchmarks.bench_replication_compare``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.common import ROOT, command_line

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def _timed(spec, table) -> tuple[float, object]:
    from analysis.compare import NestedComparison

    t0 = time.process_time()
    result = NestedComparison(spec).fit(table)
    return time.process_time() - t0, result


def count_decision_studies(simulations: int) -> dict[str, int]:
    """Simulated studies the method-3 decision powers run for one hypothesis and the three
    scenarios, on the package's toy sizes (calibration studies ``one_study``, counted
    studies ``decided_study``), by wrapping the two functions."""
    import analysis.power.decisions as dec
    import analysis.power.simulate as sim
    from analysis.datasets import example_sizes, example_widths
    from analysis.power.spec import PowerSpec
    from analysis.study.power_decisions import scenarios_for

    counts = {"calibration": 0, "counted": 0}
    one, decided = sim.one_study, dec.decided_study

    def counting(fn, key):
        def run(*a, **k):
            counts[key] += 1
            return fn(*a, **k)

        return run

    sim.one_study = counting(one, "calibration")
    dec.decided_study = counting(decided, "counted")
    try:
        spec = PowerSpec(simulations=simulations, sizes=example_sizes(), random_state=0)
        dec.decision_powers(example_widths(), spec, {"M0<M1": 0.03}, scenarios=scenarios_for(None))
    finally:
        sim.one_study, dec.decided_study = one, decided
    return counts


def main(argv: list[str] | None = None) -> None:
    """Time the design's comparison at 0 and ``--refits`` refit replicates."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", default=str(ROOT / "preregistration" / "replication.toml"))
    ap.add_argument("--refits", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--studies", type=int, default=0, help="also time N simulated studies of the power stage"
    )
    ap.add_argument(
        "--count-studies",
        type=int,
        default=0,
        help="only count the decision powers' simulated studies at N on the toy sizes",
    )
    args = ap.parse_args(argv)
    if args.count_studies:
        counts = count_decision_studies(args.count_studies)
        per = sum(counts.values()) / 3
        print(
            f"N = {args.count_studies}: {counts}; {per:.0f} a scenario ({per / args.count_studies:.0f}N)"
        )
        return

    from analysis.compare import Calibration, ComparisonSpec
    from analysis.power.inputs import PowerAssumptions, sizes_from_design
    from analysis.power.simulate import SIMULATED_COVARIATES, simulate_study
    from analysis.power.widths import DEFAULT_WIDTHS, load_widths
    from analysis.prereg.design import load_design
    from analysis.study.core import block_facts

    design = load_design(Path(args.design))
    features = block_facts(design)["features"]
    sizes = sizes_from_design(args.design, features=features, features_note="registry")
    table = simulate_study(
        sizes, load_widths(ROOT / DEFAULT_WIDTHS), share=0.05, random_state=args.seed
    )
    kwargs = {**sizes.comparison_kwargs(), **SIMULATED_COVARIATES}
    kwargs.update(
        calibration=Calibration(leave_one_out=True), sensitivities=False, refit_replicates=0
    )
    print(command_line("benchmarks.bench_replication_compare"))
    print(
        f"{sizes.n_heads} heads ({sizes.n_held_out} held out), {sizes.cells_per_head} cells "
        f"a head, {len(table)} cells; B = {sizes.n_boot}; columns {dict(sizes.features)}"
    )
    base = ComparisonSpec(models=dict(sizes.models), random_state=args.seed, **kwargs)
    t0, _ = _timed(base, table)
    print(f"comparison, fits fixed: {t0:.1f} CPU-s")
    kwargs.update(refit_replicates=args.refits, refit_confirmatory=True)
    spec = ComparisonSpec(models=dict(sizes.models), random_state=args.seed, **kwargs)
    t1, _ = _timed(spec, table)
    per = (t1 - t0) / max(args.refits, 1)
    print(f"comparison with {args.refits} refits: {t1:.1f} CPU-s, {per:.1f} CPU-s a refit")
    print(f"projected at 200 refits: {t0 + 200 * per:.0f} CPU-s ({(t0 + 200 * per) / 60:.0f} min)")
    if args.studies:
        import numpy as np

        from analysis.power.simulate import one_study

        widths = load_widths(ROOT / DEFAULT_WIDTHS)
        seeds = np.random.SeedSequence(args.seed).spawn(args.studies)
        t2 = time.process_time()
        for seed in seeds:
            one_study(sizes, widths, 0.05, PowerAssumptions(), sizes.family[0], seed)
        per_study = (time.process_time() - t2) / args.studies
        print(f"one simulated study of the power stage: {per_study:.2f} CPU-s")


if __name__ == "__main__":
    main()
