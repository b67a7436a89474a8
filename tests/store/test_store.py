"""The cell store: keys, atomic records, resumable profiles, cells."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.sources import synthetic
from analysis.store import RunSpec, Store, cell_key, matrix_key, run_brackets
from analysis.validation import ParameterError
from tests.fixtures.stores import fill_store

ROOT = Path(__file__).resolve().parents[2]
EPS = (0.05, 0.1, 0.2)
TEMPS = (0.5, 1.0, 2.0)


def _snapshot(store: Store) -> dict:
    """Everything a profile run produced, independent of timing."""
    cells = store.cells().drop(columns=["effort"])
    profiles = {
        (p.matrix_key, p.temperature, p.version): (p.eps_grid, p.profile_dict())
        for p in store.profiles()
    }
    return {"cells": cells.to_dict("records"), "profiles": profiles}


# -- keys ----------------------------------------------------------------------------------


def test_keys_are_stable_and_canonical():
    k = matrix_key("checkpoint", "gpt2", 1, 2, "corpus:x", 64)
    assert k == matrix_key("checkpoint", "gpt2", 1, 2, "corpus:x", 64)
    assert len(k) == 20 and all(c in "0123456789abcdef" for c in k)
    assert k != matrix_key("checkpoint", "gpt2", 2, 1, "corpus:x", 64)
    assert cell_key(k, 1, 0.1) == cell_key(k, 1.0, 0.1)
    assert cell_key(k, 1.0, 0.1) != cell_key(k, 1.0, 0.2)
    # Fixed values guard against accidental changes of the key recipe (stores would orphan).
    ident = matrix_key("synthetic", "identity", 0, 0, "fixed", 4)
    assert ident == "78c2faf8dd1dec2db690"
    assert cell_key(ident, 1.0, 0.1) == "328c377052d7a9d0e19a"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"layer": -1}, "layer"),
        ({"head": 1.5}, "head"),
        ({"length": 0}, "length"),
        ({"source": ""}, "source"),
    ],
)
def test_bad_key_fields_name_the_parameter(kwargs, name):
    fields = dict(source="checkpoint", checkpoint="c", layer=0, head=0, input_id="i", length=4)
    fields.update(kwargs)
    with pytest.raises(ParameterError) as info:
        matrix_key(**fields)
    assert info.value.name == name


def test_cell_key_rejects_bad_eps():
    with pytest.raises(ParameterError) as info:
        cell_key("k", 1.0, float("nan"))
    assert info.value.name == "eps"


# -- records -------------------------------------------------------------------------------


def test_matrix_records_round_trip(tmp_path):
    sm = synthetic.spherical(10, 4, 3.0, random_state=7)
    with Store(tmp_path / "s", create=True) as store:
        key = store.add_synthetic(sm)
        assert store.add_synthetic(sm) == key  # idempotent
        assert len(store.matrices()) == 1
        rec = store.matrix(key)
        assert rec.source == "synthetic" and rec.length == 10 and rec.head_dim == 4
        assert not rec.causal
        arr = store.arrays(key, verify=True)
        np.testing.assert_array_equal(arr.A, sm.A)
        np.testing.assert_array_equal(arr.Q, sm.Q)
        assert arr.scale == 3.0 and arr.mask.all()
        np.testing.assert_allclose(arr.at(2.0), softmax64(sm.Q, sm.K, 3.0, None, 2.0))
        # the array file loads without pickle
        with np.load(tmp_path / "s" / rec.array_file, allow_pickle=False) as z:
            assert set(z.files) == {"A", "Q", "K", "scale", "mask"}


def test_missing_store_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="^path: no store"):
        Store(tmp_path / "nowhere")


def test_schema_1_store_is_migrated_and_keeps_its_profiles(filled_store, engine):
    """A store written before the seed column was dropped opens, keeps every profile."""
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=False))
    before = _snapshot(filled_store)
    path = filled_store.path
    filled_store.close()
    con = sqlite3.connect(path / Store.INDEX)
    with con:  # turn it back into a schema-1 store: the seed column, version "1"
        con.execute("ALTER TABLE profiles ADD COLUMN seed INTEGER NOT NULL DEFAULT 0")
        con.execute("UPDATE store_meta SET value = '1' WHERE name = 'schema_version'")
    con.close()
    with Store(path) as st:
        assert _snapshot(st) == before
    con = sqlite3.connect(path / Store.INDEX)
    cols = {r[1] for r in con.execute("PRAGMA table_info(profiles)")}
    version = con.execute("SELECT value FROM store_meta WHERE name = 'schema_version'").fetchone()
    con.close()
    assert "seed" not in cols and version == ("3",)


_SCHEMA_2_PROFILES = """
CREATE TABLE profiles_old (
    id INTEGER PRIMARY KEY,
    matrix_key TEXT NOT NULL REFERENCES matrices(key),
    temperature REAL NOT NULL,
    version TEXT NOT NULL,
    effort TEXT NOT NULL,
    eps_grid TEXT NOT NULL,
    profile BLOB NOT NULL,
    engine TEXT NOT NULL,
    elapsed_s REAL NOT NULL,
    revision INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (matrix_key, temperature, version)
)"""


def _as_schema_2(path: Path) -> None:
    """Turn a store's index back into a schema-2 one (profiles keyed without the engine)."""
    con = sqlite3.connect(path / Store.INDEX)
    con.execute("PRAGMA foreign_keys = OFF")
    with con:
        con.execute(_SCHEMA_2_PROFILES)
        con.execute("INSERT INTO profiles_old SELECT * FROM profiles")
        con.execute("DROP TABLE profiles")
        con.execute("ALTER TABLE profiles_old RENAME TO profiles")
        con.execute("UPDATE store_meta SET value = '2' WHERE name = 'schema_version'")
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'profiles'").fetchone()[0]
    dangling = con.execute("PRAGMA foreign_key_check").fetchall()
    con.close()
    assert "UNIQUE (matrix_key, temperature, version)" in sql and dangling == []


def test_schema_2_store_is_migrated_in_place_keeping_its_engines(filled_store, engine):
    """A store keyed without the engine opens as schema 3: every profile, its id, its
    brackets and its recorded engine kept; then another engine's profiles sit beside."""
    import types

    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=False))
    before = _snapshot(filled_store)
    ids = {(p.matrix_key, p.temperature): (p.id, p.engine) for p in filled_store.profiles()}
    path = filled_store.path
    filled_store.close()
    _as_schema_2(path)
    with Store(path) as st:
        assert _snapshot(st) == before
        assert {(p.matrix_key, p.temperature): (p.id, p.engine) for p in st.profiles()} == ids
        other = types.SimpleNamespace(
            name=engine.name,
            version="2",
            efforts=engine.efforts,
            profile_batch=engine.profile_batch,
            load_profile=engine.load_profile,
        )
        s = run_brackets(st, (0.1,), engine=other, run=RunSpec(progress=False))
        assert (s.computed, s.stale) == (len(ids), len(ids))
        assert st.engines() == [f"{engine.name} 1", f"{engine.name} 2"]
    con = sqlite3.connect(path / Store.INDEX)
    version = con.execute("SELECT value FROM store_meta WHERE name = 'schema_version'").fetchone()
    dangling = con.execute("PRAGMA foreign_key_check").fetchall()
    con.close()
    assert version == ("3",) and dangling == []


def test_add_extraction_keeps_layer_head_order(tmp_path):
    from analysis.sources.files import Extraction

    rng = np.random.default_rng(0)
    Q = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    K = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    scale = np.full((2, 3), 0.5)
    mask = np.tril(np.ones((5, 5), dtype=bool))
    A = softmax64(Q, K, scale, mask).astype(np.float32)
    tokens = np.asarray(list("abcde"))
    ex = Extraction(A, Q, K, scale, mask, True, tokens, {"checkpoint": "c", "input_id": "i"})
    with Store(tmp_path / "s", create=True) as store:
        keys = store.add_extraction(ex)
        assert keys == [
            matrix_key("checkpoint", "c", l, h, "i", 5) for l in range(2) for h in range(3)
        ]
        rec = store.matrix(keys[4])
        assert (rec.layer, rec.head, rec.head_id, rec.causal) == (1, 1, "c:1:1", True)
        arr = store.arrays(keys[4])
        np.testing.assert_array_equal(arr.mask, mask)
        np.testing.assert_allclose(arr.at(1.0), A[1, 1], atol=1e-6)


def test_crash_between_array_and_index_leaves_no_record(tmp_path, monkeypatch):
    """Arrays are written first; if the index commit never happens, no reader sees them."""
    store = Store(tmp_path / "s", create=True)
    sm = synthetic.identity(5)

    # A trigger makes the index insert fail after the arrays are written (as a full disk
    # or a killed process would), through SQLite itself.
    con = sqlite3.connect(tmp_path / "s" / Store.INDEX)
    con.execute(
        "CREATE TRIGGER vanish BEFORE INSERT ON matrices "
        "BEGIN SELECT RAISE(ABORT, 'disk vanished'); END"
    )
    con.commit()
    with pytest.raises(sqlite3.DatabaseError, match="disk vanished"):
        store.add_synthetic(sm)
    con.execute("DROP TRIGGER vanish")
    con.commit()
    con.close()
    assert store.matrices() == []
    # and an orphan array file does not stop the next write
    key = store.add_synthetic(sm)
    np.testing.assert_array_equal(store.arrays(key, verify=True).A, np.eye(5))
    assert not [p for p in (tmp_path / "s").rglob("*.tmp")]
    store.close()


# -- profiles ------------------------------------------------------------------------------


def test_brackets_profiles_every_matrix_and_temperature(filled_store, engine):
    s = run_brackets(
        filled_store, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False)
    )
    n = len(filled_store.matrices()) * len(TEMPS)
    assert (s.total, s.computed, s.skipped) == (n, n, 0)
    cells = filled_store.cells()
    assert len(cells) == n * len(EPS)
    assert cells["cell_key"].is_unique
    assert (cells["lo"] <= cells["hi"]).all()
    # the profiled matrix is softmax64 of the stored Q, K at that temperature
    rec = filled_store.matrices()[0]
    arr = filled_store.arrays(rec.key)
    prof = filled_store.profile(rec.key, 0.5, "default")
    sv = np.linalg.svd(arr.at(0.5), compute_uv=False)
    np.testing.assert_allclose(prof.profile_dict()["sv"], sv, atol=1e-8)
    # a rerun computes nothing
    again = run_brackets(
        filled_store, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False)
    )
    assert (again.computed, again.skipped) == (0, n)
    assert len(engine.CALLS) == n


def test_interrupted_run_resumes_to_identical_results(tmp_path, engine):
    full = fill_store(tmp_path / "full")
    run_brackets(full, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False))
    expected = _snapshot(full)
    total = len(engine.CALLS)
    full.close()

    part = fill_store(tmp_path / "part")
    engine.CALLS.clear()
    # a matrix's temperatures are one task: the third matrix fails midway, after two
    # matrices (all their temperatures) are done
    finished = 2 * len(TEMPS)
    engine.FAIL_AFTER = finished + 1
    with pytest.raises(RuntimeError, match="on purpose"):
        run_brackets(part, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False))
    assert len(list(part.profiles())) == finished  # each finished task was committed at once
    engine.FAIL_AFTER = None
    engine.CALLS.clear()
    s = run_brackets(part, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False))
    assert (s.computed, s.skipped) == (total - finished, finished)
    assert len(engine.CALLS) == total - finished  # nothing finished was recomputed
    assert _snapshot(part) == expected
    part.close()


def test_killed_subprocess_resumes_to_identical_results(tmp_path, engine):
    """SIGKILL a `brackets` run mid-way; the resumed store equals an uninterrupted one."""
    full = fill_store(tmp_path / "full")
    run_brackets(full, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False))
    expected = _snapshot(full)
    total = len(engine.CALLS)
    full.close()
    fill_store(tmp_path / "part").close()

    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}]
        from tests.fixtures import fake_engine
        fake_engine.SLEEP = 0.3
        from analysis.store import RunSpec, run_brackets
        run_brackets({str(tmp_path / "part")!r}, {EPS!r}, temperatures={TEMPS!r},
                     engine=fake_engine, run=RunSpec(progress=False))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    index = tmp_path / "part" / "index.sqlite"
    done = 0
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            with sqlite3.connect(index, timeout=30) as con:
                done = con.execute("SELECT COUNT(*) FROM profiles").fetchone()[0]
            if done >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    part = Store(tmp_path / "part")
    finished = len(list(part.profiles()))
    assert 3 <= finished < total
    engine.CALLS.clear()
    s = run_brackets(part, EPS, temperatures=TEMPS, engine=engine, run=RunSpec(progress=False))
    assert (s.computed, s.skipped) == (total - finished, finished)
    assert _snapshot(part) == expected
    part.close()


def test_new_eps_extends_the_stored_profile(filled_store, engine):
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=False))
    s = run_brackets(filled_store, (0.1, 0.3), engine=engine, run=RunSpec(progress=False))
    n = len(filled_store.matrices())
    assert (s.computed, s.extended) == (0, n)
    for p in filled_store.profiles():
        assert p.eps_grid == (0.1, 0.3)
        assert p.revision == 2
        assert sorted(p.brackets) == [0.1, 0.3]
        assert p.profile_dict()["history"] == [[0.1], [0.1, 0.3]]  # previous was passed on
    assert sum(c["previous"] for c in engine.CALLS) == n
    # a subset of the stored grid is already done
    s = run_brackets(filled_store, (0.3,), engine=engine, run=RunSpec(progress=False))
    assert s.skipped == n and s.computed == s.extended == 0


def test_profile_versions_never_overwrite_each_other(filled_store, engine):
    run_brackets(filled_store, (0.1,), effort="fast", engine=engine, run=RunSpec(progress=False))
    run_brackets(
        filled_store, (0.1,), effort="thorough", engine=engine, run=RunSpec(progress=False)
    )
    assert filled_store.versions() == ["fast", "thorough"]
    n = len(filled_store.matrices())
    assert len(filled_store.cells(version="fast")) == n
    assert len(filled_store.cells()) == 2 * n


def test_workers_give_the_same_profiles(tmp_path, engine):
    a = fill_store(tmp_path / "a", n_matrices=4)
    run_brackets(a, (0.1,), engine=engine, run=RunSpec(progress=False))
    b = fill_store(tmp_path / "b", n_matrices=4)
    run_brackets(b, (0.1,), engine=engine.ENGINE, run=RunSpec(workers=2, progress=False))
    assert _snapshot(a) == _snapshot(b)
    a.close()
    b.close()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"eps": (0.0,)}, "eps"),
        ({"eps": (float("inf"),)}, "eps"),
        ({"temperatures": (-1.0,)}, "temperatures"),
        ({"effort": "extreme"}, "effort"),
        ({"run": RunSpec(workers=0, progress=False)}, "workers"),
    ],
)
def test_bad_brackets_parameters_are_named(filled_store, engine, kwargs, name):
    args = {"eps": (0.1,), "engine": engine, "run": RunSpec(progress=False), **kwargs}
    eps = args.pop("eps")
    with pytest.raises(ParameterError) as info:
        run_brackets(filled_store, eps, **args)
    assert info.value.name == name


def test_an_engine_without_the_api_is_refused(filled_store, engine):
    import types

    with pytest.raises(ParameterError) as info:
        run_brackets(filled_store, (0.1,), engine=object(), run=RunSpec(progress=False))
    assert info.value.name == "engine"
    assert info.value.got.endswith("lacks name, version, efforts, profile_batch, load_profile")

    class Unverifiable:  # a profile that cannot be re-verified cannot be trusted
        def __init__(self, prof):
            self.bracket, self.to_dict = prof.bracket, prof.to_dict

    shim = types.SimpleNamespace(
        name=engine.name,
        version=engine.version,
        efforts=engine.efforts,
        profile_batch=lambda *a, **k: [Unverifiable(p) for p in engine.profile_batch(*a, **k)],
        load_profile=engine.load_profile,
    )
    with pytest.raises(ParameterError) as info:
        run_brackets(filled_store, (0.1,), engine=shim, run=RunSpec(progress=False))
    assert info.value.name == "engine" and info.value.got.endswith("lacks reverify")
    assert list(filled_store.profiles()) == []  # nothing it computed was stored


def test_an_engine_that_does_not_pickle_is_refused_for_workers(filled_store, engine):
    """Worker processes receive the engine with every task: a module cannot go."""
    with pytest.raises(ParameterError) as info:
        run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(workers=2, progress=False))
    assert info.value.name == "engine" and "picklable" in info.value.allowed
    assert list(filled_store.profiles()) == []


def test_the_store_efforts_are_the_engines(filled_store, engine):
    import types

    fast_only = types.SimpleNamespace(
        name=engine.name,
        version=engine.version,
        efforts=("fast",),
        profile_batch=engine.profile_batch,
        load_profile=engine.load_profile,
    )
    with pytest.raises(ParameterError) as info:
        run_brackets(
            filled_store, (0.1,), effort="default", engine=fast_only, run=RunSpec(progress=False)
        )
    assert info.value.name == "effort" and "fast" in info.value.allowed
    s = run_brackets(
        filled_store, (0.1,), effort="fast", engine=fast_only, run=RunSpec(progress=False)
    )
    assert s.computed == len(filled_store.matrices())


def test_real_engine_interrupted_run_resumes_identically(tmp_path):
    """With the real bracket engine: an interrupted run resumes to the same store."""
    import analysis.brackets as real
    from analysis.brackets.engine import Engine, default_engine

    def without_timings(snap):
        return {
            "cells": snap["cells"],
            "profiles": {
                k: (g, {f: v for f, v in d.items() if f != "stats"})
                for k, (g, d) in snap["profiles"].items()
            },
        }

    kw = {"temperatures": (0.5, 1.0), "effort": "fast", "run": RunSpec(progress=False)}
    full = fill_store(tmp_path / "full", n_matrices=4)
    run_brackets(full, (0.1, 0.2), engine=default_engine(), **kw)
    expected = without_timings(_snapshot(full))
    full.close()

    calls = []

    class Flaky(Engine):
        def profile_batch(self, As, temps, **kwargs):
            # one call per matrix: its temperatures together
            if len(calls) == 2:
                raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-run
            calls.append(1)
            return super().profile_batch(As, temps, **kwargs)

    shim = Flaky()
    part = fill_store(tmp_path / "part", n_matrices=4)
    with pytest.raises(KeyboardInterrupt):
        run_brackets(part, (0.1, 0.2), engine=shim, **kw)
    assert len(list(part.profiles())) == 4  # two matrices, both temperatures each
    s = run_brackets(part, (0.1, 0.2), engine=default_engine(), **kw)
    assert (s.computed, s.skipped) == (4, 4)
    assert without_timings(_snapshot(part)) == expected
    # every stored bracket re-checks: lo <= hi, and witnesses re-verify against A_t
    for p in part.profiles():
        prof = real.Profile.from_dict(p.profile_dict())
        assert prof.reverify(part.arrays(p.matrix_key).at(p.temperature)) == []
        for e, (lo, hi) in p.brackets.items():
            assert (lo, hi) == prof.bracket(e)
    part.close()


def test_a_second_concurrent_run_is_refused(filled_store, engine):
    fcntl = pytest.importorskip("fcntl")
    with open(filled_store.path / ".brackets.lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ParameterError) as info:
            run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=False))
        assert info.value.name == "store"
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=False))  # released: fine


def test_a_version_label_keeps_one_effort(filled_store, engine):
    run_brackets(
        filled_store,
        (0.1,),
        effort="fast",
        version="v1",
        engine=engine,
        run=RunSpec(progress=False),
    )
    with pytest.raises(ParameterError) as info:
        run_brackets(
            filled_store,
            (0.1,),
            effort="thorough",
            version="v1",
            engine=engine,
            run=RunSpec(progress=False),
        )
    assert info.value.name == "version"


def test_tampered_stored_profiles_are_reverified_and_recomputed(tmp_path):
    """Every stored profile a run covers is re-verified against its matrix first (real
    engine): a damaged witness, an inflated margin or a bracket row that its profile does
    not give is dropped and recomputed, not extended or trusted, and counted."""
    import analysis.brackets as real
    from analysis.brackets.engine import default_engine
    from tests.fixtures.tamper import (
        edit_store_profile,
        scale_upper,
        set_margin,
        set_store_bracket,
    )

    kw = {"effort": "fast", "run": RunSpec(progress=False), "engine": default_engine()}
    clean = fill_store(tmp_path / "clean", n_matrices=4)
    run_brackets(clean, (0.1,), **kw)
    run_brackets(clean, (0.1, 0.2), **kw)
    expected = {p.matrix_key: p.brackets for p in clean.profiles()}
    clean.close()

    st = fill_store(tmp_path / "st", n_matrices=4)
    s = run_brackets(st, (0.1,), **kw)
    assert (s.computed, s.reverified, s.dropped) == (4, 0, 0)
    a, b, c, _ = st.profiles()
    lo_b = b.brackets[0.1][0]
    edit_store_profile(
        st.path, a.matrix_key, 1.0, "fast", lambda d: scale_upper(d, a.brackets[0.1][1], 1.5)
    )
    edit_store_profile(st.path, b.matrix_key, 1.0, "fast", lambda d: set_margin(d, lo_b, 0.9))
    set_store_bracket(st.path, c.matrix_key, 1.0, "fast", 0.1, 1, 1)

    s = run_brackets(st, (0.1, 0.2), **kw)  # a new eps: the intact profile is extended
    assert (s.reverified, s.dropped) == (4, 3)
    assert (s.computed, s.extended, s.skipped) == (3, 1, 0)
    assert {p.matrix_key: p.brackets for p in st.profiles()} == expected
    for p in st.profiles():
        prof = real.Profile.from_dict(p.profile_dict())
        assert prof.reverify(st.arrays(p.matrix_key).at(p.temperature)) == []
        assert {e: prof.bracket(e) for e in p.eps_grid} == p.brackets

    s = run_brackets(st, (0.1, 0.2), **kw)  # nothing to do: everything re-verifies
    assert (s.reverified, s.dropped, s.computed, s.skipped) == (4, 0, 0, 4)
    st.close()


def test_profiles_of_another_engine_version_are_kept_apart_not_mixed(filled_store, engine):
    """An engine "next" run over a store of engine "1" computes its own profiles and leaves
    the old ones as they were (same rows, revisions and blobs); reading cells then needs
    an engine."""
    import types

    s = run_brackets(
        filled_store, (0.1,), temperatures=(1.0, 2.0), engine=engine, run=RunSpec(progress=False)
    )
    assert (s.computed, s.stale) == (12, 0)
    old = {
        (p.matrix_key, p.temperature): (p.id, p.revision, p.blob) for p in filled_store.profiles()
    }
    old_cells = filled_store.cells()
    newer = types.SimpleNamespace(
        name=engine.name,
        version="next",
        efforts=engine.efforts,
        profile_batch=engine.profile_batch,
        load_profile=engine.load_profile,
    )
    engine.CALLS.clear()
    kw = {"temperatures": (1.0, 2.0), "engine": newer, "run": RunSpec(progress=False)}
    s = run_brackets(filled_store, (0.1,), **kw)
    assert (s.computed, s.extended, s.skipped, s.stale) == (12, 0, 0, 12)
    assert not any(c["previous"] for c in engine.CALLS)  # from scratch, not extended
    assert s.stale_note() == (
        "12 stored profiles of another engine version were left as they are "
        "(kept apart from this engine's)"
    )
    labels = [f"{engine.name} 1", f"{engine.name} next"]
    assert filled_store.engines() == labels
    kept = {
        (p.matrix_key, p.temperature): (p.id, p.revision, p.blob)
        for p in filled_store.profiles(engine=labels[0])
    }
    assert kept == old
    assert len(list(filled_store.profiles(engine=labels[1]))) == 12
    with pytest.raises(ParameterError) as info:
        filled_store.cells()
    assert info.value.name == "engine"
    assert all(label in str(info.value) for label in labels)
    assert (
        filled_store.cells(engine=labels[0])
        .drop(columns="engine")
        .equals(old_cells.drop(columns="engine"))
    )
    assert set(filled_store.cells(engine=labels[1])["engine"]) == {labels[1]}
    assert set(filled_store.cells(engine=1)["engine"]) == {labels[0]}  # by version number
    key, t = next(iter(old))
    with pytest.raises(ParameterError, match="^engine: "):
        filled_store.profile(key, t, "default")
    assert filled_store.profile(key, t, "default", labels[1]).engine == labels[1]
    engine.CALLS.clear()
    s = run_brackets(filled_store, (0.1,), **kw)
    assert (s.computed, s.skipped, s.stale) == (0, 12, 12) and not engine.CALLS


def test_temperatures_added_later_are_what_a_fresh_run_stores(tmp_path):
    """Real engine: a matrix's temperatures are searched side by side, as one task. A store
    that had t = 1 alone and is then asked for (0.5, 1, 2) searches all three again and
    commits the two new ones: they are what a run over all three at once stores."""
    import analysis.brackets as real
    from analysis.brackets.engine import default_engine

    kw = {"effort": "default", "run": RunSpec(progress=False), "engine": default_engine()}
    one = fill_store(tmp_path / "one", n_matrices=3)
    s = run_brackets(one, (0.1,), temperatures=(0.5, 1.0, 2.0), **kw)
    assert s.computed == 9
    expected = {(p.matrix_key, p.temperature): p.brackets for p in one.profiles()}
    batch = {real.Profile.from_dict(p.profile_dict()).stats["batch"] for p in one.profiles()}
    assert batch == {3}
    one.close()
    two = fill_store(tmp_path / "two", n_matrices=3)
    run_brackets(two, (0.1,), temperatures=(1.0,), **kw)
    s = run_brackets(two, (0.1,), temperatures=(0.5, 1.0, 2.0), **kw)
    assert (s.computed, s.skipped) == (6, 3)
    got = {(p.matrix_key, p.temperature): p.brackets for p in two.profiles()}
    assert {k: v for k, v in got.items() if k[1] != 1.0} == {
        k: v for k, v in expected.items() if k[1] != 1.0
    }
    for p in two.profiles():
        prof = real.Profile.from_dict(p.profile_dict())
        assert prof.reverify(two.arrays(p.matrix_key).at(p.temperature)) == []
    two.close()
