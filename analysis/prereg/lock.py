"""Lock, check and amend a design; ``require_locked`` guards every analysis command.

The lock ``FILE.lock`` (JSON, beside the design) stores the SHA-256 of the canonical
design, the held-out list and its hash, each model's blocks and sorted feature columns
(when known), a hash per top-level section (so that ``check`` can say what changed),
the package version and git commit (provenance only), and the time. A deliberate change
goes through :func:`amend_design`, which appends to ``<stem>.deviations.md`` beside the
design and re-locks.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis import __version__
from analysis.prereg.design import (
    Design,
    canonical_bytes,
    draw_held_out,
    heads_sha256,
    load_design,
)
from analysis.validation import ParameterError

__all__ = [
    "LOCK_FORMAT",
    "PreregistrationError",
    "Lock",
    "lock_path",
    "deviations_path",
    "model_columns",
    "lock_design",
    "check_design",
    "amend_design",
    "require_locked",
    "git_commit",
]

LOCK_FORMAT = "attnrank-prereg-lock/1"


class PreregistrationError(ParameterError):
    """The design is unlocked, drifted, or a lock operation is refused.

    A :class:`ParameterError` (named ``design``) so that every command reports it the
    same way and exits 2.
    """

    def __init__(self, message: str, *, name: str = "design"):
        self.name = name
        self.allowed = ""
        self.got = None
        ValueError.__init__(self, message)


@dataclass(frozen=True)
class Lock:
    """A verified lock: the design matches it.

    Attributes
    ----------
    design : Design
    sha256 : str
        The locked design hash (stamped on every confirmatory result).
    held_out : tuple of str
    held_out_sha256 : str
    record : dict
        The whole lock JSON.
    """

    design: Design
    sha256: str
    held_out: tuple[str, ...]
    held_out_sha256: str
    record: dict


def lock_path(design_path: str | Path) -> Path:
    p = Path(design_path)
    return p.with_name(p.name + ".lock")


def deviations_path(design_path: str | Path) -> Path:
    p = Path(design_path)
    return p.with_name(p.stem + ".deviations.md")


def model_columns(
    blocks: Sequence[str], features: Mapping[str, Sequence[str]] | None
) -> list[str] | None:
    """Sorted ``BLOCK__feature`` columns of a model, or None when a block is unknown.

    ``features`` maps a block to its feature names, bare (``log_n``) or full
    (``baseline__log_n``).
    """
    if features is None:
        return None
    cols: list[str] = []
    for b in blocks:
        if b not in features:
            return None
        for f in features[b]:
            cols.append(f if "__" in f else f"{b}__{f}")
    return sorted(set(cols))


def _section_hashes(data: Mapping[str, Any]) -> dict[str, str]:
    """Hash per top-level key; ``held_out`` without its list (reported separately)."""
    out = {}
    for k, v in sorted(data.items()):
        if k == "held_out" and isinstance(v, Mapping):
            v = {kk: vv for kk, vv in v.items() if kk != "heads"}
        out[k] = hashlib.sha256(canonical_bytes({k: v})).hexdigest()
    return out


def git_commit(where: Path) -> str | None:
    """The commit checked out at ``where`` (None outside a git checkout or without git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _build_record(
    design: Design,
    features: Mapping[str, Sequence[str]] | None,
    amendments: list[dict],
) -> dict:
    models = {}
    for name, blocks in design.models.items():
        cols = model_columns(blocks, features)
        models[name] = {"blocks": list(blocks), "features": cols}
    known = all(m["features"] is not None for m in models.values())
    ho = design.data["held_out"]
    return {
        "format": LOCK_FORMAT,
        "design": design.path.name,
        "design_sha256": design.sha256,
        "sections": _section_hashes(design.data),
        "held_out": {
            "heads": list(design.held_out),
            "sha256": heads_sha256(design.held_out),
            "n": len(design.held_out),
            "seed": ho["seed"],
            "fraction": ho["fraction"],
        },
        "models": models,
        "features_known": known,
        "features_note": (
            "each model's sorted feature columns are locked; a change is drift"
            if known
            else "feature columns were not known at lock time: only block names are locked"
        ),
        "provenance": {
            "package_version": __version__,
            "git_commit": git_commit(design.path.parent.resolve()),
            "note": "provenance only; not part of drift",
        },
        "locked_at": _now(),
        "amendments": amendments,
    }


def _write_json(path: Path, record: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _read_lock(design_path: Path) -> dict:
    lp = lock_path(design_path)
    if not lp.is_file():
        raise PreregistrationError(
            f"no lock for {design_path} (expected {lp.name}); run `attnrank prereg lock "
            f"{design_path}` before any confirmatory analysis"
        )
    try:
        record = json.loads(lp.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PreregistrationError(f"lock file {lp} is not valid JSON: {exc}") from None
    if record.get("format") != LOCK_FORMAT:
        raise PreregistrationError(f"lock file {lp}: unknown format {record.get('format')!r}")
    return record


def _check_draw(design: Design) -> None:
    expected = draw_held_out(design.data)
    if list(design.held_out) != expected:
        raise ParameterError(
            "held_out.heads",
            "the list drawn from held_out.seed and held_out.fraction (`attnrank prereg draw`);"
            " a deliberate change goes through `attnrank prereg amend`",
            f"{len(design.held_out)} heads differing from the draw",
        )


def lock_design(
    design_path: str | Path,
    *,
    features: Mapping[str, Sequence[str]] | None = None,
) -> dict:
    """Write ``FILE.lock``; refuse when a lock exists (use :func:`amend_design`).

    Parameters
    ----------
    design_path : str or Path
    features : mapping block -> feature names, optional
        When given for every block of every model, each model's sorted columns are
        locked; otherwise only block names are, and the lock says so.

    Returns
    -------
    dict
        The lock record.
    """
    design_path = Path(design_path)
    lp = lock_path(design_path)
    if lp.exists():
        raise PreregistrationError(
            f"{lp.name} already exists: a locked design changes only through "
            f"`attnrank prereg amend {design_path} --reason ...`"
        )
    design = load_design(design_path)
    _check_draw(design)
    record = _build_record(design, features, [])
    _write_json(lp, record)
    return record


def _diff(record: dict, design: Design, features: Mapping[str, Sequence[str]] | None) -> list[str]:
    """Human-readable differences between a lock record and the current design."""
    changes: list[str] = []
    old = list(record["held_out"]["heads"])
    new = list(design.held_out)
    if old != new:
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        parts = []
        if added:
            parts.append(
                f"{len(added)} head{'s' * (len(added) != 1)} added "
                f"({', '.join(added[:5])}{', ...' if len(added) > 5 else ''})"
            )
        if removed:
            parts.append(
                f"{len(removed)} head{'s' * (len(removed) != 1)} removed "
                f"({', '.join(removed[:5])}{', ...' if len(removed) > 5 else ''})"
            )
        if not parts:
            parts.append("order changed")
        changes.append("held-out list changed: " + "; ".join(parts))
    old_models = record["models"]
    new_models = design.models
    model_msgs = []
    for name in sorted(set(old_models) | set(new_models)):
        if name not in new_models:
            model_msgs.append(f"{name} removed")
        elif name not in old_models:
            model_msgs.append(f"{name} added ({', '.join(new_models[name])})")
        elif list(old_models[name]["blocks"]) != list(new_models[name]):
            model_msgs.append(
                f"{name} blocks {old_models[name]['blocks']} -> {list(new_models[name])}"
            )
        elif features is not None and old_models[name]["features"] is not None:
            cols = model_columns(new_models[name], features)
            if cols is not None and cols != old_models[name]["features"]:
                add = sorted(set(cols) - set(old_models[name]["features"]))
                rem = sorted(set(old_models[name]["features"]) - set(cols))
                model_msgs.append(
                    f"{name} feature columns changed (added {add or 'none'}, "
                    f"removed {rem or 'none'})"
                )
    if model_msgs:
        changes.append("models changed: " + "; ".join(model_msgs))
    old_sections = record.get("sections", {})
    new_sections = _section_hashes(design.data)
    other = sorted(
        k
        for k in set(old_sections) | set(new_sections)
        if k != "models" and old_sections.get(k) != new_sections.get(k)
    )
    if other:
        changes.append("sections changed: " + ", ".join(other))
    if not changes and record["design_sha256"] != design.sha256:
        changes.append("design hash changed")
    if record["held_out"]["sha256"] != heads_sha256(record["held_out"]["heads"]):
        changes.append("lock file damaged: its held-out hash does not match its list")
    return changes


def check_design(
    design_path: str | Path, *, features: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """Compare a design with its lock.

    Returns
    -------
    list of str
        Empty when the design matches its lock; otherwise one message per change
        (e.g. ``"held-out list changed: 3 heads added (...)"``).

    Raises
    ------
    PreregistrationError
        When there is no lock.
    """
    design_path = Path(design_path)
    record = _read_lock(design_path)
    design = load_design(design_path)
    return _diff(record, design, features)


def amend_design(
    design_path: str | Path,
    *,
    reason: str,
    features: Mapping[str, Sequence[str]] | None = None,
) -> dict:
    """Record a deliberate change: append to the deviations log and re-lock.

    Parameters
    ----------
    design_path : str or Path
    reason : str, keyword-only
        Why the design changed (required, non-empty).
    features : mapping, optional
        New block -> feature names (a feature change is an amendment too).

    Returns
    -------
    dict
        The new lock record; ``amendments`` lists every amendment so far.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ParameterError("reason", "a non-empty explanation of the change", reason)
    design_path = Path(design_path)
    record = _read_lock(design_path)
    design = load_design(design_path)
    changes = _diff(record, design, features)
    old_features = (
        {
            b: [c.split("__", 1)[1] for c in m["features"] if c.startswith(b + "__")]
            for m in record["models"].values()
            if m["features"] is not None
            for b in m["blocks"]
        }
        if record.get("features_known")
        else None
    )
    use_features = features if features is not None else old_features
    if features is not None and not record.get("features_known"):
        changes.append("feature columns now locked")
    if not changes:
        raise PreregistrationError(
            f"{design_path} matches its lock: nothing to amend", name="design"
        )
    entry = {
        "time": _now(),
        "reason": reason.strip(),
        "changes": changes,
        "previous_design_sha256": record["design_sha256"],
        "new_design_sha256": design.sha256,
        "previous_held_out_sha256": record["held_out"]["sha256"],
        "new_held_out_sha256": heads_sha256(design.held_out),
    }
    amendments = list(record.get("amendments", [])) + [entry]
    new_record = _build_record(design, use_features, amendments)
    log = deviations_path(design_path)
    header = (
        ""
        if log.exists()
        else (
            f"# Deviations from the preregistered design `{design_path.name}`\n\n"
            "Each entry was appended by `attnrank prereg amend` before re-locking.\n"
        )
    )
    text = (
        f"\n## Amendment {len(amendments)} ({entry['time']})\n\n"
        f"Reason: {entry['reason']}\n\n"
        + "".join(f"- {c}\n" for c in changes)
        + f"\nDesign SHA-256: {entry['previous_design_sha256']} -> "
        f"{entry['new_design_sha256']}\n"
        f"Held-out SHA-256: {entry['previous_held_out_sha256']} -> "
        f"{entry['new_held_out_sha256']}\n"
    )
    with log.open("a", encoding="utf-8") as fh:
        fh.write(header + text)
    _write_json(lock_path(design_path), new_record)
    return new_record


def require_locked(
    design_path: str | Path, *, features: Mapping[str, Sequence[str]] | None = None
) -> Lock:
    """Return the verified lock, or refuse: call first in every analysis command.

    Raises
    ------
    PreregistrationError
        When the lock is missing or the design (or, when ``features`` is given, a
        model's feature columns) drifted from it; the message names what changed.
    """
    design_path = Path(design_path)
    record = _read_lock(design_path)
    design = load_design(design_path)
    changes = _diff(record, design, features)
    if changes:
        raise PreregistrationError(
            f"{design_path} drifted from its lock; confirmatory analysis refused: "
            + "; ".join(changes)
            + ". A deliberate change goes through `attnrank prereg amend`."
        )
    return Lock(
        design=design,
        sha256=record["design_sha256"],
        held_out=tuple(record["held_out"]["heads"]),
        held_out_sha256=record["held_out"]["sha256"],
        record=record,
    )
