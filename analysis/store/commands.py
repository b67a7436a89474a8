"""``attnrank brackets`` and ``attnrank store-add``: fill a store and profile its matrices."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from analysis.validation import check_eps_grid, check_positive_finite

__all__ = ["register"]


def _run_brackets(args: argparse.Namespace) -> int:
    from analysis.store.run import run_brackets

    eps = check_eps_grid(args.eps)
    if args.seed is not None:
        print(
            "note: --seed is ignored and will be removed: the bracket search is deterministic",
            file=sys.stderr,
        )
    temps = [check_positive_finite("temperatures", t) for t in args.temperatures]
    summary = run_brackets(
        args.store,
        eps,
        temperatures=temps,
        effort=args.effort,
        workers=args.workers,
        version=args.profile_version,
        progress=not args.no_progress,
    )
    print(
        f"{args.store}: {summary.total} profiles (version {summary.version!r}): "
        f"{summary.computed} computed, {summary.extended} extended, {summary.skipped} already "
        f"stored; {summary.elapsed_s:.1f} s"
    )
    return 0


def _run_store_add(args: argparse.Namespace) -> int:
    from analysis.sources.checkpoints import load_extraction
    from analysis.store.store import Store

    with Store(args.store, create=True) as store:
        for path in args.files:
            keys = store.add_extraction(load_extraction(path))
            print(f"{path}: {len(keys)} matrices in {args.store}")
    return 0


def _floats(text: str) -> str:
    return text  # validated by check_eps_grid / check_positive_finite so errors name the flag


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "brackets",
        help="profile every (matrix, temperature) of a store, resumably",
        description=(
            "Compute a bracket profile for every (matrix, temperature) of STORE that has none "
            "covering the eps grid yet. Each finished profile is committed at once: an "
            "interrupted run resumes where it stopped and never recomputes a finished one. "
            "A new eps extends a stored profile (old witnesses kept)."
        ),
    )
    p.add_argument("store", metavar="STORE", help="store folder (see `attnrank store-add`)")
    p.add_argument("--eps", nargs="+", required=True, type=_floats, help="eps grid (> 0)")
    p.add_argument(
        "--temperatures",
        nargs="+",
        default=["1"],
        type=_floats,
        metavar="T",
        help="temperatures t > 0; A_t = softmax(S / t) from the stored Q, K (default 1)",
    )
    p.add_argument("--effort", choices=("fast", "default", "thorough"), default="default")
    # The search is deterministic; --seed did nothing and goes in the next release.
    p.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--profile-version",
        default=None,
        metavar="V",
        help="profile version label (default: the effort level)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_brackets)

    a = subparsers.add_parser(
        "store-add",
        help="add extract .npz files to a store (created if missing)",
        description="Add every (layer, head) of each `attnrank extract` file as a matrix record.",
    )
    a.add_argument("store", metavar="STORE")
    a.add_argument("files", nargs="+", metavar="FILE.npz")
    a.set_defaults(func=_run_store_add)
