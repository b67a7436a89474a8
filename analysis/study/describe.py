"""Stage 3: the design's descriptor blocks, one atomic CSV per stored real matrix.

``features/blocks.json`` records the locked version of each block the stored files were
written with; when a version differs (a block amended after its descriptors were stored,
or files from before versions were recorded), every stored file is removed and recomputed,
so that a result stamped with the lock hash never mixes in another block version's output.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.attention import fixed_torch_threads
from analysis.executor import task_pool
from analysis.progress import DESCRIBE_EXPONENT, CostBar, matrix_cost
from analysis.study.core import Study, put_root_on_path
from analysis.study.plan import StudyPlan
from analysis.study.records import read_json, write_frame, write_json
from analysis.validation import ParameterError
from analysis.worker_setup import prepare_worker, shares_files

__all__ = ["VERSIONS_FILE", "describe_frame", "describe_task", "descriptor_stage"]

#: In the features folder: block -> locked version the stored descriptor files were made by.
VERSIONS_FILE = "blocks.json"


def features_done(path: Path, plan: StudyPlan) -> bool:
    """Whether ``path`` holds every block of the plan at every (temperature, eps)."""
    if not path.is_file():
        return False
    try:
        head = pd.read_csv(path, nrows=0)
        n = sum(1 for _ in path.open(encoding="utf-8")) - 1
    except (OSError, ValueError, pd.errors.ParserError):
        return False
    have = {c.split("__", 1)[0] for c in head.columns if "__" in c}
    return set(plan.blocks) <= have and n == plan.cells_per_matrix


def _describe_worker_init(root: str | None = None) -> None:
    import torch

    torch.set_num_threads(1)
    prepare_worker(1)  # one thread per worker, glibc's heap defaults
    put_root_on_path(root)  # the design's plugin modules import from the study root


def describe_frame(
    arrays: Any,
    eps: Sequence[float],
    temps: Sequence[float],
    blocks: Sequence[str],
    plugins: Sequence[str] = (),
    versions: Sequence[tuple[str, int]] = (),
) -> pd.DataFrame:
    """The descriptor rows of one stored matrix (its ``MatrixArrays``, or their file).

    ``blocks`` are names of the registry ``build_registry(plugins, dict(versions))`` (the
    built-in blocks, each at the version ``versions`` pairs give it, else 1, then the
    design's plugins in order: the study's registry, rebuilt in the worker from names and
    numbers, so that a task carries only those). Writes nothing: a worker returns the
    frame and the calling process writes it.

    Examples
    --------
    One row per (temperature, eps) of one stored 8 x 8 matrix; its arrays or their file
    give the same rows:

    >>> from analysis.sources.synthetic import full_ball
    >>> from analysis.store import Store
    >>> from analysis.study.describe import describe_frame
    >>> with Store("frame", create=True) as store:
    ...     key = store.add_synthetic(full_ball(8, 2, 4.0, random_state=0))
    ...     arrays, file = store.arrays(key), store.path / store.matrix(key).array_file
    >>> df = describe_frame(arrays, eps=(0.1, 0.2), temps=(0.5, 1.0), blocks=("baseline",))
    >>> df[["temperature", "eps", "baseline__n_keys"]].to_dict("list")
    {'temperature': [0.5, 0.5, 1.0, 1.0], 'eps': [0.1, 0.2, 0.1, 0.2],
     'baseline__n_keys': [8.0, 8.0, 8.0, 8.0]}
    >>> df.equals(describe_frame(file, (0.1, 0.2), (0.5, 1.0), ("baseline",)))
    True
    """
    from threadpoolctl import threadpool_limits

    from analysis.descriptors.builtin import build_registry
    from analysis.descriptors.describe import describe_matrix
    from analysis.store.store import load_arrays

    registry = build_registry(plugins, dict(versions))
    chosen = [registry.get(b) for b in blocks]
    arr = load_arrays(Path(arrays)) if isinstance(arrays, (str, Path)) else arrays
    with threadpool_limits(1):
        df = describe_matrix(
            Q=arr.Q,
            K=arr.K,
            scale=arr.scale,
            mask=arr.mask,
            eps=eps,
            temperatures=temps,
            blocks=chosen,
            bias=arr.bias,
            diagnostics=True,  # a study stores every column (the comparison drops diagnostics)
        )
    return df


def _at_matrix(key: str, exc: ParameterError) -> ParameterError:
    """``exc`` (a block that failed on a cell) with the stored matrix's key in front."""
    return ParameterError(exc.name, exc.allowed, f"matrix {key}, {exc.got}")


def _describe_keyed(key: str, *args: Any) -> pd.DataFrame:
    """:func:`describe_frame` in a worker, its one-line error naming the matrix ``key``."""
    try:
        return describe_frame(*args)
    except ParameterError as exc:
        raise _at_matrix(key, exc) from None


def describe_task(
    array_file: str,
    out: str,
    eps: Sequence[float],
    temps: Sequence[float],
    blocks: Sequence[str],
    plugins: Sequence[str] = (),
    versions: Sequence[tuple[str, int]] = (),
) -> float:
    """Describe one stored matrix into ``out`` (atomic CSV); return its seconds.

    Examples
    --------
    The CSV holds :func:`describe_frame`'s rows, every float to the last bit:

    >>> import pandas as pd
    >>> from analysis.sources.synthetic import full_ball
    >>> from analysis.store import Store
    >>> from analysis.study.describe import describe_frame, describe_task
    >>> with Store("task", create=True) as store:
    ...     key = store.add_synthetic(full_ball(8, 2, 4.0, random_state=0))
    ...     file = str(store.path / store.matrix(key).array_file)
    >>> seconds = describe_task(file, "cells.csv", (0.1,), (1.0,), ("baseline", "native"))
    >>> seconds > 0
    True
    >>> expected = describe_frame(file, (0.1,), (1.0,), ("baseline", "native"))
    >>> written = pd.read_csv("cells.csv")  # whole numbers read back as integers
    >>> same = written.to_numpy(float) == expected.to_numpy(float)
    >>> list(written) == list(expected), bool(same.all())
    (True, True)
    """
    start = time.perf_counter()
    write_frame(Path(out), describe_frame(array_file, eps, temps, blocks, plugins, versions))
    return time.perf_counter() - start


def _retire_other_versions(folder: Path, versions: dict[str, str]) -> int:
    """Remove the stored descriptor files unless they were made by these block versions.

    The record is rewritten before any new file exists, so an interrupted stage resumes
    with the files it finished. Returns the number of files removed.
    """
    record = folder / VERSIONS_FILE
    made_by = read_json(record, {})
    if {b: made_by.get(b) for b in versions} == versions:
        return 0
    stale = sorted(folder.glob("*.csv"))
    for f in stale:
        f.unlink()
    write_json(record, versions)
    return len(stale)


def descriptor_stage(
    study: Study,
    store: Any,
    keys: Sequence[str],
    workers: int,
    progress: bool,
    executor: cf.Executor | None = None,
) -> int:
    """Describe every matrix of ``keys`` not described yet; return how many were.

    With ``workers`` > 1 or an ``executor``, workers return each matrix's frame and this
    process writes its CSV as it completes. A task carries the matrix's file (its hash
    checked where it is read); tasks sent to a cluster reached by its scheduler carry the
    arrays instead (:func:`analysis.executor.shares_files`).

    Examples
    --------
    A study describes its real matrices; to stay clear of model weights, the two
    synthetic matrices of a small design stand in for them here:

    >>> import pandas as pd
    >>> from analysis.store import Store
    >>> from analysis.study.describe import VERSIONS_FILE, descriptor_stage
    >>> from analysis.study.records import read_json
    >>> from analysis.study.stages import synthetic_stage
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/describe.toml", synthetic=True)
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     first = descriptor_stage(study, store, keys, workers=1, progress=False)
    ...     again = descriptor_stage(study, store, keys, workers=1, progress=False)
    >>> first, again  # both described, then both found complete
    (2, 0)
    >>> df = pd.read_csv(study.paths.feature_file(keys[0]))
    >>> len(df) == study.plan.cells_per_matrix, sorted({c.split("__")[0] for c in df if "__" in c})
    (True, ['baseline', 'native'])
    >>> read_json(study.paths.features / VERSIONS_FILE, {}) == study.block_versions
    True
    """
    plan, paths = study.plan, study.paths
    paths.features.mkdir(parents=True, exist_ok=True)
    _retire_other_versions(paths.features, study.block_versions)
    todo = [k for k in keys if not features_done(paths.feature_file(k), plan)]
    # each matrix counted as its estimated cost (analysis.progress): a steady ETA
    costs = {
        k: matrix_cost(store.matrix(k).length, DESCRIBE_EXPONENT) if progress else 1.0 for k in keys
    }
    bar = CostBar(
        [costs[k] for k in todo],
        desc="descriptors",
        unit="matrices",
        done=len(keys) - len(todo),
        done_cost=sum(costs.values()) - sum(costs[k] for k in todo),
        disable=not progress or not keys,  # no empty bar
    )
    args = [
        (
            str(store.array_file(k)),  # checked against its recorded SHA-256 first
            str(paths.feature_file(k)),
            plan.eps,
            plan.temperatures,
            plan.blocks,
            plan.plugins,
            plan.versions,
        )
        for k in todo
    ]
    try:
        if executor is None and (workers == 1 or len(args) <= 1):
            # In this process: one torch thread for the stage only, restored after it (a
            # later extraction in the same process runs with the caller's thread count).
            put_root_on_path(str(paths.root))
            with fixed_torch_threads(1):
                for k, a in zip(todo, args, strict=True):
                    try:
                        describe_task(*a)
                    except ParameterError as exc:  # a block failed: earlier files stay
                        raise _at_matrix(k, exc) from exc
                    bar.advance(costs[k])
        else:
            init = (str(paths.root),)
            with task_pool(
                executor, workers, initializer=_describe_worker_init, initargs=init
            ) as pool:
                # the matrix's path (its hash checked where it is read); its arrays only where
                # the workers may not see the store's files (a cluster reached by its scheduler)
                carry = not shares_files(executor)
                calls = (
                    (out, (k, store.arrays(k) if carry else src, *rest))
                    for k, (src, out, *rest) in zip(todo, args, strict=True)
                )
                with contextlib.closing(pool.imap(_describe_keyed, calls)) as results:
                    for k, (out, df) in zip(todo, results, strict=True):
                        write_frame(Path(out), df)
                        bar.advance(costs[k])
    finally:
        bar.close()
    return len(todo)
