"""Where the refits of a refit bootstrap run, and a store that lets a killed comparison resume.

A method-3 comparison refits every model R times (:func:`analysis.compare.refit.refit_effects`),
and its leave-one-family-out sensitivity runs the whole comparison again without each family,
refits included: (1 + families) x R refits, and a study's OLS refit R more. Each refit is one
process's work for seconds, so a study's compare stage is hours of CPU on a few cores. A :class:`RefitRunner` set with :func:`refit_runner` (a context manager:
the previous runner is always restored) runs the refits on a pool's workers and keeps
each finished refit in a store, so a comparison that is stopped and run again computes only
the refits it has not stored.

Nothing a refit computes depends on where it runs: its resample and seed are drawn in the
calling process in the order of the serial loop, so the generator's state after the refits is
the one the serial loop leaves (the draws that follow are the same), and each refit runs with
one BLAS thread wherever it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from analysis.validation import ParameterError

__all__ = ["RefitRunner", "RefitStore", "current_refit_runner", "refit_key", "refit_runner"]

#: One refit's rows: (base model, rich model, metric, point effect, status).
RefitRows = list[tuple[str, str, str, float, str]]


class RefitStore(Protocol):
    """Finished refits by key (:func:`refit_key`); ``get`` gives None for an unknown key."""

    def get(self, key: str) -> RefitRows | None: ...

    def put(self, key: str, rows: RefitRows) -> None: ...


@dataclass(frozen=True)
class RefitRunner:
    """Where :func:`analysis.compare.refit.refit_effects` runs its refits.

    Parameters
    ----------
    pool : object or None
        Runs the refits: an :class:`analysis.executor.TaskPool` (or anything with its
        ``imap(fn, calls, ordered=True)`` and ``slots``); None runs them in this process,
        one after another.
    store : RefitStore or None
        Keeps each finished refit; a refit found there is not run again.
    progress : callable or None
        ``progress(total) -> bar`` with ``bar.update(n)`` and ``bar.close()`` (a tqdm bar),
        one per call of ``refit_effects``.

    Examples
    --------
    >>> from analysis.compare.refit_runner import RefitRunner, current_refit_runner, refit_runner
    >>> current_refit_runner().pool is None  # the default: this process, nothing stored
    True
    >>> class Store(dict):
    ...     def put(self, key, rows): self[key] = rows
    >>> with refit_runner(RefitRunner(store=Store())):
    ...     current_refit_runner().store
    {}
    >>> current_refit_runner().store is None  # restored on leaving the block
    True
    """

    pool: Any = None
    store: RefitStore | None = None
    progress: Callable[[int], Any] | None = None

    def run(
        self,
        refit: Callable[[pd.DataFrame, Any], Any],
        plans: Iterable[tuple[pd.DataFrame, Any]],
        total: int,
    ) -> Iterator[RefitRows]:
        """Each plan's ``(table, spec)`` refitted (or read from the store), its rows
        yielded in the plans' order.

        The plans are read lazily: the pool holds at most twice its workers' refits in
        flight (:meth:`analysis.executor.TaskPool.imap`), so the resampled tables in memory
        stay few and no worker waits for a batch to end.
        """
        bar = None if self.progress is None or total == 0 else self.progress(total)
        try:
            for rows in self._rows(refit, plans):
                if bar is not None:
                    bar.update(1)
                yield rows
        finally:
            if bar is not None:
                bar.close()

    def _rows(
        self, refit: Callable, plans: Iterable[tuple[pd.DataFrame, Any]]
    ) -> Iterator[RefitRows]:
        store = self.store
        found: dict[int, RefitRows] = {}  # read from the store, not yet yielded
        keys: dict[int, str | None] = {}  # sent to be refitted

        def calls() -> Iterator[tuple[int, tuple]]:
            for i, (table, spec) in enumerate(plans):
                key = None if store is None else refit_key(table, spec)
                rows = None if key is None or store is None else store.get(key)
                if rows is not None:
                    found[i] = rows
                    continue
                keys[i] = key
                yield i, (refit, table, spec)

        if self.pool is None:
            done = ((i, refit_rows(*args)) for i, args in calls())
        else:
            done = self.pool.imap(refit_rows, calls(), ordered=True)
        nxt = 0
        for i, rows in done:
            key = keys.pop(i)
            if key is not None and store is not None:
                store.put(key, rows)
            while nxt < i:  # every plan before i was read from the store
                yield found.pop(nxt)
                nxt += 1
            yield rows
            nxt = i + 1
        while found:  # the plans after the last refitted one
            yield found.pop(nxt)
            nxt += 1


_CURRENT: ContextVar[RefitRunner | None] = ContextVar("refit_runner", default=None)
_DEFAULT = RefitRunner()


def current_refit_runner() -> RefitRunner:
    """The runner :func:`refit_runner` set (default: this process, nothing stored)."""
    return _CURRENT.get() or _DEFAULT


@contextlib.contextmanager
def refit_runner(runner: RefitRunner) -> Iterator[RefitRunner]:
    """Run the refit bootstraps of the comparisons fitted inside the block with ``runner``."""
    if not isinstance(runner, RefitRunner):
        raise ParameterError("runner", "a RefitRunner", type(runner).__name__)
    token = _CURRENT.set(runner)
    try:
        yield runner
    finally:
        _CURRENT.reset(token)


def refit_rows(
    refit: Callable[[pd.DataFrame, Any], Any], table: pd.DataFrame, spec: Any
) -> RefitRows:
    """One refit's rows (run in a worker or here), with one BLAS thread.

    One thread wherever it runs, so a refit gives the same numbers in this process and in
    a worker (workers already run one thread; the limit is lifted afterwards). The fits
    are numpy and scipy: no torch.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        res = refit(table, spec)
    return [
        (str(r.base_model), str(r.rich_model), str(r.metric), float(r.effect), str(r.status))
        for r in res.frame.itertuples(index=False)
    ]


def refit_key(table: pd.DataFrame, spec: Any) -> str:
    """A refit's key: SHA-256 of its settings and of its table's columns and values.

    The settings are the spec's ``repr`` (a dataclass of plain values: the models, the
    estimator, the seed); a spec whose ``repr`` holds an object's address is refused, since
    its key would not name the same refit in another process.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.compare.refit_runner import refit_key
    >>> t = pd.DataFrame({"a": [1.0, 2.0]})
    >>> refit_key(t, "spec") == refit_key(t.copy(), "spec"), refit_key(t, "spec") == refit_key(t, "other")
    (True, False)
    """
    settings = repr(spec)
    if " at 0x" in settings:
        raise ParameterError("spec", "a spec whose repr holds plain values", settings[:200])
    h = hashlib.sha256(b"refit/1\0")
    h.update(settings.encode())
    h.update(repr(list(map(str, table.columns))).encode())
    h.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return h.hexdigest()
