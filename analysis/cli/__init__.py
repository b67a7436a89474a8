"""The ``attnrank`` command line: parse, call one library function per command, print.

Commands come in groups, one module per group, each exposing ``register(subparsers)``:
it adds its parsers and sets ``func(args) -> int`` on each. :data:`GROUPS` lists the
modules in the order of ``attnrank --help``; a new group is one module plus one line
there. A group module turns flags into keyword arguments of library functions and prints
what they return; it computes nothing itself. Flags are kebab-case, data files are
positional.

Two commands certify brackets: ``attnrank bracket FILE`` (one file, nothing stored) and
``attnrank store bracket STORE`` (a whole store, resumably); the old spellings
``brackets`` and ``store-add`` are deprecated aliases. See docs/guide/brackets.md.

Errors
------
Library functions raise :class:`~analysis.validation.ParameterError` naming their Python
parameter (``workers``); :func:`main` names the command's flag instead (``--workers``),
through :mod:`analysis.cli.errors`, and exits with status 2.

Signals
-------
Ctrl-C (SIGINT) and ``kill`` (SIGTERM) stop a command the same way and exit ``128 +
signal``; see docs/guide/guarantees.md, "Pools, signals and output files".
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from analysis import __version__
from analysis.cli.errors import annotate, flags_of, rename
from analysis.cli.verbosity import add_verbose, library_bars
from analysis.executor import Terminated, sigterm_interrupts
from analysis.validation import ParameterError

__all__ = ["GROUPS", "build_parser", "main"]

# Modules that provide command groups, in the order they appear in --help. A new group is
# analysis/cli/<group>.py with its register(), and one line here.
GROUPS: tuple[str, ...] = (
    "analysis.cli.brackets",  # bracket FILE, verify, approximants
    "analysis.cli.sources",  # extract
    "analysis.cli.corpora",  # inputs list | show
    "analysis.cli.store",  # store add, store bracket (old: store-add, brackets)
    "analysis.cli.describe",  # describe
    "analysis.cli.prereg",  # prereg draw | lock | check | amend
    "analysis.cli.power",  # validate-comparison
    "analysis.cli.reference",  # reference-widths (the widths validate-comparison draws)
    "analysis.cli.study",  # run
    "analysis.cli.laws",  # laws
    "analysis.cli.atlas",  # atlas build | verify
    "analysis.cli.evidence",  # evidence (every locked study side by side)
)


def build_parser() -> argparse.ArgumentParser:
    """The ``attnrank`` parser with every group of :data:`GROUPS` registered."""
    parser = argparse.ArgumentParser(
        prog="attnrank",
        description=(
            "Certified rank brackets of softmax attention and preregistered studies. "
            "`attnrank bracket FILE` brackets the matrices of one file; "
            "`attnrank store bracket STORE` profiles every (matrix, temperature) of a store."
        ),
    )
    parser.add_argument("--version", action="version", version=f"attnrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in GROUPS:
        importlib.import_module(name).register(sub)
    add_verbose(parser)
    annotate(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``attnrank`` command; the exit status (2: a bad parameter or missing file;
    ``128 + signal`` when interrupted: 130 for SIGINT, 143 for SIGTERM)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    library_bars(getattr(args, "verbose", False))  # before any command imports transformers
    try:
        # SIGTERM interrupts the command as Ctrl-C does (pools stopped, temporary files
        # removed, finished work kept), then exits 143 rather than dying mid-write
        with sigterm_interrupts():
            return int(args.func(args) or 0)
    except (ParameterError, FileNotFoundError) as exc:
        print(f"attnrank {args.command}: error: {rename(exc, flags_of(args))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of stdout went away (``attnrank ... | head``): say nothing more, and
        # keep Python's flush at exit from raising again (the documented recipe)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by it
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT)
        name = signal.Signals(signum).name
        print(
            f"attnrank {args.command}: interrupted ({name}); finished work is kept", file=sys.stderr
        )
        return 128 + signum
