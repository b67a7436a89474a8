"""``[sampling.inputs] images = "crops"``: the plan's image tasks ask for seeded crops."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.prereg.design import Design
from analysis.study.plan import plan_study
from analysis.validation import ParameterError


def _design(images=None) -> Design:
    inputs = {"source": "corpus", "seed": 7, "per_length": 3}
    if images is not None:
        inputs["images"] = images
    sampling = {
        "temperatures": [1.0],
        "eps": [0.1],
        "inputs": inputs,
        "sources": [
            {"kind": "checkpoint", "checkpoint": "org/vit", "layers": 1, "heads": 2},
        ],
        "lengths": [17],
    }
    data = {"sampling": sampling, "models": {"M0": ["baseline"]}}
    return Design(Path("x.toml"), data, sha256="0" * 64)


def test_crops_change_the_tasks_and_their_labels():
    whole = plan_study(_design()).extractions
    crops = plan_study(_design("crops")).extractions
    assert [t.corpus_seed for t in crops] == [7, 8, 9]
    assert not any(t.image_crop for t in whole) and all(t.image_crop for t in crops)
    assert whole[0].label == "org/vit|L=17|corpus-seed=7"  # unchanged for existing studies
    assert crops[0].label == "org/vit|L=17|corpus-seed=7|crop"


def test_unknown_image_rule_is_named():
    with pytest.raises(ParameterError, match="sampling.inputs.images"):
        plan_study(_design("tiles"))
