"""benchmarks/breakit.py: the replay runs the CLI and reports the items fixed on this branch."""

import pytest

from benchmarks.breakit import TRIALS, main

pytestmark = pytest.mark.slow


def test_the_replay_prints_held_for_impossible_ends_and_shifting_names(capsys):
    assert main(["8", "12"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [ln.split(None, 2) for ln in out[1:]]
    assert [(r[0], r[1]) for r in rows] == [("8", "held"), ("12", "held")], out


def test_every_item_of_the_issue_has_a_trial():
    assert {str(i) for i in range(1, 13)} <= set(TRIALS)
