"""Amend a locked design: a deliberate change, logged beside it and re-locked.

:func:`amend_design` appends an entry to ``<stem>.deviations.md`` beside the design
(:func:`analysis.prereg.lock.deviations_path`) and re-locks it; the lock keeps its first
lock time and gains the amendment in ``amendments`` and ``history``. Once outcomes exist,
a change of :data:`~analysis.prereg.lock.FROZEN_SECTIONS` is refused.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from pathlib import Path

from analysis.prereg.code_hash import code_sha256
from analysis.prereg.design import heads_sha256, load_design
from analysis.prereg.engine_pin import engine_entry, engine_lines
from analysis.prereg.lock import (
    FROZEN_SECTIONS,
    Outcomes,
    PreregistrationError,
    build_record,
    deviations_path,
    lock_path,
    read_lock,
    write_lock,
)
from analysis.prereg.lock_diff import (
    Corpora,
    Features,
    Versions,
    corpus_changes,
    design_changes,
    locked_blocks,
    name_list,
    sections_changed,
)
from analysis.prereg.lock_history import (
    append_deviation,
    first_locked_at,
    history_entry,
    lock_history,
)
from analysis.prereg.provenance import power_sha256
from analysis.validation import ParameterError

__all__ = ["amend_design"]


def amend_design(
    design_path: str | Path,
    *,
    reason: str,
    features: Features | None = None,
    versions: Versions | None = None,
    outcomes: Outcomes | None = None,
    engines: Sequence[int] | None = None,
    numbers: Mapping[str, tuple[float, float]] | None = None,
    code: bool = False,
    corpora: Corpora | None = None,
) -> dict:
    """Record a deliberate change: append to the deviations log and re-lock.

    Parameters
    ----------
    design_path : str or Path
    reason : str, keyword-only
        Why the design changed (required, non-empty).
    features, versions : mapping, optional, keyword-only
        Each block's covariate names and version now (a change of a block is an
        amendment too; see :func:`lock_design`). When omitted, the locked ones are kept.
    outcomes : mapping, optional, keyword-only
        The study store's outcome record (see :func:`lock_design`); when given, an
        amendment that changes a section of :data:`FROZEN_SECTIONS` is refused (named
        after the first such section). Block covariates and versions stay amendable.
    engines : sequence of int, optional, keyword-only
        The engine versions the package runs (see :func:`lock_design`); the new lock
        records the engine the design now pins (for a design without ``engine``: the one
        its lock pinned, engine 4 for a lock made before the field).
    numbers : mapping name -> (before, after), optional, keyword-only
        Measured numbers under the old and the new engine (e.g. the median hi/lo of the
        study's cells, each confirmatory p-value): required when the pinned engine
        changes once outcomes exist; recorded in the lock and the deviations log.
    code : bool, default False, keyword-only
        Record the analysis code now (:func:`analysis.prereg.code_hash.code_sha256`) as
        the locked code (alone, an amendment that changes nothing else). Without it the
        new lock keeps the code hash the old one recorded (an amendment of a section does
        not silently accept a code change).
    corpora : mapping of str to str, optional, keyword-only
        The packaged corpora's digests now (:mod:`analysis.prereg.corpus_lock`); a changed
        digest is a change the amendment records. When omitted, the locked ones are kept.

    Returns
    -------
    dict
        The new lock record; ``first_locked_at`` and ``locked_at`` stay the time of the
        first lock (for a lock made before ``first_locked_at``: the earliest time it
        records), ``history`` gains the amendment, and
        ``amendments`` lists every amendment so far, each with its time, reason, changes,
        the sections it changed, whether outcomes existed, the previous and new design,
        held-out and lock hashes, and the covariates and versions of the blocks it
        (re)locked.

    Raises
    ------
    ParameterError
        When ``reason`` is empty.
    PreregistrationError
        When there is no lock, the design matches it, or (with ``outcomes``) a frozen
        section changed.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.amend import amend_design
    >>> from analysis.prereg.lock import check_design, deviations_path
    >>> from analysis.prereg.lock import lock_design
    >>> path = write_example_design("amended.toml")
    >>> first = lock_design(path)
    >>> _ = write_example_design(path, eps=(0.2,))
    >>> record = amend_design(path, reason="a finer eps")
    >>> [(a["reason"], a["sections"]) for a in record["amendments"]], check_design(path)
    ([('a finer eps', ['sampling'])], [])
    >>> record["locked_at"] == first["locked_at"]
    True
    >>> record["amendments"][0]["previous_lock_sha256"] == first["lock_sha256"]
    True
    >>> _ = write_example_design(path, eps=(0.3,))
    >>> second = amend_design(path, reason="coarser")
    >>> log = deviations_path(path).read_text(encoding="utf-8").splitlines()
    >>> [line.split(" (")[0] for line in log if line.startswith("## ")]
    ['## Amendment 1', '## Amendment 2']
    >>> amend_design(path, reason="again")
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: amended.toml matches its lock: nothing to amend

    Once outcomes exist, a frozen section (here the held-out list) stays as locked:

    >>> _ = write_example_design(path, eps=(0.3,), held_out=("org/tiny:0:0",))
    >>> outcomes = {"time": "t", "lock_sha256": second["lock_sha256"], "store": "s"}
    >>> amend_design(path, reason="r", outcomes=outcomes)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: amended.toml: the amendment changes [held_out], refused: ...
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ParameterError("reason", "a non-empty explanation of the change", reason)
    design_path = Path(design_path)
    record = read_lock(design_path)
    design = load_design(design_path)
    changes = design_changes(record, design, features, versions)
    changes += corpus_changes(record, corpora)
    old_code = record.get("code_sha256")
    new_code = code_sha256() if code else old_code
    if new_code != old_code:
        changes.append(f"code_sha256 {str(old_code or 'not recorded')[:12]} -> {new_code[:12]}")
    if not changes:
        raise PreregistrationError(
            f"{design_path} matches its lock: nothing to amend", name="design"
        )
    touched = sections_changed(record, design)
    if outcomes is not None and any(s in touched for s in FROZEN_SECTIONS):
        raise _refuse_frozen(design_path, touched, outcomes)
    pinned = engine_entry(design_path, record, design.data, engines, outcomes, numbers)
    locked = locked_blocks(record)
    use_features = (
        features
        if features is not None
        else ({b: v["covariates"] for b, v in locked.items()} or None)
    )
    use_versions = {b: v.get("version") for b, v in locked.items()}
    use_versions.update(versions or {})
    entry = {
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "reason": reason.strip(),
        "changes": changes,
        "sections": touched,
        "outcomes_existed": outcomes is not None,
        "previous_design_sha256": record["design_sha256"],
        "new_design_sha256": design.sha256,
        "previous_held_out_sha256": record["held_out"]["sha256"],
        "new_held_out_sha256": heads_sha256(design.held_out),
        "previous_lock_sha256": record.get("lock_sha256", record["design_sha256"]),
        "previous_power_sha256": record.get("power_sha256"),
        "new_power_sha256": power_sha256(design.path),
        "previous_code_sha256": old_code,
        "new_code_sha256": new_code,
    }
    amendments = list(record.get("amendments", []))
    entry.update(pinned)
    # a lock made before the field stays without one (its hash too) until the design
    # names its engine; it reads as engine 4 either way
    keep = "engine" in record or "engine" in design.data
    after = pinned["engine"]["after"] if keep else None
    use_corpora = record.get("corpora") if corpora is None else corpora
    new_record = build_record(
        design,
        use_features,
        use_versions,
        [*amendments, entry],
        after,
        new_code,
        corpora=use_corpora,
    )
    if new_code is None:  # a lock made before the field stays without one until --code
        del new_record["code_sha256"], new_record["code_paths"]
    entry["new_lock_sha256"] = new_record["lock_sha256"]
    # the first lock time is kept (and its history); the re-lock time is the amendment's
    new_record["locked_at"] = record["locked_at"]
    new_record["first_locked_at"] = first_locked_at(record)
    new_record["relocked_at"] = entry["time"]
    if record.get("outcome_stores"):  # the roots that have run it (analysis.study.outcomes)
        new_record["outcome_stores"] = record["outcome_stores"]
    new_record["history"] = [
        *lock_history(record),
        history_entry(f"amendment {len(amendments) + 1}", entry["time"], new_record),
    ]
    # the covariates and versions this amendment (re)locked: new or changed blocks
    entry["blocks"] = {b: v for b, v in new_record["blocks"].items() if locked.get(b) != v}
    relocked = [
        f"block {b} locked: covariates {name_list(v['covariates'])}; version {v['version']}"
        for b, v in entry["blocks"].items()
    ] + engine_lines(entry)
    append_deviation(
        deviations_path(design_path),
        design_path.name,
        len(amendments) + 1,
        entry,
        [*changes, *relocked],
        outcomes_existed=outcomes is not None,
    )
    write_lock(lock_path(design_path), new_record)
    return new_record


def _refuse_frozen(
    design_path: Path, touched: Sequence[str], outcomes: Outcomes
) -> PreregistrationError:
    frozen = [s for s in FROZEN_SECTIONS if s in touched]
    return PreregistrationError(
        f"{design_path}: the amendment changes [{', '.join(frozen)}], refused: outcomes "
        f"exist since {outcomes.get('time')} under lock {outcomes.get('lock_sha256')} "
        f"(recorded in the study store {outcomes.get('store')}), and "
        f"{', '.join(FROZEN_SECTIONS)} are frozen once outcomes exist. Revert those "
        "sections; other sections stay amendable.",
        name=frozen[0],
    )
