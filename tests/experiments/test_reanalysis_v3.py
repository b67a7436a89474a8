"""experiments/reanalysis_v3.py: the atlas table is the locked study's table."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.compare import NestedComparison
from analysis.prereg.design import draw_held_out
from experiments.reanalysis_v3 import (
    ATLAS,
    atlas_table,
    load_study,
    spec_for,
    stratified_held_out,
)

COMPARISONS = ATLAS.parent / "tables" / "comparisons.csv"


@pytest.fixture(scope="module")
def study():
    design, registry = load_study()
    atlas = pd.read_parquet(ATLAS)
    table, log_cols = atlas_table(atlas, design, registry)
    return design, registry, table, log_cols


def test_atlas_table_reproduces_the_locked_losses(study):
    """The locked comparison's held-out losses (every pair, primary metric) come back
    from the atlas: same cells, split, covariates, calibration and fits."""
    design, registry, table, log_cols = study
    assert len(table) == 5832 and table["held_out"].sum() == 2916
    assert set(table.loc[table["held_out"], "cluster"]) == set(design.held_out)
    spec = replace(spec_for(design, registry, table, log_cols), n_boot=99)  # point values only
    got = NestedComparison(spec).fit(table).to_frame().query("metric == 'interval_sq_loss'")
    locked = pd.read_csv(COMPARISONS, comment="#").query("metric == 'interval_sq_loss'")
    merged = locked.merge(got, on="pair", suffixes=("_locked", "_refit"))
    assert len(merged) == 4
    for col in ("base_value", "rich_value", "effect"):
        np.testing.assert_allclose(merged[f"{col}_refit"], merged[f"{col}_locked"], rtol=1e-6)


def test_stratified_redraw_keeps_a_training_head_in_every_layer(study):
    design, _, table, _ = study
    # the redraw helper's base is the locked rule: without stratify it is the lock's list
    assert draw_held_out(design.data) == list(design.held_out)
    held = set(stratified_held_out(design))
    assert held != set(design.held_out)
    heads = pd.Series(sorted(set(table["cluster"])))
    layer = heads.str.rsplit(":", n=1).str[0]
    training_per_layer = (~heads.isin(held)).groupby(layer).sum()
    assert (training_per_layer >= 1).all()
