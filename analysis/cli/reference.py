"""``attnrank reference-widths``: the bracket widths that ``validate-comparison`` draws from."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from analysis.cli.parallel import add_parallel_arguments, parallel_kwargs
from analysis.study.reference import DEFAULT_EPS, DEFAULT_LENGTHS, write_reference_widths

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from analysis.cli.outputs import check_output_file

    check_output_file("out", args.out)  # before any work: a folder, a link, a FIFO
    with parallel_kwargs(args) as parallel:
        table = write_reference_widths(
            args.design,
            args.out,
            lengths=args.lengths,
            eps=args.eps,
            effort=args.effort,
            progress=not args.quiet,
            **parallel,
        )
    heads = table[["layer", "head"]].drop_duplicates().shape[0]
    lengths = ", ".join(str(L) for L in sorted(table["length"].unique()))
    print(f"wrote {args.out}: {len(table)} brackets of {heads} training heads at L = {lengths}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``reference-widths`` to the ``attnrank`` subcommands."""
    p = subparsers.add_parser(
        "reference-widths",
        help="bracket widths of a design's training heads (validate-comparison's reference)",
        description=(
            "Run the design's checkpoint on one bundled text per length, bracket each of its "
            "training heads (never a held-out one) alone at t = 1, and write the brackets as "
            "CSV: length, layer, head, eps, lower, upper."
        ),
    )
    p.add_argument("--design", required=True, type=Path, help="design file (TOML)")
    p.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=list(DEFAULT_LENGTHS),
        metavar="L",
        help="token lengths (default 96 128)",
    )
    p.add_argument(
        "--eps",
        type=float,
        nargs="+",
        default=list(DEFAULT_EPS),
        help="tolerances (default 0.05 0.1 0.2)",
    )
    p.add_argument("--effort", help="engine effort (default: the design's)")
    add_parallel_arguments(p, workers_help="processes (default 1)")
    p.add_argument("--out", required=True, type=Path, metavar="OUT.csv", help="output (atomic)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
