"""Library errors name Python parameters; the command line names its flags."""

from __future__ import annotations

import argparse

import pytest

from analysis.brackets.io import profile_file
from analysis.cli import build_parser, main
from analysis.cli.errors import annotate, flags_of, param_flags, rename
from analysis.cli.inputs import load_matrices
from analysis.executor import RunSpec
from analysis.prereg.lock import PreregistrationError
from analysis.validation import ParameterError


def test_library_names_workers_and_the_cli_names_the_flag(stack, capsys):
    with pytest.raises(ParameterError) as info:
        profile_file(load_matrices(stack), eps=(0.1,), execution=RunSpec(workers=0, progress=False))
    assert info.value.name == "workers"
    assert str(info.value).startswith("workers: expected an integer >= 1, got 0")
    assert main(["bracket", str(stack), "--eps", "0.1", "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "attnrank bracket: error: --workers: expected an integer >= 1, got 0" in err


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda p: load_matrices(p, temperature=2.0), "temperature"),
        (lambda p: load_matrices(p.with_suffix(".txt")), "path"),
        (
            lambda p: profile_file(load_matrices(p), eps=(0.1,), execution=RunSpec(batch=0)),
            "batch",
        ),
        (lambda p: profile_file(load_matrices(p), eps=(0.0,)), "eps"),
    ],
)
def test_bracket_library_errors_name_python_parameters(stack, call, name):
    with pytest.raises((ParameterError, FileNotFoundError)) as info:
        call(stack)
    got = getattr(info.value, "name", str(info.value).partition(":")[0])
    assert got == name


def test_a_missing_input_is_INPUT(tmp_path, capsys):
    assert main(["bracket", str(tmp_path / "none.npy"), "--eps", "0.1"]) == 2
    assert "attnrank bracket: error: INPUT: no such file" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("x")
    assert main(["bracket", str(tmp_path / "a.txt"), "--eps", "0.1"]) == 2
    assert "error: INPUT: expected a .npy or .npz file" in capsys.readouterr().err


def test_every_command_carries_its_table():
    parser = build_parser()
    flags = flags_of(parser.parse_args(["bracket", "x.npy", "--eps", "0.1"]))
    assert flags["workers"] == "--workers" and flags["path"] == "INPUT"
    assert "help" not in flags
    flags = flags_of(parser.parse_args(["extract", "minilm", "--corpus-seed", "0", "--out", "o"]))
    assert flags["corpus_seed"] == "--corpus-seed" and flags["length"] == "--length"
    flags = flags_of(parser.parse_args(["store", "bracket", "S", "--eps", "0.1"]))
    assert flags["version"] == "--profile-version" and flags["quiet"] == "--quiet"
    assert flags["no_progress"] == "--quiet" and flags["store"] == "STORE"
    assert flags_of(parser.parse_args(["brackets", "S", "--eps", "0.1"])) == flags
    flags = flags_of(parser.parse_args(["prereg", "check", "f.toml", "--root", "x"]))
    assert flags["root"] == "--root"


def test_rename():
    flags = {"corpus_seed": "--corpus-seed", "path": "INPUT"}
    exc = rename(ParameterError("corpus_seed", "an integer >= 0", -1), flags)
    assert isinstance(exc, ParameterError) and exc.name == "--corpus-seed"
    assert str(exc) == "--corpus-seed: expected an integer >= 0, got -1"
    unknown = ParameterError("Q", "finite entries", "NaN")
    assert rename(unknown, flags) is unknown
    already = ParameterError("--effect", "a share in (0, 1)", 2)
    assert rename(already, flags) is already
    assert str(rename(FileNotFoundError("path: no such file: a.npy"), flags)) == (
        "INPUT: no such file: a.npy"
    )
    os_error = FileNotFoundError(2, "No such file or directory")
    assert rename(os_error, flags) is os_error
    other = ValueError("path: whatever")
    assert rename(other, flags) is other


def test_a_drifted_design_keeps_its_message_on_the_command_line():
    # PreregistrationError carries its own message (named `design`); rebuilding it as a
    # plain ParameterError printed "--design: expected , got None"
    drift = PreregistrationError("x.toml drifted from its lock: block 'intrinsic' changed")
    out = rename(drift, {"design": "--design"})
    assert "drifted from its lock" in str(out) and "expected , got None" not in str(out)


def test_explicit_names_win_and_every_leaf_is_annotated():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    a = sub.add_parser("a")
    a.add_argument("--n-boot", type=int)
    a.add_argument("--out", dest="output")
    g = sub.add_parser("g").add_subparsers(dest="action")
    b = g.add_parser("b")
    b.add_argument("file")
    b.add_argument("--seed")
    b.set_defaults(param_flags={"path": "FILE", "seed": "--seed (b)"})
    annotate(parser)
    assert param_flags(a) == {"n_boot": "--n-boot", "out": "--out", "output": "--out"}
    assert flags_of(parser.parse_args(["a"])) == param_flags(a)
    assert flags_of(parser.parse_args(["g", "b", "x"])) == {"seed": "--seed (b)", "path": "FILE"}
