"""Re-extraction of an atlas row of a design with ``images = "crops"``: the input id names
the crop box, and the forward pass must crop the same way (a whole image is another
matrix, which re-verification reports as missing from the sources)."""

from __future__ import annotations

import pandas as pd
import pytest

import analysis.sources.checkpoints as checkpoints
import analysis.study.stages as stages
from analysis.atlas.verify import _extract


class _Stop(Exception):
    def __init__(self, task):
        self.task = task


def _row(input_id: str) -> dict:
    return {
        "checkpoint": "org/vit",
        "corpus_seed": 61206,
        "length": 65,
        "layer": 1,
        "head": 2,
        "input_id": input_id,
        "extract_threads": 1,
    }


@pytest.mark.parametrize(
    ("input_id", "crop"),
    [
        ("corpus:sklearn.sample_images/china.jpg#crop=200,49,279", True),
        ("corpus:sklearn.sample_images/china.jpg", False),
        ("corpus:pydoc_data.topics/typesmapping", False),
    ],
)
def test_the_crop_flag_follows_the_input_id(monkeypatch, input_id, crop):
    monkeypatch.setattr(checkpoints, "load_checkpoint", lambda path: object())

    def fake_extract(model, task, *, stand_in=False):
        raise _Stop(task)

    monkeypatch.setattr(stages, "extract_input", fake_extract)
    with pytest.raises(_Stop) as caught:
        _extract(pd.DataFrame([_row(input_id)]), {}, {})
    task = caught.value.task
    assert task.image_crop is crop
    assert (task.checkpoint, task.length, task.corpus_seed, task.heads) == (
        "org/vit",
        65,
        61206,
        ((1, 2),),
    )
