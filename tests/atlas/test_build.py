"""build_atlas on a small real study: one row per cell, the store's brackets and provenance,
the descriptor features; a store whose bracket disagrees with its profile is refused."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from analysis.atlas import COLUMNS, build_atlas, matrix_sha256
from analysis.atlas.schema import feature_columns
from analysis.store import Store
from analysis.study import Study
from analysis.study.results import feature_table
from analysis.validation import ParameterError


def test_one_row_per_bracketed_cell_in_schema_order(described_study, atlas):
    study = Study.open(described_study)
    with Store(study.paths.store) as store:
        cells = store.cells()
    # the real cells of the plan and the synthetic cells at t = 1: every stored bracket
    assert len(atlas) == len(cells) and atlas["cell_key"].is_unique
    assert set(atlas["cell_key"]) == set(cells["cell_key"])
    real = atlas.loc[atlas["source"] == "checkpoint"]
    assert len(real) == study.plan.planned_real_cells
    assert list(atlas.columns[: len(COLUMNS)]) == list(COLUMNS)
    for name, (dtype, _) in COLUMNS.items():
        assert str(atlas[name].dtype) == dtype, name
    assert feature_columns(atlas.columns) == list(atlas.columns[len(COLUMNS) :])


def test_brackets_and_provenance_are_the_stores(described_study, atlas):
    study = Study.open(described_study)
    with Store(study.paths.store) as store:
        cells = store.cells().set_index("cell_key")
        row = atlas.loc[atlas["source"] == "checkpoint"].iloc[7]
        arrays = store.arrays(row["matrix_key"])
        rec = store.matrix(row["matrix_key"])
        prof = store.profile(row["matrix_key"], row["temperature"], study.plan.effort)
    ends = cells.loc[atlas["cell_key"], ["lo", "hi"]].to_numpy()
    assert np.array_equal(atlas[["lower", "upper"]].to_numpy(), ends)
    assert (atlas["closed"] == (atlas["lower"] == atlas["upper"])).all()
    assert row["matrix_sha256"] == matrix_sha256(arrays.at(row["temperature"]))
    assert row["array_sha256"] == rec.array_sha256
    assert row["engine"] == prof.engine and row["engine_version"] == study.engine
    assert json.loads(row["profile_eps"]) == list(study.plan.eps)
    assert json.loads(row["search_temperatures"]) == list(study.plan.temperatures)
    methods = prof.profile_dict()["stats"]["methods"][repr(float(row["eps"]))]
    assert (row["lower_method"], row["upper_method"]) == (methods["lower"], methods["upper"])
    seeds = {t.label: t.corpus_seed for t in study.plan.extractions}
    label = f"{row['checkpoint']}|L={row['length']}|corpus-seed={row['corpus_seed']}"
    assert label in seeds and row["matrix_key"] in study.extractions.keys(label)
    assert set(atlas["design"]) == {"small"}
    assert set(atlas["lock_sha256"]) == {study.lock.sha256}


def test_held_out_and_features_follow_the_design_and_descriptor_files(described_study, atlas):
    study = Study.open(described_study)
    real = atlas.loc[atlas["source"] == "checkpoint"]
    assert (real["held_out"] == real["head_id"].isin(study.design.held_out)).all()
    assert real["held_out"].any() and not real["held_out"].all()
    assert not atlas.loc[atlas["source"] == "synthetic", "held_out"].any()
    features = feature_table(study.paths, study.real_keys()).set_index("cell_key")
    covs = feature_columns(atlas.columns)
    assert "native__kappa" in covs and "baseline__entropy_mean" in covs
    assert "intrinsic__q_r1" not in covs  # a per-r diagnostic, not a covariate
    got = real.set_index("cell_key")[covs]
    want = features.loc[list(got.index), covs]
    pd.testing.assert_frame_equal(
        got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False
    )
    assert atlas.loc[atlas["source"] == "synthetic", covs].isna().all().all()


def test_a_bracket_row_that_is_not_its_profiles_is_refused(study_copy):
    """The atlas re-reads each stored profile: a bracket edited in the index is caught."""
    store = study_copy.parent.parent / "data" / "small" / "store" / "index.sqlite"
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE brackets SET lo = lo + 1 WHERE rowid = 3")
    with pytest.raises(ParameterError, match="^store: .*stored \\[") as err:
        build_atlas(study_copy)
    assert err.value.name == "store"


def test_without_descriptors_the_features_are_missing_not_invented(study_copy):
    features = study_copy.parent.parent / "data" / "small" / "features"
    for f in features.glob("*.csv"):
        f.unlink()
    atlas = build_atlas(study_copy)
    assert feature_columns(atlas.columns) == []
    assert not atlas["in_comparison"].any()


def test_matrices_are_recomputed_on_one_torch_thread(described_study, monkeypatch):
    """The store's workers compute each matrix on one torch thread; the atlas recomputes it
    the same way, whatever the caller's count. Under more threads the softmax can round
    differently in the last bit, and the exact re-verification of a stored certificate
    then failed for nothing (2 of 80 profiles of a scaled copy of the replication design,
    by 1e-15)."""
    import torch

    import analysis.attention as attention

    seen = []
    real = attention.softmax64

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(attention, "softmax64", recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        build_atlas(described_study)
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {1}
