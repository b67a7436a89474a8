"""The small real study on a dask LocalCluster of 2 workers is the same study, byte for byte."""

from __future__ import annotations

import json
import zlib

import pytest

from analysis.executor import open_executor
from analysis.store import Store
from analysis.study import StudyOptions, run_study, study_paths
from tests.study.conftest import make_study

pytestmark = pytest.mark.slow


def _profiles(path) -> dict:
    """Stored profiles (decoded, without their wall-clock timings) and bracket rows."""
    with Store(path) as store:
        out = {}
        for p in store.profiles():
            prof = json.loads(
                zlib.decompress(
                    store._conn.execute(
                        "SELECT profile FROM profiles WHERE id = ?", (p.id,)
                    ).fetchone()[0]
                )
            )
            prof.get("stats", {}).pop("seconds", None)
            out[(p.matrix_key, p.temperature, p.version)] = (p.eps_grid, p.brackets, prof)
    return out


def _same_profiles_and_features(a, b) -> None:
    """Study ``b`` stored the profiles and descriptor files of study ``a``, byte for byte."""
    assert _profiles(b.store) == _profiles(a.store)
    features = sorted(f.name for f in a.features.glob("*.csv"))
    assert features == sorted(f.name for f in b.features.glob("*.csv")) and features
    for name in features:
        assert (b.features / name).read_bytes() == (a.features / name).read_bytes(), name


def test_a_study_on_a_local_cluster_is_the_same_study(finished_study, tmp_path):
    pytest.importorskip("distributed")
    design, _ = finished_study
    other = make_study(tmp_path)  # the same design, held-out draw and lock
    with open_executor(cluster="local:2", say=lambda _: None) as ex:
        run = run_study(
            other,
            say=lambda _: None,
            options=StudyOptions(executor=ex, stop_after="compare", progress=False),
        )
    assert run.computed["brackets"] > 0 and run.computed["descriptors"] == 24
    a, b = study_paths(design), study_paths(other)
    _same_profiles_and_features(a, b)
    rec_a = json.loads((a.results / "compare.json").read_text())
    rec_b = json.loads((b.results / "compare.json").read_text())
    assert rec_b["inputs_sha256"] == rec_a["inputs_sha256"]
    for name in rec_a["files"]:
        assert (b.results / name).read_bytes() == (a.results / name).read_bytes(), name


def test_a_study_on_workers_shares_one_pool_and_is_the_same_study(
    finished_study, tmp_path, monkeypatch
):
    import analysis.executor as executor

    design, _ = finished_study
    other = make_study(tmp_path)
    pools = []
    real = executor._process_pool

    def counted(*args, **kwargs):
        pools.append(args[0])
        return real(*args, **kwargs)

    import analysis.worker_setup as worker_setup

    monkeypatch.setattr(executor, "_process_pool", counted)  # each stage's own pools
    monkeypatch.setattr(worker_setup, "_process_pool", counted)  # the stages' shared one
    opts = StudyOptions(workers=2, stop_after="descriptors", progress=False)
    run = run_study(other, say=lambda _: None, options=opts)
    assert run.computed["brackets"] > 0 and run.computed["descriptors"] == 24
    # one pool for the brackets (real and synthetic matrices) and descriptor stages: each
    # pool spawns its workers anew, and each spawn imports the package (issue 51)
    assert pools == [2]
    a, b = study_paths(design), study_paths(other)
    _same_profiles_and_features(a, b)
