"""``attnrank store add STORE FILE.npz...`` and ``attnrank store bracket STORE``.

``store bracket`` profiles every (matrix, temperature) of a store; one file's matrices are
bracketed by ``attnrank bracket FILE`` (:mod:`analysis.cli.brackets`). The old top-level
spellings ``store-add`` and ``brackets`` stay for one release: they print a deprecation
note to stderr, then run the same function on the same arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.brackets import EFFORTS
from analysis.cli.brackets import SEED_NOTE, add_engine_argument
from analysis.cli.errors import rename
from analysis.cli.parallel import add_device_argument, add_parallel_arguments, parallel_kwargs
from analysis.validation import ParameterError, check_eps_grid, check_positive_finite

__all__ = ["register"]

# Names that store functions raise and `store bracket` spells otherwise (analysis.cli.errors).
# Not for `store add`: there ``path`` may also be an extract file's (load_extraction).
_BRACKET_FLAGS = {"path": "STORE", "store": "STORE", "version": "--profile-version"}


def _run_bracket(args: argparse.Namespace) -> int:
    from analysis.brackets.engine import engine_for
    from analysis.executor import RunSpec
    from analysis.store.run import run_brackets

    eps = check_eps_grid(args.eps)
    engine = engine_for(args.engine)  # None: the newest
    if args.seed is not None:
        print(SEED_NOTE, file=sys.stderr)
    temps = [check_positive_finite("temperatures", t) for t in args.temperatures]
    with parallel_kwargs(args) as parallel:
        summary = run_brackets(
            args.store,
            eps=eps,
            engine=engine,
            temperatures=temps,
            effort=args.effort,
            version=args.profile_version,
            run=RunSpec(progress=not args.quiet, device=args.device, **parallel),
        )
    print(
        f"{args.store}: {summary.total} profiles (version {summary.version!r}, engine "
        f"{engine.version}): "
        f"{summary.computed} computed, {summary.extended} extended, {summary.skipped} already "
        f"stored; {summary.elapsed_s:.1f} s"
    )
    for note in (summary.reverify_note(), summary.stale_note()):
        if note:
            print(note)
    return 0


def _run_add(args: argparse.Namespace) -> int:
    from analysis.sources.files import load_extraction
    from analysis.store.store import Store

    root = Path(args.store)
    fresh = not (root / Store.INDEX).is_file()  # the add creates the store
    before = _existing_paths(root) if fresh else None  # what a failed first add keeps
    store = None
    try:
        for path in args.files:
            try:
                extraction = load_extraction(path)
            except (ParameterError, FileNotFoundError) as exc:
                # load_extraction's ``path`` is one of the FILE.npz positionals (not the
                # store, whose own errors also say ``path``).
                raise rename(exc, {"path": "FILE.npz"}) from exc
            if store is None:  # created once a file has been read: never for nothing
                try:
                    store = Store(root, create=True)
                except ParameterError as exc:  # e.g. an index.sqlite that is no SQLite file
                    raise rename(exc, {"path": "STORE"}) from exc
            repaired, replaced = len(store.repaired), len(store.replaced)
            try:
                keys = store.add_extraction(extraction, replace=args.replace)
            except ParameterError as exc:  # ``path``: a file of the store's own
                raise rename(exc, {"path": "STORE"}) from exc
            notes = [
                f"{n} {what}"
                for n, what in (
                    (len(store.repaired) - repaired, "repaired"),
                    (len(store.replaced) - replaced, "replaced"),
                )
                if n
            ]
            tail = f" ({', '.join(notes)})" if notes else ""
            print(f"{path}: {len(keys)} matrices in {args.store}{tail}")
    except BaseException:
        if store is not None:
            empty = fresh and not store.matrices()
            store.close()
            store = None
            if empty and before is not None:
                _remove_new_store(root, before)
        raise
    finally:
        if store is not None:
            store.close()
    return 0


def _existing_paths(root: Path) -> set[Path]:
    """Every path under ``root`` (``root`` included) that exists now: what a failed first
    ``store add`` must leave where it is."""
    import os

    if not root.exists():
        return set()
    found = {root}
    for parent, dirs, files in os.walk(root):
        found.update(Path(parent, name) for name in (*dirs, *files))
    return found


def _remove_new_store(root: Path, before: set[Path]) -> None:
    """Remove what a failed first ``store add`` created under ``root`` (no matrix was
    added): the files and folders that were not in ``before`` (:func:`_existing_paths`),
    so an ``arrays`` folder, index or ``root`` the user had made stays, with its files."""
    import os

    if not root.exists():
        return
    for parent, dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = Path(parent, name)
            if path not in before:
                with contextlib.suppress(OSError):
                    path.unlink()
        for name in dirs:
            path = Path(parent, name)
            if path not in before:
                with contextlib.suppress(OSError):
                    path.rmdir()  # only when empty: never a folder with a file kept
    if root not in before:
        with contextlib.suppress(OSError):
            root.rmdir()


def _floats(text: str) -> str:
    return text  # validated by check_eps_grid / check_positive_finite so errors name the flag


def _deprecated(func: Callable[[argparse.Namespace], int], old: str, new: str) -> Callable:
    """``func`` after a one-line note that ``attnrank OLD`` is now ``attnrank NEW``."""

    def run(args: argparse.Namespace) -> int:
        print(
            f"note: `attnrank {old}` is deprecated and will be removed in the next release; "
            f"use `attnrank {new}` (same arguments)",
            file=sys.stderr,
        )
        return func(args)

    return run


_BRACKET_HELP = "bracket profiles of every (matrix, temperature) of a store, resumably"
_BRACKET_DESCRIPTION = (
    "Compute a bracket profile for every (matrix, temperature) of STORE that has none "
    "covering the eps grid yet. Each finished profile is committed at once: an "
    "interrupted run resumes where it stopped and never recomputes a finished one. "
    "A new eps extends a stored profile (old witnesses kept). Profiles are kept per engine "
    "version (--engine): another engine's stay as they are, never mixed. "
    "(The matrices of one file: `attnrank bracket FILE`.)"
)
_ADD_HELP = "add extract .npz files to a store (created if missing)"
_ADD_DESCRIPTION = "Add every (layer, head) of each `attnrank extract` file as a matrix record."


def _bracket_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", metavar="STORE", help="store folder (see `attnrank store add`)")
    p.add_argument("--eps", nargs="+", required=True, type=_floats, help="eps grid (> 0)")
    p.add_argument(
        "--temperatures",
        nargs="+",
        default=["1"],
        type=_floats,
        metavar="T",
        help="temperatures t > 0; A_t = softmax(S / t) from the stored Q, K (default 1)",
    )
    p.add_argument("--effort", choices=EFFORTS, default="default")
    add_engine_argument(p)
    # The search is deterministic; --seed did nothing and goes in the next release.
    p.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_parallel_arguments(p, workers_help="worker processes (default 1)")
    add_device_argument(p)
    p.add_argument(
        "--profile-version",
        default=None,
        metavar="V",
        help="profile version label (default: the effort level)",
    )
    # --quiet as in every other command; --no-progress is the old spelling.
    p.add_argument("--quiet", "--no-progress", action="store_true", help="no progress bar")


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", metavar="STORE", help="store folder (created if missing)")
    p.add_argument("files", nargs="+", metavar="FILE.npz", help="files of `attnrank extract`")
    p.add_argument(
        "--replace",
        default=None,
        metavar="REASON",
        help="replace the arrays of stored keys whose content differs (recorded with REASON; "
        "their profiles are dropped); without it such an add is refused. A missing or "
        "damaged array file is repaired without it",
    )


def register(subparsers: Any) -> None:
    """Add ``store`` (``add``, ``bracket``) and the old ``store-add`` / ``brackets``."""
    g = subparsers.add_parser(
        "store",
        help="a store of matrices: add extract files, bracket every (matrix, temperature)",
        description=(
            "A store is a folder of matrices (one record per (layer, head) of each extract "
            "file) and their bracket profiles. `store add` fills it, `store bracket` "
            "profiles it. Formerly `attnrank store-add` and `attnrank brackets`."
        ),
    )
    sub = g.add_subparsers(dest="store_command", metavar="ACTION")
    sub.required = True
    a = sub.add_parser("add", help=_ADD_HELP, description=_ADD_DESCRIPTION)
    _add_arguments(a)
    a.set_defaults(func=_run_add)
    b = sub.add_parser("bracket", help=_BRACKET_HELP, description=_BRACKET_DESCRIPTION)
    _bracket_arguments(b)
    b.set_defaults(func=_run_bracket, param_flags=_BRACKET_FLAGS)

    # Old spellings, left out of --help (no help=), for one release.
    old_b = subparsers.add_parser(
        "brackets", description="Deprecated: `attnrank store bracket`. " + _BRACKET_DESCRIPTION
    )
    _bracket_arguments(old_b)
    old_b.set_defaults(
        func=_deprecated(_run_bracket, "brackets", "store bracket"), param_flags=_BRACKET_FLAGS
    )
    old_a = subparsers.add_parser(
        "store-add", description="Deprecated: `attnrank store add`. " + _ADD_DESCRIPTION
    )
    _add_arguments(old_a)
    old_a.set_defaults(func=_deprecated(_run_add, "store-add", "store add"))
