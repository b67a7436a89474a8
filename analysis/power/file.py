"""The stored power of a design: ``<stem>.power.json`` beside the design, hashed into its lock.

The simulated size, power and minimum detectable effect of a design's decision are facts
about the design, computed once and locked with it (the lock's ``power_sha256``); when
``attnrank run DESIGN --power-simulations N`` computes or reuses the file, and what it
holds (JSON, format ``attnrank-power/1``: ``format``, ``design``, ``key`` (the SHA-256
of ``inputs``), ``inputs`` (``simulations``, ``seed``, ``assumptions``, ``sizes``, ...),
``result`` (:meth:`analysis.power.ValidationResult.to_dict`), ``summary`` and
``provenance`` (``package_version``, ``git_commit``, ``computed_at``,
``computed_under_lock``, ``command``, ``note``)): docs/prereg.md, paragraph "In a study:
stored beside the design, locked with it". This module reads and writes the file; what
goes into it is the study layer's (:func:`analysis.study.power.power_stage`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.atomic import atomic_write
from analysis.prereg.provenance import power_path
from analysis.validation import ParameterError

__all__ = [
    "DEFAULT_POWER_SIMULATIONS",
    "POWER_FILE_FORMAT",
    "not_computed",
    "read_power_file",
    "write_power_file",
]

#: Format of the stored power file; a record of another format is refused when read.
POWER_FILE_FORMAT = "attnrank-power/1"

#: Simulated studies per scenario and share that the docs and the report suggest (the
#: power stage simulates only when given a number).
DEFAULT_POWER_SIMULATIONS = 400

#: Keys every stored power file has.
_REQUIRED = ("format", "design", "key", "inputs", "result", "provenance")


def not_computed(design_path: str | os.PathLike) -> str:
    """Why a design has no power, and the command that computes it (for the report).

    Examples
    --------
    >>> from analysis.power.file import not_computed
    >>> text = not_computed("preregistration/x.toml")
    >>> "x.power.json does not exist" in text, "--power-simulations 400" in text
    (True, True)
    """
    name = Path(design_path).name
    return (
        f"the power of this design was not computed ({power_path(design_path).name} does not "
        f"exist beside it); `attnrank run preregistration/{name} --power-simulations "
        f"{DEFAULT_POWER_SIMULATIONS}` computes it once, stores it beside the design and "
        "records it in the lock"
    )


def read_power_file(design_path: str | os.PathLike) -> dict[str, Any] | None:
    """The design's stored power record, or None when there is none.

    Raises
    ------
    ParameterError
        Named ``power_file`` when the file is not JSON, has another format or lacks one of
        ``format``, ``design``, ``key``, ``inputs``, ``result``, ``provenance``, or names
        another design.

    Examples
    --------
    >>> read_power_file("pf-absent.toml") is None
    True
    >>> _ = power_path("pf-bad.toml").write_text('{"format": "other/1"}')
    >>> read_power_file("pf-bad.toml")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: ...power_file...attnrank-power/1...
    """
    p = power_path(design_path)
    if not p.is_file():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ParameterError("power_file", "a JSON power record", f"{p}: {exc}") from None
    if not isinstance(record, dict) or record.get("format") != POWER_FILE_FORMAT:
        got = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise ParameterError("power_file", f"a record of format {POWER_FILE_FORMAT}", f"{p}: {got}")
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise ParameterError(
            "power_file", f"a record with {', '.join(_REQUIRED)}", f"{p}: no {missing}"
        )
    if record["design"] != Path(design_path).name:
        raise ParameterError(
            "power_file", f"the power of {Path(design_path).name}", f"{p}: {record['design']}"
        )
    return record


def write_power_file(design_path: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write the design's power record beside it (atomically); return the path.

    The record must carry every key that :func:`read_power_file` requires, with
    ``format`` = :data:`POWER_FILE_FORMAT` and ``design`` = the design's file name.

    Examples
    --------
    >>> record = {"format": POWER_FILE_FORMAT, "design": "pf-w.toml", "key": "k",
    ...           "inputs": {}, "result": {"power": 0.8}, "provenance": {}}
    >>> write_power_file("pf-w.toml", record).name
    'pf-w.power.json'
    >>> read_power_file("pf-w.toml") == record
    True
    >>> write_power_file("pf-other.toml", record)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: ...record...pf-other.toml...
    """
    p = power_path(design_path)
    missing = [k for k in _REQUIRED if k not in record]
    if missing or record.get("format") != POWER_FILE_FORMAT:
        raise ParameterError(
            "record",
            f"a power record of format {POWER_FILE_FORMAT} with {', '.join(_REQUIRED)}",
            sorted(record),
        )
    if record["design"] != Path(design_path).name:
        raise ParameterError("record", f"design = {Path(design_path).name!r}", record["design"])
    text = json.dumps(dict(record), indent=2, ensure_ascii=False) + "\n"
    with atomic_write(p, mode="w") as fh:
        fh.write(text)
    return p
