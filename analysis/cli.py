"""Command-line interface: parse, validate, call one function per subcommand, print.

Each subcommand lives in a module exposing ``register(subparsers)``, which adds its parser
and sets ``func(args) -> int``. Modules are imported only when listed here.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from analysis import __version__
from analysis.validation import ParameterError

# Modules that provide subcommands, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "analysis.brackets.cli",
    "analysis.sources.commands",
    "analysis.store.commands",
    "analysis.descriptors.describe",
    "analysis.prereg.cli",
    "analysis.compare.cli",
    "analysis.study",
    "analysis.laws",
    "analysis.reference_widths",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnrank",
        description="Certified rank brackets of softmax attention and preregistered studies.",
    )
    parser.add_argument("--version", action="version", version=f"attnrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ParameterError as exc:
        print(f"attnrank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"attnrank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attnrank {args.command}: interrupted; finished work is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
