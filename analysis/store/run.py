"""Compute bracket profiles for every (matrix, temperature) of a store, resumably.

Each finished profile is committed to the store at once, so a run killed at any moment
keeps everything it finished, and the next run skips it. A profile is a pure function of
(matrix arrays, temperature, eps grid, effort, and the run's set of temperatures, which
are searched together), and torch runs single-threaded inside each
computation: a resumed run, a rerun and any ``workers`` give the same profiles. Nothing
stored is trusted: a run re-verifies every stored profile it covers before it skips or
extends it, and recomputes those that fail. A profile is keyed by the engine that
computed it too: the profiles of another engine version stay as they are, beside this
engine's, never extended, overwritten or mixed with them.

The engine comes in as an object (:class:`analysis.store.engine.BracketEngine`; ``study``
and ``cli`` pass :func:`analysis.brackets.engine.engine_for` of a version): the store
imports none.
The temperatures of one matrix are one task, searched side by side in one batch; where
some of them are stored already, the whole set is searched again and only the missing ones
are committed, so they are what a fresh run stores.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import pickle
import time
import zlib
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from analysis.attention import fixed_torch_threads
from analysis.executor import check_executor, task_pool
from analysis.store.engine import BracketEngine, engine_label
from analysis.store.integrity import resolve_array_file
from analysis.store.keys import float_token
from analysis.store.store import MatrixArrays, Store, load_arrays
from analysis.validation import (
    ParameterError,
    check_choice,
    check_device,
    check_eps_grid,
    check_positive_finite,
)

__all__ = ["BracketsSummary", "plan_profiles", "run_brackets"]


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
    """The profiles one matrix still needs; all its temperatures are searched together."""

    matrix_key: str
    array_file: str
    temperatures: tuple[float, ...]  # every temperature of the run, computed or stored
    tasks: tuple[_Task, ...]  # the ones to compute
    array_sha256: str = ""  # the array file's recorded hash, checked where it is read


@dataclasses.dataclass(frozen=True)
class BracketsSummary:
    """What one :func:`run_brackets` call did.

    Attributes
    ----------
    total : int
        Profiles the run covers (every matrix x temperature).
    computed, extended, skipped : int
        Computed from scratch, extended to new eps, already stored and kept.
    version : str
    elapsed_s : float
    reverified : int
        Stored profiles re-verified before the run trusted, extended or skipped them.
    dropped : int
        Of those, the ones that failed and were recomputed (counted in ``computed``).
    stale : int
        Stored profiles of another engine version that the run covers (same matrix,
        temperature and version label): left as they are, beside this engine's.
    engine : str
        The label of the engine that ran (``"analysis.brackets 4"``).

    Examples
    --------
    A second run over the same store computes nothing: it re-verifies and keeps the
    stored profile.

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import Store, run_brackets
    >>> with Store("summary", create=True) as st:
    ...     _ = st.add_synthetic(identity(4))
    >>> kw = dict(engine=default_engine(), effort="fast", progress=False)
    >>> first = run_brackets("summary", (0.5,), **kw)
    >>> again = run_brackets("summary", (0.5,), **kw)
    >>> first.total, first.computed, first.skipped
    (1, 1, 0)
    >>> again.computed, again.skipped, again.reverified
    (0, 1, 1)
    >>> again.reverify_note() is None, again.stale_note() is None
    (True, True)
    """

    total: int
    computed: int
    extended: int
    skipped: int
    version: str
    elapsed_s: float
    reverified: int = 0
    dropped: int = 0
    stale: int = 0
    engine: str = ""

    def reverify_note(self) -> str | None:
        """:func:`reverify_note` of ``dropped``."""
        return reverify_note(self.dropped)

    def stale_note(self) -> str | None:
        """:func:`stale_note` of ``stale``."""
        return stale_note(self.stale)


def stale_note(stale: int) -> str | None:
    """``"N stored profiles of another engine version were left as they are (...)"``;
    None if N = 0."""
    if not stale:
        return None
    what = "1 stored profile" if stale == 1 else f"{stale} stored profiles"
    return (
        f"{what} of another engine version {'was' if stale == 1 else 'were'} left as "
        f"{'it is' if stale == 1 else 'they are'} (kept apart from this engine's)"
    )


def reverify_note(dropped: int) -> str | None:
    """``"N stored profiles failed re-verification and were recomputed"``; None if N = 0."""
    if not dropped:
        return None
    if dropped == 1:
        return "1 stored profile failed re-verification and was recomputed"
    return f"{dropped} stored profiles failed re-verification and were recomputed"


_ENGINE_MEMBERS = ("name", "version", "efforts", "profile_batch", "load_profile")
_PROFILE_MEMBERS = ("bracket", "reverify", "to_dict")


def _check_engine(engine: Any) -> BracketEngine:
    """``engine`` if it has every member of :class:`BracketEngine`; else a ParameterError
    naming ``engine`` and what it lacks."""
    missing = [a for a in _ENGINE_MEMBERS if not hasattr(engine, a)]
    if missing:
        raise ParameterError(
            "engine",
            "a bracket engine (analysis.store.engine.BracketEngine: name, version, efforts, "
            "profile_batch, load_profile), e.g. analysis.brackets.engine.default_engine()",
            f"{type(engine).__name__} lacks {', '.join(missing)}",
        )
    return engine


def _check_profile(profile: Any) -> Any:
    """``profile`` if it has every member of :class:`StoredProfile` (a profile that cannot
    be re-verified cannot be trusted); else a ParameterError naming ``engine``."""
    missing = [a for a in _PROFILE_MEMBERS if not hasattr(profile, a)]
    if missing:
        raise ParameterError(
            "engine",
            "an engine whose profiles have bracket, reverify and to_dict",
            f"its {type(profile).__name__} lacks {', '.join(missing)}",
        )
    return profile


def _check_picklable(engine: BracketEngine) -> None:
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


def _load(engine: BracketEngine, d: dict[str, Any]) -> Any:
    """``engine.load_profile(d)``, checked to be a :class:`StoredProfile`."""
    return _check_profile(engine.load_profile(d))


def plan_profiles(
    store: Store,
    eps: Sequence[float],
    *,
    temperatures: Sequence[float] = (1.0,),
    effort: str = "default",
    version: str | None = None,
    matrix_keys: Sequence[str] | None = None,
    recompute: Collection[tuple[str, float]] = (),
    efforts: Sequence[str] | None = None,
    engine: str,
) -> tuple[list[_Task], int]:
    """The profiles a run still has to compute or extend, and how many are already done.

    A stored profile whose eps grid covers ``eps`` is done; one that lacks some eps is
    extended (the new grid is the union; the engine keeps the old witnesses).
    ``matrix_keys`` restricts the plan to those matrices (None = every stored matrix).
    The stored profiles of the ``(matrix key, temperature)`` pairs in ``recompute`` (those
    that failed re-verification) are neither done nor extended: they are computed from
    scratch, on the union of their stored grid and ``eps``. ``effort`` must be one of
    ``efforts`` (the engine's, :attr:`BracketEngine.efforts`; None: any non-empty name).
    Only the stored profiles of ``engine`` (the recorded label of the engine that runs)
    count: another engine's are neither done nor extended.

    Examples
    --------
    One matrix: to compute, then done, then to extend to a new eps:

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import Store, run_brackets
    >>> from analysis.store.run import plan_profiles
    >>> st = Store("plan", create=True)
    >>> _ = st.add_synthetic(identity(4))
    >>> from analysis.store.engine import engine_label
    >>> label = engine_label(default_engine())
    >>> tasks, done = plan_profiles(st, (0.5,), effort="fast", engine=label)
    >>> [(t.eps_grid, t.extend) for t in tasks], done
    ([((0.5,), False)], 0)
    >>> _ = run_brackets(st, (0.5,), engine=default_engine(), effort="fast", progress=False)
    >>> plan_profiles(st, (0.5,), effort="fast", engine=label)
    ([], 1)
    >>> tasks, done = plan_profiles(st, (0.2,), effort="fast", engine=label)
    >>> [(t.eps_grid, t.extend) for t in tasks], done
    ([((0.2, 0.5), True)], 0)
    >>> plan_profiles(st, (0.5,), effort="fast", engine="another engine 1")[1]  # none of its
    0
    >>> st.close()
    """
    grid = tuple(sorted(set(check_eps_grid(eps))))
    temps = tuple(dict.fromkeys(check_positive_finite("temperatures", t) for t in temperatures))
    if not temps:
        raise ParameterError("temperatures", "at least one value", temps)
    if efforts is not None:
        effort = check_choice("effort", effort, tuple(efforts))
    elif not isinstance(effort, str) or not effort:
        raise ParameterError("effort", "an effort name", effort)
    version = version or effort
    stored = store.profile_grids(version, engine)
    other = sorted({e for _, e in stored.values()} - {effort})
    if other:
        raise ParameterError(
            "version",
            f"a version label whose stored profiles were computed at effort {effort!r} "
            "(pick another label)",
            f"{version!r} holds effort {', '.join(map(repr, other))}",
        )
    stored_grids = {k: g for k, (g, _) in stored.items()}
    records = store.matrices()
    if matrix_keys is not None:
        wanted = set(matrix_keys)
        unknown = wanted - {r.key for r in records}
        if unknown:
            raise ParameterError("matrix_keys", "keys of stored matrices", sorted(unknown)[:3])
        records = [r for r in records if r.key in wanted]
    narrow = [r for r in records if r.length < 2]
    if narrow:  # one key: every row is [1], and the search's column clustering needs two
        raise ParameterError(
            "path",
            "a store whose matrices have at least 2 keys",
            f"matrix {narrow[0].key} ({narrow[0].head_id}): length {narrow[0].length}",
        )
    redo = {(k, float(t)) for k, t in recompute}
    tasks, done = [], 0
    for rec in records:
        for t in temps:
            old = stored_grids.get((rec.key, t))
            fresh = (rec.key, t) in redo
            if old is not None and not fresh and set(grid) <= set(old):
                done += 1
                continue
            union = tuple(sorted(set(grid) | set(old or ())))
            tasks.append(
                _Task(
                    rec.key,
                    str(resolve_array_file(store.path, rec.array_file, rec.key)),
                    t,
                    union,
                    effort,
                    version,
                    old is not None and not fresh,
                    engine=engine,
                    array_sha256=rec.array_sha256,
                )
            )
    return tasks, done


def _stored_failures(
    store: Store,
    version: str,
    temperatures: Sequence[float],
    matrix_keys: Sequence[str] | None,
    engine: BracketEngine,
    progress: bool,
) -> tuple[int, list[tuple[str, float]]]:
    """Re-verify the stored profiles of ``version`` and of ``engine`` that a run covers;
    return how many were checked and the ``(matrix key, temperature)`` of those that failed.

    A profile fails when its blob does not decode, when ``Profile.reverify`` against
    ``A_t`` (rebuilt from the stored Q, K as for the search) reports any witness, or when
    a stored bracket row is not what the profile gives at its eps: the study reads those
    rows, not the blob. Sequential in this process: per profile one ``softmax64`` and one
    float64 product per witness, cheap next to the search.
    """
    from tqdm.auto import tqdm

    temps = {float(t) for t in temperatures}
    wanted = None if matrix_keys is None else set(matrix_keys)
    label = engine_label(engine)
    pairs = sorted(
        (k, t)
        for k, t in store.profile_grids(version, label)
        if t in temps and (wanted is None or k in wanted)
    )
    failed: list[tuple[str, float]] = []
    arrays, arrays_key = None, None
    bar = tqdm(pairs, desc=f"re-verify ({version})", unit="profile", disable=not progress)
    # one thread: torch's thread pool costs more than it saves on a matrix this size
    with fixed_torch_threads(1):
        for key, t in bar:
            if key != arrays_key:  # pairs are sorted by matrix: one array file per matrix
                arrays, arrays_key = store.arrays(key), key
            rec = store.profile(key, t, version, label)
            bad = (KeyError, TypeError, ValueError, zlib.error)  # incl. ParameterError
            try:
                prof = engine.load_profile(rec.profile_dict())
            except bad:
                prof = None
            ok = False
            if prof is not None:
                _check_profile(prof)  # an engine fault, not a damaged profile: raise
                try:
                    ok = not prof.reverify(arrays.at(t)) and all(
                        tuple(int(v) for v in prof.bracket(e)) == rec.brackets.get(e)
                        for e in rec.eps_grid
                    )
                except bad:
                    ok = False
            if not ok or set(rec.brackets) != set(rec.eps_grid):
                failed.append((key, t))
    return len(pairs), failed


def _compute(
    task: _Task,
    previous: dict[str, Any] | None,
    engine: BracketEngine,
    arrays: MatrixArrays | None = None,
) -> dict[str, Any]:
    """Build A_t with softmax64 and profile it alone (a batch of one). Runs in the main
    process or a worker.

    ``arrays`` (the matrix's stored arrays) are read from ``task.array_file`` when None;
    tasks sent to a caller's executor carry them, so its workers need no shared filesystem.
    """
    _check_engine(engine)
    if arrays is None:
        arrays = load_arrays(Path(task.array_file), task.array_sha256, key=task.matrix_key)
    A = arrays.at(task.temperature)
    prev = None if previous is None else _load(engine, previous)
    start = time.perf_counter()
    with fixed_torch_threads(1):  # also inside the engine; here for an injected one
        (prof,) = engine.profile_batch(
            [A],
            [task.temperature],
            eps=task.eps_grid,
            effort=task.effort,
            previous=[prev],
            device=task.device,
        )
    elapsed = time.perf_counter() - start
    _check_profile(prof)
    brackets = {e: tuple(int(v) for v in prof.bracket(e)) for e in task.eps_grid}
    return {
        "profile": prof.to_dict(witnesses=True, arrays="float32-base64"),
        "brackets": brackets,
        "elapsed_s": elapsed,
    }


def _compute_group(
    group: _Group,
    previous: dict[float, dict[str, Any]],
    engine: BracketEngine,
    arrays: MatrixArrays | None = None,
) -> list[dict[str, Any]]:
    """Profile every temperature of the run for one matrix side by side (one
    ``engine.profile_batch``); return the results of ``group.tasks``, in order.

    The whole set is searched even when some of it is stored: a profile depends on the
    batch it was searched in, so this is what a fresh run computes for the missing ones.
    ``previous`` holds the stored profiles (as dicts) that tasks extend. Runs in the main
    process or a worker, like :func:`_compute`.
    """
    _check_engine(engine)
    if arrays is None:
        arrays = load_arrays(Path(group.array_file), group.array_sha256, key=group.matrix_key)
    temps = list(group.temperatures)
    (grid,) = {task.eps_grid for task in group.tasks}
    (effort,) = {task.effort for task in group.tasks}
    prevs = [_load(engine, previous[t]) if t in previous else None for t in temps]
    mats = [arrays.at(t) for t in temps]
    start = time.perf_counter()
    with fixed_torch_threads(1):
        profs = engine.profile_batch(
            mats, temps, eps=grid, effort=effort, previous=prevs, device=group.tasks[0].device
        )
    elapsed = time.perf_counter() - start
    out = []
    for task in group.tasks:
        prof = _check_profile(profs[temps.index(task.temperature)])
        out.append(
            {
                "profile": prof.to_dict(witnesses=True, arrays="float32-base64"),
                "brackets": {e: tuple(int(v) for v in prof.bracket(e)) for e in grid},
                "elapsed_s": elapsed / len(temps),  # the batch's time, shared evenly
            }
        )
    return out


def _dispatch(job: _Group | _Task, *rest: Any) -> Any:
    """A pool task: one profile (:func:`_compute`) or one matrix's group (:func:`_compute_group`)."""
    return (_compute if isinstance(job, _Task) else _compute_group)(job, *rest)


def _groups(tasks: list[_Task], temperatures: Sequence[float]) -> list[_Group | _Task]:
    """The tasks of one matrix as one :class:`_Group` where they share an eps grid and
    effort (a fresh run's always do); otherwise the tasks themselves, profiled cold."""
    temps = tuple(dict.fromkeys(float(t) for t in temperatures))
    by_key: dict[str, list[_Task]] = {}
    for task in tasks:
        by_key.setdefault(task.matrix_key, []).append(task)
    out: list[_Group | _Task] = []
    for key, group in by_key.items():
        if len(temps) > 1 and len({(t.eps_grid, t.effort) for t in group}) == 1:
            out.append(_Group(key, group[0].array_file, temps, tuple(group), group[0].array_sha256))
        else:
            out.extend(group)
    return out


def _worker_init() -> None:
    import torch

    torch.set_num_threads(1)


def _results(
    store: Store,
    tasks: list[_Task],
    engine: BracketEngine,
    workers: int,
    executor: cf.Executor | None = None,
    temperatures: Sequence[float] = (),
) -> Iterator[tuple[_Task, dict[str, Any]]]:
    """Yield (task, result) as profiles finish; previous profiles (and, for an executor,
    the arrays) are read lazily, at most two tasks per worker ahead. A matrix's
    temperatures are one task (:class:`_Group`) where they share an eps grid; each task
    carries the (pickled) engine to its worker."""

    def previous(task: _Task) -> dict[str, Any] | None:
        if not task.extend:
            return None
        old = store.profile(task.matrix_key, task.temperature, task.version, task.engine)
        return None if old is None else old.profile_dict()

    jobs = _groups(tasks, temperatures)

    def args(job: _Group | _Task) -> tuple:
        if isinstance(job, _Task):
            return (job, previous(job))
        prevs = {t.temperature: previous(t) for t in job.tasks if t.extend}
        return (job, {t: p for t, p in prevs.items() if p is not None})

    def split(job, res) -> Iterator[tuple[_Task, dict[str, Any]]]:
        if isinstance(job, _Task):
            yield job, res
        else:
            yield from zip(job.tasks, res, strict=True)

    if workers == 1 and executor is None:
        for job in jobs:
            yield from split(job, _dispatch(*args(job), engine))
        return
    carry = executor is not None  # the caller's workers may not see the store's files
    with task_pool(executor, workers, initializer=_worker_init) as pool:
        calls = (
            (job, (*args(job), engine, store.arrays(job.matrix_key) if carry else None))
            for job in jobs
        )
        with contextlib.closing(pool.imap(_dispatch, calls)) as results:
            for job, res in results:
                yield from split(job, res)


def run_brackets(
    store: Store | str | Path,
    eps: Sequence[float],
    *,
    engine: BracketEngine,
    temperatures: Sequence[float] = (1.0,),
    effort: str = "default",
    workers: int = 1,
    version: str | None = None,
    progress: bool = True,
    matrix_keys: Sequence[str] | None = None,
    executor: cf.Executor | None = None,
    device: str | None = None,
) -> BracketsSummary:
    """Compute (or extend) ``engine``'s profile of every (matrix, temperature) not yet stored.

    Every stored profile of this engine that the run covers is first re-verified against
    its matrix (its witnesses, and the stored bracket rows against the profile); one that
    fails is recomputed from scratch rather than skipped or extended, and counted in
    ``BracketsSummary.dropped``. Profiles are keyed by the engine that computed them
    (``engine.name engine.version``): another engine's stay as they are, beside these
    (counted in ``BracketsSummary.stale``).

    Parameters
    ----------
    store : Store or path
    eps : sequence of float
        The eps grid every profile must target (finite, > 0).
    engine : BracketEngine, keyword-only
        The bracket engine (:class:`analysis.store.engine.BracketEngine`), e.g.
        :func:`analysis.brackets.engine.engine_for` of a design's version; the store
        imports none. It must pickle when ``workers > 1`` or with an ``executor`` (each
        task carries it).
    temperatures : sequence of float
        ``A_t = softmax64(Q, K, scale, mask, t)`` from the stored Q, K.
    effort : str
        One of ``engine.efforts`` (the package's: ``"fast"``, ``"default"``, ``"thorough"``).
    workers : int
        Processes (spawned); results are committed by this process only.
    executor : concurrent.futures.Executor, optional
        Run the profiles there instead (a dask cluster's, :func:`analysis.executor.open_executor`;
        ``workers`` must then be 1). Tasks carry the matrix's arrays, not its file; this
        process commits each profile as it completes, so the results, a resumed run and
        the stored rows are the same as with ``workers``.
    version : str, optional
        Profile version label; defaults to ``effort``. A tighter rerun under another label
        never overwrites a profile a locked study used.
    progress : bool
        Show a tqdm progress bar.
    matrix_keys : sequence of str, optional
        Only these stored matrices (None = all); the study runner brackets real and
        synthetic matrices at different temperature grids.
    device : str, optional
        Where the engine's optimizers run (``"cuda"``; default the CPU). Candidates are
        certified on the CPU in float64 either way; on a GPU the search may find other
        witnesses than on the CPU (float32 rounding), so keep one device per store.

    Returns
    -------
    BracketsSummary

    Examples
    --------
    The 4 x 4 identity (``r_eps = 4`` for eps < 1), then the same store extended to a
    second eps (the stored witnesses are re-verified and kept):

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import Store, run_brackets
    >>> with Store("run", create=True) as st:
    ...     key = st.add_synthetic(identity(4))
    >>> engine = default_engine()
    >>> run_brackets("run", (0.5,), engine=engine, effort="fast", progress=False).computed
    1
    >>> run_brackets("run", (0.5, 0.9), engine=engine, effort="fast", progress=False).extended
    1
    >>> with Store("run") as st:
    ...     st.profile(key, 1.0, "fast").brackets
    {0.5: (4, 4), 0.9: (4, 4)}
    >>> run_brackets("run", (0.5,), engine=engine, effort="slow", progress=False)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: effort: expected one of fast, default, thorough, got 'slow'
    """
    own = not isinstance(store, Store)
    st = Store(store) if own else store
    try:
        with _run_lock(st.path):
            return _run(
                st,
                eps,
                temperatures,
                effort,
                workers,
                version,
                engine,
                progress,
                matrix_keys,
                executor,
                device,
            )
    finally:
        if own:
            st.close()


@contextlib.contextmanager
def _run_lock(path: Path) -> Iterator[None]:
    """One :func:`run_brackets` per store at a time (an advisory lock on ``STORE/.brackets.lock``).

    Two concurrent runs would not corrupt the store (every write is a transaction), but they
    would compute the same profiles twice. Where ``fcntl`` is missing the lock is skipped.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path / ".brackets.lock", "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ParameterError(
                "store", "a store no other bracket run is working on", str(path)
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _run(
    st: Store,
    eps: Sequence[float],
    temperatures: Sequence[float],
    effort: str,
    workers: int,
    version: str | None,
    engine: Any,
    progress: bool,
    matrix_keys: Sequence[str] | None = None,
    executor: cf.Executor | None = None,
    device: str | None = None,
) -> BracketsSummary:
    workers = check_executor(executor, workers)
    if device is not None:
        device = str(check_device(device))
    engine = _check_engine(engine)
    if workers > 1 or executor is not None:
        _check_picklable(engine)
    current = engine_label(engine)
    plan = {
        "temperatures": temperatures,
        "effort": effort,
        "version": version,
        "matrix_keys": matrix_keys,
        "efforts": tuple(engine.efforts),
        "engine": current,
    }
    plan_profiles(st, eps, **plan)  # validates every argument before the re-verification
    version = version or effort
    start = time.perf_counter()
    checked, failed = _stored_failures(st, version, temperatures, matrix_keys, engine, progress)
    tasks, done = plan_profiles(st, eps, recompute=set(failed), **plan)
    if device is not None:
        tasks = [dataclasses.replace(t, device=device) for t in tasks]
    # another engine's profiles of the same (matrix, temperature, label): kept apart
    temps = {float(t) for t in temperatures}
    wanted = None if matrix_keys is None else set(matrix_keys)
    stale = sum(
        1
        for other in st.engines(version=version)
        if other != current
        for k, t in st.profile_grids(version, other)
        if t in temps and (wanted is None or k in wanted)
    )
    from tqdm.auto import tqdm

    computed = extended = 0
    committed: set[tuple[str, float]] = set()
    bar = tqdm(
        total=len(tasks) + done,
        initial=done,
        desc=f"profiles ({version})",
        unit="profile",
        disable=not progress,
    )
    try:
        results = _results(st, tasks, engine, workers, executor, temperatures)
        with contextlib.closing(results):
            for task, res in results:
                if (task.matrix_key, task.temperature) in committed:
                    continue  # a result delivered twice is committed once
                committed.add((task.matrix_key, task.temperature))
                st.put_profile(
                    task.matrix_key,
                    task.temperature,
                    version,
                    effort=task.effort,
                    eps_grid=task.eps_grid,
                    profile=res["profile"],
                    brackets=res["brackets"],
                    engine=current,
                    elapsed_s=res["elapsed_s"],
                )
                if task.extend:
                    extended += 1
                else:
                    computed += 1
                bar.set_postfix_str(f"t={float_token(task.temperature)}", refresh=False)
                bar.update(1)
    finally:
        bar.close()
    return BracketsSummary(
        total=len(tasks) + done,
        computed=computed,
        extended=extended,
        skipped=done,
        version=version,
        elapsed_s=time.perf_counter() - start,
        reverified=checked,
        dropped=len(failed),
        stale=stale,
        engine=current,
    )
