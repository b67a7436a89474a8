"""A lock's history: its first lock time, its events, and what was amended after outcomes.

What ``first_locked_at`` and ``history`` record, and how :func:`first_locked_at` and
:func:`lock_history` rebuild them for a lock made before these fields: docs/prereg.md,
paragraph "The first lock time and the lock's history".

:func:`post_outcome_amendments` lists the amendments made once outcomes existed that
change what decides the answer (:data:`DECIDING_SECTIONS`: the descriptors section, the
sampling, the hypotheses, or the pinned engine when it really changed); the report marks
the hypotheses they affect (:func:`exploratory_hypotheses`) exploratory.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DECIDING_SECTIONS",
    "append_deviation",
    "exploratory_hypotheses",
    "frozen_after_outcomes",
    "first_locked_at",
    "history_entry",
    "lock_history",
    "parse_time",
    "post_outcome_amendments",
]

#: Sections whose amendment after the first outcome makes the hypotheses exploratory:
#: each feeds every comparison (the cells compared, the covariates and their calibration,
#: the hypotheses themselves, the brackets). ``engine`` counts only when the pinned
#: version changed (writing out the version a lock already meant changes no outcome).
DECIDING_SECTIONS: tuple[str, ...] = ("descriptors", "sampling", "hypotheses", "engine")


def parse_time(text: Any) -> _dt.datetime | None:
    """An ISO time as an aware datetime (UTC when it names no zone); None when absent or
    unreadable.

    Examples
    --------
    >>> from analysis.prereg.lock_history import parse_time
    >>> parse_time("2026-12-03T08:13:40+00:00").isoformat()
    '2026-12-03T08:13:40+00:00'
    >>> parse_time("2026-12-03T08:13:40Z") == parse_time("2026-12-03T08:13:40+00:00")
    True
    >>> parse_time(None) is None, parse_time("yesterday") is None
    (True, True)
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.timezone.utc)


def _times(record: Mapping[str, Any]) -> list[str]:
    out = [record.get("locked_at"), record.get("relocked_at")]
    out += [a.get("time") for a in record.get("amendments") or [] if isinstance(a, Mapping)]
    out += [e.get("time") for e in record.get("history") or [] if isinstance(e, Mapping)]
    return [t for t in out if parse_time(t) is not None]


def first_locked_at(record: Mapping[str, Any]) -> str | None:
    """When the design was first locked.

    The record's ``first_locked_at``; for a lock made before the field, the earliest time
    it records anywhere (``locked_at``, ``relocked_at``, its amendments and history).

    Examples
    --------
    A lock whose ``locked_at`` was moved by an old re-lock, its first amendment older:

    >>> from analysis.prereg.lock_history import first_locked_at
    >>> legacy = {"locked_at": "2026-12-05T00:47:19+00:00",
    ...           "amendments": [{"time": "2026-12-03T12:34:16+00:00"}]}
    >>> first_locked_at(legacy)
    '2026-12-03T12:34:16+00:00'
    >>> first_locked_at({**legacy, "first_locked_at": "2026-12-01T00:00:00+00:00"})
    '2026-12-01T00:00:00+00:00'
    """
    if record.get("first_locked_at"):
        return str(record["first_locked_at"])
    times = _times(record)
    return min(times, key=parse_time) if times else None


def history_entry(event: str, time: str | None, record: Mapping[str, Any]) -> dict[str, Any]:
    """One event of a lock's history: ``event``, ``time``, and the lock hash, code hash and
    engine the record holds after it.

    Examples
    --------
    >>> from analysis.prereg.lock_history import history_entry
    >>> history_entry("lock", "t", {"lock_sha256": "l", "code_sha256": "c", "engine": 5})
    {'event': 'lock', 'time': 't', 'lock_sha256': 'l', 'code_sha256': 'c', 'engine': 5}
    """
    return {
        "event": event,
        "time": time,
        "lock_sha256": record.get("lock_sha256"),
        "code_sha256": record.get("code_sha256"),
        "engine": record.get("engine"),
    }


def lock_history(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The lock's events, oldest first: its ``history``, or, for a lock made before the
    field, one rebuilt from what it records (a first lock at :func:`first_locked_at`, then
    each amendment with the lock hash it wrote).

    Examples
    --------
    >>> from analysis.prereg.lock_history import lock_history
    >>> legacy = {"locked_at": "2026-12-05T00:47:19+00:00", "lock_sha256": "l2",
    ...           "amendments": [{"time": "2026-12-03T12:34:16+00:00",
    ...                           "previous_lock_sha256": "l0", "new_lock_sha256": "l1"}]}
    >>> [(e["event"], e["time"][:10], e["lock_sha256"]) for e in lock_history(legacy)]
    [('lock (time: the earliest the lock records)', '2026-12-03', 'l0'), ('amendment 1', '2026-12-03', 'l1')]
    """
    if record.get("history"):
        return [dict(e) for e in record["history"]]
    amendments = [a for a in record.get("amendments") or [] if isinstance(a, Mapping)]
    first = amendments[0].get("previous_lock_sha256") if amendments else None
    lock = {"lock_sha256": first or record.get("lock_sha256")}
    event = "lock (time: the earliest the lock records)"
    out = [history_entry(event, first_locked_at(record), lock)]
    for i, a in enumerate(amendments, 1):
        after = {
            "lock_sha256": a.get("new_lock_sha256"),
            "code_sha256": a.get("new_code_sha256"),
            "engine": (a.get("engine") or {}).get("after"),
        }
        out.append(history_entry(f"amendment {i}", a.get("time"), after))
    return out


def _after_outcomes(a: Mapping[str, Any], first_outcome: str | None) -> bool:
    if a.get("outcomes_existed"):
        return True
    t, o = parse_time(a.get("time")), parse_time(first_outcome)
    return t is not None and o is not None and t >= o


def post_outcome_amendments(
    record: Mapping[str, Any], first_outcome: str | None = None
) -> list[dict[str, Any]]:
    """Amendments made once outcomes existed that changed a :data:`DECIDING_SECTIONS`
    section.

    Parameters
    ----------
    record : mapping
        A lock record.
    first_outcome : str, optional
        When outcomes first existed (the study store's record); an amendment at or after
        it counts too, also one recorded without ``outcomes_existed`` (old locks).

    Returns
    -------
    list of dict
        ``{"amendment": n (1-based), "time", "sections": [deciding sections it changed]}``.

    Examples
    --------
    >>> from analysis.prereg.lock_history import post_outcome_amendments
    >>> record = {"amendments": [
    ...     {"time": "2026-12-03T12:00:00+00:00", "sections": ["sampling"]},  # before
    ...     {"time": "2026-12-05T02:37:56+00:00", "sections": ["descriptors"],
    ...      "outcomes_existed": True},
    ...     {"time": "2026-12-06T02:24:57+00:00", "sections": ["engine"],
    ...      "outcomes_existed": True, "engine": {"before": 4, "after": 4}},  # written out
    ... ]}
    >>> post_outcome_amendments(record)
    [{'amendment': 2, 'time': '2026-12-05T02:37:56+00:00', 'sections': ['descriptors']}]
    >>> [a["amendment"] for a in post_outcome_amendments(record, "2026-12-01T00:00:00Z")]
    [1, 2]
    """
    out = []
    for i, a in enumerate(record.get("amendments") or [], 1):
        if not isinstance(a, Mapping) or not _after_outcomes(a, first_outcome):
            continue
        secs = [s for s in a.get("sections") or [] if s in DECIDING_SECTIONS]
        eng = a.get("engine") or {}
        if "engine" in secs and eng.get("before") == eng.get("after") and eng:
            secs.remove("engine")
        if secs:
            out.append({"amendment": i, "time": a.get("time"), "sections": secs})
    return out


def frozen_after_outcomes(
    record: Mapping[str, Any], outcomes: Mapping[str, Any] | None, frozen: Sequence[str]
) -> list[dict[str, Any]]:
    """Amendments of a ``frozen`` section made once outcomes existed, by the outcome
    record itself (the study store's, authoritative wherever it is found).

    An amendment counts when it says so (``outcomes_existed``), when it is at or after
    the outcome's time, or when it comes at or after the amendment that replaced the lock
    the outcomes were computed under (``lock_sha256`` of the record): the last holds
    whatever the amendment or the times say.

    Examples
    --------
    >>> from analysis.prereg.lock_history import frozen_after_outcomes
    >>> record = {"amendments": [
    ...     {"time": "2026-12-01T00:00:00Z", "sections": ["inference"],
    ...      "previous_lock_sha256": "l0", "new_lock_sha256": "l1"},
    ...     {"time": "2026-12-02T00:00:00Z", "sections": ["sampling"],
    ...      "previous_lock_sha256": "l1", "new_lock_sha256": "l2"},
    ...     {"time": "2026-12-03T00:00:00Z", "sections": ["inference"],
    ...      "previous_lock_sha256": "l2", "new_lock_sha256": "l3"}]}
    >>> out = {"time": "2026-12-09T00:00:00Z", "lock_sha256": "l1"}  # computed under l1
    >>> frozen_after_outcomes(record, out, ("inference",))
    [{'amendment': 3, 'time': '2026-12-03T00:00:00Z', 'sections': ['inference']}]
    >>> frozen_after_outcomes(record, None, ("inference",))
    []
    """
    if not outcomes:
        return []
    amendments = [a for a in record.get("amendments") or [] if isinstance(a, Mapping)]
    start = next(
        (
            i
            for i, a in enumerate(amendments)
            if a.get("previous_lock_sha256") == outcomes.get("lock_sha256")
        ),
        len(amendments),
    )
    out = []
    for i, a in enumerate(amendments):
        if not (i >= start or _after_outcomes(a, outcomes.get("time"))):
            continue
        secs = [s for s in a.get("sections") or [] if s in frozen]
        if secs:
            out.append({"amendment": i + 1, "time": a.get("time"), "sections": secs})
    return out


def exploratory_hypotheses(
    record: Mapping[str, Any],
    hypotheses: Sequence[Mapping[str, Any]],
    first_outcome: str | None = None,
) -> dict[str, str]:
    """Hypothesis id -> why it is exploratory now (amended after outcomes).

    Every preregistered hypothesis (confirmatory, secondary, sensitivity: each kind but
    ``exploratory``) is affected by each :data:`DECIDING_SECTIONS` amendment: each
    section feeds every comparison (and the lock keeps no per-hypothesis record of a
    ``hypotheses`` change), so one such amendment after outcomes makes them all
    exploratory. Hypotheses already exploratory are left out.

    Examples
    --------
    >>> from analysis.prereg.lock_history import exploratory_hypotheses
    >>> record = {"amendments": [{"time": "t", "sections": ["descriptors"],
    ...                           "outcomes_existed": True}]}
    >>> hyps = [{"id": "H1", "kind": "confirmatory"}, {"id": "H9", "kind": "exploratory"}]
    >>> exploratory_hypotheses(record, hyps)
    {'H1': 'amended after outcomes existed: descriptors (amendment 1, t)'}
    >>> exploratory_hypotheses({"amendments": []}, hyps)
    {}
    """
    late = post_outcome_amendments(record, first_outcome)
    if not late:
        return {}
    why = "amended after outcomes existed: " + "; ".join(
        f"{', '.join(a['sections'])} (amendment {a['amendment']}, {a['time']})" for a in late
    )
    return {str(h["id"]): why for h in hypotheses if h.get("kind") != "exploratory"}


def append_deviation(
    log: Path,
    design_name: str,
    number: int,
    entry: Mapping[str, Any],
    lines: Sequence[str],
    *,
    outcomes_existed: bool,
) -> None:
    """Append amendment ``number`` to the deviations log ``log`` (its header first when new).

    ``entry`` is the amendment as the lock records it (time, reason, sections, the
    previous and new hashes); ``lines`` are its changes, one list item each.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.prereg.lock_history import append_deviation
    >>> entry = {"time": "t", "reason": "r", "sections": ["sampling"]}
    >>> for k in ("design", "held_out", "lock", "power", "code"):
    ...     entry.update({f"previous_{k}_sha256": "a", f"new_{k}_sha256": "b"})
    >>> append_deviation(Path("d.deviations.md"), "d.toml", 1, entry, ["x"],
    ...                  outcomes_existed=True)
    >>> print(Path("d.deviations.md").read_text(encoding="utf-8"))  # doctest: +ELLIPSIS
    # Deviations from the preregistered design `d.toml`
    <BLANKLINE>
    Each entry was appended by `attnrank prereg amend` before re-locking.
    <BLANKLINE>
    ## Amendment 1 (t)
    <BLANKLINE>
    Reason: r
    <BLANKLINE>
    Sections changed: [sampling] (outcomes existed)
    <BLANKLINE>
    - x
    <BLANKLINE>
    Design SHA-256: a -> b
    ...
    Code SHA-256: a -> b
    <BLANKLINE>
    """
    from analysis.prereg.lock_diff import name_list

    header = (
        ""
        if log.exists()
        else (
            f"# Deviations from the preregistered design `{design_name}`\n\n"
            "Each entry was appended by `attnrank prereg amend` before re-locking.\n"
        )
    )
    hashes = ""
    for key, label in (
        ("design", "Design"),
        ("held_out", "Held-out"),
        ("lock", "Lock"),
        ("power", "Power"),
        ("code", "Code"),
    ):
        before, after = entry.get(f"previous_{key}_sha256"), entry.get(f"new_{key}_sha256")
        if key in ("design", "held_out", "lock") or before or after:
            hashes += f"{label} SHA-256: {before} -> {after}\n"
    text = (
        f"\n## Amendment {number} ({entry['time']})\n\n"
        f"Reason: {entry['reason']}\n\n"
        f"Sections changed: {name_list(list(entry.get('sections') or []))}"
        f"{' (outcomes existed)' if outcomes_existed else ''}\n\n"
        + "".join(f"- {c}\n" for c in lines)
        + "\n"
        + hashes
    )
    with log.open("a", encoding="utf-8") as fh:
        fh.write(header + text)
