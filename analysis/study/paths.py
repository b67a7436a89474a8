"""Where a study keeps its stored stages and its report."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

__all__ = ["StudyPaths", "study_paths"]


@dataclasses.dataclass(frozen=True)
class StudyPaths:
    """Where a study keeps its stored stages and its report.

    Examples
    --------
    Made by :func:`study_paths`; the record files lie in its folders:

    >>> from analysis.study.paths import study_paths
    >>> paths = study_paths("studies/toy.toml", root="/srv/attn")
    >>> paths.stages_file.relative_to(paths.data).as_posix()
    'stages.json'
    >>> paths.feature_file("0860e9dc").relative_to(paths.root).as_posix()
    'data/toy/features/0860e9dc.csv'
    """

    design: Path
    root: Path
    data: Path
    store: Path
    features: Path
    results: Path
    report: Path

    @property
    def stages_file(self) -> Path:
        return self.data / "stages.json"

    @property
    def extractions_file(self) -> Path:
        return self.data / "extractions.json"

    def feature_file(self, key: str) -> Path:
        """The descriptor CSV of the stored matrix ``key``."""
        return self.features / f"{key}.csv"


def study_paths(design: str | os.PathLike, *, root: str | os.PathLike | None = None) -> StudyPaths:
    """Paths of the study whose design is ``design`` (root = parent of its folder).

    Examples
    --------
    Each study has its own folders, named after the design's stem:

    >>> from pathlib import Path
    >>> from analysis.study.paths import study_paths
    >>> paths = study_paths("studies/toy.toml")  # root: the parent of studies/
    >>> paths.root == Path.cwd().resolve(), paths.design.name
    (True, 'toy.toml')
    >>> [p.relative_to(paths.root).as_posix() for p in (paths.store, paths.report)]
    ['data/toy/store', 'reports/toy']
    >>> study_paths("studies/toy.toml", root="/srv/attn").features.as_posix()
    '/srv/attn/data/toy/features'
    """
    design = Path(design).resolve()
    root_p = Path(root).resolve() if root is not None else design.parent.parent
    stem = design.stem
    data = root_p / "data" / stem
    return StudyPaths(
        design=design,
        root=root_p,
        data=data,
        store=data / "store",
        features=data / "features",
        results=data / "results",
        report=root_p / "reports" / stem,
    )
