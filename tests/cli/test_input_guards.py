"""Inputs the bracket search cannot take, or should not start on unasked, are named at once:
a matrix of one column (scipy's linkage has nothing to cluster), an extract whose ``scale``
is not finite and > 0 (the rule ``describe`` has), and matrices larger than ``--max-size``
(with an estimate of time and memory, printed before a large run starts)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.brackets.io import MatrixInput, profile_file
from analysis.cli import main
from analysis.executor import RunSpec
from analysis.sources.files import load_extraction, save_extraction
from analysis.validation import ParameterError
from tests.cli.conftest import write_extract


def _one_line(rc, err, flag):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("note:")]
    assert len(lines) == 1 and f"{flag}: expected" in lines[0], err


def _no_search(monkeypatch):
    monkeypatch.setattr(
        "analysis.cli.brackets.profile_file",
        lambda *a, **k: pytest.fail("the search started"),
    )


@pytest.mark.parametrize("shape", [(5, 1), (1, 1), (3, 4, 1)])
def test_one_column_is_a_named_error(tmp_path, capsys, shape):
    p = tmp_path / "one.npy"
    np.save(p, np.ones(shape))
    rc = main(["bracket", str(p), "--eps", "0.1", "--quiet"])
    _one_line(rc, capsys.readouterr().err, "INPUT")


def test_one_row_still_brackets(tmp_path, capsys):
    p = tmp_path / "row.npy"
    np.save(p, np.full((1, 4), 0.25))
    assert main(["bracket", str(p), "--eps", "0.1", "--quiet"]) == 0
    assert "[1, 1]" in capsys.readouterr().out


def test_an_extract_of_length_one_is_a_named_error(tmp_path, capsys):
    x = write_extract(tmp_path / "x.npz", length=1)
    rc = main(["bracket", str(x), "--eps", "0.1", "--quiet"])
    _one_line(rc, capsys.readouterr().err, "INPUT")


def test_profile_file_refuses_one_column():
    data = MatrixInput(np.ones((2, 3, 1)), [None] * 2, [None] * 2, "sha", None, False)
    with pytest.raises(ParameterError, match="column"):
        profile_file(data, eps=(0.1,), execution=RunSpec(progress=False))


@pytest.mark.parametrize("value", [-0.5, 0.0, np.inf])
@pytest.mark.parametrize("command", ["bracket", "describe"])
def test_one_rule_for_scale(tmp_path, capsys, monkeypatch, value, command):
    x = write_extract(tmp_path / "x.npz")
    ex = load_extraction(x)
    bad = tmp_path / "bad.npz"
    scale = np.array(ex.scale)
    scale[0, 1] = value
    save_extraction(dataclasses.replace(ex, scale=scale), bad)
    _no_search(monkeypatch)
    argv = [command, str(bad), "--eps", "0.1", "--quiet"]
    if command == "describe":
        argv += ["--out", str(tmp_path / "o.csv")]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "scale" in err and "> 0" in err


def _fake_large(path, n):
    """A .npy whose header says (1, n, n) float32, without writing its data (sparse)."""
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(1, n, n)).flush()
    return path


def test_max_size_refuses_before_reading(stack, capsys, monkeypatch):
    _no_search(monkeypatch)
    monkeypatch.setattr(
        "analysis.cli.brackets.load_matrices", lambda *a, **k: pytest.fail("input read")
    )
    rc = main(["bracket", str(stack), "--eps", "0.1", "--quiet", "--max-size", "16"])
    err = capsys.readouterr().err
    _one_line(rc, err, "--max-size")
    assert "20 x 20" in err


def test_a_large_input_is_refused_by_default_with_an_estimate(tmp_path, capsys, monkeypatch):
    big = _fake_large(tmp_path / "big.npy", 5000)
    _no_search(monkeypatch)
    monkeypatch.setattr(
        "analysis.cli.brackets.load_matrices", lambda *a, **k: pytest.fail("input read")
    )
    rc = main(["bracket", str(big), "--eps", "0.1", "--quiet"])
    err = capsys.readouterr().err
    _one_line(rc, err, "--max-size")
    assert "5000 x 5000" in err and "GB" in err and " h" in err


def test_a_large_run_prints_its_estimate_first(tmp_path, capsys, monkeypatch):
    big = _fake_large(tmp_path / "big.npy", 3000)
    _no_search(monkeypatch)
    rc = main(["bracket", str(big), "--eps", "0.1", "--quiet", "--max-size", "6000"])
    err = capsys.readouterr().err
    assert rc == 2  # its rows are zeros: refused by the input check, after the estimate
    notes = [ln for ln in err.splitlines() if ln.startswith("note: estimate")]
    assert len(notes) == 1 and "GB" in notes[0] and " h" in notes[0], err
    assert err.index("note: estimate") < err.index("error")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_size_is_checked(stack, capsys, value):
    rc = main(["bracket", str(stack), "--eps", "0.1", "--quiet", "--max-size", value])
    _one_line(rc, capsys.readouterr().err, "--max-size")


def _large_extract(path, n):
    """An extract-layout ``.npz`` of one head with ``n`` tokens (queries and keys of width 4:
    small on disk, an ``n x n`` attention matrix to describe)."""
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((1, 1, n, 4)).astype(np.float32)
    np.savez(path, Q=Q, K=Q, scale=np.full((1, 1), 0.5))
    return path


def _no_describe(monkeypatch):
    monkeypatch.setattr(
        "analysis.descriptors.describe.describe_file",
        lambda *a, **k: pytest.fail("describe started"),
    )


def test_describe_refuses_a_large_input_by_default_with_an_estimate(tmp_path, capsys, monkeypatch):
    big = _large_extract(tmp_path / "big.npz", 5000)
    _no_describe(monkeypatch)
    rc = main(["describe", str(big), "--eps", "0.1", "--quiet", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    _one_line(rc, err, "--max-size")
    assert "5000 x 5000" in err and "GB" in err and " h" in err and "descriptors" in err


def test_describe_max_size_refuses_before_reading(extracts, tmp_path, capsys, monkeypatch):
    _no_describe(monkeypatch)
    argv = ["describe", str(extracts[0]), "--eps", "0.1", "--quiet"]
    rc = main([*argv, "--out", str(tmp_path / "o.csv"), "--max-size", "8"])
    err = capsys.readouterr().err
    _one_line(rc, err, "--max-size")
    assert "10 x 10" in err


def test_a_large_describe_prints_its_estimate_first(tmp_path, capsys, monkeypatch):
    big = _large_extract(tmp_path / "big.npz", 3000)

    def started(*a, **k):
        print("describe started", file=__import__("sys").stderr)
        raise ParameterError("path", "a file this test stops at", "big.npz")

    monkeypatch.setattr("analysis.descriptors.describe.describe_file", started)
    argv = ["describe", str(big), "--eps", "0.1", "--temperatures", "1", "2", "--quiet"]
    rc = main([*argv, "--out", str(tmp_path / "o.csv"), "--max-size", "6000"])
    err = capsys.readouterr().err
    assert rc == 2, err
    notes = [ln for ln in err.splitlines() if ln.startswith("note: estimate")]
    assert len(notes) == 1 and "GB" in notes[0] and "2 temperatures" in notes[0], err
    assert err.index("note: estimate") < err.index("describe started")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_describe_max_size_is_checked(extracts, tmp_path, capsys, value):
    argv = ["describe", str(extracts[0]), "--eps", "0.1", "--quiet", "--max-size", value]
    rc = main([*argv, "--out", str(tmp_path / "o.csv")])
    _one_line(rc, capsys.readouterr().err, "--max-size")


def test_one_size_rule_for_bracket_and_describe(tmp_path, capsys, monkeypatch):
    """The same extract at the same --max-size is refused by both, in the same words."""
    x = _large_extract(tmp_path / "x.npz", 40)
    _no_search(monkeypatch)
    _no_describe(monkeypatch)
    errors = []
    for argv in (["bracket", str(x)], ["describe", str(x), "--out", str(tmp_path / "o.csv")]):
        assert main([*argv, "--eps", "0.1", "--quiet", "--max-size", "32"]) == 2
        err = capsys.readouterr().err
        errors.append(err.split("error: ", 1)[1].split(";")[0])
    assert errors[0] == errors[1] == "--max-size: expected matrices of at most 32 rows and keys"
