"""``attnrank validate-comparison``: size at two nulls, power and MDE of the decision rule.

The library part is :mod:`analysis.power.simulate` (the simulation) and
:mod:`analysis.power.error_rates` (the error rates); the design's sizes and covariate
counts come from :func:`analysis.study.power.validation_sizes`. A design with top-level
``method = 3`` is simulated as its power stage does (the decisions' power from the pilot,
:func:`analysis.study.power_decisions.write_power_before_lock`); ``--write-power-file``
stores it beside the design before the lock.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from analysis.cli.parallel import add_parallel_arguments, parallel_kwargs
from analysis.power.error_rates import validate_comparison
from analysis.power.inputs import PowerAssumptions
from analysis.power.spec import PowerSpec
from analysis.power.widths import DEFAULT_WIDTHS, load_widths
from analysis.prereg.options import POWER_FIT_SOURCES, design_method, design_power
from analysis.validation import ParameterError, check_int

#: The design validated when ``--design`` is not given (relative to the working folder).
DEFAULT_DESIGN = Path("preregistration/offline-minilm.toml")


def _fit_source(args: argparse.Namespace, root: Path, fit_mode: str, declared: dict):
    """What ``--fit`` / ``--pilot-*`` / ``--calibration-studies`` / ``--no-reference`` (and
    the design's ``[power]``) ask :func:`analysis.study.pilot.fitted_assumptions` for."""
    from analysis.study.pilot import FitSource

    pilot = declared.get("pilot_design")
    return FitSource(
        fit=fit_mode,
        pilot_root=Path(args.pilot_root) if args.pilot_root else None,
        pilot_design=Path(args.pilot_design)
        if args.pilot_design
        else (root / pilot if pilot else None),
        pilot_input_seed=declared.get("pilot_input_seed"),
        calibration_studies=args.calibration_studies,
        reference_only=not args.no_reference,
        unpiloted=declared.get("unpiloted"),
    )


#: Flags that move a simulation away from what a method-3 design declares (its ``[power]``
#: fit, its widths, every hypothesis with a SESOI, its seed and bootstrap): refused there,
#: with the value that leaves the design's choice.
_METHOD3_FIXED: tuple[tuple[str, object], ...] = (
    ("fit", None),
    ("pilot_design", None),
    ("pilot_root", None),
    ("widths", None),
    ("seed", None),
    ("bootstrap", None),
    ("refit_replicates", None),
    ("hypotheses", None),
    ("all_hypotheses", False),
    ("no_reference", False),
    ("calibration_studies", 16),
    ("mde_steps", 5),
)
#: Assumption flags -> :class:`PowerAssumptions` fields (the defaults are the same).
_ASSUMPTION_FLAGS: tuple[str, ...] = (
    "effect",
    "icc",
    "residual_sd",
    "native_head_share",
    "native_features",
    "intrinsic_features",
    "truth_position",
    "width_bins",
)


def _assumptions(args: argparse.Namespace) -> PowerAssumptions:
    """The hand-set assumptions: the defaults, with each flag given another value."""
    default = PowerAssumptions()
    changed = {}
    for name in _ASSUMPTION_FLAGS:
        value = getattr(args, name)
        if name == "truth_position":
            value = tuple(float(v) for v in value)
        if value != getattr(default, name):
            changed[name] = value
    return dataclasses.replace(default, **changed) if changed else default


def _run_method3(args: argparse.Namespace, design_path: Path) -> int:
    """A method-3 design: the power of its decisions, as its power stage computes it
    (:func:`analysis.study.power_decisions.write_power_before_lock`)."""
    from analysis.study.power_decisions import write_power_before_lock

    for name, default in _METHOD3_FIXED:
        value = getattr(args, name)
        if value is not None and value != default:
            raise ParameterError(
                name,
                "the design's own setting for a method-3 design (its [power] fit, widths, "
                "seed, bootstrap and hypotheses; the power file copies the design)",
                value,
            )
    sims = check_int("simulations", args.simulations, minimum=2)
    say = (lambda line: print(line, file=sys.stderr)) if args.json else print
    with parallel_kwargs(args) as parallel:
        record = write_power_before_lock(
            design_path,
            simulations=sims,
            root=Path(args.root) if args.root else None,
            say=say,
            assumptions=_assumptions(args),
            write=args.write_power_file,
            **parallel,
        )
    if args.json:
        print(json.dumps(record))
    elif "skipped" in record:
        print(f"power not simulated: {record['skipped']}")
    return 0 if "skipped" not in record else 1


def _run(args: argparse.Namespace) -> int:
    from analysis.prereg.design import load_design
    from analysis.study.pilot import fitted_assumptions
    from analysis.study.power import validation_sizes

    design_path = Path(args.design)
    if not design_path.is_file():
        raise FileNotFoundError(f"design: no such file: {design_path}")
    if design_method(load_design(design_path, require_held_out=False).data) == 3:
        return _run_method3(args, design_path)
    if args.write_power_file:
        raise ParameterError(
            "write_power_file",
            "a method-3 design (a method-2 design's power file is written by `attnrank run "
            "DESIGN --power-simulations N` after the lock)",
            True,
        )
    sims = check_int("--simulations", args.simulations, minimum=2)
    # errors name the Python parameter; main() turns it into the flag
    assumptions = PowerAssumptions(
        effect=args.effect,
        icc=args.icc,
        residual_sd=args.residual_sd,
        native_head_share=args.native_head_share,
        native_features=args.native_features,
        intrinsic_features=args.intrinsic_features,
        truth_position=tuple(args.truth_position),
        width_bins=args.width_bins,
    )
    root = Path(args.root) if args.root else design_path.resolve().parent.parent
    widths_path = Path(args.widths) if args.widths else root / DEFAULT_WIDTHS
    sizes = validation_sizes(design_path, root=root)
    if args.refit_replicates is not None:
        sizes = dataclasses.replace(
            sizes,
            refit_replicates=check_int("--refit-replicates", args.refit_replicates, minimum=0),
        )
    design = load_design(design_path, require_held_out=False)
    declared = design_power(design.data)
    fit_mode = args.fit or declared["fit"]
    fit = fitted_assumptions(
        design_path,
        sizes,
        assumptions,
        root=root,
        source=_fit_source(args, root, fit_mode, declared),
        progress=None if args.json else (lambda line: print(line, file=sys.stderr)),
    )
    if fit.widths is not None:
        widths, widths_path = fit.widths, f"per checkpoint, {fit.record['source']}"
    else:
        widths = load_widths(widths_path)
    if args.bootstrap:
        # another CI/p method than the design's, to compare them on the same studies
        sizes = dataclasses.replace(sizes, bootstrap=args.bootstrap)
    if args.seed is None:
        seed = int(design.data["inference"]["seed"])
    else:
        seed = check_int("--seed", args.seed, minimum=0)
    hyps = [h[0] for h in sizes.hypotheses] if args.all_hypotheses else args.hypotheses

    def progress(done: int, _total: int | None) -> None:
        if not args.json and done % 100 == 0:
            print(f"  {done} simulated studies", file=sys.stderr)

    with parallel_kwargs(args) as parallel:
        spec = PowerSpec(
            simulations=sims,
            sizes=sizes,
            assumptions=fit.assumptions,
            random_state=seed,
            hypotheses=hyps,
            mde_steps=args.mde_steps,
        )
        res = validate_comparison(
            widths,
            spec,
            progress=progress,
            reference_m0_loss=fit.reference_m0_loss,
            fit=fit.record,
            **parallel,
        )
    out = res.to_dict()
    out["widths"] = str(widths_path)
    if args.json:
        print(json.dumps(out))
    else:
        for note in fit.notes:
            print(note)
        print(res.summary())
        print(res.to_frame().round(4).to_string(index=False))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate-comparison",
        help="simulate the pre-specified comparison: size at the simple and boundary "
        "nulls, power, minimum detectable effect",
    )
    p.add_argument(
        "--design",
        metavar="FILE",
        default=str(DEFAULT_DESIGN),
        help=f"the design whose study is simulated (default {DEFAULT_DESIGN}); its "
        "blocks' covariate counts come from its study store after the collinearity "
        "screen on training cells when there is one, else from its lock",
    )
    p.add_argument("--root", help="study root (default: the parent of the design's folder)")
    p.add_argument(
        "--effect",
        type=float,
        default=0.10,
        metavar="SHARE",
        help="share of the variance M0 leaves that the signal block explains under the "
        "alternative (default 0.10)",
    )
    p.add_argument(
        "--simulations",
        type=int,
        required=True,
        metavar="N",
        help="simulated studies per scenario and per share searched",
    )
    p.add_argument("--seed", type=int, metavar="S", help="default: the design's inference seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--widths",
        metavar="FILE",
        help=f"CSV of integer brackets eps,lower,upper (default {DEFAULT_WIDTHS} "
        "under the study root)",
    )
    p.add_argument("--icc", type=float, default=0.5, help="residual ICC of heads (0.5)")
    p.add_argument(
        "--residual-sd",
        type=float,
        default=0.75,
        help="SD in log2 units of what the baseline leaves (0.75)",
    )
    p.add_argument(
        "--native-head-share",
        type=float,
        default=0.5,
        help="share of the simulated blocks' variance between heads (0.5; measured on "
        "the MiniLM training heads: 0.68-0.90 of what the baseline leaves, median 0.80)",
    )
    p.add_argument(
        "--native-features",
        type=int,
        help="columns of the simulated native block (default: the design's)",
    )
    p.add_argument(
        "--intrinsic-features",
        type=int,
        help="columns of the simulated intrinsic block (default: the design's)",
    )
    p.add_argument(
        "--truth-position",
        type=float,
        nargs=2,
        default=(2.0, 1.0),
        metavar=("A", "B"),
        help="Beta(A, B) law of where the truth lies in its bracket, 0 = lower end "
        "(default 2 1: skewed to the upper end; 1 1 = uniform)",
    )
    p.add_argument(
        "--width-bins",
        type=int,
        default=4,
        help="midpoint bins per eps within which widths are resampled (4; 1 = per eps)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--hypotheses",
        nargs="+",
        metavar="ID",
        help="hypothesis ids to simulate (default: the confirmatory one)",
    )
    which.add_argument("--all-hypotheses", action="store_true", help="simulate every hypothesis")
    p.add_argument(
        "--mde-steps",
        type=int,
        default=5,
        help="bisection steps of the minimum-detectable-effect search (5)",
    )
    p.add_argument(
        "--fit",
        choices=POWER_FIT_SOURCES,
        help="fit the simulator's residual scale, ICC, layer share, checkpoint offsets and "
        "scales, per-checkpoint widths and head share to the study's training heads "
        "(training) or to a pilot on another input seed (pilot, with --pilot-root); "
        "overrides --icc, --residual-sd, --native-head-share and --widths. Default: the "
        "design's [power] fit, else none (hand-set assumptions)",
    )
    p.add_argument(
        "--calibration-studies",
        type=int,
        default=16,
        metavar="N",
        help="with --fit: simulated studies per step of the simulated-moments fit of each "
        "checkpoint's residual scale to its reference M0 loss (default 16; 0 = keep the "
        "structural fit's scales, which under-state the loss: docs/results/power.md)",
    )
    p.add_argument(
        "--pilot-design",
        metavar="FILE",
        help="the pilot's design file for --fit pilot (default: the design's [power] "
        "pilot_design); its study root is the parent of its folder",
    )
    p.add_argument(
        "--pilot-root",
        metavar="DIR",
        help="study root of the pilot (its preregistration/ holds the design of the same "
        "name on the pilot input seed) for --fit pilot",
    )
    p.add_argument(
        "--no-reference",
        action="store_true",
        help="with hand-set assumptions, do not measure the reference M0 loss on the "
        "training heads (by default it is, when the study has a store)",
    )
    p.add_argument(
        "--refit-replicates",
        type=int,
        metavar="R",
        help="refit-bootstrap replicates per simulated study (default: the design's "
        "[inference] refit_replicates); its p at the boundary null is reported",
    )
    p.add_argument(
        "--bootstrap",
        choices=("cluster", "studentized"),
        help="CI and p of the cluster bootstrap: percentile (cluster) or bootstrap-t "
        "(studentized); default: the design's inference.bootstrap",
    )
    p.add_argument(
        "--write-power-file",
        action="store_true",
        help="method-3 designs: write the decisions' power to DESIGN.power.json beside the "
        "design, before the lock (`attnrank prereg lock` hashes it; a locked design's "
        "lock is amended); once outcomes exist only DESIGN.power-exploratory.json, "
        "labelled exploratory",
    )
    add_parallel_arguments(p, workers_help="processes (default 1)")
    p.set_defaults(func=_run)
