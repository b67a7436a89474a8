"""The profile tasks of a bracket run, and their computation in this process or a worker.

A task is one matrix's missing profiles (:class:`_Group`); all the run's temperatures of the
matrix are searched side by side in one ``engine.profile_batch`` where the tasks share an
eps grid and effort (a fresh run's always do), else each task is its own group of one,
profiled cold. Each task carries the (pickled, 71-byte) engine and the matrix's file to
its worker (the arrays only for workers that may not read this machine's files); results
are committed by the calling process only (:mod:`analysis.store.run`).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import pickle
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from analysis.attention import fixed_torch_threads
from analysis.executor import task_pool
from analysis.store.engine import BracketEngine
from analysis.store.records import ProfileResult
from analysis.store.store import MatrixArrays, Store, load_arrays
from analysis.validation import ParameterError
from analysis.worker_setup import prepare_worker, shares_files


@dataclasses.dataclass(frozen=True)
class _Task:
    matrix_key: str
    array_file: str
    temperature: float
    eps_grid: tuple[float, ...]
    effort: str
    version: str
    extend: bool  # a stored profile of this (matrix, temperature, version, engine) is extended
    device: str | None = None  # where the engine's optimizers run (None: the CPU)
    engine: str = ""  # the engine's recorded label ("analysis.brackets 4")
    array_sha256: str = ""  # the array file's recorded hash, checked where it is read


@dataclasses.dataclass(frozen=True)
class _Group:
    """The profiles one matrix still needs, searched together."""

    matrix_key: str
    array_file: str
    temperatures: tuple[float, ...]  # the temperatures searched side by side
    tasks: tuple[_Task, ...]  # the ones to compute
    array_sha256: str = ""  # the array file's recorded hash, checked where it is read


def check_engine(engine: Any) -> BracketEngine:
    """``engine`` if it has every member of :class:`BracketEngine`; else a ParameterError
    naming ``engine`` and what it lacks."""
    members = ("name", "version", "efforts", "profile_batch", "load_profile")
    if missing := [a for a in members if not hasattr(engine, a)]:
        raise ParameterError(
            "engine",
            "a bracket engine (analysis.store.engine.BracketEngine: name, version, efforts, "
            "profile_batch, load_profile), e.g. analysis.brackets.engine.default_engine()",
            f"{type(engine).__name__} lacks {', '.join(missing)}",
        )
    return engine


def check_profile(profile: Any) -> Any:
    """``profile`` if it has every member of :class:`StoredProfile` (a profile that cannot
    be re-verified cannot be trusted); else a ParameterError naming ``engine``."""
    if missing := [a for a in ("bracket", "reverify", "to_dict") if not hasattr(profile, a)]:
        raise ParameterError(
            "engine",
            "an engine whose profiles have bracket, reverify and to_dict",
            f"its {type(profile).__name__} lacks {', '.join(missing)}",
        )
    return profile


def check_picklable(engine: BracketEngine) -> None:
    """A ParameterError naming ``engine`` when it does not pickle: worker processes and
    executors receive it with every task."""
    try:
        pickle.dumps(engine)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise ParameterError(
            "engine",
            "a picklable engine with workers > 1 or an executor (a module is not)",
            f"{type(engine).__name__}: {exc}",
        ) from None


def _compute_group(
    group: _Group,
    previous: dict[float, dict[str, Any]],
    engine: BracketEngine,
    arrays: MatrixArrays | None = None,
) -> list[ProfileResult]:
    """Profile every temperature of ``group`` side by side (one ``engine.profile_batch``,
    softmax64 matrices); return the results of ``group.tasks``, in order.

    The whole set is searched even when some of it is stored: a profile depends on the
    batch it was searched in, so this is what a fresh run computes for the missing ones.
    ``previous`` holds the stored profiles (as dicts) that tasks extend. ``arrays`` (the
    matrix's stored arrays) are read from ``group.array_file`` when None (its hash checked),
    as tasks do in workers that read this machine's files (a local pool, ``local:N``:
    :func:`analysis.executor.shares_files`); tasks sent to a cluster reached by its
    scheduler carry them, so its workers need no shared filesystem. Runs in the main
    process or a worker.
    """
    check_engine(engine)
    if arrays is None:
        arrays = load_arrays(Path(group.array_file), group.array_sha256, key=group.matrix_key)
    temps = list(group.temperatures)
    (grid,) = {task.eps_grid for task in group.tasks}
    (effort,) = {task.effort for task in group.tasks}
    prevs = [
        check_profile(engine.load_profile(previous[t])) if t in previous else None for t in temps
    ]
    mats = [arrays.at(t) for t in temps]
    start = time.perf_counter()
    with fixed_torch_threads(1):  # also inside the engine; here for an injected one
        profs = engine.profile_batch(
            mats, temps, eps=grid, effort=effort, previous=prevs, device=group.tasks[0].device
        )
    elapsed = time.perf_counter() - start
    out = []
    for task in group.tasks:
        prof = check_profile(profs[temps.index(task.temperature)])
        out.append(
            ProfileResult(
                effort=effort,
                eps_grid=grid,
                profile=prof.to_dict(witnesses=True, arrays="float32-base64"),
                brackets={e: tuple(int(v) for v in prof.bracket(e)) for e in grid},
                elapsed_s=elapsed / len(temps),  # the batch's time, shared evenly
            )
        )
    return out


def _groups(tasks: list[_Task], temperatures: Sequence[float]) -> list[_Group]:
    """The tasks of one matrix as one :class:`_Group` of every run temperature where they
    share an eps grid and effort (a fresh run's always do); otherwise one group per task,
    profiled cold (a batch of one)."""
    temps = tuple(dict.fromkeys(float(t) for t in temperatures))
    by_key: dict[str, list[_Task]] = {}
    for task in tasks:
        by_key.setdefault(task.matrix_key, []).append(task)
    out: list[_Group] = []
    for key, group in by_key.items():
        if len(temps) > 1 and len({(t.eps_grid, t.effort) for t in group}) == 1:
            out.append(_Group(key, group[0].array_file, temps, tuple(group), group[0].array_sha256))
        else:
            out.extend(
                _Group(key, t.array_file, (t.temperature,), (t,), t.array_sha256) for t in group
            )
    return out


def _worker_init() -> None:
    import torch

    torch.set_num_threads(1)
    prepare_worker(1)  # one thread per worker, glibc's heap defaults


def results(
    store: Store,
    tasks: list[_Task],
    engine: BracketEngine,
    workers: int,
    executor: cf.Executor | None = None,
    temperatures: Sequence[float] = (),
) -> Iterator[tuple[_Task, ProfileResult]]:
    """Yield (task, result) as profiles finish; previous profiles (and, for an executor,
    the arrays) are read lazily, at most two tasks per worker ahead. A matrix's
    temperatures are one task (:class:`_Group`) where they share an eps grid; each task
    carries the (pickled) engine to its worker."""

    def previous(job: _Group) -> dict[float, dict[str, Any]]:
        out = {}
        for t in job.tasks:
            old = t.extend and store.profile(t.matrix_key, t.temperature, t.version, t.engine)
            if old:
                out[t.temperature] = old.profile_dict()
        return out

    jobs = _groups(tasks, temperatures)
    if workers == 1 and executor is None:
        for job in jobs:
            yield from zip(job.tasks, _compute_group(job, previous(job), engine), strict=True)
        return
    # a task carries the matrix's path and hash; its arrays only where the workers may not
    # see the store's files (a cluster reached by its scheduler)
    carry = not shares_files(executor)
    with task_pool(executor, workers, initializer=_worker_init) as pool:
        calls = (
            (job, (job, previous(job), engine, store.arrays(job.matrix_key) if carry else None))
            for job in jobs
        )
        with contextlib.closing(pool.imap(_compute_group, calls)) as done:
            for job, res in done:
                yield from zip(job.tasks, res, strict=True)
