"""extract(text=...): a sentence or a file, the whole text by default, input errors first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.sources import checkpoints, extract
from analysis.validation import ParameterError

SENTENCE = "The cat sat on the mat."


@pytest.fixture(scope="module")
def minilm_once():
    """The packaged MiniLM, loaded once for the module."""
    return checkpoints.load_checkpoint("minilm")


@pytest.fixture
def loads(minilm_once, monkeypatch):
    """Every ``load_checkpoint`` call extract makes, answered by the module's MiniLM."""
    calls = []

    def load(name):
        calls.append(name)
        return minilm_once

    monkeypatch.setattr(checkpoints, "load_checkpoint", load)
    return calls


def test_a_sentence_is_the_input_and_its_whole_length_the_default(loads, tmp_path):
    x = extract("minilm", text=SENTENCE)
    assert x.tokens.tolist() == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert x.A.shape == (6, 12, 9, 9) and x.input_id.startswith("text:sha256:")
    assert "file" not in x.meta["input"]
    first = extract("minilm", text=SENTENCE, length=4)  # the first L tokens
    assert first.tokens.tolist() == ["[CLS]", "the", "cat", "[SEP]"]
    # the same text from a file, as a Path or as a str naming it: the same matrices
    path = tmp_path / "cat.txt"
    path.write_text(SENTENCE, encoding="utf-8")
    for given in (path, str(path)):
        y = extract("minilm", text=given)
        np.testing.assert_array_equal(y.A, x.A)
        assert y.input_id == x.input_id and y.meta["input"]["file"] == "cat.txt"
    assert len(loads) == 4


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"text": ""}, "text"),
        ({"text": " \n\t"}, "text"),
        ({"text": Path("/nonexistent/attnrank/missing.txt")}, "text"),
        ({"text": 42}, "text"),
        ({"text": SENTENCE, "length": 0}, "length"),
        ({"text": SENTENCE, "length": 2.5}, "length"),
        ({"text": SENTENCE, "length": "9"}, "length"),
        ({"text": SENTENCE, "corpus_seed": 0}, "input"),
    ],
)
def test_input_errors_come_before_the_model_loads(loads, kwargs, name):
    with pytest.raises(ParameterError) as info:
        extract("minilm", **kwargs)
    assert info.value.name == name
    assert loads == []


def test_an_empty_file_is_an_input_error_before_the_load(loads, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    with pytest.raises(ParameterError, match="empty.txt") as info:
        extract("minilm", text=empty)
    assert info.value.name == "text" and loads == []


def test_the_cli_text_is_a_file(tmp_path, capsys):
    from analysis.cli import main

    missing = tmp_path / "missing.txt"
    argv = ["extract", "minilm", "--text", str(missing), "--out", str(tmp_path / "x.npz")]
    assert main(argv) == 2
    assert "missing.txt" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
