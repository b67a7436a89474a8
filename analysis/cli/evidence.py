"""``attnrank evidence``: every locked study's H1 and H2 side by side.

``register(subparsers)`` adds the ``evidence`` parser and sets ``func = run_cli``, which
calls :func:`analysis.report.evidence_page.write_evidence` on the repository the package
sits in (or ``--root``) and prints the paths it wrote. Outputs go to ``--out`` or the
repository's ``docs/results/``, never to the working directory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.cli.outputs import check_output_file
from analysis.validation import ParameterError

__all__ = ["default_root", "register", "run_cli"]


def default_root() -> Path:
    """The repository the package sits in (the folder above ``analysis/``)."""
    return Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evidence",
        help="every locked study's H1 and H2 side by side: table, forest plot, page",
        description=(
            "Read the stored comparison tables of every locked study in preregistration/ "
            "(nothing is re-run) and write evidence.md and evidence/ (evidence.csv, "
            "random_effects.csv, forest.png): effects as shares of each study's M0 loss, "
            "decisions under the study's own method and under method 3, and an exploratory "
            "random-effects summary."
        ),
    )
    p.add_argument(
        "--root",
        type=Path,
        help="the repository's folder (default: the one the package sits in)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="folder of evidence.md and evidence/ (default ROOT/docs/results)",
    )
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    root = (args.root or default_root()).resolve()
    if not (root / "preregistration").is_dir():
        raise ParameterError("root", "the repository's folder (with preregistration/)", str(root))
    out = args.out.resolve() if args.out is not None else root / "docs" / "results"
    check_output_file("out", out / "evidence.md")
    check_output_file("out", out / "evidence" / "evidence.csv")
    from analysis.report.evidence_page import write_evidence  # matplotlib on use only

    for path in write_evidence(root, out).values():
        print(path)
    return 0
