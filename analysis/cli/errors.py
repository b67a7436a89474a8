"""Library errors name Python parameters; the command line names its flags.

A library function raises :class:`~analysis.validation.ParameterError` with the name of
its own parameter (``workers``, ``eps``, ``length``, ``path``), and a ``FileNotFoundError``
whose message starts with that name and a colon (``"path: no such file: x.npy"``). When
such an error escapes a command, :func:`analysis.cli.main` names the flag instead, from
one table per command (:func:`param_flags`):

- an option ``--NAME`` (``_`` written ``-``) of the command's parser, or an option whose
  ``dest`` is NAME, names itself: ``workers`` -> ``--workers``,
  ``corpus_seed`` -> ``--corpus-seed``;
- a command sets the few names its options or positionals spell otherwise with
  ``parser.set_defaults(param_flags={"path": "INPUT"})``; these win.

Names found in neither (``Q``, ``scale``, ``checkpoint``) are left as they are, and so are
names that already are flags (modules that still raise ``"--x"`` themselves).

The commands that fan work out take ``--workers``, ``--scheduler`` and ``--cluster``
(:mod:`analysis.cli.parallel`): ``scheduler`` (an address that does not answer, or is
malformed) and ``cluster`` name themselves; ``executor``, the library's name for what
those two flags open, is named ``--scheduler/--cluster``.
"""

from __future__ import annotations

import argparse
from typing import Any

from analysis.validation import ParameterError

__all__ = ["PARAM_FLAGS", "annotate", "param_flags", "rename"]

#: The namespace attribute that holds a command's table of parameter name -> flag.
PARAM_FLAGS = "param_flags"


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of ``parser``'s subcommands (aliases once), in registration order."""
    children: list[argparse.ArgumentParser] = []
    # argparse has no public way to list a parser's actions; _actions is stable since 3.2.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if all(child is not c for c in children):
                    children.append(child)
    return children


def param_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Parameter name -> flag for one command's parser.

    Every long option ``--a-b`` maps ``a_b`` (and its ``dest``) to the option's first long
    spelling; the parser's own ``param_flags`` default, if any, is applied last.
    """
    table: dict[str, str] = {}
    for action in parser._actions:
        longs = [s for s in action.option_strings if s.startswith("--")]
        if not longs:
            continue
        for s in longs:
            table.setdefault(s[2:].replace("-", "_"), longs[0])
        if action.dest and action.dest != argparse.SUPPRESS:
            table.setdefault(action.dest, longs[0])
    table.pop("help", None)
    if "scheduler" in table and "cluster" in table:
        table.setdefault("executor", "--scheduler/--cluster")
    table.update(parser.get_default(PARAM_FLAGS) or {})
    return table


def annotate(parser: argparse.ArgumentParser) -> None:
    """Store :func:`param_flags` as the ``param_flags`` default of every command parser.

    Called once by :func:`analysis.cli.build_parser` after every group has registered, so
    that the parsed namespace of any command carries its table.
    """
    children = _subcommands(parser)
    if not children:
        parser.set_defaults(**{PARAM_FLAGS: param_flags(parser)})
    for child in children:
        annotate(child)


def rename(exc: BaseException, flags: dict[str, str]) -> BaseException:
    """``exc`` with the parameter it names replaced by its flag from ``flags``.

    A :class:`ParameterError` is rebuilt with the flag as its name (a subclass only when it
    sets ``renamable = True``; others carry messages of their own); a ``FileNotFoundError``
    whose message is ``"NAME: ..."`` gets the flag in place of NAME. Any other exception,
    or a name without a flag, comes back unchanged.
    """
    if (
        isinstance(exc, ParameterError)
        and type(exc) is not ParameterError
        and not getattr(exc, "renamable", False)
    ):
        # a subclass with a message of its own (e.g. PreregistrationError: a drifted or
        # unlocked design, which already names the file): rebuilding it would lose that
        return exc
    if isinstance(exc, ParameterError):
        flag = flags.get(exc.name) if isinstance(exc.name, str) else None
        if flag is None:
            return exc
        # a subclass marked ``renamable`` (StoreIntegrityError) keeps its class and its
        # other attributes (the matrix key and file)
        new = type(exc)(flag, exc.allowed, exc.got)
        new.__dict__.update({k: v for k, v in exc.__dict__.items() if k != "name"})
        new.name = flag
        return new
    if isinstance(exc, FileNotFoundError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        name, sep, rest = exc.args[0].partition(": ")
        flag = flags.get(name) if sep and name.isidentifier() else None
        return exc if flag is None else FileNotFoundError(f"{flag}: {rest}")
    return exc


def flags_of(args: Any) -> dict[str, str]:
    """The table :func:`annotate` left in a parsed namespace (empty when none)."""
    return dict(getattr(args, PARAM_FLAGS, None) or {})
