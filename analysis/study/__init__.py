"""The study runner: design file -> sources -> store -> brackets -> descriptors -> compare -> report.

``attnrank run preregistration/STUDY.toml`` checks the lock before any work, then runs the
stages extract, brackets (:func:`analysis.store.run_brackets`; synthetic matrices at t = 1,
their beta being their temperature), descriptors, compare, power
(:mod:`~analysis.study.power`) and report, skipping whatever is already stored. What each
stage computes and where it writes: docs/guide/study.md, "One command".

A run opens one :class:`Study` (the design and its lock read and checked once, the plan,
the paths) and hands it to every stage. A study's root is the parent of its design's
folder (docs/guide/conventions.md, "Design file and lock"); ``root`` overrides it. Ctrl-C
or a crash loses nothing finished: profiles are committed one by one, descriptor files and
stage records are written atomically, and a re-run resumes.

Modules: :mod:`~analysis.study.plan` (what the design asks for),
:mod:`~analysis.study.paths`, :mod:`~analysis.study.records` (``stages.json``,
``extractions.json``), :mod:`~analysis.study.core` (:class:`Study`),
:mod:`~analysis.study.stages` (extract, brackets), :mod:`~analysis.study.describe`,
:mod:`~analysis.study.comparison`, :mod:`~analysis.study.power`,
:mod:`~analysis.study.results`,
:mod:`~analysis.study.runner` (``attnrank run`` is :mod:`analysis.cli.study`).
"""

from analysis.study.core import Study, block_facts, stored_outcomes
from analysis.study.paths import StudyPaths, study_paths
from analysis.study.plan import StudyPlan, missing_checkpoints, plan_study
from analysis.study.results import load_results, report_design, study_results
from analysis.study.runner import STAGES, StudyOptions, StudyRun, run_study

__all__ = [
    "STAGES",
    "Study",
    "StudyPaths",
    "StudyPlan",
    "StudyOptions",
    "StudyRun",
    "block_facts",
    "load_results",
    "report_design",
    "missing_checkpoints",
    "plan_study",
    "run_study",
    "stored_outcomes",
    "study_paths",
    "study_results",
]
