"""Worker processes that spend their CPU on the work: one thread per worker, glibc's heap
defaults, and which executors read this machine's files (so that tasks carry a matrix's
file rather than its arrays). Why and the measurements: docs/guide/scale-out.md,
"Which executor"; docs/results/scale-out.md.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from collections.abc import Iterator

from analysis.executor import _process_pool, check_executor
from analysis.validation import check_int

__all__ = ["prepare_worker", "shared_pool", "shares_files"]


def shares_files(executor: cf.Executor | None) -> bool:
    """Whether ``executor``'s workers read this machine's files: a local pool's (or no
    executor) and :func:`open_executor`'s ``cluster="local:N"`` do; a cluster reached by
    ``scheduler`` is not assumed to (its tasks carry the arrays they need).

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from analysis.worker_setup import shares_files
    >>> with ThreadPoolExecutor(1) as ex:
    ...     shares_files(ex), shares_files(None)
    (True, True)
    """
    if executor is None or isinstance(executor, (cf.ProcessPoolExecutor, cf.ThreadPoolExecutor)):
        return True
    # a dask client's executor: its client's cluster, when it is a LocalCluster (as
    # open_executor(cluster="local:N") starts), runs its workers here
    cluster = getattr(getattr(executor, "_client", None), "cluster", None)
    if cluster is None:
        return False
    from distributed import LocalCluster

    return isinstance(cluster, LocalCluster)


# glibc mallopt parameters, and the values its adaptive thresholds settle at on 64-bit
# (32 MiB mmap threshold, trim threshold twice that)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_MAX, _TRIM_MAX = 32 << 20, 64 << 20


def prepare_worker(threads: int = 1) -> None:
    """Set up a worker process that shares the machine's cores with other workers.

    torch's intra-op pool and every BLAS / OpenMP pool are limited to ``threads`` (workers,
    not threads, share the cores: more threads per worker only spin against each other),
    and where a worker's environment fixes glibc's heap thresholds (dask's nannies set
    ``MALLOC_TRIM_THRESHOLD_``, which turns off the adaptive mmap threshold), they are
    set to what the adaptive ones settle at, so that arrays of a few MiB are reused from
    the heap instead of mapped and faulted in anew (system time). Nothing a task computes
    depends on it: the tasks fix their own thread counts (:func:`analysis.attention.fixed_torch_threads`).
    Called by the places' worker initializers (run once per worker process, in a local
    pool or a caller's executor); nothing happens outside a worker process (in the main
    process, e.g. under an executor of threads), whose settings stay the caller's.

    Examples
    --------
    >>> from analysis.worker_setup import prepare_worker
    >>> prepare_worker(0)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: threads: expected an integer >= 1, got 0
    """
    threads = check_int("threads", threads, minimum=1)
    if multiprocessing.parent_process() is None:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)  # libraries loaded later start with it
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(limits=threads)  # those already loaded (numpy's BLAS, torch's OpenMP)
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        _heap_defaults()


def _heap_defaults() -> None:
    """glibc's adaptive heap thresholds at their 64-bit maximum (elsewhere: nothing)."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_MAX)


@contextlib.contextmanager
def shared_pool(
    executor: cf.Executor | None, workers: int
) -> Iterator[tuple[cf.Executor | None, int]]:
    """``(executor, workers)`` for several stages in a row: with ``workers > 1`` and no
    executor, ``(pool, 1)`` of one local pool the stages share instead of a pool each (a
    spawn imports the package anew: seconds of CPU, a tenth of it system time); otherwise
    what was given. Tasks and results are those of the stages' own pools.

    Examples
    --------
    >>> from analysis.worker_setup import shared_pool
    >>> with shared_pool(None, 1) as (ex, workers):
    ...     ex, workers
    (None, 1)
    >>> with shared_pool(None, 2) as (ex, workers):
    ...     type(ex).__name__, workers
    ('ProcessPoolExecutor', 1)
    """
    workers = check_executor(executor, workers)
    if executor is not None or workers == 1:
        yield executor, workers
        return
    with _process_pool(workers, "spawn") as pool:
        yield pool, 1
