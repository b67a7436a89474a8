"""``attnrank validate-comparison``: false-positive rate and power of the decision rule.

The library part (sizes of a design, the simulation) is :mod:`analysis.prereg.power`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.prereg.power import (
    DEFAULT_WIDTHS,
    INTRINSIC_FEATURES,
    NATIVE_FEATURES,
    StudySizes,
    check_assumptions,
    load_widths,
    sizes_from_design,
    validate_comparison,
)
from analysis.validation import ParameterError, check_int, check_positive_finite


def _run(args: argparse.Namespace) -> int:
    sims = check_int("--simulations", args.simulations, minimum=1)
    seed = check_int("--seed", args.seed, minimum=0)
    effect = check_positive_finite("--effect", args.effect)
    if effect >= 1:
        raise ParameterError("--effect", "a share in (0, 1)", args.effect)
    check_assumptions(
        icc=args.icc,
        residual_sd=args.residual_sd,
        native_head_share=args.native_head_share,
        native_features=args.native_features,
        intrinsic_features=args.intrinsic_features,
    )  # errors name the Python parameter; main() turns it into the flag
    sizes = sizes_from_design(args.design) if args.design else StudySizes()
    if args.widths:
        widths_path = Path(args.widths)
    elif args.design:
        widths_path = Path(args.design).resolve().parent.parent / DEFAULT_WIDTHS
    else:
        widths_path = DEFAULT_WIDTHS
    widths = load_widths(widths_path)

    def progress(done: int, total: int) -> None:
        if not args.json and (done % 20 == 0 or done == total):
            print(f"  {done}/{total} simulated studies", file=sys.stderr)

    res = validate_comparison(
        widths,
        simulations=sims,
        sizes=sizes,
        effect=effect,
        icc=args.icc,
        residual_sd=args.residual_sd,
        native_head_share=args.native_head_share,
        native_features=args.native_features,
        intrinsic_features=args.intrinsic_features,
        random_state=seed,
        progress=progress,
    )
    out = res.to_dict()
    out.update(
        {
            "residual_sd": args.residual_sd,
            "native_head_share": args.native_head_share,
            "native_features": args.native_features,
            "intrinsic_features": args.intrinsic_features,
            "widths": str(widths_path),
            "seed": seed,
            "seconds": round(res.seconds, 2),
        }
    )
    if args.json:
        print(json.dumps(out))
    else:
        print(res.summary())
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate-comparison",
        help="simulate the pre-specified comparison: false-positive rate and power",
    )
    p.add_argument(
        "--design",
        metavar="FILE",
        help="take the study sizes from this design "
        "(default: the shipped offline MiniLM study's sizes)",
    )
    p.add_argument(
        "--effect",
        type=float,
        default=0.10,
        metavar="SHARE",
        help="share of the variance M0 leaves that native explains (default 0.10)",
    )
    p.add_argument(
        "--simulations",
        type=int,
        required=True,
        metavar="N",
        help="simulated studies per scenario (null and alternative)",
    )
    p.add_argument("--seed", type=int, required=True, metavar="S")
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
        help="share of native features' variance between heads (0.5; measured on the "
        "MiniLM training heads: 0.68-0.90 of what the baseline leaves, median 0.80)",
    )
    p.add_argument(
        "--native-features",
        type=int,
        default=NATIVE_FEATURES,
        help=f"columns of the simulated native block ({NATIVE_FEATURES}, as the real block)",
    )
    p.add_argument(
        "--intrinsic-features",
        type=int,
        default=INTRINSIC_FEATURES,
        help=f"columns of the simulated intrinsic block ({INTRINSIC_FEATURES}, as the real block)",
    )
    p.set_defaults(func=_run)
