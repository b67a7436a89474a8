"""``attnrank atlas build | verify``: a study's certified-bracket atlas, and re-deriving its rows.

``atlas build DESIGN --out FILE.parquet`` gathers a study's stored brackets, their
provenance and its descriptor features, one row per cell (:func:`analysis.atlas.build_atlas`,
:func:`analysis.atlas.write_atlas`). ``atlas verify FILE.parquet --rows 0 5 17`` (or
``--sample K``) re-extracts each row's matrix from the sources, re-runs the row's engine
and checks hash, bracket and witnesses (:func:`analysis.atlas.reverify_rows`): exit status
0 when every row passes, 1 when any fails (one line per row), 2 for a bad flag or file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

import numpy as np

from analysis.cli.outputs import check_output_file
from analysis.cli.parallel import add_checkpoint_argument
from analysis.validation import ParameterError, check_int

__all__ = ["register"]


def _run_build(args: argparse.Namespace) -> int:
    from analysis.atlas import build_atlas, write_atlas

    out = check_output_file("out", args.out)  # before the study is read
    atlas = build_atlas(
        args.design,
        root=args.root,
        synthetic=args.synthetic,
        progress=not args.no_progress,
        say=print,
    )
    command = "attnrank " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    write_atlas(atlas, out, provenance={"command": command, "root": args.root})
    print(f"atlas: {len(atlas)} rows written to {out}")
    return 0


def _select_rows(n: int, rows: list[int] | None, sample: int | None, seed: int) -> list[int]:
    """The row numbers to check: ``rows`` as given (each in ``0..n-1``), or ``sample``
    distinct rows drawn with ``numpy.random.default_rng(seed)``, sorted."""
    if rows is not None:
        bad = [r for r in rows if not 0 <= r < n]
        if bad:
            raise ParameterError("rows", f"row numbers in 0..{n - 1}", bad)
        return list(dict.fromkeys(rows))
    k = check_int("sample", sample, minimum=1)
    if k > n:
        raise ParameterError("sample", f"at most the atlas's {n} rows", k)
    return sorted(int(i) for i in np.random.default_rng(seed).choice(n, size=k, replace=False))


def _run_verify(args: argparse.Namespace) -> int:
    from analysis.atlas import failure_lines, load_atlas, reverify_rows

    atlas = load_atlas(args.atlas)
    chosen = _select_rows(len(atlas), args.rows, args.sample, args.seed)
    checks = reverify_rows(
        atlas.loc[chosen],
        checkpoint_paths=dict(args.checkpoint or []),
        progress=not args.no_progress,
    )
    for line in checks["line"]:
        print(line)
    failed = failure_lines(checks)
    print(
        f"atlas verify: {len(checks) - len(failed)} of {len(checks)} rows pass"
        + (f", {len(failed)} fail" if failed else "")
    )
    return 1 if failed else 0


def register(subparsers: Any) -> None:
    """Add ``atlas`` (``build``, ``verify``) to ``subparsers``."""
    g = subparsers.add_parser(
        "atlas",
        help="a study's certified brackets and features, one row per cell, as Parquet; "
        "re-derive and re-verify any row from the sources",
        description="`atlas build` writes a study's atlas (docs/guide/atlas.md); "
        "`atlas verify` re-extracts rows' matrices, re-runs their engine and checks hash, "
        "bracket and witnesses (exit 0: all pass, 1: a row fails). Query one in Python: "
        "analysis.atlas.load_atlas(FILE) is a pandas frame whose columns family, modality and "
        "length_class (64 / 128 / 256 whatever the modality's exact N) name what a query "
        "means; the shipped one is docs/results/paper-lengths/atlas.parquet.",
    )
    sub = g.add_subparsers(dest="atlas_command", metavar="ACTION")
    sub.required = True
    b = sub.add_parser(
        "build",
        help="gather a study's stored brackets, provenance and features into FILE.parquet",
        description="Read a locked study's store, input index and descriptor files (nothing "
        "is computed; each stored profile is re-verified against its matrix) and write one "
        "row per cell to a Parquet file with the atlas's schema version and provenance.",
    )
    b.add_argument("design", metavar="DESIGN.toml", help="a locked design file")
    b.add_argument("--root", help="study root (default: the parent of the design's folder)")
    b.add_argument("--out", required=True, metavar="FILE.parquet", help="the atlas file to write")
    b.add_argument(
        "--synthetic", action="store_true", help="also the study's synthetic cells (exploratory)"
    )
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.set_defaults(func=_run_build)
    v = sub.add_parser(
        "verify",
        help="re-derive atlas rows from the sources and re-verify them (exit 1 if any fails)",
        description="For each chosen row: re-extract its matrix from the checkpoint and input "
        "seed (or regenerate a synthetic one), check its SHA-256, re-run the row's engine on "
        "the profile's batch, verify every witness and compare the bracket. One line per row.",
    )
    v.add_argument("atlas", metavar="FILE.parquet", help="an atlas written by `atlas build`")
    which = v.add_mutually_exclusive_group(required=True)
    which.add_argument("--rows", type=int, nargs="+", metavar="I", help="row numbers (0-based)")
    which.add_argument("--sample", type=int, metavar="K", help="K rows drawn at random")
    v.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    add_checkpoint_argument(v, "checkpoint ID")
    v.add_argument("--no-progress", action="store_true", help="no progress bar")
    v.set_defaults(func=_run_verify, param_flags={"path": "FILE.parquet"})
