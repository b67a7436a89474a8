"""Ends no matrix of its size can have fail ``verify`` and are refused by ``approximants``,
with or without witnesses (issue 52, item 8).

``r_eps`` of an ``M x N`` matrix lies in ``[0, min(M, N)]``; a lower end above its upper
end, or outside that range, is impossible. Rank 0 needs no witness: an upper end 0 is
certified from ``B = 0`` and a lower end >= 1 fails where ``B = 0`` is within eps.
"""

from __future__ import annotations

import copy
import json

import pytest

from analysis.cli import main
from tests.fixtures.stacks import write_stack


@pytest.fixture(scope="module")
def bracketed(tmp_path_factory):
    """The three 20 x 20 matrices and their ``bracket --witnesses`` result (parsed)."""
    d = tmp_path_factory.mktemp("verify-ends")
    stack = write_stack(d / "A.npy")
    out = d / "out.json"
    argv = ["bracket", str(stack), "--eps", "0.1", "0.3", "--witnesses", "--effort", "fast"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    return stack, json.loads(out.read_text())


def _lower_25(b):
    b["lower"] = 25  # above N = 20 (the "lower 25 at N = 24")


def _upper_1e40(b):
    b["upper"] = 10**40


def _upper_21(b):
    b["upper"] = 21


def _negative_lower(b):
    b["lower"] = -1


def _upper_0(b):  # rows of attention matrices have l1 norm 1 > eps: B = 0 is not within eps
    b["lower"], b["upper"] = 0, 0


def _lower_above_upper(b):
    b["lower"], b["upper"] = b["upper"] + 1, b["upper"]


IMPOSSIBLE = [_lower_25, _upper_1e40, _upper_21, _negative_lower, _upper_0, _lower_above_upper]


def _tampered(res, tamper, *, witnesses):
    res = copy.deepcopy(res)
    tamper(res["matrices"][1]["brackets"][0])
    if not witnesses:
        for m in res["matrices"]:
            m["witnesses"] = None
    return res


@pytest.mark.parametrize("witnesses", [False, True], ids=["no-witnesses", "witnesses"])
@pytest.mark.parametrize("tamper", IMPOSSIBLE, ids=lambda f: f.__name__.strip("_"))
def test_verify_fails_an_impossible_end(bracketed, tmp_path, capsys, tamper, witnesses):
    stack, res = bracketed
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_tampered(res, tamper, witnesses=witnesses)))
    rc = main(["verify", str(stack), str(path)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "Traceback" not in err
    assert "matrix 1" in err and "FAILED" in err, err


@pytest.mark.parametrize("witnesses", [False, True], ids=["no-witnesses", "witnesses"])
@pytest.mark.parametrize("tamper", IMPOSSIBLE, ids=lambda f: f.__name__.strip("_"))
def test_approximants_refuses_an_impossible_end(
    bracketed, tmp_path, capsys, monkeypatch, tamper, witnesses
):
    stack, res = bracketed
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_tampered(res, tamper, witnesses=witnesses)))
    monkeypatch.setattr(
        "analysis.cli.brackets.approximants_for_input",
        lambda *a, **k: pytest.fail("approximants computed against an impossible bracket"),
    )
    rc = main(["approximants", str(stack), "--eps", "0.1", "--methods", "svd", "--quiet",
               "--brackets", str(path)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error: --brackets: expected" in lines[0], err
    assert "matrix 1" in lines[0], err


def test_rank_zero_without_witnesses_is_certified(tmp_path, capsys):
    """At eps above every row's l1 norm, r_eps = 0: [0, 0] verifies with no witness at all,
    and a lower end 1 claimed there fails."""
    stack = write_stack(tmp_path / "A.npy")
    out = tmp_path / "out.json"
    argv = ["bracket", str(stack), "--eps", "1.5", "--effort", "fast", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert all(m["witnesses"] is None for m in res["matrices"])
    assert {(b["lower"], b["upper"]) for m in res["matrices"] for b in m["brackets"]} == {(0, 0)}
    capsys.readouterr()
    assert main(["verify", str(stack), str(out)]) == 0
    res["matrices"][2]["brackets"][0].update(lower=1, upper=1)
    out.write_text(json.dumps(res))
    rc = main(["verify", str(stack), str(out)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "matrix 2 eps=1.5: lower end 1 is impossible" in err, err
