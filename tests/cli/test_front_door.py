"""What a first ``--help`` and a first run show (issue 53, item 7): every packaged alias in
``extract --help``, ``--verbose`` on every command, library bars off unless asked."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from analysis.cli import build_parser, main
from analysis.cli.verbosity import HUB_BARS, _leaves
from analysis.datasets import example_head

ROOT = Path(__file__).resolve().parents[2]


def readme_aliases() -> list[str]:
    """The first column of the README's family table (`attnrank extract ALIAS`)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("| alias (`attnrank extract ALIAS`)", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([^`]+)`", table, flags=re.MULTILINE)


def test_extract_help_lists_every_alias_of_the_readme(capsys, monkeypatch):
    aliases = readme_aliases()
    assert len(aliases) >= 10 and "minilm" in aliases and "kokoro-albert" in aliases
    monkeypatch.setenv("COLUMNS", "1000")  # argparse would wrap inside a hyphenated alias
    with pytest.raises(SystemExit):
        main(["extract", "--help"])
    out = capsys.readouterr().out
    missing = [a for a in aliases if not re.search(rf"(?<![\w.-]){re.escape(a)}(?![\w.-])", out)]
    assert missing == []


def test_every_command_takes_verbose():
    leaves = _leaves(build_parser())
    assert len(leaves) > 15
    for leaf in leaves:
        assert "--verbose" in leaf._option_string_actions, leaf.prog


def _bracket(tmp_path: Path, *extra: str) -> None:
    path = tmp_path / "head.npy"
    np.save(path, example_head(6, seed=1))
    out = tmp_path / "out.json"
    assert main(["bracket", str(path), "--eps", "0.5", "--out", str(out), "--quiet", *extra]) == 0


@pytest.mark.parametrize("verbose", [False, True])
def test_library_bars_off_unless_verbose(tmp_path, monkeypatch, verbose):
    hf_logging = pytest.importorskip("transformers.utils.logging")
    before = hf_logging.is_progress_bar_enabled()
    monkeypatch.setenv(HUB_BARS, "unset below")  # so that teardown restores the original
    monkeypatch.delenv(HUB_BARS)
    hf_logging.enable_progress_bar()
    try:
        _bracket(tmp_path, *(["--verbose"] if verbose else []))
        import os

        assert (os.environ.get(HUB_BARS) == "1") is not verbose
        assert hf_logging.is_progress_bar_enabled() is verbose
    finally:
        (hf_logging.enable_progress_bar if before else hf_logging.disable_progress_bar)()
