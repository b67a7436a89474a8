"""``store add`` under a failure, a concurrent add, a damaged index or bad arrays (issue 52).

A failed first add removes only what it created; one add holds the index's write lock
from its check to its insert; an index that is not an SQLite file and arrays that are
not numbers are refused in one line naming the file or the array.
"""

from __future__ import annotations

import pytest

from analysis.cli import main
from analysis.store import Store
from analysis.validation import ParameterError
from tests.cli.conftest import write_extract


def _interrupt_after_first_array(monkeypatch) -> None:
    """Ctrl-C right after the add's first array file is written (before its index row)."""
    import analysis.store.store as store_module

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "file_sha256", interrupted)


def test_a_failed_first_add_keeps_the_users_arrays_folder(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "arrays" / "mine").mkdir(parents=True)
    (root / "arrays" / "results.txt").write_text("precious")
    (root / "notes.txt").write_text("mine too")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    extract = write_extract(tmp_path / "x.npz")
    _interrupt_after_first_array(monkeypatch)
    assert main(["store", "add", str(root), str(extract)]) == 130
    # the user's folders and files stay; what the add created (index, arrays/<k[:2]>/) goes
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert (root / "arrays" / "results.txt").read_text() == "precious"


def test_a_failed_first_add_removes_the_folder_it_created(tmp_path, monkeypatch):
    root = tmp_path / "new" / "store"
    extract = write_extract(tmp_path / "x.npz")
    _interrupt_after_first_array(monkeypatch)
    assert main(["store", "add", str(root), str(extract)]) == 130
    assert not root.exists()
    monkeypatch.undo()
    assert main(["store", "add", str(root), str(extract)]) == 0
    with Store(root) as store:
        assert len(store.matrices()) == 2


def _bad_index(root, kind: str):
    """A store folder whose ``index.sqlite`` is no SQLite file (``kind``)."""
    index = root / Store.INDEX
    root.mkdir(parents=True)
    if kind == "empty":
        index.write_bytes(b"")
    elif kind == "text":
        index.write_text("not a database\n" * 50)
    else:
        index.mkdir()
    return index


@pytest.mark.parametrize("kind", ["empty", "text", "directory"])
@pytest.mark.parametrize("create", [False, True])
def test_an_index_that_is_no_sqlite_file_is_refused_untouched(tmp_path, kind, create):
    index = _bad_index(tmp_path / "s", kind)
    size = None if index.is_dir() else index.stat().st_size
    with pytest.raises(ParameterError) as info:
        Store(tmp_path / "s", create=create)
    assert info.value.name == "path"
    assert str(index) in str(info.value)
    assert (None if index.is_dir() else index.stat().st_size) == size  # nothing written
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [Store.INDEX]


@pytest.mark.parametrize("kind", ["empty", "text", "directory"])
@pytest.mark.parametrize("action", ["add", "bracket"])
def test_the_cli_names_an_index_that_is_no_sqlite_file(tmp_path, capsys, kind, action):
    index = _bad_index(tmp_path / "s", kind)
    if action == "add":
        argv = ["store", "add", str(tmp_path / "s"), str(write_extract(tmp_path / "x.npz"))]
    else:
        argv = ["store", "bracket", str(tmp_path / "s"), "--eps", "0.1", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"attnrank store: error: STORE: expected a store whose {Store.INDEX} is a " in err
    assert str(index) in err


def _record(seed: int) -> dict:
    """One matrix record; every seed has the same key and other arrays."""
    import numpy as np

    from analysis.attention import softmax64

    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((2, 4, 3))
    mask = np.ones((4, 4), dtype=bool)
    fields = {"source": "synthetic", "checkpoint": "c", "layer": 0, "head": 0, "length": 4}
    A = softmax64(Q, K, 0.5, mask)
    return {**fields, "input_id": "i", "A": A, "Q": Q, "K": K, "scale": 0.5}


def test_two_adds_of_one_key_cannot_both_write(tmp_path, monkeypatch):
    """A second add (another connection: another process) starting while the first is
    between its check and its insert waits for it; it cannot write its own arrays under
    the key and leave the first add's row naming them (the old check, write, insert)."""
    import sqlite3

    import analysis.store.store as store_module

    Store(tmp_path / "s", create=True).close()
    first, second = Store(tmp_path / "s"), Store(tmp_path / "s")
    second._conn.execute("PRAGMA busy_timeout = 200")  # wait 0.2 s, not a minute
    save, outcome = store_module.atomic_savez, {}

    def racing_save(path, arrays):
        if not outcome:  # the first add has checked; the second one runs before it writes
            outcome["second"] = None
            try:
                outcome["second"] = second.add_matrices([_record(1)])
            except sqlite3.OperationalError as exc:
                outcome["second"] = exc
        return save(path, arrays)

    monkeypatch.setattr(store_module, "atomic_savez", racing_save)
    [key] = first.add_matrices([_record(0)])
    monkeypatch.undo()
    first.arrays(key, verify=True)  # the row's hash names the file there
    assert isinstance(outcome["second"], sqlite3.OperationalError)  # it waited: locked
    assert "locked" in str(outcome["second"])
    assert first.add_matrices([_record(0)]) == [key]  # the same arrays: nothing to do
    with pytest.raises(ParameterError, match="replace"):
        second.add_matrices([_record(1)])  # after the first: other arrays, refused
    first.close()
    second.close()


BAD_RECORDS = {
    "text Q": ({"Q": "text"}, "Q"),
    "complex Q": ({"Q": "complex"}, "Q"),
    "NaN in Q": ({"Q": "nan"}, "Q"),
    "inf in K": ({"K": "inf"}, "K"),
    "NaN in A": ({"A": "nan"}, "A"),
    "text scale": ({"scale": "x"}, "scale"),
    "array scale": ({"scale": [0.5, 0.5]}, "scale"),
    "NaN scale": ({"scale": float("nan")}, "scale"),
}


def _spoil(rec: dict, change: dict) -> dict:
    import numpy as np

    out = dict(rec)
    for name, how in change.items():
        if name == "scale":
            out[name] = how
        elif how == "text":
            out[name] = rec[name].astype(str)
        elif how == "complex":
            out[name] = rec[name] + 1j
        else:
            out[name] = rec[name].copy()
            out[name][0, 0] = np.nan if how == "nan" else np.inf
    return out


@pytest.mark.parametrize(("change", "name"), BAD_RECORDS.values(), ids=list(BAD_RECORDS))
def test_an_add_refuses_arrays_that_cannot_be_bracketed(tmp_path, change, name):
    with Store(tmp_path / "s", create=True) as store:
        with pytest.raises(ParameterError) as info:
            store.add_matrices([_spoil(_record(0), change)])
        assert info.value.name == name
        assert store.matrices() == []
    assert not (tmp_path / "s" / "arrays").exists()  # nothing written


def test_the_cli_names_Q_of_an_extract_it_refuses(tmp_path, capsys):
    import numpy as np

    good = write_extract(tmp_path / "x.npz")
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(tmp_path / "c.npz", **{**arrays, "Q": arrays["Q"] + 1j})
    assert main(["store", "add", str(tmp_path / "s"), str(tmp_path / "c.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "attnrank store: error: Q: expected " in err
    assert not (tmp_path / "s").exists()  # the failed first add left nothing


def test_an_older_stored_file_with_nan_in_q_is_named_as_q(tmp_path, capsys):
    """A file an older add accepted (NaN in Q, its hash recorded): ``store bracket`` names
    the file and Q, not the A computed from it."""
    import numpy as np

    from analysis.atomic import atomic_savez
    from analysis.hashing import file_sha256

    with Store(tmp_path / "s", create=True) as store:
        [key] = store.add_matrices([_record(0)])
        path = store.path / store.matrix(key).array_file
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["Q"][0, 0] = np.nan
        atomic_savez(path, arrays)
        store._conn.execute(
            "UPDATE matrices SET array_sha256 = ? WHERE key = ?", (file_sha256(path), key)
        )
        store._conn.commit()
    argv = ["store", "bracket", str(tmp_path / "s"), "--eps", "0.1", "--effort", "fast"]
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "attnrank store: error: STORE: expected " in err
    assert f"{path.name}: Q: NaN or inf" in err


def test_a_directory_at_an_array_path_is_named_not_replaced(tmp_path, capsys):
    extract = write_extract(tmp_path / "x.npz")
    root = tmp_path / "s"
    assert main(["store", "add", str(root), str(extract)]) == 0
    with Store(root) as store:
        rec = store.matrices()[0]
    path = root / rec.array_file
    path.unlink()
    path.mkdir()
    (path / "kept.txt").write_text("kept")
    capsys.readouterr()
    assert main(["store", "add", str(root), str(extract)]) == 2  # a repair would replace it
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "attnrank store: error: STORE: expected nothing or a " in err
    assert f"{rec.array_file}: a directory" in err
    assert (path / "kept.txt").read_text() == "kept"
