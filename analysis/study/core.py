"""The study of one run: design, lock, plan and paths, opened once and passed to every stage.

:meth:`Study.open` checks the lock (which reads the design and its lock file once), builds
the study's descriptor registry (the built-in blocks, then the design's plugins in order:
:func:`design_registry`), checks each block's covariate names and version against the lock
(:func:`block_facts`) and plans the work; the stages and the results read everything else
they share from the Study, e.g. the input index ``extractions.json``, read on first use and
kept for the rest of the run.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.prereg import lock as prereg_lock
from analysis.prereg.design import Design
from analysis.prereg.engine_pin import pinned_engine
from analysis.prereg.provenance import git_commit as prereg_git_commit
from analysis.study.paths import StudyPaths, study_paths
from analysis.study.plan import StudyPlan, missing_checkpoints, plan_study
from analysis.study.records import ExtractionIndex
from analysis.validation import ParameterError

if TYPE_CHECKING:  # the descriptor blocks are imported when a registry is built
    from analysis.descriptors.registry import Registry

__all__ = [
    "Study",
    "block_facts",
    "design_blocks",
    "design_registry",
    "engine_versions",
    "git_commit",
    "put_root_on_path",
    "stored_outcomes",
]


@dataclasses.dataclass(frozen=True, eq=False)
class Study:
    """A locked study, read once per run.

    Attributes
    ----------
    design : analysis.prereg.Design
        The parsed design, as verified against its lock.
    lock : analysis.prereg.Lock
        The verified lock (its ``design`` is ``design``).
    plan : StudyPlan
        What the design asks to compute.
    paths : StudyPaths
        Where the study keeps its stages and its report.
    engine : int
        The bracket engine version the design pins (``engine = N``; else its lock's;
        4 for a lock made before locks recorded one): every profile of the study is
        this engine's (:meth:`bracket_engine`).

    Examples
    --------
    A small design (one checkpoint of 2 x 4 heads, its held-out draw filled in), written
    to ``studies/`` of the current folder and locked:

    >>> from pathlib import Path
    >>> from analysis.prereg import PreregistrationError, load_design, lock_design
    >>> from analysis.study.core import Study, block_facts
    >>> from analysis.datasets import write_example_design
    >>> path = write_example_design("studies/toy.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    >>> toml = path.read_text(encoding="utf-8")
    >>> facts = block_facts(load_design("studies/toy.toml"))
    >>> _ = lock_design("studies/toy.toml", **facts)
    >>> study = Study.open("studies/toy.toml")
    >>> study.plan.blocks, study.plan.planned_real_cells  # 8 heads x 2 temperatures x 2 eps
    (('baseline', 'native'), 32)
    >>> study.block_versions == facts["versions"], study.paths.root == Path.cwd().resolve()
    (True, True)
    >>> study.engine == 4  # locked without engines=: read as engine 4, as old locks are
    True
    >>> study.real_keys()  # nothing extracted yet
    []
    >>> study.check_checkpoints({})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected every checkpoint ... missing:
      - org/tiny: ...

    A design edited after its lock does not open, nor does one locked with another
    version of a block than the code's (a block edited after the lock):

    >>> _ = Path("studies/toy.toml").write_text(toml.replace("0.2]", "0.3]"), encoding="utf-8")
    >>> _ = Path("studies/old.toml").write_text(toml, encoding="utf-8")
    >>> old = {**facts["versions"], "native": "0" * 64}
    >>> _ = lock_design("studies/old.toml", features=facts["features"], versions=old)
    >>> for name in ("toy", "old"):
    ...     try:
    ...         Study.open(f"studies/{name}.toml")
    ...     except PreregistrationError:
    ...         print(f"{name}: refused")
    toy: refused
    old: refused
    """

    design: Design
    lock: prereg_lock.Lock
    plan: StudyPlan
    paths: StudyPaths

    @classmethod
    def open(
        cls, design_path: str | os.PathLike, *, root: str | os.PathLike | None = None
    ) -> Study:
        """Check the lock of ``design_path`` and plan its study.

        Parameters
        ----------
        design_path : path
            A design file with its ``.lock`` beside it.
        root : path, optional, keyword-only
            Study root (default: the parent of the design's folder).

        Raises
        ------
        analysis.prereg.PreregistrationError
            When the lock is missing, the design drifted from it, or a block's covariate
            names or version (from the registry, plugins imported) differ from the lock's.
        ParameterError
            Naming ``models.NAME`` when a model's block is not registered.
        """
        from analysis.study.outcomes import (
            check_frozen_amendments,
            check_lock_age,
            study_outcomes,
        )

        lock = prereg_lock.require_locked(design_path)  # reads the design and its lock
        # a lock first written after the design's first outcome (wherever stored): refused
        outcomes = study_outcomes(design_path, root=root, lock_record=lock.record)
        check_lock_age(lock.record, outcomes, lock_file=prereg_lock.lock_path(design_path))
        # a frozen section amended once outcomes existed (unseen by `prereg amend`)
        check_frozen_amendments(lock.record, outcomes)
        study = cls(
            design=lock.design,
            lock=lock,
            plan=plan_study(lock.design),
            paths=study_paths(design_path, root=root),
        )
        # a block edited after the lock stops every analysis command here, before any work
        prereg_lock.verify_blocks(lock, **block_facts(lock.design, registry=study.registry))
        study.bracket_engine()  # an engine this package does not run: refused here too
        return study

    @property
    def engine(self) -> int:
        """The bracket engine version the design pins (see the class's attributes)."""
        return int(pinned_engine(self.design.data, self.lock.record))

    def bracket_engine(self) -> Any:
        """The package's engine of :attr:`engine`
        (:func:`analysis.brackets.engine.engine_for`); a ParameterError naming ``engine``
        when this package does not run that version."""
        from analysis.brackets.engine import engine_for

        return engine_for(self.engine)

    @functools.cached_property
    def registry(self) -> Registry:
        """The study's descriptor blocks: built in, then the design's plugins in order.

        Built once, on first use (:func:`design_registry`, the study root first on
        ``sys.path``); :meth:`open` uses it to check the blocks against the lock.
        """
        return design_registry(self.design, root=self.paths.root)

    @property
    def block_versions(self) -> dict[str, str]:
        """Each planned block's locked version (equal to the registry's: checked on open)."""
        blocks = self.lock.record["blocks"]
        return {b: blocks[b]["version"] for b in self.plan.blocks}

    @functools.cached_property
    def extractions(self) -> ExtractionIndex:
        """The input index (``extractions.json``), read on first use, then kept."""
        return ExtractionIndex(self.paths.extractions_file)

    def real_keys(self) -> list[str]:
        """Matrix keys the index records for the planned inputs, in plan order."""
        return [k for t in self.plan.extractions for k in self.extractions.keys(t.label)]

    def check_checkpoints(self, checkpoint_paths: Mapping[str, str]) -> None:
        """Refuse mappings of unknown ids, then list every checkpoint not available offline."""
        plan = self.plan
        unknown = sorted(set(checkpoint_paths) - set(plan.checkpoints))
        if unknown:
            raise ParameterError("checkpoint_paths", f"ids among {list(plan.checkpoints)}", unknown)
        missing = missing_checkpoints(plan, checkpoint_paths)
        if missing:
            lines = [f"  - {ck}: {msg}" for ck, msg in missing]
            raise ParameterError(
                "checkpoint",
                "every checkpoint of the design available offline; missing:\n"
                + "\n".join(lines)
                + "\n(or map a local folder with --checkpoint ID=PATH)",
                [ck for ck, _ in missing],
            )


def design_registry(design: Design, *, root: Path | str | None) -> Registry:
    """The descriptor registry of a design: the built-in blocks, then its plugins in order.

    Each built-in block at the version the design uses (``[descriptors] versions``, else
    its method's default: :func:`analysis.prereg.descriptor_versions.design_block_versions`).

    Parameters
    ----------
    design : Design
    root : path or None, keyword-only
        The study root, put first on ``sys.path`` so that the design's plugin modules
        (``[descriptors] plugins``) import from it.

    Raises
    ------
    ParameterError
        Naming ``module`` when a plugin cannot be imported or declares no ``BLOCKS``.

    Examples
    --------
    The parts of a design it reads (a real one comes from
    :func:`analysis.prereg.load_design`); without plugins, the built-in blocks:

    >>> from pathlib import Path
    >>> from analysis.prereg.design import Design
    >>> from analysis.study.core import design_registry
    >>> design = Design(Path("toy.toml"), {"descriptors": {"plugins": []}}, sha256="0" * 64)
    >>> list(design_registry(design, root=None))
    ['baseline', 'baseline_plus', 'native', 'intrinsic']
    >>> design_registry(design, root=None).get("native").func.__name__  # version 1
    'native'
    >>> v3 = Design(Path("toy.toml"), {"method": 3, "descriptors": {"plugins": []}}, "0")
    >>> design_registry(v3, root=None).get("native").func.__name__  # method 3: version 2
    'native_v2'
    >>> plugged = Design(Path("toy.toml"), {"descriptors": {"plugins": ["no_such_plugin"]}}, "0")
    >>> design_registry(plugged, root=None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: module: ...
    """
    from analysis.descriptors.builtin import build_registry
    from analysis.prereg.descriptor_versions import design_block_versions

    put_root_on_path(root)
    plugins = list(design.data.get("descriptors", {}).get("plugins", []))
    return build_registry(plugins, versions=design_block_versions(design.data))


def design_blocks(
    design: Design, *, root: Path | str | None = None, registry: Registry | None = None
) -> tuple[str, ...]:
    """The design's models' blocks, each of them in the registry.

    Parameters
    ----------
    design : Design
    root : path, keyword-only
        The study root, for :func:`design_registry` when ``registry`` is None.
    registry : Registry, optional, keyword-only
        The study's registry (default: built from ``design`` and ``root``).

    Raises
    ------
    ParameterError
        Naming ``models.NAME`` for a block that is neither built in nor declared by a
        plugin.

    Examples
    --------
    Each block once, in the order the models first name it:

    >>> from pathlib import Path
    >>> from analysis.prereg.design import Design
    >>> from analysis.study.core import design_blocks
    >>> models = {"M0": ["native"], "M1": ["native", "baseline"], "M2": ["baseline"]}
    >>> design = Design(Path("toy.toml"), {"models": models}, sha256="0" * 64)
    >>> design_blocks(design)
    ('native', 'baseline')
    >>> models["M2"] = ["baseline", "mystery"]
    >>> design_blocks(Design(Path("toy.toml"), {"models": models}, sha256="0" * 64))
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: models.M2: expected registered blocks ..., got 'mystery'
    """
    if registry is None:
        registry = design_registry(design, root=root)
    plugins = list(design.data.get("descriptors", {}).get("plugins", []))
    for name, blocks in design.models.items():
        for b in blocks:
            if b not in registry:
                raise ParameterError(
                    f"models.{name}", f"registered blocks (built in, or from plugins {plugins})", b
                )
    return tuple(dict.fromkeys(b for blocks in design.models.values() for b in blocks))


def block_facts(
    design: Design,
    *,
    root: Path | str | None = None,
    registry: Registry | None = None,
    kit: bool = False,
) -> dict[str, dict]:
    """What the lock records of the design's blocks, computed from the registry now.

    Parameters
    ----------
    design : Design
    root, registry : keyword-only
        As for :func:`design_blocks`: the study root, or the study's registry.
    kit : bool, default False, keyword-only
        First run the block kit (:func:`analysis.descriptors.check_block`) on each plugin
        block of the design's models, as ``attnrank prereg lock`` and ``amend`` do before
        they record the blocks; it raises at the first failed check.

    Returns
    -------
    dict
        ``{"features": {block: covariate names}, "versions": {block: version}}``: the
        keyword arguments of :func:`analysis.prereg.lock_design`, ``amend_design``,
        ``check_design``, ``require_locked`` and ``verify_blocks``
        (:func:`analysis.descriptors.block_covariates`, ``block_version``).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.descriptors import block_covariates, builtin_registry
    >>> from analysis.prereg.design import Design
    >>> from analysis.study.core import block_facts
    >>> models = {"M0": ["baseline"], "M1": ["baseline", "native"]}
    >>> facts = block_facts(Design(Path("toy.toml"), {"models": models}, sha256="0" * 64))
    >>> sorted(facts["features"]), sorted(facts["versions"])
    (['baseline', 'native'], ['baseline', 'native'])
    >>> facts["features"]["native"] == list(block_covariates(builtin_registry().get("native")))
    True
    >>> all(len(v) == 64 for v in facts["versions"].values())  # SHA-256 of the block's module
    True
    """
    from analysis.descriptors.builtin import BUILTIN_BLOCKS
    from analysis.descriptors.check import check_block
    from analysis.descriptors.versions import block_covariates, block_version

    if registry is None:
        registry = design_registry(design, root=root)
    blocks = design_blocks(design, registry=registry)
    builtin = {b.name for b in BUILTIN_BLOCKS}
    for b in blocks if kit else ():
        if b not in builtin:
            check_block(registry.get(b))
    return {
        "features": {b: list(block_covariates(registry.get(b))) for b in blocks},
        "versions": {b: block_version(registry.get(b)) for b in blocks},
    }


def engine_versions() -> tuple[int, ...]:
    """The bracket engine versions a design may pin, as the prereg functions take them
    (``engines=``): every version of :data:`analysis.brackets.ENGINE_VERSIONS`, oldest
    first except that :data:`analysis.brackets.LATEST_ENGINE` comes last.

    The prereg functions read the last version as the one a design pins when it writes no
    ``engine`` (and has no lock): that is the released default, as for plain commands. A
    version that is not the default (engine 6: frozen, cheaper than engine 5 at N = 256,
    but short of its width targets; docs/results/engine.md) is pinned by writing it,
    ``engine = 6``, as the replication design does.

    Examples
    --------
    >>> from analysis.brackets import ENGINE_VERSIONS, LATEST_ENGINE
    >>> from analysis.study.core import engine_versions
    >>> engine_versions()[-1] == LATEST_ENGINE, sorted(engine_versions()) == list(ENGINE_VERSIONS)
    (True, True)
    """
    from analysis.brackets import versions

    latest = versions.LATEST_ENGINE
    return tuple(v for v in versions.ENGINE_VERSIONS if v != latest) + (latest,)


def stored_outcomes(
    paths: StudyPaths, *, lock_record: Mapping[str, Any] | None = None
) -> dict[str, str] | None:
    """The study's first outcome record (None when no outcome exists yet).

    ``{"time", "lock_sha256", "design", "store", ...}``: when the first bracket of the study
    was computed, under which lock, in which store; found wherever the store is
    (:func:`analysis.study.outcomes.study_outcomes`: the store under ``paths.root``, under
    the default root, and those named beside the design). The keyword argument ``outcomes`` of
    :func:`analysis.prereg.lock_design` and ``amend_design`` (``analysis.prereg`` never
    imports the store: this layer reads it and passes the record on). ``lock_record``: the
    lock record when the caller holds it, so the lock is not read again.

    Examples
    --------
    >>> from analysis.store import Store
    >>> from analysis.study.core import stored_outcomes
    >>> from analysis.study.paths import study_paths
    >>> paths = study_paths("studies/outcomes.toml")
    >>> stored_outcomes(paths) is None  # no store yet
    True
    >>> with Store(paths.store, create=True) as store:
    ...     first = store.record_outcomes(lock_sha256="a" * 64, design="outcomes.toml")
    >>> record = stored_outcomes(paths)
    >>> {k: record[k] for k in first} == first, record["found_in"] == [first["store"]]
    (True, True)
    """
    from analysis.study.outcomes import study_outcomes

    return study_outcomes(paths.design, root=paths.root, lock_record=lock_record)


def put_root_on_path(root: Path | str | None) -> None:
    """Put the study root first on ``sys.path`` (once), so that its plugin modules import.

    Examples
    --------
    >>> import sys
    >>> from analysis.study.core import put_root_on_path
    >>> root = "/no/such/study-root"
    >>> put_root_on_path(root); put_root_on_path(root); put_root_on_path(None)
    >>> sys.path[0] == root, sys.path.count(root)
    (True, 1)
    >>> sys.path.remove(root)
    """
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))


def git_commit() -> str | None:
    """The commit of the code that runs (None outside a git checkout).

    Examples
    --------
    A 40-digit hexadecimal commit id in a checkout, None in an installed copy:

    >>> import re
    >>> from analysis.study.core import git_commit
    >>> commit = git_commit()
    >>> commit is None or re.fullmatch("[0-9a-f]{40}", commit) is not None
    True
    """
    return prereg_git_commit(Path(__file__).resolve().parent)
