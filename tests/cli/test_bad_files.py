"""A file that is not a valid ``.npy`` / ``.npz`` gets a named error, never a traceback.

Every reader of an array file (a user's input or a store's own array file) is handed each
kind of bad file of :mod:`tests.fixtures.bad_files`: the library raises a
:class:`ParameterError` naming its Python parameter, with the file's name in what came in;
the command line exits with status 2 and names its flag or positional.
"""

from __future__ import annotations

import json
import pickle

import pytest

from analysis.cli import main
from analysis.cli.inputs import load_matrices, load_queries_keys
from analysis.descriptors.describe import describe_file
from analysis.sources.files import load_extraction
from analysis.store import Store
from analysis.validation import ParameterError
from tests.fixtures.bad_files import NPY_KINDS, NPZ_KINDS, write_bad_npy, write_bad_npz


def _bad(kind: str, suffix: str, tmp_path, good) -> object:
    """A bad file of ``kind`` named ``bad<suffix>`` (``good``: a valid extract file)."""
    if suffix == ".npy":
        return write_bad_npy(kind, tmp_path / "bad.npy")
    return write_bad_npz(kind, tmp_path / "bad.npz", good)


def _assert_named(exc: ParameterError, name: str, path) -> None:
    assert exc.name == name
    assert path.name in str(exc.got)  # what came in says which file
    assert str(exc).startswith(f"{name}: expected ")


BAD_INPUTS = [(".npy", k) for k in NPY_KINDS] + [(".npz", k) for k in NPZ_KINDS]


# -- library: each reader names its parameter ----------------------------------------------


@pytest.mark.parametrize(("suffix", "kind"), BAD_INPUTS)
def test_load_matrices_names_path(tmp_path, extracts, suffix, kind):
    bad = _bad(kind, suffix, tmp_path, extracts[0])
    with pytest.raises(ParameterError) as info:
        load_matrices(bad)
    _assert_named(info.value, "path", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_load_queries_keys_names_path(tmp_path, extracts, kind):
    data = load_matrices(extracts[0])
    bad = write_bad_npz(kind, tmp_path / "bad.npz", extracts[0])
    with pytest.raises(ParameterError) as info:
        load_queries_keys(bad, data)
    _assert_named(info.value, "path", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_load_extraction_names_path(tmp_path, extracts, kind):
    bad = write_bad_npz(kind, tmp_path / "bad.npz", extracts[0])
    with pytest.raises(ParameterError) as info:
        load_extraction(bad)
    _assert_named(info.value, "path", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_describe_file_names_path(tmp_path, extracts, kind):
    bad = write_bad_npz(kind, tmp_path / "bad.npz", extracts[0])
    with pytest.raises(ParameterError) as info:
        describe_file(bad, eps=[0.1])
    _assert_named(info.value, "path", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_a_damaged_store_array_file_names_the_file(synthetic_store, kind):
    with Store(synthetic_store) as store:
        rec = store.matrices()[0]
        path = store.path / rec.array_file
        write_bad_npz(kind, path, path)
        with pytest.raises(ParameterError) as info:
            store.arrays(rec.key)
    _assert_named(info.value, "path", path)


def test_parameter_errors_cross_process_boundaries():
    """Worker processes (``store bracket --workers``) send errors back pickled."""
    exc = pickle.loads(pickle.dumps(ParameterError("path", "a .npz file", "x.npz: empty")))
    assert isinstance(exc, ParameterError)
    assert (exc.name, exc.allowed, exc.got) == ("path", "a .npz file", "x.npz: empty")
    assert str(exc) == "path: expected a .npz file, got 'x.npz: empty'"


# -- command line: exit status 2, the flag named, no traceback ------------------------------


def _assert_cli_error(rc: int, err: str, command: str, flag: str, path) -> None:
    assert rc == 2, err
    assert f"attnrank {command}: error: {flag}: expected " in err
    assert path.name in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("suffix", "kind"), BAD_INPUTS)
@pytest.mark.parametrize("command", ["bracket", "verify", "approximants"])
def test_bracket_commands_name_INPUT(tmp_path, extracts, capsys, command, suffix, kind):
    bad = _bad(kind, suffix, tmp_path, extracts[0])
    if command == "verify":
        result = tmp_path / "out.json"
        result.write_text(json.dumps({"temperature": None, "renormalized": False, "matrices": []}))
        argv = ["verify", str(bad), str(result)]
    else:
        argv = [command, str(bad), "--eps", "0.1", "--quiet"]
    rc = main(argv)
    _assert_cli_error(rc, capsys.readouterr().err, command, "INPUT", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_store_add_names_FILE(tmp_path, extracts, capsys, kind):
    bad = write_bad_npz(kind, tmp_path / "bad.npz", extracts[0])
    rc = main(["store", "add", str(tmp_path / "s"), str(extracts[0]), str(bad)])
    _assert_cli_error(rc, capsys.readouterr().err, "store", "FILE.npz", bad)


@pytest.mark.parametrize("kind", NPZ_KINDS)
def test_describe_names_INPUT(tmp_path, extracts, capsys, kind):
    bad = write_bad_npz(kind, tmp_path / "bad.npz", extracts[0])
    out = tmp_path / "o.csv"
    rc = main(["describe", str(bad), "--eps", "0.1", "--out", str(out), "--quiet"])
    _assert_cli_error(rc, capsys.readouterr().err, "describe", "INPUT", bad)
    assert not out.exists()


@pytest.mark.parametrize(
    ("kind", "workers"), [(k, "1") for k in NPZ_KINDS] + [("truncated", "2"), ("text", "2")]
)
def test_store_bracket_names_a_damaged_array_file(synthetic_store, capsys, kind, workers):
    with Store(synthetic_store) as store:
        path = store.path / store.matrices()[0].array_file
    write_bad_npz(kind, path, path)
    argv = ["store", "bracket", str(synthetic_store), "--eps", "0.1", "--effort", "fast"]
    rc = main([*argv, "--workers", workers, "--quiet"])
    _assert_cli_error(rc, capsys.readouterr().err, "store", "STORE", path)
