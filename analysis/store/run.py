"""Compute bracket profiles for every (matrix, temperature) of a store, resumably.

Committing, resuming, determinism and the re-verification of stored profiles:
docs/sources.md, "``attnrank store bracket``: profiles for a whole store, resumably"; the
temperatures of one matrix searched as one task: docs/guide/brackets.md, "Temperatures
together". A profile is keyed by the engine that computed it too: another engine
version's profiles stay beside this engine's, never extended, overwritten or mixed with
them.

The engine comes in as an object (:class:`analysis.store.engine.BracketEngine`; ``study``
and ``cli`` pass :func:`analysis.brackets.engine.engine_for` of a version): the store
imports none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import zlib
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from analysis.attention import fixed_torch_threads
from analysis.executor import RunSpec, check_executor
from analysis.progress import PROFILE_EXPONENT, CostBar, matrix_cost
from analysis.store.compute import _Task, check_engine, check_picklable, check_profile, results
from analysis.store.engine import BracketEngine, engine_label
from analysis.store.integrity import resolve_array_file
from analysis.store.keys import float_token
from analysis.store.store import Store
from analysis.validation import (
    ParameterError,
    check_choice,
    check_device,
    check_eps_grid,
    check_positive_finite,
)

__all__ = ["BracketsSummary", "RunSpec", "plan_profiles", "run_brackets"]


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
    >>> from analysis.store import RunSpec, Store, run_brackets
    >>> with Store("summary", create=True) as st:
    ...     _ = st.add_synthetic(identity(4))
    >>> kw = dict(engine=default_engine(), effort="fast", run=RunSpec(progress=False))
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


def plan_profiles(
    store: Store,
    eps: Sequence[float],
    *,
    temperatures: Sequence[float] = (1.0,),
    effort: str = "default",
    version: str | None = None,
    matrix_keys: Sequence[str] | None = None,
    recompute: Collection[tuple[str, float]] = (),
    engine: str,
) -> tuple[list[_Task], int]:
    """The profiles a run still has to compute or extend, and how many are already done.

    A stored profile whose eps grid covers ``eps`` is done; one that lacks some eps is
    extended (the new grid is the union; the engine keeps the old witnesses).
    ``matrix_keys`` restricts the plan to those matrices (None = every stored matrix).
    The stored profiles of the ``(matrix key, temperature)`` pairs in ``recompute`` (those
    that failed re-verification) are neither done nor extended: they are computed from
    scratch, on the union of their stored grid and ``eps``. ``effort`` is any non-empty
    name (:func:`run_brackets` checks it against the engine's efforts).
    Only the stored profiles of ``engine`` (the recorded label of the engine that runs)
    count: another engine's are neither done nor extended.

    Examples
    --------
    One matrix: to compute, then done, then to extend to a new eps:

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import RunSpec, Store, run_brackets
    >>> from analysis.store.run import plan_profiles
    >>> st = Store("plan", create=True)
    >>> _ = st.add_synthetic(identity(4))
    >>> from analysis.store.engine import engine_label
    >>> label = engine_label(default_engine())
    >>> tasks, done = plan_profiles(st, (0.5,), effort="fast", engine=label)
    >>> [(t.eps_grid, t.extend) for t in tasks], done
    ([((0.5,), False)], 0)
    >>> quiet = RunSpec(progress=False)
    >>> _ = run_brackets(st, (0.5,), engine=default_engine(), effort="fast", run=quiet)
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
    if not isinstance(effort, str) or not effort:
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
    sides = _sides(store) if progress and pairs else {}
    costs = [matrix_cost(sides[k], PROFILE_EXPONENT) if sides else 1.0 for k, _ in pairs]
    # no bar when nothing is stored yet: an empty "0 profiles" bar reads as a stall
    bar = CostBar(
        costs,
        desc=f"re-verify ({version})",
        unit="profiles",
        disable=not progress or not pairs,
    )
    # one thread: torch's thread pool costs more than it saves on a matrix this size
    with fixed_torch_threads(1), bar:
        for (key, t), cost in zip(pairs, costs, strict=True):
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
                check_profile(prof)  # an engine fault, not a damaged profile: raise
                try:
                    ok = not prof.reverify(arrays.at(t)) and all(
                        tuple(int(v) for v in prof.bracket(e)) == rec.brackets.get(e)
                        for e in rec.eps_grid
                    )
                except bad:
                    ok = False
            if not ok or set(rec.brackets) != set(rec.eps_grid):
                failed.append((key, t))
            bar.advance(cost)
    return len(pairs), failed


def _sides(store: Store) -> dict[str, int]:
    """Matrix key -> its side N (the bars' cost estimates; nothing computed reads it)."""
    return {r.key: r.length for r in store.matrices()}


def run_brackets(
    store: Store | str | Path,
    eps: Sequence[float],
    *,
    engine: BracketEngine,
    temperatures: Sequence[float] = (1.0,),
    effort: str = "default",
    version: str | None = None,
    matrix_keys: Sequence[str] | None = None,
    run: RunSpec = RunSpec(),
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
        imports none. It must pickle when ``run.workers > 1`` or with ``run.executor``
        (each task carries it).
    temperatures : sequence of float
        ``A_t = softmax64(Q, K, scale, mask, t)`` from the stored Q, K.
    effort : str
        One of ``engine.efforts`` (the package's: ``"fast"``, ``"default"``, ``"thorough"``).
    version : str, optional
        Profile version label; defaults to ``effort``. A tighter rerun under another label
        never overwrites a profile a locked study used.
    matrix_keys : sequence of str, optional
        Only these stored matrices (None = all); the study runner brackets real and
        synthetic matrices at different temperature grids.
    run : analysis.executor.RunSpec
        Where and how the profiles are computed (processes, an executor, a device, a
        progress bar); never what they are.

    Returns
    -------
    BracketsSummary

    Examples
    --------
    The 4 x 4 identity (``r_eps = 4`` for eps < 1), then the same store extended to a
    second eps (the stored witnesses are re-verified and kept):

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import RunSpec, Store, run_brackets
    >>> with Store("run", create=True) as st:
    ...     key = st.add_synthetic(identity(4))
    >>> engine, quiet = default_engine(), RunSpec(progress=False)
    >>> run_brackets("run", (0.5,), engine=engine, effort="fast", run=quiet).computed
    1
    >>> run_brackets("run", (0.5, 0.9), engine=engine, effort="fast", run=quiet).extended
    1
    >>> with Store("run") as st:
    ...     st.profile(key, 1.0, "fast").brackets
    {0.5: (4, 4), 0.9: (4, 4)}
    >>> run_brackets("run", (0.5,), engine=engine, effort="slow", run=quiet)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: effort: expected one of fast, default, thorough, got 'slow'
    """
    own = not isinstance(store, Store)
    st = Store(store) if own else store
    try:
        with _run_lock(st.path):
            return _run(st, eps, temperatures, effort, version, engine, matrix_keys, run)
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
    version: str | None,
    engine: Any,
    matrix_keys: Sequence[str] | None,
    run: RunSpec,
) -> BracketsSummary:
    workers = check_executor(run.executor, run.workers)
    device = None if run.device is None else str(check_device(run.device))
    engine = check_engine(engine)
    if workers > 1 or run.executor is not None:
        check_picklable(engine)
    current = engine_label(engine)
    plan = {
        "temperatures": temperatures,
        "effort": effort,
        "version": version,
        "matrix_keys": matrix_keys,
        "engine": current,
    }
    check_eps_grid(eps)
    check_choice("effort", effort, tuple(engine.efforts))
    plan_profiles(st, eps, **plan)  # validates every argument before the re-verification
    version = version or effort
    start = time.perf_counter()
    checked, failed = _stored_failures(st, version, temperatures, matrix_keys, engine, run.progress)
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
    computed = extended = 0
    committed: set[tuple[str, float]] = set()
    # each profile counted as its estimated cost (analysis.progress): a steady ETA
    sides = _sides(st) if run.progress and (tasks or done) else {}

    def cost(key: str) -> float:
        return matrix_cost(sides[key], PROFILE_EXPONENT) if sides else 1.0

    n_temps = len({float(t) for t in temperatures})
    scope = [k for k in sides if wanted is None or k in wanted]
    task_costs = [cost(t.matrix_key) for t in tasks]
    all_cost = n_temps * sum(cost(k) for k in scope) if sides else float(len(tasks) + done)
    bar = CostBar(
        task_costs,
        desc=f"profiles ({version})",
        unit="profiles",
        done=done,
        done_cost=max(0.0, all_cost - sum(task_costs)),
        disable=not run.progress or not (tasks or done),  # no empty bar
    )
    try:
        stream = results(st, tasks, engine, workers, run.executor, temperatures)
        with contextlib.closing(stream):
            for task, res in stream:
                if (task.matrix_key, task.temperature) in committed:
                    continue  # a result delivered twice is committed once
                committed.add((task.matrix_key, task.temperature))
                st.put_profile(task.matrix_key, task.temperature, version, res, engine=current)
                extended += task.extend
                computed += not task.extend
                bar.advance(cost(task.matrix_key), note=f"t={float_token(task.temperature)}")
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
