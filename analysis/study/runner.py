"""``run_study``: the stage order, ``stop_after``, and the wall seconds of every stage."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from analysis.executor import RunSpec, check_executor
from analysis.prereg.provenance import power_sha256
from analysis.study.comparison import compare_stage
from analysis.study.core import Study
from analysis.study.describe import descriptor_stage
from analysis.study.paths import StudyPaths
from analysis.study.power import power_stage
from analysis.study.records import StageClock
from analysis.study.results import bracket_table, cells_engine, feature_table, study_results
from analysis.study.stages import bracket_stage, extract_stage, synthetic_stage
from analysis.validation import ParameterError, check_device, check_int
from analysis.worker_setup import shared_pool

__all__ = ["STAGES", "StudyOptions", "StudyRun", "run_study"]

STAGES = ("extract", "brackets", "descriptors", "compare", "power", "report")


@dataclasses.dataclass(frozen=True)
class StudyOptions(RunSpec):
    """How :func:`run_study` runs a locked design: where its work is computed (the
    :class:`~analysis.executor.RunSpec` fields ``workers``, ``executor``, ``device`` and
    ``progress``, for profiles, descriptors and power simulations alike; ``batch`` is
    unused: the store computes one matrix per task), which stages run, and whether the
    power stage simulates. None of it changes a stored number.

    Attributes
    ----------
    stop_after : str, optional
        Stop after this stage (one of :data:`STAGES`).
    power_simulations : int or None
        None (the default): the power stage reads the design's stored power
        (``<stem>.power.json`` beside the design) and never simulates. A number: simulated
        studies per scenario and share; the stored file is reused when every input of the
        simulation is the same, else recomputed, rewritten and recorded in the lock (0
        skips the stage). See :func:`~analysis.study.power.power_stage`.
    power_assumptions : analysis.prereg.PowerAssumptions, optional
        What the simulation assumes beyond the design (default: its defaults, e.g. a
        native head share of 0.5); part of the stored result's key.

    Examples
    --------
    >>> from analysis.study.runner import StudyOptions
    >>> options = StudyOptions(progress=False, stop_after="brackets")
    >>> options.workers, options.stop_after, options.power_simulations
    (1, 'brackets', None)
    """

    stop_after: str | None = None
    power_simulations: int | None = None
    power_assumptions: Any = None


@dataclasses.dataclass(frozen=True)
class StudyRun:
    """What one ``attnrank run`` did.

    Examples
    --------
    >>> from analysis.study.paths import study_paths
    >>> run = StudyRun("toy", study_paths("studies/toy.toml"), {"extract": 3},
    ...                {"extract": 1.25, "brackets": 2.0}, ("a.md", "b.csv"))
    >>> lines = run.summary().splitlines()
    >>> lines[1].split(), lines[2].split(), lines[3].endswith("(2 files)")
    (['extract', '1.2', 's,', '3', 'computed'], ['brackets', '2.0', 's'], True)
    """

    study: str
    paths: StudyPaths
    computed: dict[str, int]
    stage_seconds: dict[str, float]
    report_files: tuple[str, ...]

    def summary(self) -> str:
        lines = [f"study {self.study}: stored under {self.paths.data}"]
        for s in STAGES:
            if s in self.stage_seconds:
                n = self.computed.get(s)
                extra = f", {n} computed" if n is not None else ""
                lines.append(f"  {s:<12}{self.stage_seconds[s]:8.1f} s{extra}")
        if self.report_files:
            lines.append(f"report: {self.paths.report} ({len(self.report_files)} files)")
        return "\n".join(lines)


@contextlib.contextmanager
def _timed(clock: StageClock, stage: str) -> Iterator[None]:
    """Add the stage's wall seconds to the record, also when it is interrupted."""
    start = time.perf_counter()
    try:
        yield
    finally:
        clock.add(stage, time.perf_counter() - start)


def run_study(
    design_path: str | os.PathLike,
    *,
    options: StudyOptions | None = None,
    root: str | os.PathLike | None = None,
    checkpoint_paths: Mapping[str, str | os.PathLike] | None = None,
    engine: Any = None,
    say: Callable[[str], None] | None = None,
) -> StudyRun:
    """Run a locked design from its sources to its report, resuming what is stored.

    The design and its lock are read once (:meth:`Study.open`), and so is the input index;
    every stage gets the same :class:`~analysis.study.core.Study`.

    Parameters
    ----------
    design_path : path
        A design file with its ``.lock`` beside it.
    options : StudyOptions, optional, keyword-only
        Workers or an executor, a device, progress bars, the stage to stop after, and
        the power simulation (default: ``StudyOptions()``, the whole run on this process).
    root : path, optional, keyword-only
        Study root (default: the parent of the design's folder).
    checkpoint_paths : mapping, keyword-only
        Design checkpoint id -> local folder holding it (or a stand-in); others resolve
        offline as in ``attnrank extract``.
    engine : analysis.store.BracketEngine, optional, keyword-only
        The bracket engine passed to the store (default: the package's engine of the
        version the design pins, :meth:`Study.bracket_engine`; the package's engine of
        another version is refused); a stand-in in tests. The study reads the brackets
        of this engine only.
    say : callable, optional, keyword-only
        Receives one-line messages (default: print).

    Returns
    -------
    StudyRun

    Raises
    ------
    analysis.prereg.PreregistrationError
        Before any work, when the lock is missing or the design or a block drifted
        (:meth:`Study.open`); in the compare stage, when the descriptor table's covariate
        columns differ from the lock.
    ParameterError
        Before any work, when a model's block is not registered, or a checkpoint is not
        available offline (listing them all).

    Examples
    --------
    A whole run needs a checkpoint's weights; what a call checks before any work is
    cheaper: an unknown stage, and a design without its lock, are refused.

    >>> from pathlib import Path
    >>> from analysis.prereg import PreregistrationError
    >>> run_study("studies/any.toml", options=StudyOptions(stop_after="plots"))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: stop_after: expected one of extract, ..., report, ...
    >>> Path("studies").mkdir(exist_ok=True)
    >>> _ = Path("studies/unlocked.toml").write_text('title = "t"', encoding="utf-8")
    >>> try:
    ...     run_study("studies/unlocked.toml", say=print)
    ... except PreregistrationError:
    ...     print("refused: no lock")
    refused: no lock
    """
    from analysis.store.store import Store

    say = say or print
    opts = options or StudyOptions()
    executor, progress = opts.executor, opts.progress
    workers = check_executor(executor, opts.workers)
    device = None if opts.device is None else str(check_device(opts.device))
    sims, stop_after = opts.power_simulations, opts.stop_after
    if sims is not None:
        sims = check_int("power_simulations", sims, minimum=0)
    if stop_after is not None and stop_after not in STAGES:
        raise ParameterError("stop_after", f"one of {', '.join(STAGES)}", stop_after)
    # lock drift (of the design or of a block) stops the run before any work
    study = Study.open(design_path, root=root)
    plan, paths = study.plan, study.paths
    cpaths = {k: os.fspath(v) for k, v in (checkpoint_paths or {}).items()}
    study.check_checkpoints(cpaths)
    paths.data.mkdir(parents=True, exist_ok=True)
    clock = StageClock(paths.stages_file)
    computed: dict[str, int] = {}
    report_files: tuple[str, ...] = ()
    say(
        f"study {paths.design.stem}: lock ok ({study.lock.sha256[:12]}), "
        f"{len(plan.extractions)} inputs, {len(plan.synthetic)} synthetic matrices, "
        f"{len(plan.temperatures)} temperatures x {len(plan.eps)} eps, effort {plan.effort}, "
        f"engine {study.engine}"
    )
    from analysis.prereg.code_hash import code_drift

    # a warning, not a refusal (see analysis.prereg.code_hash)
    drift = code_drift(study.lock.record, design_path=design_path)
    if drift:
        say(f"warning: {drift}")
    from analysis.prereg.corpus_lock import verify_corpora
    from analysis.study.inputs import design_corpora

    # a packaged corpus built from other package versions hands seeds other inputs
    verify_corpora(study.lock, design_corpora(study.design))
    engine = study.bracket_engine() if engine is None else engine
    label = cells_engine(study, engine)
    with Store(paths.store, create=True) as store:
        with _timed(clock, "extract"):
            before = len(store.matrices())
            real_keys = extract_stage(study, store, cpaths, progress, say)
            synth_keys = synthetic_stage(study, store)
            computed["extract"] = len(store.matrices()) - before
        # one pool for both stages (--workers N): a pool per call spawns and imports anew
        with shared_pool(executor, workers) as (ex, n):
            if stop_after != "extract":
                with _timed(clock, "brackets"):
                    computed["brackets"] = bracket_stage(
                        study,
                        store,
                        real_keys,
                        synth_keys,
                        engine=engine,
                        run=RunSpec(n, ex, device, progress),
                        say=say,
                    )
            if stop_after not in ("extract", "brackets"):
                with _timed(clock, "descriptors"):
                    computed["descriptors"] = descriptor_stage(
                        study, store, real_keys, n, progress, ex
                    )
            if stop_after in (None, "compare", "power", "report") and real_keys:
                held_out = study.design.held_out
                brackets = bracket_table(store, plan, real_keys, synth_keys, held_out, label)
                features = feature_table(paths, real_keys)
                with _timed(clock, "compare"):
                    # the refit bootstrap's refits run on the same pool (method 3)
                    compare_stage(
                        study, brackets, features, say, executor=ex, workers=n, progress=progress
                    )
        if stop_after in (None, "compare", "power", "report") and real_keys:
            if stop_after in (None, "power", "report"):
                with _timed(clock, "power"):
                    power = power_stage(
                        study,
                        brackets,
                        features,
                        simulations=sims,
                        workers=workers,
                        say=say,
                        executor=executor,
                        assumptions=opts.power_assumptions,
                    )
                if "skipped" in power:
                    say(f"power: not simulated: {power['skipped']}")
                elif power_sha256(paths.design) != study.lock.record.get("power_sha256"):
                    # the stage stored a new power file and amended the lock: read it again
                    study = Study.open(design_path, root=root)
    if stop_after in (None, "report"):
        from analysis.report import build_report

        with _timed(clock, "report"):
            results = study_results(study, stages=clock.record, engine=engine)
            files = build_report(results, paths.report, progress=progress)
        report_files = tuple(str(p) for p in files.paths())
    return StudyRun(
        study=paths.design.stem,
        paths=paths,
        computed=computed,
        stage_seconds=dict(clock.now),
        report_files=report_files,
    )
