"""The provenance block stamped on every table and written to ``provenance.json``.

The block is a flat list of ``(key, value)`` text pairs built from
:attr:`StudyResults.provenance <analysis.report.results.StudyResults>`: design, lock and
held-out hashes, package version, git commit, library versions, seeds, effort, wall time
per stage and the creation time. Nested mappings (``libraries``, ``seeds``,
``stage_seconds``) are written on one line each as ``name=value`` pairs so that every
format (a Markdown list, LaTeX ``%`` comments, CSV ``#`` lines) can carry them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from analysis.atomic import atomic_write

__all__ = [
    "PROVENANCE_KEYS",
    "amendments_section",
    "json_ready",
    "provenance_lines",
    "write_json",
]

#: Keys shown first, in this order; any other key of ``provenance`` follows, sorted.
PROVENANCE_KEYS: tuple[str, ...] = (
    "design_sha256",
    "lock_sha256",
    "held_out_sha256",
    "package_version",
    "git_commit",
    "effort",
    "seeds",
    "libraries",
    "stage_seconds",
    "created",
)


def _one_line(value: Any) -> str:
    """``value`` as a single line of text (newlines and ``#`` never appear)."""
    if value is None:
        return "none"
    if isinstance(value, Mapping):
        if not value:
            return "none"
        parts = []
        for k in sorted(value, key=str):
            v = value[k]
            if isinstance(v, (float, np.floating)) and math.isfinite(float(v)):
                parts.append(f"{k}={float(v):.3g}")
            else:
                parts.append(f"{k}={_one_line(v)}")
        return ", ".join(parts)
    if isinstance(value, (list, tuple)):
        return ", ".join(_one_line(v) for v in value) if value else "none"
    text = " ".join(str(value).split())
    return text.replace("#", "no.")


def _amendments_line(value: Any) -> str:
    """``N: TIME (sections S, ...); ...`` for the lock's amendments (``none`` if none).

    The full entries (reasons, hashes) are in ``provenance.json`` and ``report.md``.
    """
    if not isinstance(value, (list, tuple)) or not value:
        return _one_line(value)
    parts = []
    for a in value:
        if isinstance(a, Mapping):
            secs = a.get("sections") or []
            parts.append(f"{a.get('time')} (sections {', '.join(secs) if secs else 'none'})")
        else:
            parts.append(str(a))
    return _one_line(f"{len(value)}: " + "; ".join(parts))


def provenance_lines(
    provenance: Mapping[str, Any], *, study: str | None = None, table: str | None = None
) -> list[tuple[str, str]]:
    """Flatten a provenance mapping into ordered ``(key, one-line value)`` pairs.

    Parameters
    ----------
    provenance : mapping
        :attr:`StudyResults.provenance`; missing keys of :data:`PROVENANCE_KEYS` are
        shown as ``none`` (e.g. ``lock_sha256`` of an unlocked, exploratory run).
    study, table : str, optional, keyword-only
        Prepended as ``study`` and ``table`` lines.

    Returns
    -------
    list of (str, str)
        Keys and values contain no newline and no ``#`` (so that CSV readers with
        ``comment="#"`` are safe).

    Examples
    --------
    Keys of :data:`PROVENANCE_KEYS` come first, in that order (``none`` when missing);
    mappings go on one line, floats to 3 significant digits:

    >>> from analysis.report.provenance import PROVENANCE_KEYS, provenance_lines
    >>> prov = {"zeta": "run #2\\nlate", "stage_seconds": {"power": 1.23456, "brackets": 90.0}}
    >>> lines = provenance_lines(prov, table="comparison")
    >>> [k for k, _ in lines] == ["table", *PROVENANCE_KEYS, "zeta"]
    True
    >>> dict(lines)["stage_seconds"], dict(lines)["lock_sha256"], dict(lines)["zeta"]
    ('brackets=90, power=1.23', 'none', 'run no.2 late')
    """
    lines: list[tuple[str, str]] = []
    if study is not None:
        lines.append(("study", _one_line(study)))
    if table is not None:
        lines.append(("table", _one_line(table)))
    for key in PROVENANCE_KEYS:
        lines.append((key, _one_line(provenance.get(key))))
    for key in sorted(set(provenance) - set(PROVENANCE_KEYS), key=str):
        value = provenance[key]
        text = _amendments_line(value) if key == "amendments" else _one_line(value)
        lines.append((_one_line(key), text))
    return lines


def json_ready(value: Any) -> Any:
    """Convert numpy scalars / arrays, paths, tuples and non-finite floats for JSON.

    Examples
    --------
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from analysis.report.provenance import json_ready
    >>> json_ready({"n": np.int64(3), "x": (np.float32(0.5), np.nan), "ok": np.bool_(True)})
    {'n': 3, 'x': [0.5, None], 'ok': True}
    >>> json_ready([Path("a") / "b", np.arange(2)])
    ['a/b', [0, 1]]
    """
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_ready(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return x if math.isfinite(x) else None
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_json(path: str | Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as indented, key-sorted JSON atomically.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from analysis.report.provenance import write_json
    >>> path = write_json("provenance.json", {"b": np.float64(np.inf), "a": np.int32(1)})
    >>> text = path.read_text(encoding="utf-8")
    >>> json.loads(text), text.index('"a"') < text.index('"b"')
    ({'a': 1, 'b': None}, True)
    """
    text = json.dumps(json_ready(payload), indent=2, sort_keys=True) + "\n"
    with atomic_write(path, mode="w") as fh:
        fh.write(text)
    return Path(path)


def amendments_section(prov: Mapping[str, Any], *, first_locked: bool = True) -> list[str]:
    """The "Amendments" section: every amendment of the lock since its first lock.

    ``first_locked=False`` leaves out the first lock's time (the report's lock status
    states it just above).

    Examples
    --------
    >>> amendments_section({"amendments": [], "first_locked_at": "2026-01-01"})[2:4]
    ['First locked at 2026-01-01.', '']
    """
    L = ["## Amendments", ""]
    first = prov.get("first_locked_at") or prov.get("locked_at")
    if "amendments" not in prov:
        return L + ["Not recorded (an unlocked or exploratory run).", ""]
    items = list(prov.get("amendments") or [])
    if first and first_locked:
        L += [f"First locked at {first}.", ""]
    if not items:
        return L + ["None: the design is as first locked.", ""]
    L += [
        "Each amendment was recorded by `attnrank prereg amend` and re-locked the design "
        "(the deviations log beside the design has the full entries); once outcomes exist, "
        "held_out, models, metrics and inference cannot be amended.",
        "",
    ]

    def reason(a: Mapping[str, Any]) -> str:
        return " ".join(str(a.get("reason", "")).split()).rstrip(".") + "."

    for i, a in enumerate(items, 1):
        secs = ", ".join(a.get("sections") or [])
        if not secs:
            # no section of the design changed: the amendment re-locked descriptor blocks
            # (``blocks`` names them; the design's hash stays the same) or recorded something
            # beside the design, e.g. its power file or the code hash (``blocks`` empty)
            blocks = a.get("blocks")
            secs = (
                "none (the design file is unchanged)"
                if blocks == {}
                else "none (descriptor blocks only)"
            )
        after = " (after outcomes existed)" if a.get("outcomes_existed") else ""
        L.append(
            f"{i}. {a.get('time')}{after}: {reason(a)} "
            f"Sections changed: {secs}. Design `{str(a.get('previous_design_sha256'))[:12]}` "
            f"-> `{str(a.get('new_design_sha256'))[:12]}`, lock "
            f"`{str(a.get('previous_lock_sha256'))[:12]}` -> "
            f"`{str(a.get('new_lock_sha256'))[:12]}`."
        )
    return L + [""]
