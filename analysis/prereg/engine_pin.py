"""The bracket engine a design pins: ``engine = N`` in the design, ``engine`` in its lock.

Which version a design means (its ``engine`` key, else its lock's, else
:data:`LEGACY_ENGINE` for a lock older than the field, else the default): docs/prereg.md,
section "The bracket engine a design pins". This package never imports the bracket
engine: the caller (the study layer, ``attnrank prereg``) passes the versions the package
runs as ``engines`` (``analysis.study.engine_versions()``: oldest first, the released
default, ``analysis.brackets.LATEST_ENGINE``, last), as it passes the blocks' covariates
and versions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.validation import ParameterError

__all__ = [
    "LEGACY_ENGINE",
    "check_design_engine",
    "engine_changes",
    "engine_entry",
    "engine_lines",
    "pinned_engine",
]

LEGACY_ENGINE = 4
"""The engine of a lock written before locks recorded one (all were made with engine 4)."""


def check_design_engine(value: Any, engines: Sequence[int] | None = None) -> int:
    """A design's ``engine`` value as an int, or a ParameterError naming ``engine``.

    Parameters
    ----------
    value : object
        What the design (or a lock) holds.
    engines : sequence of int, optional
        The versions the package runs (``analysis.brackets.ENGINE_VERSIONS``); when
        given, ``value`` must be one of them. Without them only the type is checked (an
        int >= 1, not a bool).

    Examples
    --------
    >>> from analysis.prereg.engine_pin import check_design_engine
    >>> check_design_engine(4, (4, 5))
    4
    >>> check_design_engine(7, (4, 5))
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, 5, got 7
    >>> check_design_engine("4")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected an engine version (an integer such as engine = 4, top level), got '4'
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(
            "engine", "an engine version (an integer such as engine = 4, top level)", value
        )
    if engines is not None and value not in tuple(engines):
        allowed = ", ".join(map(str, sorted(engines)))
        raise ParameterError("engine", f"one of the engine versions {allowed}", value)
    return int(value)


def pinned_engine(
    data: Mapping[str, Any],
    record: Mapping[str, Any] | None = None,
    *,
    engines: Sequence[int] | None = None,
) -> int | None:
    """The engine version a design means (see the module's rules).

    Parameters
    ----------
    data : mapping
        The parsed design (``Design.data``).
    record : mapping, optional
        Its lock record (None: not locked yet).
    engines : sequence of int, optional, keyword-only
        The versions the package runs, the default last (``analysis.study.engine_versions``:
        oldest first, the released default moved to the end); an explicit ``engine`` must
        be one of them, and a design with neither key nor lock means the last.

    Returns
    -------
    int or None
        None only for an unlocked design without ``engine`` when ``engines`` is unknown.

    Examples
    --------
    >>> from analysis.prereg.engine_pin import pinned_engine
    >>> pinned_engine({"engine": 4}, None, engines=(4, 5))  # written in the design
    4
    >>> pinned_engine({}, None, engines=(4, 5))  # a new design: the default (the last)
    5
    >>> pinned_engine({}, {"engine": 5}, engines=(4, 5, 6))  # what its lock pinned
    5
    >>> pinned_engine({}, {"format": "attnrank-prereg-lock/1"})  # a lock before the field
    4
    """
    if "engine" in data:
        return check_design_engine(data["engine"], engines)
    if record is not None:
        return check_design_engine(record.get("engine", LEGACY_ENGINE))
    return int(engines[-1]) if engines else None


def engine_changes(record: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """``["engine changed: 4 -> 5"]`` when the design now means another engine than its
    lock pinned (``[]`` otherwise, also when the design only writes out the pinned one).

    Examples
    --------
    >>> from analysis.prereg.engine_pin import engine_changes
    >>> engine_changes({}, {"engine": 5}), engine_changes({}, {"engine": 4}), engine_changes({}, {})
    (['engine changed: 4 -> 5'], [], [])
    """
    before = pinned_engine({}, record)
    after = pinned_engine(data, record)
    return [] if before == after else [f"engine changed: {before} -> {after}"]


def _check_numbers(numbers: Any) -> dict[str, dict[str, float]]:
    """``{name: {"before": x, "after": y}}`` from ``{name: (x, y)}``, or a ParameterError
    naming ``numbers``."""
    allowed = "a mapping name -> (number before, number after), finite numbers"
    if not isinstance(numbers, Mapping) or not numbers:
        raise ParameterError("numbers", allowed, numbers)
    out = {}
    for name, pair in numbers.items():
        ok = isinstance(name, str) and name.strip() and isinstance(pair, Sequence)
        ok = ok and not isinstance(pair, str) and len(pair) == 2
        ok = ok and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in pair
        )
        if not ok:
            raise ParameterError("numbers", allowed, {name: pair})
        out[name.strip()] = {"before": float(pair[0]), "after": float(pair[1])}
    return out


def engine_entry(
    design_path: Any,
    record: Mapping[str, Any],
    data: Mapping[str, Any],
    engines: Sequence[int] | None,
    outcomes: Mapping[str, Any] | None,
    numbers: Mapping[str, Sequence[float]] | None,
) -> dict[str, Any]:
    """What an amendment records of the engine: ``{"engine": {"before": b, "after": a}}``
    and, when given, ``{"numbers": {name: {"before": x, "after": y}}}``.

    A change of the pinned engine once outcomes exist needs ``numbers`` (what the
    outcomes were under the old engine and are under the new one); without them it is
    refused, naming ``engine``.

    Examples
    --------
    >>> from analysis.prereg.engine_pin import engine_entry
    >>> engine_entry("d.toml", {}, {"engine": 4}, (4, 5), None, None)  # written out
    {'engine': {'before': 4, 'after': 4}}
    >>> entry = engine_entry("d.toml", {"engine": 4}, {"engine": 5}, (4, 5), {"time": "t"},
    ...                      {"median hi/lo": (2.57, 2.05)})
    >>> entry["numbers"]
    {'median hi/lo': {'before': 2.57, 'after': 2.05}}
    >>> engine_entry("d.toml", {"engine": 4}, {"engine": 5}, (4, 5), {"time": "t"}, None)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected ...before/after numbers..., got 'd.toml: 4 -> 5'
    """
    before = pinned_engine({}, record)
    after = pinned_engine(data, record, engines=engines)
    out: dict[str, Any] = {"engine": {"before": before, "after": after}}
    if numbers is not None:
        out["numbers"] = _check_numbers(numbers)
    elif before != after and outcomes is not None:
        raise ParameterError(
            "engine",
            "an engine change after outcomes exist (since "
            f"{outcomes.get('time')}) to record before/after numbers: what the outcomes "
            "are under each engine (numbers=, `attnrank prereg amend --numbers "
            "NAME=BEFORE:AFTER ...`)",
            f"{design_path}: {before} -> {after}",
        )
    return out


def engine_lines(entry: Mapping[str, Any]) -> list[str]:
    """The deviations-log lines of an amendment's engine and numbers (none when the
    engine stayed and no numbers were given).

    Examples
    --------
    >>> from analysis.prereg.engine_pin import engine_lines
    >>> entry = {"engine": {"before": 4, "after": 5},
    ...          "numbers": {"median hi/lo": {"before": 2.57, "after": 2.05}}}
    >>> engine_lines(entry)
    ['engine 4 -> 5', 'median hi/lo: 2.57 (engine 4) -> 2.05 (engine 5)']
    >>> engine_lines({"engine": {"before": 4, "after": 4}})
    []
    """
    eng = entry.get("engine") or {}
    before, after = eng.get("before"), eng.get("after")
    lines = [] if before == after else [f"engine {before} -> {after}"]
    for name, v in (entry.get("numbers") or {}).items():
        lines.append(
            f"{name}: {v['before']:g} (engine {before}) -> {v['after']:g} (engine {after})"
        )
    return lines
