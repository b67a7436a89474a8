"""The store index's schema, its migrations, and which engine's profiles a read selects.

Schema versions: 1 had a ``profiles.seed`` column; 2 dropped it; 3 keys profiles by
``(matrix, temperature, version label, engine)``, so that the profiles of several engine
versions sit side by side in one store and a run of one engine never touches another's.
An older store is migrated in place when it is opened, in one transaction each step;
existing rows keep the engine they recorded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from analysis.validation import ParameterError

__all__ = ["SCHEMA", "SCHEMA_VERSION", "migrate", "select_engine"]

# 2: profiles lost their ``seed`` column (the bracket search is deterministic and never
# used it). 3: the engine is part of a profile's key (UNIQUE (matrix_key, temperature,
# version, engine)); profiles of several engines are kept apart, never mixed.
SCHEMA_VERSION = "3"

_PROFILE_COLUMNS = (
    "id, matrix_key, temperature, version, effort, eps_grid, profile, engine, elapsed_s, "
    "revision, created_at, updated_at"
)

_PROFILES = """
CREATE TABLE IF NOT EXISTS {name} (
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
    UNIQUE (matrix_key, temperature, version, engine)
);
"""

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS matrices (
    key TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    checkpoint TEXT NOT NULL,
    layer INTEGER NOT NULL,
    head INTEGER NOT NULL,
    input_id TEXT NOT NULL,
    length INTEGER NOT NULL,
    head_id TEXT NOT NULL,
    n_rows INTEGER NOT NULL,
    head_dim INTEGER NOT NULL,
    causal INTEGER NOT NULL,
    array_file TEXT NOT NULL,
    array_sha256 TEXT NOT NULL,
    meta TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (source, checkpoint, layer, head, input_id, length)
);
"""
    + _PROFILES.format(name="profiles")
    + """
CREATE TABLE IF NOT EXISTS brackets (
    profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
    eps REAL NOT NULL,
    lo INTEGER NOT NULL,
    hi INTEGER NOT NULL,
    PRIMARY KEY (profile_id, eps)
);
"""
)


def _schema_version(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT value FROM store_meta WHERE name = 'schema_version'").fetchone()[0]


def _set_version(conn: sqlite3.Connection, version: str) -> None:
    conn.execute("UPDATE store_meta SET value = ? WHERE name = 'schema_version'", (version,))


def _from_1(conn: sqlite3.Connection) -> None:
    """1 -> 2: drop the unused ``profiles.seed`` column."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(profiles)")}
    if "seed" in cols:
        conn.execute("ALTER TABLE profiles DROP COLUMN seed")
    _set_version(conn, "2")


def _from_2(conn: sqlite3.Connection) -> None:
    """2 -> 3: rebuild ``profiles`` with the engine in its key (SQLite cannot alter a
    UNIQUE constraint); every row, its id and its recorded engine are kept, so the
    ``brackets`` rows still point at their profiles."""
    conn.execute(_PROFILES.format(name="profiles_v3"))
    conn.execute(
        f"INSERT INTO profiles_v3 ({_PROFILE_COLUMNS}) SELECT {_PROFILE_COLUMNS} FROM profiles"
    )
    conn.execute("DROP TABLE profiles")
    conn.execute("ALTER TABLE profiles_v3 RENAME TO profiles")
    _set_version(conn, "3")


_STEPS = {"1": _from_1, "2": _from_2}


def migrate(conn: sqlite3.Connection) -> str:
    """Bring an open index to :data:`SCHEMA_VERSION` in place; return the version found
    after (another, unknown version is left as it is for the caller to refuse).

    Each step is one transaction (``BEGIN IMMEDIATE``: a second process opening the same
    old store waits, then finds it migrated). Foreign keys are off during a step, so that
    rebuilding ``profiles`` does not cascade into ``brackets``; the step ends with
    ``PRAGMA foreign_key_check`` (a dangling bracket row rolls it back).
    """
    found = _schema_version(conn)
    while found in _STEPS:
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                found = _schema_version(conn)
                if found in _STEPS:
                    _STEPS[found](conn)
                    if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                        raise sqlite3.IntegrityError("store migration left dangling rows")
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
        found = _schema_version(conn)
    return found


def engine_matches(label: str, engine: Any) -> bool:
    """Whether the recorded engine ``label`` (``"analysis.brackets 4"``) is ``engine``: the
    same label, or an int (or int-valued string) equal to the label's version."""
    if isinstance(engine, bool):
        return False
    if isinstance(engine, int) or (isinstance(engine, str) and engine.strip().isdigit()):
        return label.rpartition(" ")[2] == str(int(engine))
    return label == engine


def select_engine(present: Sequence[str], engine: Any, what: str) -> str | None:
    """The one recorded engine label a read of ``what`` uses, among the labels ``present``.

    ``engine`` None picks the only engine present (None when there is none); with
    several present it is an error naming ``engine`` and listing them, since profiles of
    two engines are never mixed. A label or a version number picks that engine, which
    must be present unless nothing is (an empty store reads as empty).

    Examples
    --------
    >>> from analysis.store.schema import select_engine
    >>> select_engine(["analysis.brackets 4"], None, "cells")
    'analysis.brackets 4'
    >>> select_engine(["analysis.brackets 4", "analysis.brackets 5"], 5, "cells")
    'analysis.brackets 5'
    >>> select_engine(["analysis.brackets 4", "analysis.brackets 5"], None, "cells")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engines whose cells the store holds (analysis.brackets 4, analysis.brackets 5): profiles of several engines are never mixed, got None
    """
    present = sorted(set(present))
    listing = ", ".join(present)
    if engine is None:
        if len(present) > 1:
            raise ParameterError(
                "engine",
                f"one of the engines whose {what} the store holds ({listing}): profiles of "
                "several engines are never mixed",
                None,
            )
        return present[0] if present else None
    chosen = [label for label in present if engine_matches(label, engine)]
    if len(chosen) == 1:
        return chosen[0]
    if not present:
        return None
    raise ParameterError(
        "engine", f"one of the engines whose {what} the store holds ({listing})", engine
    )
