"""The study of one run: design, lock, plan and paths, opened once and passed to every stage.

:meth:`Study.open` checks the lock (which reads the design and its lock file once) and plans
the work; the stages and the results read everything else they share from the Study, e.g.
the input index ``extractions.json``, read on first use and kept for the rest of the run.
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

__all__ = ["Study", "git_commit", "load_plugins"]


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
            When the lock is missing or the design drifted from it.
        """
        lock = prereg_lock.require_locked(design_path)  # reads the design and its lock
        return cls(
            design=lock.design,
            lock=lock,
            plan=plan_study(lock.design),
            paths=study_paths(design_path, root=root),
        )

    @functools.cached_property
    def extractions(self) -> ExtractionIndex:
        """The input index (``extractions.json``), read on first use, then kept."""
        return ExtractionIndex(self.paths.extractions_file)

    def real_keys(self) -> list[str]:
        """Matrix keys the index records for the planned inputs, in plan order."""
        return [k for t in self.plan.extractions for k in self.extractions.keys(t.label)]

    def check_blocks(self) -> None:
        """Import the design's plugins; every block of every model must then be registered."""
        from analysis.descriptors.registry import registered

        plan = self.plan
        load_plugins(plan.plugins, self.paths.root)
        known = registered()
        for name, blocks in self.design.models.items():
            for b in blocks:
                if b not in known:
                    raise ParameterError(
                        f"models.{name}",
                        f"registered blocks (built in, or from plugins {list(plan.plugins)})",
                        b,
                    )

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
