"""The study of one run: design, lock, plan and paths, opened once and passed to every stage.

:meth:`Study.open` checks the lock (which reads the design and its lock file once), imports
the design's plugins, checks each block's covariate names and version against the lock
(:func:`block_facts`) and plans the work; the stages and the results read everything else
they share from the Study, e.g. the input index ``extractions.json``, read on first use and
kept for the rest of the run.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from analysis.prereg import lock as prereg_lock
from analysis.prereg.design import Design
from analysis.study.paths import StudyPaths, study_paths
from analysis.study.plan import StudyPlan, missing_checkpoints, plan_study
from analysis.study.records import ExtractionIndex
from analysis.validation import ParameterError

__all__ = [
    "Study",
    "block_facts",
    "design_blocks",
    "git_commit",
    "load_plugins",
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
        lock = prereg_lock.require_locked(design_path)  # reads the design and its lock
        study = cls(
            design=lock.design,
            lock=lock,
            plan=plan_study(lock.design),
            paths=study_paths(design_path, root=root),
        )
        # a block edited after the lock stops every analysis command here, before any work
        prereg_lock.verify_blocks(lock, **block_facts(lock.design, root=study.paths.root))
        return study

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


def design_blocks(design: Design, *, root: Path | str | None) -> tuple[str, ...]:
    """Import the design's plugins; return its models' blocks, each of them registered.

    Parameters
    ----------
    design : Design
    root : path, keyword-only
        The study root, put first on ``sys.path`` for the plugins.

    Raises
    ------
    ParameterError
        Naming ``models.NAME`` for a block that is neither built in nor registered by a
        plugin.
    """
    from analysis.descriptors.registry import registered

    plugins = list(design.data.get("descriptors", {}).get("plugins", []))
    load_plugins(plugins, root)
    known = registered()
    for name, blocks in design.models.items():
        for b in blocks:
            if b not in known:
                raise ParameterError(
                    f"models.{name}",
                    f"registered blocks (built in, or from plugins {plugins})",
                    b,
                )
    return tuple(dict.fromkeys(b for blocks in design.models.values() for b in blocks))


def block_facts(design: Design, *, root: Path | str | None) -> dict[str, dict]:
    """What the lock records of the design's blocks, computed from the registry now.

    Returns
    -------
    dict
        ``{"features": {block: covariate names}, "versions": {block: version}}``: the
        keyword arguments of :func:`analysis.prereg.lock_design`, ``amend_design``,
        ``check_design``, ``require_locked`` and ``verify_blocks``
        (:func:`analysis.descriptors.block_covariates`, ``block_version``).
    """
    from analysis.descriptors.versions import block_covariates, block_version

    blocks = design_blocks(design, root=root)
    return {
        "features": {b: list(block_covariates(b)) for b in blocks},
        "versions": {b: block_version(b) for b in blocks},
    }


def stored_outcomes(paths: StudyPaths) -> dict[str, str] | None:
    """The study store's outcome record (None when no store or no outcome exists yet).

    ``{"time", "lock_sha256", "design", "store"}``: when the first bracket of the study
    was computed, under which lock, in which store. The keyword argument ``outcomes`` of
    :func:`analysis.prereg.lock_design` and ``amend_design`` (``analysis.prereg`` never
    imports the store: this layer reads it and passes the record on).
    """
    from analysis.store.store import Store

    if not (paths.store / Store.INDEX).is_file():
        return None
    with Store(paths.store) as store:
        return store.outcome_record()


def load_plugins(plugins: Sequence[str], root: Path | str | None) -> None:
    """Import the design's plugin modules, the study root first on ``sys.path``."""
    from analysis.descriptors.registry import load_plugin

    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for module in plugins:
        load_plugin(module)


def git_commit() -> str | None:
    """The commit of the code that runs (None outside a git checkout)."""
    return prereg_lock.git_commit(Path(__file__).resolve().parent)
