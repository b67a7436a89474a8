"""One answer to "do outcomes of this design exist?", wherever its store is.

The study store records when outcomes first existed and under which lock
(:meth:`analysis.store.Store.record_outcomes`); the run also writes that record beside the
design, in ``FILE.outcomes.json`` (:func:`outcomes_path`), and :func:`study_outcomes`
consults every place it can be, so the answer does not depend on ``--root``. Which places,
which commands read it (:func:`check_lock_age` for ``attnrank run``) and what it cannot
see: docs/prereg.md, "Outcomes, wherever the store is".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.prereg.lock import FROZEN_SECTIONS, PreregistrationError
from analysis.prereg.lock_history import first_locked_at, frozen_after_outcomes, parse_time
from analysis.study.paths import study_paths

__all__ = [
    "bind_outcomes",
    "check_frozen_amendments",
    "check_lock_age",
    "outcomes_path",
    "study_outcomes",
]

FORMAT = "attnrank-outcomes/1"


def outcomes_path(design_path: str | os.PathLike) -> Path:
    """``FILE.outcomes.json`` beside the design ``FILE``.

    Examples
    --------
    >>> from analysis.study.outcomes import outcomes_path
    >>> outcomes_path("preregistration/toy.toml").as_posix()
    'preregistration/toy.toml.outcomes.json'
    """
    p = Path(design_path)
    return p.with_name(p.name + ".outcomes.json")


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PreregistrationError(
            f"{path} (the outcome record beside the design) is not readable JSON: {exc}; "
            "restore it from version control",
            name="outcomes",
        ) from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise PreregistrationError(f"{path}: not an outcome record ({FORMAT})", name="outcomes")
    return rec


def _store_record(store: Path) -> dict[str, Any] | None:
    from analysis.store.store import Store

    if not (store / Store.INDEX).is_file():
        return None
    with Store(store) as s:
        return s.outcome_record()


def _stores_named(design: Path, rec: Mapping[str, Any] | None) -> list[Path]:
    out = []
    for entry in (rec or {}).get("stores", []):
        p = Path(str(entry.get("store", "")))
        out.append((design.parent / p).resolve() if not p.is_absolute() else p)
    return out


def _stores_in_lock(design: Path, rec: Mapping[str, Any] | None = None) -> list[Path]:
    """The stores the lock names (``outcome_stores``, written by :func:`bind_outcomes`);
    ``rec`` is the lock record when the caller has read it already (else it is read)."""
    from analysis.prereg.lock import lock_path

    if rec is None:
        try:
            rec = json.loads(lock_path(design).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # no lock or not JSON: the commands that need it say so
            return []
    entries = rec.get("outcome_stores") if isinstance(rec, dict) else None
    return _stores_named(design, {"stores": entries if isinstance(entries, list) else []})


def _note_in_lock(design: Path, store: Path, rel: str) -> None:
    """Name a store outside the default root in the lock's ``outcome_stores`` (outside
    the lock hash), so that deleting ``FILE.outcomes.json`` does not hide it."""
    from analysis.prereg.lock import lock_path, write_lock

    if store == study_paths(design).store.resolve():
        return  # the default root is consulted anyway (and shipped locks stay as they are)
    lp = lock_path(design)
    try:
        rec = json.loads(lp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(rec, dict):
        return
    stores = list(rec.get("outcome_stores") or [])
    if any(isinstance(e, dict) and e.get("store") == rel for e in stores):
        return
    rec["outcome_stores"] = [*stores, {"store": rel}]
    write_lock(lp, rec)


def study_outcomes(
    design_path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    lock_record: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The first outcome record of a design, found wherever it is (None when none exists).

    Parameters
    ----------
    design_path : path
    root : path, optional, keyword-only
        The study root a command was given (``--root``); the default root is consulted
        as well, and so is every store named beside the design (``FILE.outcomes.json``)
        or in its lock (``outcome_stores``).
    lock_record : mapping, optional, keyword-only
        The design's lock record when the caller holds it (a run reads its lock once);
        else the lock file is read for its ``outcome_stores``.

    Returns
    -------
    dict or None
        The earliest record: ``time``, ``lock_sha256``, ``design`` (and, for records made
        by this version, ``design_path``, ``design_sha256``), ``store`` (where it is) and
        ``found_in`` (every place that holds an outcome record of the design).

    Examples
    --------
    A store at another root; the file beside the design names it, so a command given an
    empty root still sees the outcomes:

    >>> from analysis.store import Store
    >>> from analysis.study.outcomes import bind_outcomes, study_outcomes
    >>> from analysis.study.paths import study_paths
    >>> study_outcomes("studies/found.toml") is None
    True
    >>> with Store(study_paths("studies/found.toml", root="elsewhere").store, create=True) as s:
    ...     rec = s.record_outcomes(lock_sha256="a" * 64, design="found.toml")
    >>> study_outcomes("studies/found.toml") is None  # not under the default root
    True
    >>> _ = bind_outcomes("studies/found.toml", rec)
    >>> found = study_outcomes("studies/found.toml", root="empty")
    >>> found["time"] == rec["time"], len(found["found_in"])
    (True, 2)
    """
    design = Path(design_path).resolve()
    side = _read(outcomes_path(design))
    stores = [study_paths(design, root=root).store, study_paths(design).store]
    stores += _stores_named(design, side) + _stores_in_lock(design, lock_record)
    found: list[dict[str, Any]] = []
    seen: set[Path] = set()
    for store in stores:
        store = store.resolve()
        if store in seen:
            continue
        seen.add(store)
        rec = _store_record(store)
        if rec is not None:
            found.append(rec)
    if side is not None and side.get("first"):
        found.append({**side["first"], "store": side["first"].get("store"), "beside": True})
    if not found:
        return None
    first = min(found, key=lambda r: parse_time(r.get("time")) or parse_time("9999-01-01"))
    where = [str(r.get("store")) for r in found if not r.get("beside")]
    if side is not None:
        where.append(str(outcomes_path(design)))
    return {k: v for k, v in first.items() if k != "beside"} | {"found_in": where}


def bind_outcomes(design_path: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write (or extend) ``FILE.outcomes.json`` beside the design with a store's record.

    The first record (the earliest time) is kept; each store that holds outcomes of the
    design is listed once, by its path relative to the design's folder when it has one.
    A store outside the design's default root is named in its lock too
    (``outcome_stores``, outside the lock hash), so that :func:`study_outcomes` finds it
    when ``FILE.outcomes.json`` is deleted.

    Examples
    --------
    >>> import json
    >>> from analysis.study.outcomes import bind_outcomes
    >>> rec = {"time": "2026-12-06T00:02:25+00:00", "lock_sha256": "a" * 64,
    ...        "design": "bound.toml", "store": "data/bound/store"}
    >>> path = bind_outcomes("studies/bound.toml", rec)
    >>> side = json.loads(path.read_text(encoding="utf-8"))
    >>> side["first"]["time"], [s["store"] for s in side["stores"]]
    ('2026-12-06T00:02:25+00:00', ['../data/bound/store'])
    """
    from analysis.study.records import write_json

    design = Path(design_path).resolve()
    path = outcomes_path(design)
    side = _read(path) or {"format": FORMAT, "design": design.name, "first": None, "stores": []}
    store = Path(str(record.get("store"))).resolve()
    try:
        rel = os.path.relpath(store, design.parent)
    except ValueError:  # another drive
        rel = str(store)
    # portable: no absolute path of this machine (the store's path is relative)
    keys = ("time", "lock_sha256", "design", "design_sha256")
    entry = {k: record[k] for k in keys if record.get(k)} | {"store": Path(rel).as_posix()}
    first = side.get("first")
    t_new, t_old = parse_time(record.get("time")), parse_time((first or {}).get("time"))
    if first is None or (t_new is not None and t_old is not None and t_new < t_old):
        side["first"] = dict(entry)
    if all(s.get("store") != entry["store"] for s in side["stores"]):
        side["stores"].append(entry)
    side["note"] = (
        "written by attnrank run (and `attnrank prereg outcomes`): when outcomes of this "
        "design first existed, and every store that holds them; keep it beside the lock"
    )
    write_json(path, side)
    _note_in_lock(design, store, entry["store"])
    return path


def check_lock_age(
    record: Mapping[str, Any],
    outcomes: Mapping[str, Any] | None,
    *,
    lock_file: str | os.PathLike | None = None,
) -> None:
    """Refuse a lock first written after the design's first outcome.

    A lock younger than the outcomes was written (or rewritten) once they could be seen:
    its held-out heads and models are not what the outcomes were computed under. When
    outcomes exist, a lock time that does not parse (``null``, ``"garbage"``: the times
    are outside the lock hash) is refused too: the check fails closed.

    Parameters
    ----------
    record : mapping
        The lock record.
    outcomes : mapping or None
        :func:`study_outcomes`.
    lock_file : path, optional, keyword-only
        The lock file, named in the message about an unreadable time.

    Raises
    ------
    PreregistrationError
        Naming both times and where the outcome record is; or naming the lock file and
        the field whose time does not parse.

    Examples
    --------
    >>> from analysis.study.outcomes import check_lock_age
    >>> out = {"time": "2026-12-06T00:02:25+00:00", "store": "s", "lock_sha256": "a" * 12}
    >>> check_lock_age({"first_locked_at": "2026-12-03T08:13:40+00:00"}, out)  # older
    >>> check_lock_age({"design": "d.toml", "first_locked_at": "2026-12-07T00:00:00+00:00"}, out)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: d.toml: the lock was first written at 2026-12-07T00:00:00+00:00, after the first outcome of the design (2026-12-06T00:02:25+00:00, ...
    >>> check_lock_age({"first_locked_at": "garbage"}, out, lock_file="d.toml.lock")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: d.toml.lock: field first_locked_at is 'garbage', not an ISO 8601 time; ...
    """
    if not outcomes:
        return
    first = outcomes.get("time")
    # a lock made since the field has first_locked_at: null there is not "absent"
    field = "first_locked_at" if "first_locked_at" in record else "locked_at"
    locked = record.get(field) if field == "first_locked_at" else first_locked_at(record)
    t_lock, t_out = parse_time(locked), parse_time(first)
    if t_lock is None:  # fail closed: an unreadable lock time cannot be older
        raise PreregistrationError(
            f"{lock_file or record.get('design', 'the lock')}: field {field} is "
            f"{record.get(field)!r}, not an ISO 8601 time; the lock's age cannot be "
            "checked against the design's outcomes, so the run is refused. Restore the "
            "lock from version control",
            name=field,
        )
    if t_out is None:
        raise PreregistrationError(
            f"{outcomes.get('store')}: the outcome record's time {first!r} is not an ISO "
            "8601 time; the lock's age cannot be checked, so the run is refused",
            name="outcomes",
        )
    if t_lock <= t_out:
        return
    raise PreregistrationError(
        f"{record.get('design', 'design')}: the lock was first written at {locked}, after "
        f"the first outcome of the design ({first}, under lock "
        f"{str(outcomes.get('lock_sha256'))[:12]}..., recorded in {outcomes.get('store')}); "
        "a lock written once outcomes existed is refused. Restore the lock those outcomes "
        'were computed under and record changes with `attnrank prereg amend ... --reason "..."`'
    )


def check_frozen_amendments(record: Mapping[str, Any], outcomes: Mapping[str, Any] | None) -> None:
    """Refuse a lock with an amendment of a frozen section made once outcomes existed.

    ``prereg amend`` refuses such an amendment when it sees the outcomes; this check
    holds where it did not (the outcome record beside the design deleted, the store at a
    root the command was not told about): the store's record, found by the run, decides
    (:func:`~analysis.prereg.lock_history.frozen_after_outcomes`).

    Raises
    ------
    PreregistrationError
        Naming the amendment, its frozen sections and where the outcome record is.

    Examples
    --------
    >>> from analysis.study.outcomes import check_frozen_amendments
    >>> out = {"time": "2026-12-06T00:00:00+00:00", "store": "s", "lock_sha256": "l0"}
    >>> amended = {"design": "d.toml", "amendments": [{"time": "2026-12-07T00:00:00Z",
    ...     "sections": ["inference"], "previous_lock_sha256": "l0"}]}
    >>> check_frozen_amendments(amended, None)  # no outcomes: nothing to hold
    >>> check_frozen_amendments(amended, out)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: d.toml: amendment 1 (2026-12-07T00:00:00Z) changed [inference] after outcomes existed ...
    """
    late = frozen_after_outcomes(record, outcomes, FROZEN_SECTIONS)
    if not late:
        return
    a = late[0]
    raise PreregistrationError(
        f"{record.get('design', 'design')}: amendment {a['amendment']} ({a['time']}) "
        f"changed [{', '.join(a['sections'])}] after outcomes existed (since "
        f"{outcomes.get('time')} under lock {str(outcomes.get('lock_sha256'))[:12]}..., "
        f"recorded in {outcomes.get('store')}); {', '.join(FROZEN_SECTIONS)} are frozen "
        "once outcomes exist, so the run is refused. Restore the lock and design those "
        "outcomes were computed under",
        name=a["sections"][0],
    )
