"""``approximants --brackets`` checks the result file as ``verify`` does: a file that is not
bound to INPUT's matrices (a duplicated or relabelled entry, another shape, an index out of
range), malformed (a fractional end, a misshapen witness, no ``matrices``, not JSON), or
whose ends its witnesses do not certify (a raised end) is refused with one line naming
``--brackets``, before any approximant is computed."""

from __future__ import annotations

import copy
import json

import pytest

from analysis.cli import main


@pytest.fixture
def result_file(stack, tmp_path):
    out = tmp_path / "b.json"
    argv = ["bracket", str(stack), "--eps", "0.1", "0.3", "--effort", "fast", "--quiet"]
    assert main([*argv, "--witnesses", "--out", str(out)]) == 0
    return out


def _approximants(stack, brackets, capsys):
    rc = main(["approximants", str(stack), "--eps", "0.1", "0.3", "--methods", "svd", "rows",
               "--quiet", "--brackets", str(brackets)])  # fmt: skip
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _dup(res):
    res["matrices"][1] = copy.deepcopy(res["matrices"][0])


def _relabel(res):
    res["matrices"][1]["layer"] = 3
    res["matrices"][1]["head"] = 1


def _swap(res):  # two entries trade their indices: each bound to the other's matrix
    a, b = res["matrices"][0], res["matrices"][2]
    a["index"], b["index"] = b["index"], a["index"]


def _shape(res):
    res["matrices"][0]["shape"] = [10, 40]


def _fractional(res):
    res["matrices"][0]["brackets"][0]["lower"] += 0.9


def _out_of_range(res):
    res["matrices"][2]["index"] = 7


def _misshapen_witness(res):
    w = res["matrices"][0]["witnesses"]["upper"][0]
    w["U"] = w["U"][:-1]


def _no_matrices(res):
    del res["matrices"]


def _raised_lower(res):  # an integer end still in its bracket, but no witness backs it
    b = res["matrices"][0]["brackets"][0]
    assert b["lower"] + 1 <= b["upper"]
    b["lower"] += 1


def _lowered_upper(res):  # the witness of the reported rank, cut to one rank less
    m = res["matrices"][0]
    b = m["brackets"][0]
    assert b["lower"] < b["upper"]
    w = next(w for w in m["witnesses"]["upper"] if w["rank"] == b["upper"])
    b["upper"] -= 1
    w["rank"] -= 1
    w["U"] = [row[:-1] for row in w["U"]]
    w["W"] = [row[:-1] for row in w["W"]]


def _scaled_witness(res):  # right shapes, wrong numbers
    w = res["matrices"][1]["witnesses"]["upper"][0]
    w["U"] = [[0.5 * u for u in row] for row in w["U"]]


def _crossed(res):
    m = res["matrices"][1]
    m["witnesses"] = None
    b = m["brackets"][0]
    b["lower"], b["upper"] = b["upper"] + 1, b["upper"]


TAMPERED = [
    _dup,
    _relabel,
    _swap,
    _shape,
    _fractional,
    _out_of_range,
    _misshapen_witness,
    _no_matrices,
    _raised_lower,
    _lowered_upper,
    _scaled_witness,
    _crossed,
]


@pytest.mark.parametrize("tamper", TAMPERED, ids=lambda f: f.__name__.strip("_"))
def test_a_tampered_result_is_refused_in_one_line(
    stack, result_file, tmp_path, capsys, monkeypatch, tamper
):
    res = json.loads(result_file.read_text())
    tamper(res)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(res))
    monkeypatch.setattr(
        "analysis.cli.brackets.approximants_for_input",
        lambda *a, **k: pytest.fail("approximants computed against a tampered result"),
    )
    rc, _, err = _approximants(stack, bad, capsys)
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error: --brackets: expected" in lines[0], err


def test_a_file_that_is_not_json_is_one_line(stack, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"matrices": [')
    rc, _, err = _approximants(stack, bad, capsys)
    assert rc == 2 and "Traceback" not in err, err
    assert (
        len(err.strip().splitlines()) == 1 and "--brackets: expected" in err and "not JSON" in err
    )


def test_the_untampered_result_is_used(stack, result_file, capsys):
    rc, out, err = _approximants(stack, result_file, capsys)
    assert rc == 0, err
    assert "note" not in err  # every end re-certified: nothing taken on trust


def test_a_result_without_witnesses_is_used_and_said(stack, tmp_path, capsys):
    out = tmp_path / "b.json"
    argv = ["bracket", str(stack), "--eps", "0.1", "0.3", "--effort", "fast", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    rc, _, err = _approximants(stack, out, capsys)
    assert rc == 0, err
    assert "3 of 3 matrices have no witnesses" in err and "not re-certified" in err
