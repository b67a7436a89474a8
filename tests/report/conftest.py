"""Fixtures for the report tests: one small computed study, rendered once per session."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import pytest

from analysis.report import build_report
from tests.fixtures.study_results import make_study


def snapshot(results) -> dict:
    """Deep copies of every field, to check that building never mutates the input."""
    return {f.name: copy.deepcopy(getattr(results, f.name)) for f in dataclasses.fields(results)}


@pytest.fixture(scope="session")
def study():
    with warnings.catch_warnings():
        # tiny training sets: statsmodels may warn while the interval fits converge
        warnings.simplefilter("ignore")
        return make_study()


@pytest.fixture(scope="session")
def built(study, tmp_path_factory):
    before = snapshot(study)
    files = build_report(study, tmp_path_factory.mktemp("report"))
    return files, before


@pytest.fixture(scope="session")
def edge_study(study):
    """One checkpoint, one temperature, no synthetic cells, no comparison, NaN/inf
    features, an unlocked run."""
    b = study.brackets
    keep = (b["checkpoint"] == "tiny/bert-random") & (b["temperature"] == 1.0)
    brackets = b.loc[keep].reset_index(drop=True)
    feats = study.features[study.features["cell_key"].isin(brackets["cell_key"])].copy()
    feats = feats.reset_index(drop=True)
    kappa = feats["native__kappa"].to_numpy(copy=True)
    kappa[[0, 3]] = np.nan
    kappa[5] = np.inf
    feats["native__kappa"] = kappa
    prov = dict(study.provenance, lock_sha256=None)
    return dataclasses.replace(
        study,
        brackets=brackets,
        features=feats,
        comparison=None,
        comparison_ols=None,
        head_level=None,
        lr_tests=None,
        head_level_meta={},
        provenance=prov,
        skipped={
            "comparison": "the design is not locked",
            "head_level": "the design is not locked",
        },
    )


@pytest.fixture(scope="session")
def edge_built(edge_study, tmp_path_factory):
    return build_report(edge_study, tmp_path_factory.mktemp("edge"), figure_formats=("png",))
