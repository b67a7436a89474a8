"""One seam for parallel work: a local process pool, a running dask cluster, or a new one.

Every place that fans work out takes a :class:`RunSpec` (or its ``workers=N`` /
``executor=``): a local process pool made per call, or any
:class:`concurrent.futures.Executor` (e.g. :func:`open_executor`'s for
``scheduler="tcp://HOST:PORT"`` or ``cluster="local:N"``). What travels, the single writer,
resuming and determinism (results identical whichever executor runs them):
docs/guide/scale-out.md; signals and worker deaths: docs/guide/guarantees.md. At most
``2 x slots`` tasks are in flight (slots: the executor's worker threads). A local pool
whose worker dies is a :class:`ParameterError` naming ``workers`` (the committed results
are kept; re-run to resume).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import importlib.util
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from analysis.validation import ParameterError, check_int, check_positive_finite

__all__ = [
    "BATCH",
    "DEFAULT_CONNECT_TIMEOUT",
    "RunSpec",
    "TaskPool",
    "Terminated",
    "check_executor",
    "open_executor",
    "parse_cluster",
    "sigterm_interrupts",
    "task_pool",
]

#: Seconds :func:`open_executor` waits for a scheduler to answer.
DEFAULT_CONNECT_TIMEOUT = 10.0

# Matrices profiled side by side in one block of :func:`analysis.brackets.io.profile_file`:
# fixed runs of consecutive indices whatever ``workers`` is (batched float32 products may
# round differently with the batch's composition). Single-thread CPU, 24 MiniLM heads at
# N = 128, blocks of 1 / 2 / 4 / 6 / 8: 101 / 82 / 82 / 84 / 105 s, same bracket quality
# (``benchmarks/bench_brackets_sample.py --batch``).
BATCH = 4


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Where and how bracket profiles are computed, never what they are: any ``workers``,
    ``executor`` or ``device`` gives equally certified profiles (the same ones on one device).

    Taken by :func:`analysis.store.run_brackets` (``run=``),
    :func:`analysis.brackets.io.profile_file` (``execution=``) and, as the base of
    :class:`analysis.study.StudyOptions`, by :func:`analysis.study.run_study`.

    Attributes
    ----------
    workers : int
        Processes (spawned) that share the tasks; results are committed by the calling
        process only.
    executor : concurrent.futures.Executor, optional
        Run the tasks there instead (a dask cluster's, :func:`open_executor`; ``workers``
        must then be 1). Tasks carry a matrix's file where the workers read this machine's
        files (:func:`shares_files`: a local pool, ``local:N``), its arrays otherwise;
        the calling process commits each
        result as it completes (``profile_file``: in block order), so the results, a
        resumed run, the stored rows and the checkpoint are the same as with ``workers``.
    device : str, optional
        Where the search's optimizers run (``"cuda"``; default the CPU). Every witness is
        certified on the CPU in float64 either way; a GPU may find other witnesses than
        the CPU (float32 rounding), so a store's or checkpoint's profiles are those of
        the device that computed them: keep one device per store.
    progress : bool
        Show tqdm progress bars.
    batch : int
        ``profile_file`` only (the store computes one matrix per task): matrices profiled
        side by side in one block, fixed runs of consecutive indices (:data:`BATCH`).

    Examples
    --------
    >>> from analysis.executor import RunSpec
    >>> RunSpec(workers=2, progress=False)
    RunSpec(workers=2, executor=None, device=None, progress=False, batch=4)
    """

    workers: int = 1
    executor: cf.Executor | None = None
    device: str | None = None
    progress: bool = True
    batch: int = BATCH


_SCHEDULER = re.compile(r"^(tcp|tls|ws|wss|ucx)://[^\s/:]+(:\d+)?/?$")
_CLUSTER = re.compile(r"^local:(\d+)$")


def parse_cluster(cluster: str) -> int:
    """The number of worker processes of ``"local:N"`` (N >= 1).

    Examples
    --------
    >>> from analysis.executor import parse_cluster
    >>> parse_cluster("local:8")
    8
    """
    m = _CLUSTER.match(cluster.strip()) if isinstance(cluster, str) else None
    if m is None or int(m.group(1)) < 1:
        raise ParameterError(
            "cluster",
            "local:N (N >= 1 worker processes on this machine; for SLURM or Kubernetes "
            "start the cluster with dask-jobqueue / dask-kubernetes and pass its scheduler)",
            cluster,
        )
    return int(m.group(1))


def _dashboard(client: Any) -> str:
    if importlib.util.find_spec("bokeh") is None:
        return "dashboard not available (it needs bokeh >= 3.1 where the scheduler runs)"
    return f"dashboard {client.dashboard_link}"


@contextlib.contextmanager
def open_executor(
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster: str | None = None,
    connect_timeout: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[cf.Executor | None]:
    """An executor from at most one of ``workers``, ``scheduler`` and ``cluster``.

    Parameters
    ----------
    workers : int, optional, keyword-only
        Local worker processes (spawned). 1 or None: None is yielded and work runs in
        this process, exactly as ``workers=1``.
    scheduler : str, optional, keyword-only
        ``tcp://HOST:PORT`` of a running dask scheduler (started by hand, by
        dask-jobqueue's ``SLURMCluster``, dask-kubernetes, ...). Its workers must import
        this package at the same version; they need no shared filesystem.
    cluster : str, optional, keyword-only
        ``local:N``: start a dask ``LocalCluster`` of N worker processes with one thread
        each, closed on exit.
    connect_timeout : float, optional, keyword-only
        Seconds to wait for ``scheduler`` to answer (default
        :data:`DEFAULT_CONNECT_TIMEOUT`).
    say : callable, optional, keyword-only
        Receives one line naming the cluster and its dashboard link (default: print).

    Yields
    ------
    concurrent.futures.Executor or None
        ``Client.get_executor()`` of a dask client for ``scheduler`` and ``cluster``;
        shut down (and the client, and a started cluster, closed) on exit.

    Raises
    ------
    ParameterError
        Naming ``scheduler`` when it does not answer within ``connect_timeout``, or a
        malformed value; naming ``cluster`` for anything but ``local:N``; when more than
        one of the three is given.

    Examples
    --------
    One worker (or none asked for) runs in this process: None is yielded, and every place
    then runs its work inline.

    >>> from analysis.executor import open_executor
    >>> with open_executor(workers=1) as ex:
    ...     ex is None
    True
    >>> with open_executor(workers=2, cluster="local:2") as ex:  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: cluster: expected not together with workers ...
    """
    named = (("workers", workers), ("scheduler", scheduler), ("cluster", cluster))
    given = [n for n, v in named if v is not None]
    if len(given) > 1:
        raise ParameterError(given[1], f"not together with {given[0]} (one of them)", "both")
    say = say or print
    if scheduler is None and cluster is None:
        n = 1 if workers is None else check_int("workers", workers, minimum=1)
        if n == 1:
            yield None
            return
        with _process_pool(n, "spawn") as pool:
            yield pool
        return
    from distributed import Client, LocalCluster

    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            if not isinstance(scheduler, str) or not _SCHEDULER.match(scheduler.strip()):
                allowed = "a dask scheduler address tcp://HOST:PORT"
                raise ParameterError("scheduler", allowed, scheduler)
            address = scheduler.strip()
            wait = DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
            timeout = check_positive_finite("connect_timeout", wait)
            try:
                client = Client(address, timeout=timeout, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ParameterError(
                    "scheduler",
                    f"the address of a running dask scheduler that answers within {timeout:g} s",
                    f"{address} ({exc})",
                ) from None
            where = f"dask scheduler {address}"
        else:
            import dask

            n = parse_cluster(cluster)
            # dask's nannies set MALLOC_TRIM_THRESHOLD_, which turns glibc's adaptive mmap
            # threshold off (arrays over 128 KiB mapped and faulted in anew: system time,
            # analysis.worker_setup); the thread variables (OMP_NUM_THREADS=1, ...) stay
            with dask.config.set({f"{_PRE_SPAWN}.MALLOC_TRIM_THRESHOLD_": None}):
                local = stack.enter_context(
                    LocalCluster(
                        n_workers=n,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",  # a free port: several clusters may run here
                    )
                )
            client = Client(local, set_as_default=False)
            where = f"dask LocalCluster of {n} worker processes"
        stack.callback(client.close)
        nworkers = len(client.nthreads())
        say(f"{where}: {nworkers} workers now; {_dashboard(client)}")
        executor = client.get_executor(pure=False)
        stack.callback(executor.shutdown, wait=False)
        yield executor


_PRE_SPAWN = "distributed.nanny.pre-spawn-environ"
# -- per-process initialisation -----------------------------------------------------

_READY: set[tuple] = set()
_READY_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class _Initialised:
    """``fn(*args)`` after ``initializer(*initargs)`` has run once in this process.

    An executor the caller hands in (a dask client's, one pool for many calls) has no
    initializer of ours; each task carries it and runs it before the first task of its
    kind in a worker process, including workers that join later or were restarted.
    """

    fn: Callable[..., Any]
    initializer: Callable[..., None]
    initargs: tuple

    def __call__(self, *args: Any) -> Any:
        key = (self.initializer.__module__, self.initializer.__qualname__, repr(self.initargs))
        if key not in _READY:
            with _READY_LOCK:
                if key not in _READY:
                    self.initializer(*self.initargs)
                    _READY.add(key)
        return self.fn(*args)


def _slots(executor: cf.Executor) -> int:
    """Worker threads of ``executor``: a dask client's current total, a pool's size."""
    client = getattr(executor, "_client", None)
    if client is not None and hasattr(client, "nthreads"):
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # noqa: BLE001 - a busy or closing scheduler: keep going with 1
            return 1
    return max(1, int(getattr(executor, "_max_workers", None) or os.cpu_count() or 1))


class TaskPool:
    """An executor with the place's worker initializer and a bounded number of tasks in flight.

    Made by :func:`task_pool`; :meth:`imap` is how every place fans out.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from analysis.executor import TaskPool
    >>> with ThreadPoolExecutor(2) as ex:
    ...     pool = TaskPool(ex)
    ...     sorted(pool.imap(pow, [("a", (2, 3)), ("b", (3, 2))]))
    [('a', 8), ('b', 9)]
    """

    def __init__(
        self,
        executor: cf.Executor,
        *,
        initializer: Callable[..., None] | None = None,
        initargs: tuple = (),
    ):
        self.executor = executor
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._slots = (0, -1.0)  # (value, time read)

    @property
    def slots(self) -> int:
        """Worker threads now (re-read at most once a second: a dask cluster may grow)."""
        value, when = self._slots
        now = time.monotonic()
        if now - when > 1.0:
            value = _slots(self.executor)
            self._slots = (value, now)
        return value

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> cf.Future:
        """``fn(*args)`` on the executor, after the place's initializer in that process."""
        if self._initializer is not None:
            fn = _Initialised(fn, self._initializer, self._initargs)
        return self.executor.submit(fn, *args)

    def imap(
        self, fn: Callable[..., Any], calls: Iterable[tuple[Any, tuple]], *, ordered: bool = False
    ) -> Iterator[tuple[Any, Any]]:
        """``(tag, fn(*args))`` for each ``(tag, args)`` of ``calls``, as they complete.

        ``calls`` is read lazily, at most ``2 x slots`` tasks ahead, so the arguments of
        a large run are never all in memory. ``ordered`` yields in the order of
        ``calls``. On any exception (a task's, or one thrown into the generator, such as
        KeyboardInterrupt) the tasks still pending are cancelled.
        """
        queue = iter(calls)
        pending: dict[cf.Future, tuple[int, Any]] = {}
        ready: dict[int, Any] = {}
        tags: dict[int, Any] = {}
        nxt = submitted = 0
        exhausted = False
        try:
            while True:
                limit = 2 * self.slots
                while not exhausted and len(pending) + len(ready) < limit:
                    item = next(queue, None)
                    if item is None:
                        exhausted = True
                        break
                    tag, args = item
                    tags[submitted] = tag
                    pending[self.submit(fn, *args)] = (submitted, tag)
                    submitted += 1
                if not pending and not ready:
                    return
                if pending:
                    finished, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                    for fut in finished:
                        i, tag = pending.pop(fut)
                        if ordered:
                            ready[i] = fut.result()
                        else:
                            yield tag, fut.result()
                while ordered and nxt in ready:
                    yield tags.pop(nxt), ready.pop(nxt)
                    nxt += 1
        finally:
            for fut in pending:
                fut.cancel()


def check_executor(executor: Any, workers: int) -> int:
    """``workers`` checked (>= 1), and 1 when ``executor`` is given (it sets the parallelism).

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from analysis.executor import check_executor
    >>> check_executor(None, 4)
    4
    >>> with ThreadPoolExecutor(2) as ex:
    ...     check_executor(ex, 1)  # the executor sets the parallelism
    1
    """
    workers = check_int("workers", workers, minimum=1)
    if executor is not None:
        if not isinstance(executor, cf.Executor):
            raise ParameterError("executor", "a concurrent.futures.Executor or None", executor)
        if workers != 1:
            raise ParameterError(
                "workers",
                "1 when an executor is given (the executor sets the parallelism)",
                workers,
            )
    return workers


@contextlib.contextmanager
def task_pool(
    executor: cf.Executor | None,
    workers: int,
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    mp_context: str | None = "spawn",
) -> Iterator[TaskPool | None]:
    """The pool a place fans out to: None (run in this process), its own process pool, or
    the caller's ``executor``.

    ``workers > 1`` without an executor makes a :class:`~concurrent.futures.ProcessPoolExecutor`
    with ``initializer`` (start method ``mp_context``; None: the platform's default), shut
    down on exit, as every place always has. An ``executor`` is the caller's: it is not
    shut down, and ``initializer`` runs once per worker process before its first task.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from analysis.executor import task_pool
    >>> with task_pool(None, 1) as pool:  # one worker: run in this process
    ...     pool is None
    True
    >>> with ThreadPoolExecutor(2) as ex, task_pool(ex, 1) as pool:
    ...     list(pool.imap(abs, [(i, (-i,)) for i in range(4)], ordered=True))
    [(0, 0), (1, 1), (2, 2), (3, 3)]
    """
    workers = check_executor(executor, workers)
    if executor is not None:
        yield TaskPool(executor, initializer=initializer, initargs=initargs)
        return
    if workers == 1:
        yield None
        return
    with _process_pool(workers, mp_context, initializer, tuple(initargs)) as pool:
        yield TaskPool(pool)


@contextlib.contextmanager
def _process_pool(
    workers: int,
    mp_context: str | None,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> Iterator[cf.ProcessPoolExecutor]:
    """A local pool of ``workers`` processes, for :func:`task_pool` and :func:`open_executor`:
    workers ignore SIGINT and die with their owner (:func:`_worker_start`); SIGTERM
    interrupts the owner as Ctrl-C does (:func:`sigterm_interrupts`); on any interruption
    or error the workers are terminated at once; a dead worker is a :class:`ParameterError`
    naming ``workers`` instead of :class:`~concurrent.futures.process.BrokenProcessPool`.
    """
    ctx = None if mp_context is None else multiprocessing.get_context(mp_context)
    pool = cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_worker_start,
        initargs=(initializer, tuple(initargs)),
    )
    clean = False
    try:
        with sigterm_interrupts():
            yield pool
        clean = True
    except cf.process.BrokenProcessPool:
        raise ParameterError(
            "workers",
            "worker processes that live to finish their tasks (finished work is kept; re-run "
            "to resume, with fewer workers if one ran out of memory)",
            "a worker process died (killed, or out of memory)",
        ) from None
    finally:
        with contextlib.nullcontext() if clean else _quiet_broken_pool_thread():
            if not clean:  # an error, SIGINT or SIGTERM: stop the running tasks, do not wait
                # ProcessPoolExecutor has no public way to stop running tasks; _processes is
                # stable since 3.2.
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    with contextlib.suppress(Exception):
                        proc.terminate()
            pool.shutdown(wait=True, cancel_futures=True)


def _worker_start(initializer: Callable[..., None] | None, initargs: tuple) -> None:
    """First thing in a worker of a local pool (:func:`_process_pool`): leave SIGINT to the owner
    (which stops the pool: a Ctrl-C does not print a traceback per worker), die with the
    owner (Linux: ``PR_SET_PDEATHSIG``, so a killed owner leaves no orphans), then the
    place's initializer."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a forked worker inherits the owner's SIGTERM handler (:func:`sigterm_interrupts`);
    # a worker is stopped by SIGTERM, so it takes the default action again
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if initializer is not None:
        initializer(*initargs)


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (elsewhere: nothing)."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)


class Terminated(KeyboardInterrupt):
    """The :class:`KeyboardInterrupt` that SIGTERM raises under :func:`sigterm_interrupts`;
    ``signum`` is the signal's number (a command exits with ``128 + signum``: 143).

    Examples
    --------
    >>> import signal
    >>> from analysis.executor import Terminated
    >>> exc = Terminated(signal.SIGTERM)
    >>> isinstance(exc, KeyboardInterrupt), 128 + exc.signum
    (True, 143)
    """

    def __init__(self, signum: int):
        super().__init__(f"signal {int(signum)}")
        self.signum = int(signum)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a :class:`KeyboardInterrupt`) while the block
    runs (main thread only; elsewhere nothing changes), so that what is interrupted
    cleans up as on Ctrl-C: a pool stops its workers, finished work is kept, temporary
    files are removed. The previous handler is restored on exit.

    Examples
    --------
    >>> import signal
    >>> from analysis.executor import sigterm_interrupts
    >>> before = signal.getsignal(signal.SIGTERM)
    >>> with sigterm_interrupts():
    ...     pass
    >>> signal.getsignal(signal.SIGTERM) is before
    True
    """
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _quiet_broken_pool_thread() -> Iterator[None]:
    """Silence one known race while a pool is torn down on purpose.

    When the workers are stopped, the pool's manager thread marks every queued task as
    failed; on Python 3.11 it calls ``set_exception`` on futures :meth:`TaskPool.imap` has
    already cancelled, and the :class:`concurrent.futures.InvalidStateError` escapes the
    thread as a traceback on stderr (the futures are cancelled, so nothing is lost). Only
    that exception, raised inside ``terminate_broken``, is dropped; any other goes to the
    previous ``threading.excepthook``.
    """
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        tb, frames = args.exc_traceback, []
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        if args.exc_type is cf.InvalidStateError and "terminate_broken" in frames:
            return
        previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous
