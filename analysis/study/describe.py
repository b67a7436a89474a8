"""Stage 3: the design's descriptor blocks, one atomic CSV per stored real matrix.

``features/blocks.json`` records the locked version of each block the stored files were
written with; when a version differs (a block amended after its descriptors were stored,
or files from before versions were recorded), every stored file is removed and recomputed,
so that a result stamped with the lock hash never mixes in another block version's output.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.study.core import Study, load_plugins
from analysis.study.plan import StudyPlan
from analysis.study.records import read_json, write_frame, write_json

__all__ = ["VERSIONS_FILE", "descriptor_stage", "describe_task"]

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


def _describe_worker_init(plugins: Sequence[str], root: str | None = None) -> None:
    import torch

    torch.set_num_threads(1)
    load_plugins(plugins, root)


def describe_task(
    array_file: str, out: str, eps: Sequence[float], temps: Sequence[float], blocks: Sequence[str]
) -> float:
    """Describe one stored matrix into ``out`` (atomic CSV); return its seconds."""
    from threadpoolctl import threadpool_limits

    from analysis.descriptors.describe import describe_matrix
    from analysis.store.store import load_arrays

    start = time.perf_counter()
    arr = load_arrays(Path(array_file))
    with threadpool_limits(1):
        df = describe_matrix(
            arr.Q,
            arr.K,
            arr.scale,
            arr.mask,
            eps=eps,
            temperatures=temps,
            blocks=blocks,
            bias=arr.bias,
        )
    write_frame(Path(out), df)
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
) -> int:
    """Describe every matrix of ``keys`` not described yet; return how many were."""
    from tqdm.auto import tqdm

    plan, paths = study.plan, study.paths
    paths.features.mkdir(parents=True, exist_ok=True)
    _retire_other_versions(paths.features, study.block_versions)
    todo = [k for k in keys if not features_done(paths.feature_file(k), plan)]
    bar = tqdm(
        total=len(keys),
        initial=len(keys) - len(todo),
        desc="descriptors",
        unit="matrix",
        disable=not progress,
    )
    args = [
        (
            str(store.path / store.matrix(k).array_file),
            str(paths.feature_file(k)),
            plan.eps,
            plan.temperatures,
            plan.blocks,
        )
        for k in todo
    ]
    try:
        if workers == 1 or len(args) <= 1:
            _describe_worker_init(plan.plugins, str(paths.root))
            for a in args:
                describe_task(*a)
                bar.update(1)
        else:
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=ctx,
                initializer=_describe_worker_init,
                initargs=(tuple(plan.plugins), str(paths.root)),
            ) as pool:
                futures = [pool.submit(describe_task, *a) for a in args]
                try:
                    for fut in cf.as_completed(futures):
                        fut.result()
                        bar.update(1)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        bar.close()
    return len(todo)
