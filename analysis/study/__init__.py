"""The study runner: design file -> sources -> store -> brackets -> descriptors -> compare -> report.

``attnrank run preregistration/STUDY.toml`` checks the lock before any work, then runs each
stage, skipping whatever is already stored:

1. **extract**: every (checkpoint, length, input) the design names into the study's store
   (``<root>/data/<stem>/store``); synthetic families as their own records;
2. **brackets**: certified profiles of real matrices at every design temperature and of
   synthetic ones at t = 1 (their beta is their temperature), one committed profile at a
   time (:func:`analysis.store.run_brackets`);
3. **descriptors**: the blocks the design's models name, one atomic CSV per matrix;
4. **compare**: the pre-specified nested comparisons on the sealed table (held-out rows
   released once, the result stamped with the lock hash), the OLS sensitivity refit and
   the exploratory head-level analysis on training heads (with ``[inference]
   by_checkpoint = true`` also the secondary effects by checkpoint of the same fits and
   the held-out predictions, with ``by_length = true`` the secondary effects by input
   length); stored with a hash of their inputs, so an unchanged study
   is not refitted;
5. **power**: ``attnrank validate-comparison`` on the study's own design (size at the
   simple and boundary nulls, power, minimum detectable effect of each hypothesis's
   decision), stored under the lock hash and the settings (:mod:`~analysis.study.power`);
6. **report**: tables, figures, ``report.md`` and ``provenance.json`` in
   ``<root>/reports/<stem>/``.

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
