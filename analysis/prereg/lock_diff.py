"""What a lock records of a design, and how the design now differs from its lock.

:mod:`analysis.prereg.lock` writes, checks and amends the lock ``FILE.lock``; this module
holds the parts it builds on that read and write no file: the hashes a lock records (one
per top-level section, and the lock hash), the blocks and covariate columns it holds, and
the messages naming each change between a lock record and the design now (held-out list,
models, blocks, stored power, other sections).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.prereg.design import Design, canonical_bytes, heads_sha256
from analysis.prereg.engine_pin import engine_changes
from analysis.prereg.provenance import power_path, power_sha256
from analysis.validation import ParameterError

__all__ = [
    "Corpora",
    "Features",
    "Versions",
    "block_changes",
    "check_corpora",
    "corpus_changes",
    "design_blocks",
    "design_changes",
    "lock_hash",
    "locked_blocks",
    "model_columns",
    "name_list",
    "normalized_features",
    "section_hashes",
    "sections_changed",
]

#: Block -> covariate names, bare (``log_n``) or full (``baseline__log_n``).
Features = Mapping[str, Sequence[str]]
#: Block -> version (``analysis.descriptors.block_version``), None when unknown.
Versions = Mapping[str, str | None]


def model_columns(
    blocks: Sequence[str], features: Mapping[str, Sequence[str]] | None
) -> list[str] | None:
    """Sorted ``BLOCK__feature`` columns of a model, or None when a block is unknown.

    Parameters
    ----------
    blocks : sequence of str
        The model's blocks.
    features : mapping block -> feature names, or None
        Each block's feature names, bare (``log_n``) or full (``baseline__log_n``).

    Returns
    -------
    list of str or None
        The sorted, de-duplicated columns; None when ``features`` is None or lacks one
        of ``blocks``.

    Examples
    --------
    >>> from analysis.prereg.lock_diff import model_columns
    >>> model_columns(["native", "baseline"],
    ...               {"baseline": ["log_n"], "native": ["native__kappa", "rank"]})
    ['baseline__log_n', 'native__kappa', 'native__rank']
    >>> model_columns(["baseline", "intrinsic"], {"baseline": ["log_n"]}) is None
    True
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


def section_hashes(data: Mapping[str, Any]) -> dict[str, str]:
    """SHA-256 per top-level section of a parsed design; ``held_out`` without its list.

    Each section ``k`` is hashed as the canonical bytes of ``{k: value}``
    (:func:`~analysis.prereg.design.canonical_bytes`); the held-out list is left out of
    its section's hash because the lock records it, and reports its changes, separately.

    Parameters
    ----------
    data : mapping
        The parsed design (``Design.data``).

    Returns
    -------
    dict
        Section name -> hex digest, sorted by name.

    Examples
    --------
    >>> import hashlib
    >>> from analysis.prereg.lock_diff import section_hashes
    >>> data = {"title": "toy", "held_out": {"seed": 7, "heads": ["org/tiny:0:1"]}}
    >>> hashes = section_hashes(data)
    >>> list(hashes)
    ['held_out', 'title']
    >>> hashes["title"] == hashlib.sha256(b'{"title":"toy"}').hexdigest()
    True
    >>> other = section_hashes({"held_out": {"seed": 7, "heads": []}})  # another list
    >>> other["held_out"] == hashes["held_out"]
    True
    >>> section_hashes({"held_out": {"seed": 8}})["held_out"] == hashes["held_out"]
    False
    """
    out = {}
    for k, v in sorted(data.items()):
        if k == "held_out" and isinstance(v, Mapping):
            v = {kk: vv for kk, vv in v.items() if kk != "heads"}
        out[k] = hashlib.sha256(canonical_bytes({k: v})).hexdigest()
    return out


def design_blocks(design: Design) -> list[str]:
    """The blocks of the design's models, each once, in first-use order.

    Parameters
    ----------
    design : Design

    Returns
    -------
    list of str

    Examples
    --------
    The example design's models are ``M0 = [baseline]`` and ``M1 = [baseline, native]``:

    >>> from analysis.prereg import load_design
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock_diff import design_blocks
    >>> design_blocks(load_design(write_example_design("blocks.toml")))
    ['baseline', 'native']
    """
    return list(dict.fromkeys(b for blocks in design.models.values() for b in blocks))


def normalized_features(features: Features | None) -> dict[str, list[str]] | None:
    """Block -> sorted bare feature names (``baseline__log_n`` -> ``log_n``).

    Parameters
    ----------
    features : mapping block -> feature names, or None

    Returns
    -------
    dict or None
        None when ``features`` is None.

    Examples
    --------
    >>> from analysis.prereg.lock_diff import normalized_features
    >>> normalized_features({"baseline": ["baseline__log_n", "depth", "log_n"]})
    {'baseline': ['depth', 'log_n']}
    >>> normalized_features(None) is None
    True
    """
    if features is None:
        return None
    out = {}
    for b, names in features.items():
        out[b] = sorted({f[len(b) + 2 :] if f.startswith(b + "__") else f for f in names})
    return out


def lock_hash(record: Mapping[str, Any]) -> str:
    """The lock hash: what a confirmatory result is stamped with.

    The SHA-256 of the canonical bytes of the record's design hash, held-out hash, models
    and blocks, and its pinned engine when it records one (see
    :class:`~analysis.prereg.lock.Lock`); the stored power and the
    provenance are outside it.

    Parameters
    ----------
    record : mapping
        A lock record (its ``design_sha256``, ``held_out.sha256``, ``models`` and, when
        present, ``blocks``).

    Returns
    -------
    str
        Hex digest.

    Examples
    --------
    >>> import hashlib
    >>> from analysis.prereg.lock_diff import lock_hash
    >>> record = {"design_sha256": "d", "held_out": {"sha256": "h"}, "models": {}}
    >>> canonical = b'{"blocks":{},"design_sha256":"d","held_out_sha256":"h","models":{}}'
    >>> lock_hash(record) == hashlib.sha256(canonical).hexdigest()
    True
    >>> lock_hash({**record, "power_sha256": "p"}) == lock_hash(record)  # outside it
    True
    >>> blocks = {"native": {"covariates": ["kappa"], "version": "v1"}}
    >>> lock_hash({**record, "blocks": blocks}) == lock_hash(record)
    False
    """
    content = {
        "design_sha256": record["design_sha256"],
        "held_out_sha256": record["held_out"]["sha256"],
        "models": record["models"],
        "blocks": record.get("blocks", {}),
    }
    if "engine" in record:  # a lock written before the field keeps its hash
        content["engine"] = record["engine"]
    return hashlib.sha256(canonical_bytes(content)).hexdigest()


def locked_blocks(record: Mapping[str, Any]) -> dict[str, dict]:
    """Block -> ``{"covariates": [...], "version": str | None}`` as locked.

    A lock written before block versions existed, with feature columns, yields its
    columns split by block and no versions; a lock without columns yields ``{}``.

    Examples
    --------
    >>> from analysis.prereg.lock_diff import locked_blocks
    >>> locked_blocks({"blocks": {"native": {"covariates": ["kappa"], "version": "v1"}}})
    {'native': {'covariates': ['kappa'], 'version': 'v1'}}
    >>> columns = ["baseline__log_n", "native__kappa"]
    >>> locked_blocks({"models": {"M1": {"blocks": ["baseline", "native"],
    ...                                  "features": columns}}})  # an older lock
    {'baseline': {'covariates': ['log_n'], 'version': None},
     'native': {'covariates': ['kappa'], 'version': None}}
    >>> locked_blocks({"models": {"M0": {"blocks": ["baseline"], "features": None}}})
    {}
    """
    if "blocks" in record:
        return {b: dict(v) for b, v in record["blocks"].items()}
    out: dict[str, dict] = {}
    for m in record.get("models", {}).values():
        if m.get("features") is None:
            continue
        for b in m["blocks"]:
            cols = [c.split("__", 1)[1] for c in m["features"] if c.partition("__")[0] == b]
            out[b] = {"covariates": sorted(cols), "version": None}
    return out


def name_list(items: Sequence[str]) -> str:
    """Names as the lock's messages list them: ``[a, b]``, or ``none`` when empty.

    Examples
    --------
    >>> from analysis.prereg.lock_diff import name_list
    >>> name_list(["baseline__log_n", "native__kappa"]), name_list([])
    ('[baseline__log_n, native__kappa]', 'none')
    """
    return "[" + ", ".join(items) + "]" if items else "none"


def block_changes(
    record: Mapping[str, Any],
    design: Design,
    features: Features | None,
    versions: Versions | None,
) -> list[str]:
    """How the blocks (as the registry has them now) differ from the lock; [] if unknown.

    Parameters
    ----------
    record : mapping
        The lock record.
    design : Design
        The design now.
    features, versions : mapping or None
        Each block's covariate names and version now; nothing is compared without
        ``features``, and no version without ``versions``.

    Returns
    -------
    list of str
        One message per changed block (covariate columns added or removed, source
        changed), and one naming the blocks whose covariates or versions the lock lacks.

    Examples
    --------
    >>> from analysis.prereg import load_design, lock_design
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock_diff import block_changes
    >>> path = write_example_design("block_changes.toml")
    >>> features = {"baseline": ["log_n"], "native": ["kappa"]}
    >>> versions = {"baseline": "a" * 64, "native": "b" * 64}
    >>> record = lock_design(path, features=features, versions=versions)
    >>> design = load_design(path)
    >>> block_changes(record, design, features, versions)
    []
    >>> block_changes(record, design, {**features, "native": ["kappa", "rho"]},
    ...               {**versions, "native": "c" * 64})
    ['block native: covariate columns changed (added [native__rho], removed none)',
     'block native: source changed (version bbbbbbbbbbbb -> cccccccccccc)']
    >>> block_changes(record, design, None, None)
    []
    """
    if features is None:
        return []
    norm = normalized_features(features) or {}
    locked = locked_blocks(record)
    locked_models = {b for m in record.get("models", {}).values() for b in m["blocks"]}
    unlocked, unversioned, changes = [], [], []
    for b in design_blocks(design):
        if b not in norm or b not in locked_models:
            continue  # a block the lock never had: the models change says so
        if b not in locked:
            unlocked.append(b)
            continue
        old, new = set(locked[b]["covariates"]), set(norm[b])
        if old != new:
            changes.append(
                f"block {b}: covariate columns changed (added "
                f"{name_list(sorted(f'{b}__{f}' for f in new - old))}, removed "
                f"{name_list(sorted(f'{b}__{f}' for f in old - new))})"
            )
        if versions is None or versions.get(b) is None:
            continue
        was = locked[b].get("version")
        if was is None:
            unversioned.append(b)
        elif was != versions[b]:
            changes.append(f"block {b}: source changed (version {was[:12]} -> {versions[b][:12]})")
    if unlocked:
        changes.insert(
            0,
            f"covariate names and versions of blocks {', '.join(unlocked)} are not locked "
            "(the lock was written without them)",
        )
    if unversioned:
        changes.append(f"versions of blocks {', '.join(unversioned)} are not locked")
    return changes


def _power_changes(record: Mapping[str, Any], design: Design) -> list[str]:
    """How the design's stored power file differs from the one locked ([] when equal).

    A lock written before ``power_sha256`` existed locks "no power file".
    """
    locked, now = record.get("power_sha256"), power_sha256(design.path)
    if locked == now:
        return []
    name = power_path(design.path).name
    if locked is None:
        return [f"power file {name} is not locked (sha256 {now[:12]})"]
    if now is None:
        return [f"power file {name} is missing (locked sha256 {locked[:12]})"]
    return [f"power file {name} changed (sha256 {locked[:12]} -> {now[:12]})"]


def design_changes(
    record: dict,
    design: Design,
    features: Features | None,
    versions: Versions | None = None,
) -> list[str]:
    """Human-readable differences between a lock record and the current design.

    Parameters
    ----------
    record : dict
        A lock record, as :func:`~analysis.prereg.lock.lock_design` wrote it.
    design : Design
        The design as it is now (:func:`~analysis.prereg.design.load_design`).
    features : mapping block -> covariate names, or None
    versions : mapping block -> version, or None, default None
        As in :func:`block_changes`.

    Returns
    -------
    list of str
        Empty when the design matches the lock; otherwise one message per change: the
        held-out list, the models, the blocks, the stored power, the other sections by
        name, and a damaged lock file (its held-out or lock hash not matching its content).

    Examples
    --------
    A design locked as written, then edited:

    >>> from analysis import prereg
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock_diff import design_changes
    >>> record = prereg.lock_design(write_example_design("drift.toml"))
    >>> design_changes(record, prereg.load_design("drift.toml"), None)
    []
    >>> _ = write_example_design("drift.toml", temperatures=(0.5, 1.0))  # [sampling]
    >>> design_changes(record, prereg.load_design("drift.toml"), None)
    ['sections changed: sampling']
    >>> _ = write_example_design("drift.toml", held_out=("org/tiny:0:0", "org/tiny:1:2"))
    >>> design_changes(record, prereg.load_design("drift.toml"), None)
    ['held-out list changed: 1 head added (org/tiny:0:0); 1 head removed (org/tiny:1:1)']
    >>> _ = write_example_design("drift.toml")  # as locked, but the lock file edited:
    >>> design_changes({**record, "lock_sha256": "0" * 64}, prereg.load_design("drift.toml"), None)
    ['lock file damaged: its lock hash does not match its content']
    """
    changes: list[str] = []
    old = list(record["held_out"]["heads"])
    new = list(design.held_out)
    if old != new:
        parts = [
            f"{len(heads)} head{'s' * (len(heads) != 1)} {verb} "
            f"({', '.join(heads[:5])}{', ...' if len(heads) > 5 else ''})"
            for verb, heads in (
                ("added", sorted(set(new) - set(old))),
                ("removed", sorted(set(old) - set(new))),
            )
            if heads
        ]
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
    if model_msgs:
        changes.append("models changed: " + "; ".join(model_msgs))
    changes.extend(block_changes(record, design, features, versions))
    changes.extend(engine_changes(record, design.data))
    changes.extend(_power_changes(record, design))
    old_sections = record.get("sections", {})
    new_sections = section_hashes(design.data)
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
    if "lock_sha256" in record and record["lock_sha256"] != lock_hash(record):
        changes.append("lock file damaged: its lock hash does not match its content")
    return changes


def sections_changed(record: Mapping[str, Any], design: Design) -> list[str]:
    """The top-level sections whose hash differs from the lock's.

    A change of the held-out list counts as ``held_out`` and a change of a model's blocks
    as ``models`` (what :data:`~analysis.prereg.lock.FROZEN_SECTIONS` is checked against).

    Parameters
    ----------
    record : mapping
    design : Design
        What was locked, and the design as it is now.

    Returns
    -------
    list of str
        Sorted section names.

    Examples
    --------
    The held-out list and the sampling grid of a locked design edited (the list is
    outside the ``held_out`` section's hash, yet counts as that section):

    >>> from analysis.prereg import load_design, lock_design
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.lock_diff import sections_changed
    >>> record = lock_design(write_example_design("sections.toml"))
    >>> path = write_example_design("sections.toml", eps=(0.2,),
    ...                             held_out=("org/tiny:0:0", "org/tiny:1:2"))
    >>> sections_changed(record, load_design(path))
    ['held_out', 'sampling']
    """
    old = record.get("sections", {})
    new = section_hashes(design.data)
    out = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if list(record["held_out"]["heads"]) != list(design.held_out):
        out.add("held_out")
    if any(
        list(m["blocks"]) != list(design.models.get(name, []))
        for name, m in record["models"].items()
    ) or set(record["models"]) != set(design.models):
        out.add("models")
    return sorted(out)


#: Packaged corpus name -> its SHA-256 (hex), as the study layer computes it.
Corpora = Mapping[str, str]


def check_corpora(corpora: Any) -> dict[str, str]:
    """``corpora`` as a sorted plain dict of name -> 64-hex digest, or a ParameterError.

    Examples
    --------
    >>> from analysis.prereg.corpus_lock import check_corpora
    >>> check_corpora({"kokoro-ja-v1": "f" * 64})
    {'kokoro-ja-v1': 'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff'}
    >>> check_corpora({"kokoro-ja-v1": "f"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: corpora: expected a mapping of corpus names to \
SHA-256 hex digests, got ...
    """
    allowed = "a mapping of corpus names to SHA-256 hex digests"
    if not isinstance(corpora, Mapping):
        raise ParameterError("corpora", allowed, corpora)
    out = {}
    for name, digest in corpora.items():
        ok = isinstance(digest, str) and len(digest) == 64
        if not (isinstance(name, str) and ok and all(c in "0123456789abcdef" for c in digest)):
            raise ParameterError("corpora", allowed, {name: digest})
        out[name] = digest
    return dict(sorted(out.items()))


def corpus_changes(record: Mapping[str, Any], corpora: Corpora | None) -> list[str]:
    """One message per packaged corpus whose digest now differs from the lock's.

    Parameters
    ----------
    record : mapping
        A lock record; without a ``corpora`` entry nothing is compared.
    corpora : mapping of str to str, optional
        The design's packaged corpora and their digests now; None: not computed (nothing
        is compared).

    Returns
    -------
    list of str
        Empty when every locked corpus has its locked digest and no packaged corpus was
        added or dropped.

    Examples
    --------
    >>> from analysis.prereg.lock_diff import corpus_changes
    >>> record = {"corpora": {"kokoro-ja-v1": "a" * 64}}
    >>> corpus_changes(record, {"kokoro-ja-v1": "a" * 64}), corpus_changes({}, {})
    ([], [])
    >>> corpus_changes(record, {"packaged-images-v2": "b" * 64})
    ['corpus kokoro-ja-v1: in the lock, not read now', 'corpus packaged-images-v2: read now, not in the lock']
    """
    locked = record.get("corpora")
    if locked is None or corpora is None:
        return []
    now = check_corpora(corpora)
    changes = []
    for name in sorted(set(locked) | set(now)):
        old, new = locked.get(name), now.get(name)
        if old == new:
            continue
        if old is None:
            changes.append(f"corpus {name}: read now, not in the lock")
        elif new is None:
            changes.append(f"corpus {name}: in the lock, not read now")
        else:
            changes.append(f"corpus {name}: contents changed (digest {old[:12]} -> {new[:12]})")
    return changes
