"""Inputs: deterministic corpus texts of an exact token length, images, user files."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.sources.checkpoints import load_checkpoint
from analysis.sources.inputs import corpus_image, corpus_text, read_text, text_input
from analysis.validation import ParameterError


@pytest.fixture(scope="module")
def minilm():
    """The real MiniLM (its tokenizer drives the text tests)."""
    return load_checkpoint("minilm")


@pytest.mark.slow
def test_corpus_text_is_deterministic_and_exact_length(minilm):
    a = corpus_text(minilm, 4, 64)
    b = corpus_text(minilm, 4, 64)
    assert a.tokens == b.tokens and a.input_id == b.input_id and a.length == 64
    assert a.tokens[0] == "[CLS]" and a.tokens[-1] == "[SEP]"  # special tokens count in L
    assert a.input_id.startswith("corpus:pydoc_data.topics/")
    assert a.meta["corpus_seed"] == 4
    short = corpus_text(minilm, 4, 16)
    # the window starts at the text's start: a shorter length is a prefix (but the last [SEP])
    if short.input_id == a.input_id:
        assert short.tokens[:-1] == a.tokens[:15]
    others = {corpus_text(minilm, s, 32).input_id for s in range(6)}
    assert len(others) > 1


@pytest.mark.slow
def test_length_errors_name_length(minilm, tmp_path):
    with pytest.raises(ParameterError) as info:
        corpus_text(minilm, 0, 100_000)
    assert info.value.name == "length"
    with pytest.raises(ParameterError) as info:
        text_input(minilm, "too short", 50)
    assert info.value.name == "length" and "4 tokens" in str(info.value)
    with pytest.raises(ParameterError) as info:
        corpus_text(minilm, -1, 10)
    assert info.value.name == "seed"
    with pytest.raises(FileNotFoundError, match="^path: no such file"):
        read_text(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="^text: no such file"):
        read_text(tmp_path / "missing.txt", name="text")


def test_corpus_image_is_deterministic_and_resized(tiny_model):
    from analysis.sources.checkpoints import Checkpoint

    ck = Checkpoint.from_model(tiny_model("vit"))
    a = corpus_image(ck, 0)
    b = corpus_image(ck, 0, 1 + 9)
    assert a.input_id == b.input_id and b.length == 10
    assert a.tensors["pixel_values"].shape[-2:] == (32, 32)
    assert b.tensors["pixel_values"].shape[-2:] == (24, 24)
    names = {corpus_image(ck, s).meta["image"] for s in range(8)}
    assert names == {"china.jpg", "flower.jpg"}
    assert np.isfinite(a.tensors["pixel_values"].numpy()).all()


def test_image_crops_are_seeded_distinct_inputs(tiny_model):
    from analysis.sources.checkpoints import Checkpoint

    ck = Checkpoint.from_model(tiny_model("vit"))
    whole = corpus_image(ck, 3, 1 + 9)
    a, again = corpus_image(ck, 3, 1 + 9, crop=True), corpus_image(ck, 3, 1 + 9, crop=True)
    # the seed's image, cropped: same image name as the whole input, its own id
    assert a.meta["image"] == whole.meta["image"] and "crop" not in whole.meta
    assert a.input_id.startswith(whole.input_id + "#crop=") and a.input_id == again.input_id
    assert np.array_equal(a.tensors["pixel_values"].numpy(), again.tensors["pixel_values"].numpy())
    assert not np.array_equal(
        a.tensors["pixel_values"].numpy(), whole.tensors["pixel_values"].numpy()
    )
    c = a.meta["crop"]
    assert 0.5 * 427 - 1 <= c["side"] <= 0.8 * 427  # both sample images are 427 x 640
    assert a.tensors["pixel_values"].shape[-2:] == (24, 24)
    ids = {corpus_image(ck, s, crop=True).input_id for s in range(12)}
    assert len(ids) == 12  # twelve seeds, twelve distinct inputs (two images whole)
