"""``--verbose`` on every command: the libraries' own progress bars only when asked.

Loading a checkpoint makes transformers and huggingface_hub draw bars of their own
("Loading weights", downloads) inside the command's bar; a run loads several models, so
they are off unless ``--verbose``. The package's own bars (``--quiet`` / ``--no-progress``
turn them off) are not affected.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["HUB_BARS", "add_verbose", "library_bars"]

#: huggingface_hub reads it once at import; transformers' bars follow the hub's switch.
HUB_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    # argparse has no public way to list subparsers; _actions is stable since 3.2
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                for leaf in _leaves(child):
                    if all(leaf is not f for f in found):  # aliases share a parser
                        found.append(leaf)
    return found or [parser]


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """Add ``--verbose`` to every command parser below ``parser`` that lacks one.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The top-level parser, its subcommands registered.

    Examples
    --------
    >>> import argparse
    >>> from analysis.cli.verbosity import add_verbose
    >>> top = argparse.ArgumentParser(prog="tool")
    >>> _ = top.add_subparsers(dest="command").add_parser("go")
    >>> add_verbose(top)
    >>> top.parse_args(["go", "--verbose"]).verbose, top.parse_args(["go"]).verbose
    (True, False)
    """
    for leaf in _leaves(parser):
        if "--verbose" not in leaf._option_string_actions:
            leaf.add_argument(
                "--verbose",
                action="store_true",
                help="also show the progress bars of transformers and huggingface_hub "
                "(model loading, downloads); off by default",
            )


def library_bars(verbose: bool) -> None:
    """Switch the progress bars of transformers and huggingface_hub on or off.

    Off sets ``HF_HUB_DISABLE_PROGRESS_BARS=1`` unless the user set it (worker processes
    inherit it; the libraries read it at import) and switches the bars off in a
    transformers or huggingface_hub already imported; on touches nothing.

    Parameters
    ----------
    verbose : bool
        True leaves the libraries' bars as they are.

    Examples
    --------
    >>> import os
    >>> from analysis.cli.verbosity import HUB_BARS, library_bars
    >>> saved = os.environ.pop(HUB_BARS, None)
    >>> library_bars(False)
    >>> os.environ[HUB_BARS]
    '1'
    >>> _ = os.environ.pop(HUB_BARS) if saved is None else os.environ.update({HUB_BARS: saved})
    """
    if verbose or HUB_BARS in os.environ:
        return  # asked for, or the user's own setting (which wins)
    os.environ[HUB_BARS] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    elif "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
