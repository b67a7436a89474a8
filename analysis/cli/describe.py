"""``attnrank describe INPUT.npz``: descriptor blocks for every (layer, head, temperature, eps)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from analysis.cli.inputs import add_max_size_argument
from analysis.validation import ParameterError

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from analysis.cli.inputs import check_size
    from analysis.cli.outputs import check_output_file
    from analysis.descriptors.builtin import build_registry
    from analysis.descriptors.describe import KEY_COLUMNS, describe_file, write_csv_atomic

    # both outputs checked before any work (a folder, a folder that cannot be written)
    check_output_file("out", args.out)
    check_output_file("features_out", args.features_out)
    # the size rule of `bracket`, from the file's headers alone, with describe's estimate
    note = check_size(
        args.input, args.max_size, work="describe", temperatures=len(args.temperatures)
    )
    if note is not None:
        print(note, file=sys.stderr)
    df = describe_file(
        args.input,
        eps=args.eps,
        temperatures=args.temperatures,
        blocks=args.blocks,
        plugins=args.plugin,
        versions=args.block_version,
        progress=not args.quiet,
        threads=args.threads,
    )
    try:
        write_csv_atomic(df, args.out)
        if args.features_out:
            registry = build_registry(args.plugin, args.block_version)  # describe_file's
            write_csv_atomic(registry.feature_table(df.columns), args.features_out)
    except OSError as exc:  # checked writable at the start: a full disk, a folder gone
        name = "features_out" if args.out and Path(args.out).is_file() else "out"
        raise ParameterError(
            name, "a path that can be written", f"{exc.filename}: {exc.strerror}"
        ) from exc
    n_cells, n_feat = df.shape[0], df.shape[1] - len(KEY_COLUMNS)
    print(f"wrote {args.out}: {n_cells} cells x {n_feat} features")
    return 0


class _BlockVersion(argparse.Action):
    """``--block-version native=2``: collected into a dict (checked by the registry)."""

    def __call__(self, parser: Any, namespace: Any, value: Any, option: Any = None) -> None:
        name, sep, number = str(value).partition("=")
        if not sep or not number.strip().isdigit():
            raise argparse.ArgumentError(self, f"expected BLOCK=N, e.g. native=2, got {value!r}")
        chosen = dict(getattr(namespace, self.dest) or {})
        chosen[name.strip()] = int(number)
        setattr(namespace, self.dest, chosen)


def register(subparsers: Any) -> None:
    """Add the ``describe`` subcommand."""
    p = subparsers.add_parser(
        "describe",
        help="descriptor blocks (baseline, native, intrinsic, plugins) per cell",
        description="Compute descriptor blocks for every (layer, head, temperature, eps) of an "
        "extract npz; one CSV row per cell, columns BLOCK__feature.",
    )
    p.add_argument("input", metavar="INPUT.npz", help="npz written by attnrank extract")
    p.add_argument("--eps", type=float, nargs="+", required=True, help="tolerances (> 0)")
    p.add_argument("--temperatures", type=float, nargs="+", default=[1.0], help="default: 1")
    p.add_argument(
        "--blocks",
        nargs="+",
        default=None,
        help="block names in output order (default: all registered, plugins included)",
    )
    p.add_argument(
        "--plugin",
        action="extend",
        nargs="+",
        default=[],
        metavar="MODULE",
        help="add the blocks listed in MODULE's BLOCKS after the built-in ones (repeatable)",
    )
    p.add_argument(
        "--block-version",
        action=_BlockVersion,
        default={},
        metavar="BLOCK=N",
        help="describe with version N of a built-in block (native=2: over the numerical "
        "ranks of Q and K; default version 1; repeatable)",
    )
    p.add_argument("--out", required=True, help="output CSV (written atomically)")
    p.add_argument(
        "--features-out",
        default=None,
        help="optional CSV of feature metadata (kind, log_scale, integer)",
    )
    p.add_argument("--threads", type=int, default=1, help="BLAS/torch threads (default 1)")
    add_max_size_argument(p, ", as `bracket`")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    # describe_file names its file ``path`` and a plugin its ``module``.
    p.set_defaults(
        func=_run,
        param_flags={"path": "INPUT", "module": "--plugin", "versions": "--block-version"},
    )
