"""``attnrank laws``: the subcommand's parser and its function.

Self-contained: ``register(subparsers)`` adds the ``laws`` parser and sets
``func = run_cli``, which validates, runs :func:`analysis.laws.render.run_laws` and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.cli.brackets import add_engine_argument
from analysis.cli.parallel import add_parallel_arguments, parallel_kwargs
from analysis.laws.fit import QUICK_TOLERANCE
from analysis.laws.render import run_laws
from analysis.laws.sweep import default_config, make_config
from analysis.laws.theory import FAMILIES
from analysis.validation import check_choice, check_int

__all__ = ["register", "run_cli"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "laws",
        help="temperature scaling of r_eps on synthetic spherical / full-ball attention",
        description=(
            "Bracket r_eps over a beta sweep of a synthetic family and fit the slope of "
            "log r against log(1 + beta) (spherical) or log beta (ball)."
        ),
    )
    p.add_argument("--family", required=True, help="spherical or ball")
    p.add_argument("--dims", type=int, nargs="+", help="dimensions d (default 2 3 4)")
    p.add_argument(
        "--betas", type=float, nargs="+", help="inverse temperatures for every d (default: per d)"
    )
    p.add_argument("--n", type=int, help="points per matrix (default 512; --quick 256)")
    p.add_argument("--eps", type=float, nargs="+", help="tolerances in (0, 1) (default 0.1)")
    p.add_argument("--seeds", type=int, nargs="+", help="seeds (default 0 1 2; --quick 0 1)")
    p.add_argument(
        "--effort", help="fast, default or thorough (default: thorough; --quick default)"
    )
    p.add_argument("--quick", action="store_true", help="the small preset (< 2 minutes)")
    p.add_argument(
        "--design",
        default="default",
        help="beta grids: default, or asymptotic (spherical, one eps: from where the "
        "theory's harmonic count has settled on its slope, count <= n/4)",
    )
    add_parallel_arguments(p, workers_default=2, workers_help="processes (default 2)")
    p.add_argument("--n-boot", type=int, default=499, help="bootstrap replicates for the CI")
    p.add_argument(
        "--out",
        type=Path,
        help="output folder (default reports/laws/<family>[-quick][-asymptotic])",
    )
    p.add_argument("--no-figure", action="store_true", help="skip law.png / law.pdf")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_engine_argument(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    family = check_choice("--family", args.family, FAMILIES)
    config = make_config(
        default_config(family, quick=args.quick),
        dims=args.dims,
        betas=args.betas,
        n=args.n,
        eps=args.eps,
        seeds=args.seeds,
        effort=args.effort,
        design=args.design,
    ).with_engine(args.engine)
    for note in config.notes:
        print(f"note: {note}", file=sys.stderr)
    n_boot = check_int("--n-boot", args.n_boot, minimum=0)
    suffix = ("-quick" if args.quick else "") + (
        "-asymptotic" if config.design == "asymptotic" else ""
    )
    out = args.out or Path("reports") / "laws" / (family + suffix)
    tol = QUICK_TOLERANCE if args.quick else None
    with parallel_kwargs(args) as parallel:
        res = run_laws(
            config,
            out=out,
            progress=not args.quiet,
            n_boot=n_boot,
            tolerance=tol,
            figure=not args.no_figure,
            **parallel,
        )
    if args.json:
        print(json.dumps({"family": res["family"], "fits": res["fits"]}))
    else:
        print((out / "fits.md").read_text(), end="")
        t = res["timing"]
        print(
            f"{t['matrices']} matrices ({t['computed']} computed now), wall {t['wall_s']:.1f} s, "
            f"CPU {t['cpu_s_computed']:.1f} s now / {t['cpu_s_all']:.1f} s all, "
            f"median {t['cpu_s_per_matrix_median']:.2f} s per matrix; outputs in {out}",
            file=sys.stderr,
        )
    return 0
