"""``attnrank run``: a locked study from its sources to its report."""

from __future__ import annotations

import argparse
from typing import Any

from analysis.cli.parallel import (
    add_checkpoint_argument,
    add_device_argument,
    add_parallel_arguments,
    parallel_kwargs,
)
from analysis.power.file import DEFAULT_POWER_SIMULATIONS
from analysis.study.runner import STAGES, StudyOptions, run_study

__all__ = ["register"]


def _assumptions(args: argparse.Namespace) -> Any:
    """The power stage's assumptions: the defaults, or the head share the user measured."""
    if args.native_head_share is None:
        return None
    from analysis.power import PowerAssumptions

    return PowerAssumptions(native_head_share=args.native_head_share)


def _run(args: argparse.Namespace) -> int:
    from analysis.prereg.writable import writes_beside

    # the outcome record (and the stored power) are written beside the design
    with (
        writes_beside(args.design, name="DESIGN.toml", probe=False),
        parallel_kwargs(args) as parallel,
    ):
        run = run_study(
            args.design,
            root=args.root,
            checkpoint_paths=dict(args.checkpoint or []),
            options=StudyOptions(
                progress=not args.no_progress,
                stop_after=args.stop_after,
                power_simulations=args.power_simulations,
                power_assumptions=_assumptions(args),
                device=args.device,
                **parallel,
            ),
        )
    print(run.summary())
    return 0


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand to ``subparsers``."""
    p = subparsers.add_parser(
        "run",
        help="run a locked preregistered study: sources -> brackets -> descriptors -> "
        "comparisons -> report (resumable)",
        description="Check the lock, then extract, bracket, describe, compare and report, "
        "skipping whatever is already stored. Ctrl-C loses nothing finished; re-run to resume.",
    )
    p.add_argument("design", metavar="DESIGN.toml", help="a locked design file")
    p.add_argument("--root", help="study root (default: the parent of the design's folder)")
    add_parallel_arguments(
        p, workers_help="processes for profiles, descriptors and power simulations (default 1)"
    )
    add_device_argument(p)
    add_checkpoint_argument(p, "the design's checkpoint ID")
    p.add_argument(
        "--power-simulations",
        type=int,
        default=None,
        metavar="N",
        help="compute the design's power with N simulated studies per scenario (e.g. "
        f"{DEFAULT_POWER_SIMULATIONS}) and store it beside the design, recorded in its lock; "
        "reused when nothing the simulation reads changed. Without it the run reads the "
        "stored power and never simulates",
    )
    p.add_argument(
        "--native-head-share",
        type=float,
        default=None,
        metavar="S",
        help="the power stage's share of the simulated blocks' variance between heads "
        "(default 0.5, the simulation's default; measure it on the design's training "
        "heads with `python -m experiments.simulation_assumptions --design DESIGN`)",
    )
    p.add_argument("--stop-after", choices=STAGES, help="stop after this stage")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_run)
