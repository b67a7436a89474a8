"""Store integrity: every array read is checked against the SHA-256 its index row records,
``array_file`` stays inside the store, ``store add`` repairs a missing or damaged array and
refuses other content for a stored key (``--replace REASON`` records why), a failed add
leaves no store behind, and a damaged index is a named error."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sqlite3

import numpy as np
import pytest

import analysis.store.integrity as store_module
from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.files import load_extraction, save_extraction
from analysis.store import Store
from analysis.store.store import StoreIntegrityError
from analysis.validation import ParameterError
from tests.cli.conftest import write_extract
from tests.fixtures.stores import fill_store


def _rescale_q(path, factor=1.5):
    """Rewrite a store array file as a valid .npz whose Q is scaled (A left as stored)."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["Q"] = arrays["Q"] * factor
    np.savez_compressed(path, **arrays)


@pytest.fixture
def small_store(tmp_path):
    with fill_store(tmp_path / "store", n_matrices=3):
        pass
    return tmp_path / "store"


# -- every read is checked ---------------------------------------------------------------


def test_changed_but_valid_array_is_a_named_error(small_store):
    with Store(small_store) as store:
        rec = store.matrices()[0]
        _rescale_q(store.path / rec.array_file)
        with pytest.raises(StoreIntegrityError) as info:
            store.arrays(rec.key)
    msg = str(info.value)
    assert rec.key in msg and rec.array_file in msg and "SHA-256" in msg
    assert info.value.key == rec.key


@pytest.mark.parametrize("workers", ["1", "2"])
def test_store_bracket_refuses_a_changed_array(small_store, capsys, workers):
    argv = ["store", "bracket", str(small_store), "--eps", "0.2", "--effort", "fast", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    with Store(small_store) as store:
        rec = store.matrices()[1]
    _rescale_q(small_store / rec.array_file)
    # a fresh temperature: the array is read to compute (by a worker with --workers 2)
    rc = main([*argv, "--temperatures", "1", "2", "--workers", workers])
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    assert rec.key in err and "Traceback" not in err
    assert "recomputed" not in out + err


def test_a_read_is_hashed_once_per_process_until_the_file_changes(small_store, monkeypatch):
    calls = []
    real = store_module.file_sha256
    monkeypatch.setattr(store_module, "file_sha256", lambda p: calls.append(p) or real(p))
    store_module._HASHED.clear()
    with Store(small_store) as store:
        rec = store.matrices()[0]
        store.arrays(rec.key)
        store.arrays(rec.key)
        assert len(calls) == 1  # the second read: same size and mtime, not hashed again
        path = store.path / rec.array_file
        _rescale_q(path)
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        with pytest.raises(StoreIntegrityError):
            store.arrays(rec.key)
        assert len(calls) == 2
        with pytest.raises(StoreIntegrityError):
            store.arrays(rec.key)  # a mismatch is never cached as good


def test_verify_true_rehashes(small_store, monkeypatch):
    calls = []
    real = store_module.file_sha256
    monkeypatch.setattr(store_module, "file_sha256", lambda p: calls.append(p) or real(p))
    with Store(small_store) as store:
        key = store.matrices()[0].key
        store.arrays(key)
        n = len(calls)
        store.arrays(key, verify=True)
        assert len(calls) == n + 1


def _point_at(store_path, key, array_file, sha):
    conn = sqlite3.connect(store_path / Store.INDEX)
    with conn:
        conn.execute(
            "UPDATE matrices SET array_file = ?, array_sha256 = ? WHERE key = ?",
            (array_file, sha, key),
        )
    conn.close()


@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_array_file_must_lie_inside_the_store(small_store, tmp_path, where):
    with Store(small_store) as store:
        rec = store.matrices()[0]
    outside = tmp_path / "outside.npz"
    shutil.copy(small_store / rec.array_file, outside)  # same bytes, same hash
    ref = "../outside.npz" if where == "parent" else str(outside)
    _point_at(small_store, rec.key, ref, rec.array_sha256)
    with Store(small_store) as store:
        with pytest.raises(StoreIntegrityError, match="outside the store"):
            store.arrays(rec.key)


def test_a_missing_array_names_key_and_file(small_store):
    with Store(small_store) as store:
        rec = store.matrices()[0]
        (store.path / rec.array_file).unlink()
        with pytest.raises(StoreIntegrityError, match="missing") as info:
            store.arrays(rec.key)
    assert rec.key in str(info.value)


# -- store add: repair, refuse, replace ----------------------------------------------------


def _store_of(tmp_path, extract):
    s = tmp_path / "s"
    assert main(["store", "add", str(s), str(extract)]) == 0
    return s


@pytest.mark.parametrize("damage", ["delete", "garbage", "rescaled"])
def test_store_add_repairs_a_damaged_array(tmp_path, capsys, damage):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    with Store(s) as store:
        rec = store.matrices()[0]
        before = store.arrays(rec.key)
    path = s / rec.array_file
    if damage == "delete":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"not an npz")
    else:
        _rescale_q(path)
    capsys.readouterr()
    assert main(["store", "add", str(s), str(x)]) == 0
    assert "repaired" in capsys.readouterr().out
    with Store(s) as store:
        after = store.arrays(rec.key, verify=True)
        assert len(store.matrices()) == 2
    np.testing.assert_array_equal(after.Q, before.Q)
    np.testing.assert_array_equal(after.A, before.A)


def _other_content(src, dst):
    ex = load_extraction(src)
    Q = ex.Q * np.float32(1.5)
    A = softmax64(Q, ex.K, ex.scale, ex.mask).astype(np.float32)
    save_extraction(dataclasses.replace(ex, Q=Q, A=A), dst)
    return dst


def test_store_add_refuses_other_content_for_a_stored_key(tmp_path, capsys):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    with Store(s) as store:
        shas = {r.key: r.array_sha256 for r in store.matrices()}
    y = _other_content(x, tmp_path / "y.npz")
    capsys.readouterr()
    rc = main(["store", "add", str(s), str(y)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "--replace" in err and any(k in err for k in shas)
    with Store(s) as store:
        assert {r.key: r.array_sha256 for r in store.matrices()} == shas
        for k in shas:
            store.arrays(k, verify=True)  # the old arrays, intact


def test_store_add_replace_records_the_reason_and_drops_profiles(tmp_path, capsys):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    argv = ["store", "bracket", str(s), "--eps", "0.2", "--effort", "fast", "--quiet"]
    assert main(argv) == 0
    y = _other_content(x, tmp_path / "y.npz")
    rc = main(["store", "add", str(s), str(y), "--replace", "re-extracted after a fix"])
    assert rc == 0
    new = load_extraction(y)
    with Store(s) as store:
        recs = store.matrices()
        assert list(store.profiles()) == []  # computed from the old arrays: gone
        for rec in recs:
            arr = store.arrays(rec.key, verify=True)
            np.testing.assert_array_equal(arr.Q, new.Q[rec.layer, rec.head])
            (entry,) = rec.meta["replaced"]
            assert entry["reason"] == "re-extracted after a fix"
            assert len(entry["old_array_sha256"]) == 64


def test_store_add_replace_needs_a_reason(tmp_path, capsys):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    y = _other_content(x, tmp_path / "y.npz")
    assert main(["store", "add", str(s), str(y), "--replace", "  "]) == 2
    assert "--replace" in capsys.readouterr().err


def test_store_add_of_the_same_content_changes_nothing(tmp_path):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    with Store(s) as store:
        before = [(r.key, r.array_sha256, r.array_file) for r in store.matrices()]
    assert main(["store", "add", str(s), str(x)]) == 0
    with Store(s) as store:
        assert [(r.key, r.array_sha256, r.array_file) for r in store.matrices()] == before


def test_a_failed_add_leaves_no_store(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"garbage")
    s = tmp_path / "new-store"
    assert main(["store", "add", str(s), str(bad)]) == 2
    assert not s.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["store", "add", str(empty), str(bad)]) == 2
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_a_failed_add_keeps_an_existing_store(tmp_path):
    x = write_extract(tmp_path / "x.npz")
    s = _store_of(tmp_path, x)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"garbage")
    assert main(["store", "add", str(s), str(bad)]) == 2
    with Store(s) as store:
        assert len(store.matrices()) == 2


# -- a damaged index ---------------------------------------------------------------------


def test_a_damaged_index_is_a_named_error(small_store, capsys):
    (small_store / Store.INDEX).write_bytes(b"this is not an sqlite database" * 100)
    for suffix in ("-wal", "-shm"):
        (small_store / (Store.INDEX + suffix)).unlink(missing_ok=True)
    with pytest.raises(ParameterError, match="index.sqlite") as info:
        Store(small_store)
    assert info.value.name == "path"
    rc = main(["store", "bracket", str(small_store), "--eps", "0.2", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "STORE" in err and "index.sqlite" in err and "Traceback" not in err


def test_a_matrix_of_one_key_is_a_named_error(tmp_path, capsys):
    with Store(tmp_path / "s", create=True) as store:
        store.add_matrices(
            [
                dict(
                    source="synthetic",
                    checkpoint="one-key",
                    layer=0,
                    head=0,
                    input_id="fixed",
                    length=1,
                    A=np.ones((3, 1)),
                    Q=np.zeros((3, 2)),
                    K=np.zeros((1, 2)),
                    scale=1.0,
                )
            ]
        )[0]
    rc = main(["store", "bracket", str(tmp_path / "s"), "--eps", "0.1", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "STORE: expected" in err and "length 1" in err
