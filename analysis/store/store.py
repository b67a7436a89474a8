"""The cell store: matrix records, their arrays, and bracket profiles per temperature.

Layout of a store folder and the order of writes that keeps a half-written record
unreadable: docs/sources.md, "The cell store" (its "Atomicity" bullet).

Why SQLite for the index: it ships with Python (no new dependency), every write is an ACID
transaction that survives a killed process, readers never see a half-committed row, and the
whole index is one portable file. DuckDB would add a dependency and a stricter single-writer
lock for no gain at this size. Arrays live in ``.npz`` files (numpy's own format, loadable
with ``allow_pickle=False``), written atomically (temporary file, fsync, ``os.replace``).

A file without a row (a crash between the array write and its index commit) is an orphan
that the next write of the same key replaces.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from analysis.atomic import atomic_savez
from analysis.hashing import file_sha256
from analysis.store.arrays import (
    MatrixArrays,
    existing_action,
    extraction_records,
    load_arrays,
    record_arrays,
    synthetic_record,
    writable_array_path,
)
from analysis.store.integrity import StoreIntegrityError, check_array_file, resolve_array_file
from analysis.store.keys import MATRIX_FIELDS, cell_key, matrix_key
from analysis.store.records import MatrixRecord, ProfileRecord, ProfileResult
from analysis.store.schema import SCHEMA, SCHEMA_VERSION, engine_matches, migrate, select_engine
from analysis.validation import ParameterError

__all__ = [
    "MatrixArrays",
    "MatrixRecord",
    "ProfileRecord",
    "ProfileResult",
    "Store",
    "StoreIntegrityError",
]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


#: The first bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_index_file(index: Path) -> None:
    """Refuse an ``index.sqlite`` that is there but is no SQLite file: not a regular file
    (a directory, a dangling link), empty (0 bytes: SQLite would take it for a new, empty
    store), or a file that does not start with SQLite's header. Nothing is written to it.
    """
    allowed = f"a store whose {index.name} is a readable SQLite index"
    if not index.is_file():
        kind = "a directory" if index.is_dir() else "not a regular file"
        raise ParameterError("path", allowed, f"{index}: {kind}")
    with open(index, "rb") as fh:
        head = fh.read(len(_SQLITE_HEADER))
    if not head:
        raise ParameterError("path", allowed, f"{index}: an empty file (0 bytes)")
    if head != _SQLITE_HEADER:
        raise ParameterError("path", allowed, f"{index}: not an SQLite file")


class Store:
    """A folder holding matrix records, arrays and bracket profiles.

    Parameters
    ----------
    path : str or path
        The store folder.
    create : bool
        Create the folder and index when missing; otherwise a missing store is a
        ``FileNotFoundError``.

    Examples
    --------
    Two synthetic matrices bracketed (for eps < 1, ``r_eps(I_8) = 8``; uniform: rank 1):

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity, uniform_rows
    >>> from analysis.store import RunSpec, Store, run_brackets
    >>> with Store("store", create=True) as st:
    ...     keys = [st.add_synthetic(identity(8)), st.add_synthetic(uniform_rows(8))]
    ...     quiet = RunSpec(progress=False)
    ...     _ = run_brackets(st, (0.5,), engine=default_engine(), effort="fast", run=quiet)
    ...     cells = st.cells()
    >>> cells[["checkpoint", "eps", "lo", "hi"]]
      checkpoint  eps  lo  hi
    0   identity  0.5   8   8
    1    uniform  0.5   1   1
    """

    INDEX = "index.sqlite"

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False):
        self.path = Path(path)
        index = self.path / self.INDEX
        if index.exists() or index.is_symlink():
            _check_index_file(index)
        elif not create:
            raise FileNotFoundError(f"path: no store at {self.path} (missing {self.INDEX})")
        else:
            self.path.mkdir(parents=True, exist_ok=True)
        #: keys whose missing or damaged array file an add rewrote, and keys whose arrays
        #: an add replaced (``replace``), in this session
        self.repaired: list[str] = []
        self.replaced: list[str] = []
        self._conn = sqlite3.connect(index, timeout=60.0)
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            with self._conn:
                self._conn.executescript(SCHEMA)
                self._conn.execute(
                    "INSERT OR IGNORE INTO store_meta VALUES ('schema_version', ?)",
                    (SCHEMA_VERSION,),
                )
            # an older store (schema 1 or 2) is migrated in place (analysis.store.schema)
            found = migrate(self._conn)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise  # busy past the timeout, not damaged
            raise ParameterError(
                "path", f"a store whose {self.INDEX} is a readable SQLite index", f"{index}: {exc}"
            ) from exc
        if found != SCHEMA_VERSION:
            raise ParameterError("path", f"a store of schema version {SCHEMA_VERSION}", found)

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the index connection."""
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- outcomes ----------------------------------------------------------------------

    _OUTCOMES = "outcomes"

    def outcome_record(self) -> dict[str, str] | None:
        """When outcomes were first computed in this store, and under which lock.

        Returns
        -------
        dict or None
            ``{"time": ISO time, "lock_sha256": str, "design": str, "store": str}`` as
            :meth:`record_outcomes` first wrote it; None when no outcome was recorded.
        """
        row = self._conn.execute(
            "SELECT value FROM store_meta WHERE name = ?", (self._OUTCOMES,)
        ).fetchone()
        if row is None:
            return None
        return {**json.loads(row[0]), "store": str(self.path)}

    def record_outcomes(
        self,
        *,
        lock_sha256: str,
        design: str,
        design_path: str | None = None,
        design_sha256: str | None = None,
    ) -> dict[str, str]:
        """Record, once, that outcomes are computed here under the lock ``lock_sha256``.

        Called before the first bracket of a study is computed; a later call keeps the
        first record (the time outcomes first existed is what a preregistration needs),
        so the design's lock can no longer be reset or its core amended
        (``analysis.prereg.lock_design``, ``amend_design``). The record is bound to the
        design: its file name, and when given its resolved path and hash at that time.
        Returns the stored record.
        """
        if not isinstance(lock_sha256, str) or not lock_sha256:
            raise ParameterError("lock_sha256", "the lock hash of the study", lock_sha256)
        rec = {"time": _now(), "lock_sha256": lock_sha256, "design": str(design)}
        if design_path is not None:
            rec["design_path"] = str(design_path)
        if design_sha256 is not None:
            rec["design_sha256"] = str(design_sha256)
        value = json.dumps(rec)
        with self._conn:
            self._conn.execute(
                "INSERT OR IGNORE INTO store_meta VALUES (?, ?)", (self._OUTCOMES, value)
            )
        record = self.outcome_record()
        if record is None:  # cannot happen: the row was just written or already there
            raise RuntimeError(f"store {self.path}: the outcome record was not written")
        return record

    # -- matrices ----------------------------------------------------------------------

    def _array_path(self, key: str) -> Path:
        return self.path / "arrays" / key[:2] / f"{key}.npz"

    def add_matrices(
        self, records: Iterable[dict[str, Any]], *, replace: str | None = None
    ) -> list[str]:
        """Add matrix records in one transaction; return their keys.

        A record is a dict: ``source``, ``checkpoint``, ``layer``, ``head``, ``input_id``,
        ``length`` (the index fields), ``A`` ``[L, L]``, ``Q`` and ``K`` ``[L, d]``,
        ``scale``, and optionally ``mask`` (bool ``[L, L]``; all allowed when None or
        absent), ``bias`` (an additive ``[L, L]`` logit term beside ``scale Q K^T``,
        stored only when given) and ``meta`` (a JSON-able dict).

        Array files are written (atomically) first; the index rows then commit together.
        A key already stored is checked against the new arrays first, before anything is
        written: the same arrays leave it as it is; a missing or damaged array file (or one
        outside the store) is rewritten from the new arrays and the repair recorded in the
        row's ``meta["repaired"]`` (key in :attr:`repaired`); other arrays in an intact
        file are refused, unless ``replace`` gives the reason to replace them (recorded in
        ``meta["replaced"]`` with the old file's SHA-256; the key's stored profiles,
        computed from the old arrays, are dropped; key in :attr:`replaced`).

        Raises
        ------
        ParameterError
            Naming ``replace``: a stored key holds other arrays and no reason was given
            (or the reason is empty).
        """
        if replace is not None and (not isinstance(replace, str) or not replace.strip()):
            raise ParameterError("replace", "a reason to replace stored arrays", replace)
        # One write lock from the check to the commit: a second add of the same key (another
        # process) waits, then finds this one's row and file, so a row never names a file
        # that another add overwrote between its check and its insert.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            keys = self._add_locked(records, replace)
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise
        return keys

    def _add_locked(self, records: Iterable[dict[str, Any]], replace: str | None) -> list[str]:
        """:meth:`add_matrices` inside its ``BEGIN IMMEDIATE`` transaction (not committed)."""
        planned, keys = [], []
        for rec in records:
            fields = {f: rec[f] for f in MATRIX_FIELDS}
            key = matrix_key(**fields)
            keys.append(key)
            arrays = record_arrays(rec, int(fields["length"]))
            action, old = "new", None
            if self.has_matrix(key):
                old = self.matrix(key)
                action = existing_action(self.path, old, arrays, replace)
                if action == "same":
                    continue
            writable_array_path(self._array_path(key), self.path, key)
            planned.append((key, fields, arrays, rec.get("meta") or {}, action, old))
        rows, updates = [], []
        for key, fields, arrays, meta, action, old in planned:
            path = self._array_path(key)
            atomic_savez(path, arrays)
            digest = file_sha256(path)
            array_file = str(path.relative_to(self.path))
            if old is not None:
                kept = {k: old.meta[k] for k in ("repaired", "replaced") if k in old.meta}
                meta = {**(old.meta if action != "replace" else meta), **kept}
                entry = {"time": _now(), "old_array_sha256": old.array_sha256}
                if action == "replace":
                    entry["reason"] = replace.strip()
                    meta["replaced"] = [*meta.get("replaced", []), entry]
                else:
                    entry["found"] = action.partition(":")[2]
                    meta["repaired"] = [*meta.get("repaired", []), entry]
                text = json.dumps(meta, sort_keys=True, default=str)
                updates.append((key, array_file, digest, text, action == "replace"))
                continue
            head_id = f"{fields['checkpoint']}:{fields['layer']}:{fields['head']}"
            shape = (arrays["A"].shape[0], arrays["Q"].shape[1], not arrays["mask"].all())
            text = json.dumps(meta, sort_keys=True, default=str)
            row = (*[fields[f] for f in MATRIX_FIELDS], head_id, *map(int, shape), array_file)
            rows.append((key, *row, digest, text, _now()))
        self._conn.executemany(
            "INSERT OR IGNORE INTO matrices VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
        )
        for key, array_file, digest, text, drop in updates:
            self._conn.execute(
                "UPDATE matrices SET array_file = ?, array_sha256 = ?, meta = ? WHERE key = ?",
                (array_file, digest, text, key),
            )
            if drop:  # profiles of the old arrays (their brackets cascade)
                self._conn.execute("DELETE FROM profiles WHERE matrix_key = ?", (key,))
        for key, *_, drop in updates:
            (self.replaced if drop else self.repaired).append(key)
        return keys

    def add_extraction(
        self,
        extraction: Any,
        *,
        source: str = "checkpoint",
        heads: Iterable[tuple[int, int]] | None = None,
        replace: str | None = None,
    ) -> list[str]:
        """Add the (layer, head) matrices of an :class:`~analysis.sources.checkpoints.Extraction`.

        ``heads`` selects (layer, head) pairs (None = every head). Returns the matrix keys
        in ``[layer, head]`` order (row-major). Stored keys are repaired, kept or (with a
        ``replace`` reason) replaced as :meth:`add_matrices` says.
        """
        return self.add_matrices(extraction_records(extraction, source, heads), replace=replace)

    def add_synthetic(self, matrix: Any, *, head: int = 0, input_id: str | None = None) -> str:
        """Add a :class:`~analysis.sources.synthetic.SyntheticMatrix` (source ``"synthetic"``).

        The record's checkpoint field is the family with its fixed parameters, layer 0,
        ``head`` a replicate index, and ``input_id`` defaults to ``"seed:<seed>"``.
        """
        return self.add_matrices([synthetic_record(matrix, head, input_id)])[0]

    def has_matrix(self, key: str) -> bool:
        return (
            self._conn.execute("SELECT 1 FROM matrices WHERE key = ?", (key,)).fetchone()
            is not None
        )

    @staticmethod
    def _record(row: sqlite3.Row) -> MatrixRecord:
        d = dict(row)
        d["causal"] = bool(d["causal"])
        d["meta"] = json.loads(d.pop("meta"))
        d.pop("created_at", None)
        return MatrixRecord(**d)

    def matrices(self, **where: Any) -> list[MatrixRecord]:
        """Matrix records, optionally filtered by equality on index columns, sorted by
        (source, checkpoint, input_id, length, layer, head)."""
        allowed = set(MATRIX_FIELDS) | {"key", "head_id"}
        bad = sorted(set(where) - allowed)
        if bad:
            raise ParameterError("where", "columns " + ", ".join(sorted(allowed)), bad)
        clause = " AND ".join(f"{k} = ?" for k in where) or "1"
        rows = self._conn.execute(
            f"SELECT * FROM matrices WHERE {clause} "
            "ORDER BY source, checkpoint, input_id, length, layer, head",
            tuple(where.values()),
        ).fetchall()
        return [self._record(r) for r in rows]

    def matrix(self, key: str) -> MatrixRecord:
        row = self._conn.execute("SELECT * FROM matrices WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise ParameterError("key", "a matrix key in this store", key)
        return self._record(row)

    def array_file(self, key: str, *, verify: bool = False) -> Path:
        """The array file of matrix ``key``, checked: inside the store, present, and of the
        SHA-256 recorded when it was added (hashed once per process while the file's size
        and mtime stay; ``verify`` hashes it again).

        Raises
        ------
        StoreIntegrityError
            Naming the key and the file (:mod:`analysis.store.integrity`).
        """
        rec = self.matrix(key)
        path = resolve_array_file(self.path, rec.array_file, key)
        return check_array_file(path, rec.array_sha256, key=key, file=rec.array_file, force=verify)

    def arrays(self, key: str, *, verify: bool = False) -> MatrixArrays:
        """Load the arrays of matrix ``key``, its file checked first by :meth:`array_file`
        (``verify``: hashed again even if this process checked it before)."""
        return load_arrays(self.array_file(key, verify=verify))

    # -- profiles ----------------------------------------------------------------------

    def put_profile(
        self, matrix: str, temperature: float, version: str, result: ProfileResult, *, engine: str
    ) -> int:
        """Insert or extend the profile of (matrix, temperature, version, engine), atomically.

        The profile row and its per-eps bracket rows commit in one transaction; an existing
        row for the same four is replaced (its revision counter goes up). The profiles of
        another ``engine`` (the recorded label, ``"analysis.brackets 4"``) are another row:
        never replaced, never mixed. A duplicate (the same profile, grid, effort and
        brackets as stored: a result delivered twice) changes nothing.
        """
        blob = zlib.compress(json.dumps(result.profile, separators=(",", ":")).encode("utf-8"), 6)
        grid = json.dumps(sorted(float(e) for e in result.eps_grid))
        rows = [(float(e), int(lo), int(hi)) for e, (lo, hi) in sorted(result.brackets.items())]
        values = (result.effort, grid, blob, engine, float(result.elapsed_s))
        now, run = _now(), self._conn.execute
        with self._conn:
            cur = run(
                "SELECT id, revision, created_at, effort, eps_grid, profile, engine FROM profiles "
                "WHERE matrix_key = ? AND temperature = ? AND version = ? AND engine = ?",
                (matrix, float(temperature), version, engine),
            ).fetchone()
            if cur is not None and (cur["effort"], cur["eps_grid"], cur["profile"]) == values[:3]:
                stored = run(
                    "SELECT eps, lo, hi FROM brackets WHERE profile_id = ? ORDER BY eps",
                    (cur["id"],),
                ).fetchall()
                if [tuple(r) for r in stored] == rows:
                    return int(cur["id"])
            if cur is None:
                pid = run(
                    "INSERT INTO profiles (matrix_key, temperature, version, effort, "
                    "eps_grid, profile, engine, elapsed_s, revision, created_at, updated_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (matrix, float(temperature), version, *values, 1, now, now),
                ).lastrowid
            else:
                pid = cur["id"]
                run(
                    "UPDATE profiles SET effort = ?, eps_grid = ?, profile = ?, "
                    "engine = ?, elapsed_s = ?, revision = ?, updated_at = ? WHERE id = ?",
                    (*values, cur["revision"] + 1, now, pid),
                )
                run("DELETE FROM brackets WHERE profile_id = ?", (pid,))
            self._conn.executemany(
                "INSERT INTO brackets VALUES (?,?,?,?)", [(pid, *r) for r in rows]
            )
        return int(pid)

    def profile(
        self, matrix: str, temperature: float, version: str, engine: str | int | None = None
    ) -> ProfileRecord | None:
        """The stored profile of (matrix, temperature, version, engine), or None.

        ``engine`` is a recorded label (``"analysis.brackets 4"``) or a version number
        (``4``); None: the only engine stored for the triple (several: a ParameterError
        naming ``engine`` and listing them).
        """
        rows = self._conn.execute(
            "SELECT * FROM profiles WHERE matrix_key = ? AND temperature = ? AND version = ?",
            (matrix, float(temperature), version),
        ).fetchall()
        if engine is None and len(rows) > 1:
            select_engine([r["engine"] for r in rows], None, "profiles")
        rows = [r for r in rows if engine is None or engine_matches(r["engine"], engine)]
        return self._profile_record(rows[0]) if rows else None

    def _profile_record(self, row: sqlite3.Row) -> ProfileRecord:
        br = {
            float(r["eps"]): (int(r["lo"]), int(r["hi"]))
            for r in self._conn.execute(
                "SELECT eps, lo, hi FROM brackets WHERE profile_id = ? ORDER BY eps", (row["id"],)
            )
        }
        return ProfileRecord(
            id=int(row["id"]),
            matrix_key=row["matrix_key"],
            temperature=float(row["temperature"]),
            version=row["version"],
            effort=row["effort"],
            eps_grid=tuple(json.loads(row["eps_grid"])),
            engine=row["engine"],
            elapsed_s=float(row["elapsed_s"]),
            revision=int(row["revision"]),
            brackets=br,
            blob=bytes(row["profile"]),
        )

    def profile_grids(
        self, version: str, engine: str
    ) -> dict[tuple[str, float], tuple[tuple[float, ...], str]]:
        """``{(matrix key, temperature): (eps grid, effort)}`` of every profile of ``version``
        computed by the engine labelled ``engine`` (one light query: no blobs, no brackets)."""
        rows = self._conn.execute(
            "SELECT matrix_key, temperature, eps_grid, effort FROM profiles "
            "WHERE version = ? AND engine = ?",
            (version, engine),
        )
        return {(r[0], float(r[1])): (tuple(json.loads(r[2])), r[3]) for r in rows}

    def engines(self, *, version: str | None = None) -> list[str]:
        """The engine labels recorded with the stored profiles (of one ``version`` label,
        when given), sorted: e.g. ``["analysis.brackets 4", "analysis.brackets 5"]``."""
        sql = "SELECT DISTINCT engine FROM profiles" + (" WHERE version = ?" if version else "")
        return sorted(r[0] for r in self._conn.execute(sql, (version,) if version else ()))

    def profiles(
        self, *, version: str | None = None, engine: str | int | None = None
    ) -> Iterator[ProfileRecord]:
        """Every stored profile (optionally of one version label, of one engine: a label or
        a version number), in id order, as stored.

        Nothing here is re-verified (the store knows no engine);
        :func:`analysis.store.run_brackets` re-verifies every profile it covers against its
        matrix, and recomputes those that fail, before it skips or extends them.
        """
        sql = "SELECT * FROM profiles" + (" WHERE version = ?" if version else "") + " ORDER BY id"
        for row in self._conn.execute(sql, (version,) if version else ()).fetchall():
            if engine is None or engine_matches(row["engine"], engine):
                yield self._profile_record(row)

    def versions(self) -> list[str]:
        """Profile versions present in the store."""
        return [
            r[0] for r in self._conn.execute("SELECT DISTINCT version FROM profiles ORDER BY 1")
        ]

    # -- cells -------------------------------------------------------------------------

    def iter_cells(
        self, *, version: str | None = None, engine: str | int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Yield one dict per cell (matrix x temperature x eps) that has a bracket.

        Keys: ``cell_key``, ``matrix_key``, the matrix fields, ``head_id``, ``temperature``,
        ``eps``, ``lo``, ``hi``, ``version``, ``effort``, ``engine``.

        The cells are those of one engine, never a mix: ``engine`` is a recorded label
        (``"analysis.brackets 4"``) or a version number (``4``); None reads the only engine
        stored (of ``version``, when given). Several engines and no ``engine``, or an
        ``engine`` the store does not hold beside others, is a ParameterError naming
        ``engine`` and listing the engines present.

        The brackets are the stored rows, as stored. They are certified as far as the last
        :func:`analysis.store.run_brackets` over them re-verified their profiles (it checks
        each profile's witnesses against its matrix and these rows against the profile);
        the study's brackets stage runs it before the study reads them.
        """
        sql = (
            "SELECT m.key AS matrix_key, m.source, m.checkpoint, m.layer, m.head, m.input_id, "
            "m.length, m.head_id, p.temperature, b.eps, b.lo, b.hi, p.version, p.effort, "
            "p.engine FROM brackets b JOIN profiles p ON b.profile_id = p.id "
            "JOIN matrices m ON p.matrix_key = m.key WHERE p.engine = ?"
            + (" AND p.version = ?" if version else "")
            + " ORDER BY m.source, m.checkpoint, m.input_id, m.length, m.layer, m.head, "
            "p.temperature, b.eps, p.version"
        )
        label = select_engine(self.engines(version=version), engine, "cells")
        if label is None:
            return
        args = (label, version) if version else (label,)
        for row in self._conn.execute(sql, args).fetchall():
            d = dict(row)
            yield {"cell_key": cell_key(d["matrix_key"], d["temperature"], d["eps"]), **d}

    def cells(self, *, version: str | None = None, engine: str | int | None = None) -> Any:
        """The cells of one engine as a :class:`pandas.DataFrame` (columns and ``engine``
        as :meth:`iter_cells`)."""
        import pandas as pd

        columns = [
            "cell_key",
            "matrix_key",
            *MATRIX_FIELDS,
            "head_id",
            "temperature",
            "eps",
            "lo",
            "hi",
            "version",
            "effort",
            "engine",
        ]
        rows = list(self.iter_cells(version=version, engine=engine))
        return pd.DataFrame(rows, columns=columns)
