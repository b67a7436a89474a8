"""``--workers N | --scheduler tcp://HOST:PORT | --cluster local:N``, ``--device`` and
``--checkpoint ID=PATH``, shared by the commands that fan work out (:mod:`analysis.executor`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from analysis.executor import open_executor

__all__ = [
    "add_checkpoint_argument",
    "add_device_argument",
    "add_parallel_arguments",
    "parallel_kwargs",
]


def add_parallel_arguments(
    p: argparse.ArgumentParser, *, workers_default: int = 1, workers_help: str | None = None
) -> None:
    """Add the three mutually exclusive flags to ``p``."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--workers",
        type=int,
        default=workers_default,
        help=workers_help
        or f"local worker processes (default {workers_default}; results do not depend on it)",
    )
    g.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="run the tasks on a running dask cluster (its scheduler's address, e.g. from "
        "dask-jobqueue's SLURMCluster); same results as --workers",
    )
    g.add_argument(
        "--cluster",
        metavar="local:N",
        help="start a dask LocalCluster of N single-threaded worker processes for this "
        "command (prints its dashboard link); same results as --workers",
    )


@contextlib.contextmanager
def parallel_kwargs(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """``{"workers": N}``, or ``{"executor": ...}`` open for the command's duration.

    The cluster's line (its workers and dashboard link) goes to stderr, so that a
    command's ``--json`` output stays parseable.
    """
    scheduler = getattr(args, "scheduler", None)
    cluster = getattr(args, "cluster", None)
    if scheduler is None and cluster is None:
        yield {"workers": args.workers}
        return
    with open_executor(
        scheduler=scheduler, cluster=cluster, say=lambda line: print(line, file=sys.stderr)
    ) as executor:
        yield {"executor": executor}


def add_device_argument(p: argparse.ArgumentParser) -> None:
    """Add ``--device`` (where the bracket search's optimizers run) to ``p``."""
    p.add_argument(
        "--device",
        default=None,
        metavar="DEV",
        help="run the witness search's optimizers on this torch device (e.g. cuda, cuda:1; "
        "default the CPU); every witness is still certified on the CPU in float64",
    )


def _checkpoint_arg(text: str) -> tuple[str, str]:
    ck, sep, path = text.partition("=")
    if not sep or not ck or not path:
        raise argparse.ArgumentTypeError(f"expected ID=PATH, got {text!r}")
    return ck, path


def add_checkpoint_argument(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--checkpoint ID=PATH`` (repeatable: a local folder holding ``what``) to ``p``."""
    p.add_argument(
        "--checkpoint",
        action="append",
        type=_checkpoint_arg,
        metavar="ID=PATH",
        help=f"a local folder holding {what} (repeatable)",
    )
