"""``attnrank verify`` checks what it is given: a result file bound to the input's matrices.

Every way a result file can be wrong that is not a failing witness (another matrix's entry,
relabelled or reshaped matrices, fractional or non-numeric ends, misshapen or non-finite
witnesses, an index out of range, no ``matrices``, a file that is not JSON) exits 1 with one
line saying what is wrong, and never a traceback; exit 2 is kept for witnesses that are
absent (``null``, or no witness for an end).
"""

from __future__ import annotations

import copy
import json

import pytest

from analysis.cli import main
from tests.fixtures.stacks import write_stack


@pytest.fixture(scope="module")
def bracketed(tmp_path_factory):
    """The three-matrix stack and its ``bracket --witnesses`` result (parsed)."""
    d = tmp_path_factory.mktemp("verify-input")
    stack = write_stack(d / "A.npy")
    out = d / "out.json"
    argv = ["bracket", str(stack), "--eps", "0.05", "0.2", "--witnesses", "--effort", "fast"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    return stack, json.loads(out.read_text())


def _verify(stack, tmp_path, result, capsys, *, raw: str | None = None):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(result) if raw is None else raw)
    rc = main(["verify", str(stack), str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def _lower_end(res):
    """(matrix, bracket) of some end with a lower witness (lower >= 1)."""
    for m in res["matrices"]:
        for b in m["brackets"]:
            if b["lower"] >= 1:
                return m, b
    raise AssertionError("no lower end >= 1 in the fixture result")


def test_untouched_result_verifies(bracketed, tmp_path, capsys):
    stack, res = bracketed
    rc, _ = _verify(stack, tmp_path, res, capsys)
    assert rc == 0


def _dup(res):
    res["matrices"][1] = copy.deepcopy(res["matrices"][0])


def _dup_reindexed(res):  # matrix 0's entry, labelled matrix 1: checked against matrix 1
    res["matrices"][1] = {**copy.deepcopy(res["matrices"][0]), "index": 1}


def _relabel(res):
    res["matrices"][0]["layer"], res["matrices"][0]["head"] = 3, 1


def _reshape(res):
    res["matrices"][2]["shape"] = [10, 40]


def _fractional_lower(res):
    _, b = _lower_end(res)
    b["lower"] = b["lower"] + 0.9  # int() would truncate it back to the certified end


def _fractional_upper(res):
    m, b = _lower_end(res)
    b["upper"] = b["upper"] - 0.5


def _string_end(res):
    _, b = _lower_end(res)
    b["lower"] = str(b["lower"])


def _bool_index(res):
    res["matrices"][1]["index"] = True


def _index_out_of_range(res):
    res["matrices"][2]["index"] = 7


def _negative_index(res):
    res["matrices"][2]["index"] = -1


def _no_matrices(res):
    del res["matrices"]


def _matrices_not_list(res):
    res["matrices"] = {"0": res["matrices"][0]}


def _not_an_object(res):
    res.clear()
    res["__list__"] = True  # replaced by a JSON list in the test


def _short_upper_witness(res):
    w = res["matrices"][0]["witnesses"]["upper"][-1]
    w["U"] = w["U"][:-1]


def _ragged_lower_witness(res):
    m, b = _lower_end(res)
    w = next(w for w in m["witnesses"]["lower"] if w["size"] == b["lower"])
    w["R"][0] = w["R"][0] + [0.0]


def _nan_witness(res):
    w = res["matrices"][0]["witnesses"]["upper"][-1]
    w["U"][0][0] = float("nan")


def _string_in_witness(res):
    w = res["matrices"][0]["witnesses"]["upper"][-1]
    w["W"][0][0] = "0.5"


def _witnesses_not_object(res):
    res["matrices"][0]["witnesses"] = [1, 2]


def _witness_rank_fractional(res):
    w = res["matrices"][0]["witnesses"]["upper"][-1]
    w["rank"] = w["rank"] + 0.5


def _nan_eps(res):
    res["matrices"][0]["brackets"][0]["eps"] = float("nan")


def _temperature_word(res):
    res["temperature"] = "hot"


def _other_input(res):
    res["input_sha256"] = "0" * 64


def _fewer_matrices(res):
    del res["matrices"][2]


EDITS = [
    _dup,
    _dup_reindexed,
    _relabel,
    _reshape,
    _fractional_lower,
    _fractional_upper,
    _string_end,
    _bool_index,
    _index_out_of_range,
    _negative_index,
    _no_matrices,
    _matrices_not_list,
    _not_an_object,
    _short_upper_witness,
    _ragged_lower_witness,
    _nan_witness,
    _string_in_witness,
    _witnesses_not_object,
    _witness_rank_fractional,
    _nan_eps,
    _temperature_word,
    _other_input,
    _fewer_matrices,
]


@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__.lstrip("_") for e in EDITS])
def test_edited_result_fails_with_one_line(bracketed, tmp_path, capsys, edit):
    stack, res = bracketed
    res = copy.deepcopy(res)
    edit(res)
    raw = "[1, 2]" if res.get("__list__") else None
    rc, err = _verify(stack, tmp_path, res, capsys, raw=raw)
    assert rc == 1, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1].startswith("FAILED"), err
    assert len(lines) >= 2, err  # at least one line saying what is wrong, then FAILED
    assert all(len(ln) < 300 for ln in lines), err


def test_not_json_fails(bracketed, tmp_path, capsys):
    stack, _ = bracketed
    rc, err = _verify(stack, tmp_path, None, capsys, raw='{"matrices": [')
    assert rc == 1
    assert "not JSON" in err


def test_binary_file_fails(bracketed, tmp_path, capsys):
    stack, _ = bracketed
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x93NUMPY\xff\xfe\x00")
    rc = main(["verify", str(stack), str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and "not JSON" in err


def test_fractional_end_is_named(bracketed, tmp_path, capsys):
    stack, res = bracketed
    res = copy.deepcopy(res)
    _, b = _lower_end(res)
    b["lower"] = b["lower"] + 0.9
    rc, err = _verify(stack, tmp_path, res, capsys)
    assert rc == 1 and f"{b['lower']!r}" in err and "integer" in err


def test_duplicate_is_named(bracketed, tmp_path, capsys):
    stack, res = bracketed
    res = copy.deepcopy(res)
    _dup(res)
    rc, err = _verify(stack, tmp_path, res, capsys)
    assert rc == 1 and "index 0" in err and "twice" in err


def test_null_witnesses_still_missing(bracketed, tmp_path, capsys):
    stack, res = bracketed
    res = copy.deepcopy(res)
    res["matrices"][1]["witnesses"] = None
    rc, err = _verify(stack, tmp_path, res, capsys)
    assert rc == 2, err


def test_absent_witness_of_an_end_is_missing(bracketed, tmp_path, capsys):
    stack, res = bracketed
    res = copy.deepcopy(res)
    m, b = _lower_end(res)
    m["witnesses"]["lower"] = [w for w in m["witnesses"]["lower"] if w["size"] != b["lower"]]
    rc, err = _verify(stack, tmp_path, res, capsys)
    assert rc == 2, err


def test_malformed_beats_missing(bracketed, tmp_path, capsys):
    stack, res = bracketed
    res = copy.deepcopy(res)
    res["matrices"][1]["witnesses"] = None  # missing ...
    _relabel(res)  # ... and wrong: failed
    rc, _ = _verify(stack, tmp_path, res, capsys)
    assert rc == 1
