"""Lock and check a design; ``require_locked`` guards every analysis command.

What the lock ``FILE.lock`` (JSON, beside the design) records, what its lock hash covers
(the design, held-out, models and blocks hashes and the pinned ``engine``; not
``power_sha256`` nor ``code_sha256``) and what is refused once outcomes exist:
docs/prereg.md, section "Lock, check, amend" and its subsections. This package never
imports the descriptor registry nor the store: the caller (the study layer, ``attnrank
prereg``) passes the blocks' covariates and versions as ``features=`` and ``versions=``
and the store's outcomes record as ``outcomes=``. Amendments go through
:func:`analysis.prereg.amend.amend_design` (frozen sections: :data:`FROZEN_SECTIONS`),
the hashes and change messages come from :mod:`analysis.prereg.lock_diff`, the history
from :mod:`analysis.prereg.lock_history`, the pinned engine from
:mod:`analysis.prereg.engine_pin` and ``code_sha256`` from :mod:`analysis.prereg.code_hash`.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis import __version__
from analysis.prereg.code_hash import CODE_PATHS, code_sha256
from analysis.prereg.design import Design, draw_held_out, heads_sha256, load_design
from analysis.prereg.engine_pin import check_design_engine, pinned_engine
from analysis.prereg.lock_diff import (
    Corpora,
    Features,
    Versions,
    block_changes,
    check_corpora,
    corpus_changes,
    design_blocks,
    design_changes,
    lock_hash,
    locked_blocks,
    model_columns,
    name_list,
    normalized_features,
    section_hashes,
)
from analysis.prereg.lock_history import history_entry
from analysis.prereg.provenance import git_commit, power_sha256
from analysis.validation import ParameterError

__all__ = [
    "LOCK_FORMAT",
    "FROZEN_SECTIONS",
    "PreregistrationError",
    "Lock",
    "lock_path",
    "deviations_path",
    "model_columns",
    "lock_design",
    "check_design",
    "require_locked",
    "verify_blocks",
    "check_descriptor_columns",
]

LOCK_FORMAT = "attnrank-prereg-lock/1"

#: Sections that no amendment may change once outcomes exist: what the confirmatory
#: comparison is (the held-out heads, the models, the metrics and the inference).
FROZEN_SECTIONS: tuple[str, ...] = ("held_out", "models", "metrics", "inference")

Outcomes = Mapping[str, str]


class PreregistrationError(ParameterError):
    """The design is unlocked, drifted, or a lock operation is refused.

    A :class:`ParameterError` (named ``design``) so that every command reports it the
    same way and exits 2.

    Parameters
    ----------
    message : str
        The whole message (what is refused, and how to go on).
    name : str, default "design", keyword-only
        The parameter it names (e.g. ``held_out``, ``features``).

    Examples
    --------
    >>> from analysis.prereg.lock import PreregistrationError, check_design
    >>> from analysis.validation import ParameterError
    >>> error = PreregistrationError("toy.toml drifted", name="held_out")
    >>> isinstance(error, ParameterError), error.name, str(error)
    (True, 'held_out', 'toy.toml drifted')
    >>> check_design("unlocked.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: no lock for unlocked.toml (expected unlocked.toml.lock); ...
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
        The lock hash (stamped on every confirmatory result): the record's
        ``lock_sha256``, a hash of the design hash, the held-out hash, the models' columns
        and the blocks' covariates and versions, so that an amendment of a block changes
        it; the design hash for a lock written before it existed.
    held_out : tuple of str
    held_out_sha256 : str
    record : dict
        The whole lock JSON.

    Examples
    --------
    Made by :func:`require_locked`:

    >>> import json
    >>> from analysis.datasets import EXAMPLE_HELD_OUT, write_example_design
    >>> from analysis.prereg.lock import lock_design, lock_path, require_locked
    >>> path = write_example_design("lock_record.toml")
    >>> record = lock_design(path)
    >>> lock = require_locked(path)
    >>> lock.sha256 == record["lock_sha256"], lock.held_out == EXAMPLE_HELD_OUT
    (True, True)
    >>> lock.record == json.loads(lock_path(path).read_text(encoding="utf-8"))
    True
    """

    design: Design
    sha256: str
    held_out: tuple[str, ...]
    held_out_sha256: str
    record: dict


def lock_path(design_path: str | Path) -> Path:
    """Where a design's lock is: ``FILE.lock`` beside ``FILE`` (its whole name kept).

    Examples
    --------
    >>> from analysis.prereg.lock import lock_path
    >>> lock_path("designs/offline.toml").as_posix()
    'designs/offline.toml.lock'
    """
    p = Path(design_path)
    return p.with_name(p.name + ".lock")


def deviations_path(design_path: str | Path) -> Path:
    """Where a design's deviations log is: ``<stem>.deviations.md`` beside it.

    :func:`~analysis.prereg.amend.amend_design` appends an entry there for each amendment.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.prereg.lock import deviations_path
    >>> deviations_path(Path("designs") / "offline.toml") == Path("designs/offline.deviations.md")
    True
    """
    p = Path(design_path)
    return p.with_name(p.stem + ".deviations.md")


def build_record(
    design: Design,
    features: Features | None,
    versions: Versions | None,
    amendments: list[dict],
    engine: int | None = None,
    code: str | None = None,
    *,
    corpora: Corpora | None = None,
) -> dict:
    """A new lock record of ``design`` (see :func:`lock_design`), locked now, and its hash.

    ``features`` and ``versions`` as for :func:`lock_design`; ``amendments``: the record's
    amendments so far; ``engine``: the pinned engine (None: not recorded); ``code``: the
    code hash to record (None: :func:`~analysis.prereg.code_hash.code_sha256` now);
    ``corpora``: the packaged corpora's digests (recorded only when there are any).
    """
    norm = normalized_features(features)
    models = {}
    for name, blocks in design.models.items():
        models[name] = {"blocks": list(blocks), "features": model_columns(blocks, norm)}
    known = all(m["features"] is not None for m in models.values())
    blocks_rec = {
        b: {"covariates": norm[b], "version": (versions or {}).get(b)}
        for b in design_blocks(design)
        if norm is not None and b in norm
    }
    versioned = known and all(v["version"] for v in blocks_rec.values())
    if versioned:
        note = (
            "each block's covariate names and version and each model's sorted covariate "
            "columns are locked; a change is drift"
        )
    elif known:
        note = "each model's sorted feature columns are locked (block versions were not known)"
    else:
        note = "feature columns were not known at lock time: only block names are locked"
    ho = design.data["held_out"]
    record = {
        "format": LOCK_FORMAT,
        "design": design.path.name,
        "design_sha256": design.sha256,
        "lock_sha256": "",
        "sections": section_hashes(design.data),
        **({} if engine is None else {"engine": engine}),
        "held_out": {
            "heads": list(design.held_out),
            "sha256": heads_sha256(design.held_out),
            "n": len(design.held_out),
            "seed": ho["seed"],
            "fraction": ho["fraction"],
        },
        "models": models,
        "blocks": blocks_rec,
        "power_sha256": power_sha256(design.path),
        **({"corpora": check_corpora(corpora)} if corpora else {}),
        "code_sha256": code_sha256() if code is None else code,
        "code_paths": list(CODE_PATHS),
        "features_known": known,
        "features_note": note,
        "provenance": {
            "package_version": __version__,
            "git_commit": git_commit(design.path.parent.resolve()),
            "note": "provenance only; not part of drift",
        },
        "locked_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "relocked_at": None,
        "amendments": amendments,
    }
    record["first_locked_at"] = record["locked_at"]
    record["lock_sha256"] = lock_hash(record)
    return record


def write_lock(path: Path, record: dict) -> None:
    """Write a lock record to ``path`` (JSON, through a temporary file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_lock(design_path: str | Path) -> dict:
    """The lock record of a design; a :class:`PreregistrationError` when it has none, or
    when the file is not a lock."""
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
            "the list drawn from held_out.seed and held_out.fraction under "
            f"{design.held_out_rule.describe()} (`attnrank prereg draw`);"
            " a deliberate change goes through `attnrank prereg amend`",
            f"{len(design.held_out)} heads differing from the draw",
        )


def lock_design(
    design_path: str | Path,
    *,
    features: Features | None = None,
    versions: Versions | None = None,
    outcomes: Outcomes | None = None,
    engines: Sequence[int] | None = None,
    corpora: Corpora | None = None,
) -> dict:
    """Write ``FILE.lock``; refuse when a lock exists (use ``prereg amend``) or outcomes do.

    Parameters
    ----------
    design_path : str or Path
    features : mapping block -> covariate names, optional, keyword-only
        When given for every block of every model, each block's covariate names and each
        model's sorted columns are locked; otherwise only block names are, and the lock
        says so. ``attnrank prereg lock`` computes them from the descriptor registry.
    versions : mapping block -> version, optional, keyword-only
        Each block's version (``analysis.descriptors.block_version``), locked with its
        covariate names.
    outcomes : mapping, optional, keyword-only
        The study store's outcome record (``analysis.study.stored_outcomes``: ``time``,
        ``lock_sha256``, ``store``), None when no outcome exists. When given, the lock is
        refused: the design was locked when those outcomes were computed, and a lock
        written now (e.g. after deleting the old one) would hide what changed since.
    engines : sequence of int, optional, keyword-only
        The bracket engine versions the package runs, oldest first
        (``analysis.brackets.ENGINE_VERSIONS``; ``attnrank prereg lock`` passes them).
        The lock records the design's ``engine`` (which must be one of them), or, for a
        design without one, the last of them (the default). Without ``engines`` only a written ``engine`` is
        recorded (a lock without one reads as engine 4, as locks made before the field).
    corpora : mapping of str to str, optional, keyword-only
        The packaged corpora the design reads and their SHA-256 digests
        (:mod:`analysis.prereg.corpus_lock`; ``attnrank prereg lock`` computes them).

    Returns
    -------
    dict
        The lock record.

    Raises
    ------
    PreregistrationError
        When a lock exists or outcomes do.
    ParameterError
        When the held-out list is not the one drawn from its seed and fraction.

    Examples
    --------
    >>> import json
    >>> from analysis.prereg import design_sha256, load_design
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock import lock_design, lock_path
    >>> path = write_example_design("locked.toml")
    >>> record = lock_design(path, features={"baseline": ["log_n"], "native": ["kappa"]})
    >>> record == json.loads(lock_path(path).read_text(encoding="utf-8"))
    True
    >>> record["design_sha256"] == design_sha256(load_design(path).data)
    True
    >>> record["models"]["M1"]["features"], record["blocks"]["native"]
    (['baseline__log_n', 'native__kappa'], {'covariates': ['kappa'], 'version': None})
    >>> lock_design(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: locked.toml.lock already exists: ...
    """
    design_path = Path(design_path)
    lp = lock_path(design_path)
    if lp.exists():
        raise PreregistrationError(
            f"{lp.name} already exists: a locked design changes only through "
            f"`attnrank prereg amend {design_path} --reason ...`"
        )
    if outcomes is not None:
        raise PreregistrationError(
            f"{design_path}: outcomes exist since {outcomes.get('time')} under lock "
            f"{outcomes.get('lock_sha256')} (recorded in the study store "
            f"{outcomes.get('store')}); a new lock is refused. Restore {lp.name} (the lock "
            "those outcomes were computed under) and record a change with `attnrank "
            f'prereg amend {design_path} --reason "..."`'
        )
    design = load_design(design_path)
    _check_draw(design)
    engine = pinned_engine(design.data, None, engines=engines)
    record = build_record(design, features, versions, [], engine, corpora=corpora)
    record["history"] = [history_entry("lock", record["locked_at"], record)]
    write_lock(lp, record)
    return record


def check_design(
    design_path: str | Path,
    *,
    features: Features | None = None,
    versions: Versions | None = None,
    engines: Sequence[int] | None = None,
    corpora: Corpora | None = None,
) -> list[str]:
    """Compare a design (and, when given, its blocks' covariates and versions) with its lock.

    ``engines`` (the engine versions the package runs) checks that the engine the design
    pins is one of them (a ParameterError naming ``engine`` otherwise). ``corpora`` (the
    packaged corpora's digests now) adds a message per corpus whose digest differs from
    the lock's (:func:`~analysis.prereg.corpus_lock.corpus_changes`).

    Returns
    -------
    list of str
        Empty when the design matches its lock; otherwise one message per change
        (e.g. ``"held-out list changed: 3 heads added (...)"``,
        ``"block native: source changed (version 0c1d... -> 9f3a...)"``).

    Raises
    ------
    PreregistrationError
        When there is no lock.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock import check_design, lock_design
    >>> _ = lock_design(write_example_design("checked.toml"))
    >>> check_design("checked.toml")
    []
    >>> _ = write_example_design("checked.toml", eps=(0.2,))  # [sampling] edited
    >>> check_design("checked.toml")
    ['sections changed: sampling']
    """
    design_path = Path(design_path)
    record = read_lock(design_path)
    design = load_design(design_path)
    if engines is not None:
        check_design_engine(pinned_engine(design.data, record), engines)
    return design_changes(record, design, features, versions) + corpus_changes(record, corpora)


def _refuse(design_path: Path | str, changes: list[str]) -> PreregistrationError:
    return PreregistrationError(
        f"{design_path} drifted from its lock; confirmatory analysis refused: "
        + "; ".join(changes)
        + f'. A deliberate change goes through `attnrank prereg amend {design_path} --reason "..."`.'
    )


def require_locked(
    design_path: str | Path,
    *,
    features: Features | None = None,
    versions: Versions | None = None,
    engines: Sequence[int] | None = None,
) -> Lock:
    """Return the verified lock, or refuse: call first in every analysis command.

    Parameters
    ----------
    design_path : str or Path
    features, versions : mapping, optional, keyword-only
        The blocks' covariate names and versions now (from the descriptor registry);
        when given, they must match the lock's (:func:`verify_blocks`).
    engines : sequence of int, optional, keyword-only
        The engine versions the package runs: when given, the engine the design pins
        must be one of them (a ParameterError naming ``engine``).

    Raises
    ------
    PreregistrationError
        When the lock is missing or the design (or, when ``features`` is given, a block's
        covariates or version) drifted from it; the message names what changed and says
        how to amend.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock import lock_design, require_locked
    >>> path = write_example_design("required.toml")
    >>> _ = lock_design(path)
    >>> require_locked(path).held_out
    ('org/tiny:1:1', 'org/tiny:1:2')
    >>> _ = write_example_design(path, eps=(0.2,))
    >>> require_locked(path)
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: required.toml drifted from its lock; confirmatory analysis refused: sections changed: sampling. A deliberate change goes through `attnrank prereg amend required.toml --reason "..."`.
    """
    design_path = Path(design_path)
    record = read_lock(design_path)
    design = load_design(design_path)
    changes = design_changes(record, design, features, versions)
    if changes:
        raise _refuse(design_path, changes)
    if engines is not None:
        check_design_engine(pinned_engine(design.data, record), engines)
    return Lock(
        design=design,
        sha256=record.get("lock_sha256") or record["design_sha256"],
        held_out=tuple(record["held_out"]["heads"]),
        held_out_sha256=record["held_out"]["sha256"],
        record=record,
    )


def verify_blocks(lock: Lock, *, features: Features, versions: Versions) -> None:
    """Refuse when the design's blocks drifted from a verified lock (nothing is read).

    Parameters
    ----------
    lock : Lock
        From :func:`require_locked`.
    features, versions : mapping, keyword-only
        Each design block's covariate names and version now, from the descriptor
        registry (the study layer computes them; this package never imports it).

    Raises
    ------
    PreregistrationError
        Naming each drifted block (covariate columns added or removed, source changed, or
        not locked at all) and the ``attnrank prereg amend`` command that records it.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock import lock_design, require_locked, verify_blocks
    >>> path = write_example_design("verified.toml")
    >>> features = {"baseline": ["log_n"], "native": ["kappa"]}
    >>> versions = {"baseline": "a" * 64, "native": "b" * 64}
    >>> _ = lock_design(path, features=features, versions=versions)
    >>> lock = require_locked(path)
    >>> verify_blocks(lock, features=features, versions=versions)  # the blocks as locked
    >>> verify_blocks(lock, features=features, versions={**versions, "native": "c" * 64})
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: verified.toml drifted from its lock; confirmatory analysis refused: block native: source changed (version bbbbbbbbbbbb -> cccccccccccc). ...
    """
    if not isinstance(lock, Lock):
        raise ParameterError("lock", "a Lock from require_locked", type(lock).__name__)
    changes = block_changes(lock.record, lock.design, features, versions)
    if changes:
        raise _refuse(lock.design.path, changes)


def check_descriptor_columns(lock: Lock, columns: Sequence[str]) -> None:
    """Refuse a descriptor table whose covariate columns differ from the locked ones.

    Parameters
    ----------
    lock : Lock
    columns : sequence of str
        The table's covariate columns ``BLOCK__feature`` (diagnostics left out); columns
        of blocks outside the design's models are ignored.

    Raises
    ------
    PreregistrationError
        Named ``features``, naming each block whose columns differ (or that the lock has
        no covariate names for) and how to amend.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock import check_descriptor_columns, lock_design
    >>> from analysis.prereg.lock import require_locked
    >>> path = write_example_design("columns.toml")
    >>> _ = lock_design(path, features={"baseline": ["log_n"], "native": ["kappa"]})
    >>> lock = require_locked(path)
    >>> check_descriptor_columns(lock, ["baseline__log_n", "native__kappa", "other__x"])
    >>> check_descriptor_columns(lock, ["baseline__log_n"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: columns.toml: the descriptor table's covariate columns differ from the lock; comparison refused: block native: the table has none beyond the lock and lacks [native__kappa]. ...
    """
    path = lock.design.path
    locked = locked_blocks(lock.record)
    blocks = design_blocks(lock.design)
    unlocked = [b for b in blocks if b not in locked]
    if unlocked:
        raise PreregistrationError(
            f"{path}: the lock has no covariate names for blocks {', '.join(unlocked)}; "
            f'lock them with `attnrank prereg amend {path} --reason "..."`',
            name="features",
        )
    by_block: dict[str, set[str]] = {}
    for c in columns:
        by_block.setdefault(c.partition("__")[0], set()).add(c)
    msgs = []
    for b in blocks:
        want = {f"{b}__{f}" for f in locked[b]["covariates"]}
        have = by_block.get(b, set())
        if want != have:
            msgs.append(
                f"block {b}: the table has {name_list(sorted(have - want))} beyond the lock "
                f"and lacks {name_list(sorted(want - have))}"
            )
    if msgs:
        raise PreregistrationError(
            f"{path}: the descriptor table's covariate columns differ from the lock; "
            "comparison refused: "
            + "; ".join(msgs)
            + ". The table must be the locked blocks' output: if a block changed on "
            f'purpose, record it with `attnrank prereg amend {path} --reason "..."` and '
            "run again (the descriptors of changed blocks are then recomputed); otherwise "
            "delete the stored descriptor files so that the run recomputes them.",
            name="features",
        )
