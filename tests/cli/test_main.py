"""The ``attnrank`` entry point: groups, help, aliases, ``python -m``."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.cli import GROUPS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "bracket",
    "verify",
    "approximants",
    "extract",
    "inputs",
    "store",
    "describe",
    "prereg",
    "validate-comparison",
    "reference-widths",
    "run",
    "laws",
    "atlas",
    "evidence",
]


def listed_commands(help_text: str) -> list[str]:
    """The subcommands a help text lists (indented names under the COMMAND / ACTION line)."""
    return re.findall(r"^    (\S+)", help_text, flags=re.MULTILINE)


def test_help_lists_each_group_once(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert listed_commands(out) == COMMANDS
    text = " ".join(out.split())
    assert "`attnrank bracket FILE`" in text and "`attnrank store bracket STORE`" in text


def test_store_help_lists_add_and_bracket(capsys):
    with pytest.raises(SystemExit):
        main(["store", "--help"])
    out = capsys.readouterr().out
    assert listed_commands(out) == ["add", "bracket"]
    assert "store-add" in out and "brackets" in out  # where the old spellings went


def test_old_spellings_still_parse_like_the_new_ones():
    parser = build_parser()
    new = vars(parser.parse_args(["store", "bracket", "S", "--eps", "0.1", "--no-progress"]))
    old = vars(parser.parse_args(["brackets", "S", "--eps", "0.1", "--no-progress"]))
    for d in (new, old):
        d.pop("func"), d.pop("command"), d.pop("store_command", None)
    assert new == old and new["quiet"] is True


def test_every_group_module_registers():
    for name in GROUPS:
        assert callable(importlib.import_module(name).register), name


def test_seed_on_bracket_is_ignored_with_a_note(stack, capsys):
    assert main(["bracket", str(stack), "--eps", "0.2", "--effort", "fast", "--quiet"]) == 0
    plain = capsys.readouterr()
    argv = ["bracket", str(stack), "--eps", "0.2", "--effort", "fast", "--quiet", "--seed", "3"]
    assert main(argv) == 0
    seeded = capsys.readouterr()
    assert seeded.out == plain.out
    assert "note: --seed is ignored" in seeded.err and "--seed" not in plain.err


@pytest.mark.parametrize("module", ["analysis", "analysis.cli"])
def test_python_dash_m(module):
    env_path = str(ROOT)
    res = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("attnrank ")
