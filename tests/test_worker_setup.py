"""Workers spend their CPU on the work (issue 51): one thread per worker, glibc's heap
defaults in a LocalCluster's workers, and tasks that carry a matrix's file, not its arrays,
to workers that read this machine's files."""

from __future__ import annotations

import os
import pickle

import pytest

from analysis.brackets.engine import default_engine
from analysis.executor import open_executor, task_pool
from analysis.sources import synthetic
from analysis.store import RunSpec, Store, run_brackets
from analysis.store.store import MatrixArrays
from analysis.worker_setup import prepare_worker, shares_files

pytest.importorskip("distributed")

QUIET = {"say": lambda _: None}


def _worker_state(_: int = 0) -> dict:
    import torch
    from threadpoolctl import threadpool_info

    return {
        "env": {k: os.environ.get(k) for k in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")},
        "torch": torch.get_num_threads(),
        "pools": sorted({p["num_threads"] for p in threadpool_info()}),
    }


@pytest.fixture(scope="module")
def local1():
    with open_executor(cluster="local:1", **QUIET) as ex:
        yield ex


def test_a_local_clusters_workers_keep_glibcs_heap_defaults(local1):
    # dask's nannies set MALLOC_TRIM_THRESHOLD_=65536, which turns glibc's adaptive mmap
    # threshold off: every array over 128 KiB mapped and faulted in anew (system time)
    state = local1.submit(_worker_state).result()
    assert state["env"]["MALLOC_TRIM_THRESHOLD_"] is None
    assert state["env"]["OMP_NUM_THREADS"] == "1"  # dask's thread variables stay


@pytest.mark.parametrize("place", ["store", "describe"])
def test_a_local_pools_workers_run_one_thread_in_every_pool(place, monkeypatch):
    from analysis.store.compute import _worker_init
    from analysis.study.describe import _describe_worker_init

    # as `--workers N` starts: a LocalCluster opened earlier in this process left dask's
    # thread variables in os.environ (its nannies set them before spawning)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)

    init, args = (_worker_init, ()) if place == "store" else (_describe_worker_init, (None,))
    with task_pool(None, 2, initializer=init, initargs=args) as pool:
        states = [s for _, s in pool.imap(_worker_state, [(i, (i,)) for i in range(4)])]
    for state in states:
        assert state["torch"] == 1 and state["pools"] == [1], state
        assert state["env"]["OMP_NUM_THREADS"] == "1"


def test_prepare_worker_leaves_the_main_process_alone():
    import torch

    before = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    prepare_worker(1)
    assert (torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")) == before


class _Recording:
    """Pickled sizes of what ``submit`` sends, and whether any argument is a matrix's arrays."""

    def __init__(self, executor):
        self.executor, self.sizes, self.arrays = executor, [], 0

    def __call__(self, fn, *args):
        self.sizes.append(len(pickle.dumps((fn, args))))
        self.arrays += sum(isinstance(a, MatrixArrays) for a in args)
        return self.submit(fn, *args)


def test_tasks_sent_to_a_local_cluster_carry_files_not_arrays(local1, tmp_path, monkeypatch):
    path = tmp_path / "store"
    with Store(path, create=True) as store:
        for i in range(2):  # 96 x 96: 72 KiB of float64 per matrix
            store.add_synthetic(synthetic.spherical(96, 3, 4.0, random_state=i), head=i)
    assert shares_files(local1)
    record = _Recording(local1)
    record.submit = local1.submit
    monkeypatch.setattr(local1, "submit", record)
    run = RunSpec(executor=local1, progress=False)
    s = run_brackets(path, (0.2,), engine=default_engine(), effort="fast", run=run)
    assert s.computed == 2 and len(record.sizes) == 2
    assert record.arrays == 0
    assert max(record.sizes) < 4096, record.sizes  # a key, a path, a hash, the engine


def test_descriptor_tasks_sent_to_a_local_cluster_carry_files(local1, tmp_path, monkeypatch):
    from analysis.datasets import open_example_study
    from analysis.study.describe import descriptor_stage
    from analysis.study.stages import synthetic_stage

    monkeypatch.chdir(tmp_path)  # the example study's root is the current folder
    study = open_example_study("studies/d.toml", synthetic=True)
    record = _Recording(local1)
    record.submit = local1.submit
    monkeypatch.setattr(local1, "submit", record)
    with Store(study.paths.store, create=True) as store:
        keys = synthetic_stage(study, store)
        assert descriptor_stage(study, store, keys, 1, False, local1) == 2
    assert len(record.sizes) == 2 and record.arrays == 0


def test_a_scheduler_reached_cluster_is_not_assumed_to_share_files():
    from concurrent.futures import Executor

    class Remote(Executor):  # stands for a dask client's executor of another machine
        pass

    assert not shares_files(Remote())
