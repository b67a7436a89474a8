"""``attnrank inputs list | show`` (issue 50, part 6): a design's picks before any matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import analysis.sources.checkpoints as checkpoints
import analysis.study.stages as stages
from analysis.atlas.verify import _extract
from analysis.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "preregistration" / "paper-lengths.toml"


def _design(tmp_path: Path) -> Path:
    text = PAPER.read_text(encoding="utf-8").replace(
        'images = "crops"\n',
        'images = "crops"\ntext_corpus = "packaged-text-v1"\n'
        'windows = "one document per (input, length)"\n',
    )
    path = tmp_path / "design.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_list_prints_distinct_documents_with_licences(tmp_path, capsys):
    assert main(["inputs", "list", str(_design(tmp_path)), "--no-tokens", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    text = [r for r in rows if r["modality"] == "text"]
    assert len(rows) == 81 and len(text) == 54
    for ck in {r["checkpoint"] for r in text}:
        ids = [r["input_id"] for r in text if r["checkpoint"] == ck]
        assert len(set(ids)) == 9  # one document per (input, length)
    assert all(r["licence"] and r["source"] and r["characters"] >= 1800 for r in text)


def test_list_prints_the_images_and_clips_of_named_corpora(tmp_path, capsys):
    path = _design(tmp_path)
    text = path.read_text(encoding="utf-8").replace(
        'text_corpus = "packaged-text-v1"\n',
        'text_corpus = "packaged-text-v1"\nimage_corpus = "packaged-images-v1"\n'
        'speech_corpus = "kokoro-ja-v1"\n',
    )
    path.write_text(text, encoding="utf-8")
    assert main(["inputs", "list", str(path), "--no-tokens", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for kind, prefix in (
        ("image", "corpus:packaged-images-v1/"),
        ("speech", "audio:kokoro-ja-v1/"),
    ):
        mine = [r for r in rows if r["modality"] == kind]
        assert mine and all(r["input_id"].startswith(prefix) for r in mine)
        assert all(r["licence"] and r["source"] and r["size"] for r in mine)
        for ck in {r["checkpoint"] for r in mine}:
            assert len({r["input_id"] for r in mine if r["checkpoint"] == ck}) == 9
    crops = [r for r in rows if r["modality"] == "image"]
    assert all("#crop=" in r["input_id"] and r["size"].endswith(" px") for r in crops)
    assert main(["inputs", "list", "--corpus", "packaged-images-v1"]) == 0
    assert "corpus:packaged-images-v1/" in capsys.readouterr().out
    assert main(["inputs", "list", "--corpus", "packaged-images-v2", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    v2 = listing["documents"]
    assert listing["summary"]["documents"] == len({r["input_id"] for r in v2}) == 53
    assert "corpus:packaged-images-v2/vpython/rug" in {r["input_id"] for r in v2}
    assert all(r["licence"] and r["source"] for r in v2)


def test_list_counts_tokens_and_show_prints_the_document(tmp_path, capsys):
    path = _design(tmp_path)
    text = path.read_text(encoding="utf-8")
    # MiniLM alone (its tokenizer loads in a second): keep the first source only
    head, _, rest = text.partition("[[sampling.sources]]")
    first, _, _ = rest.partition("[[sampling.sources]]")
    held = "\n".join(
        "heads = []" if line.startswith("heads = [") else line
        for line in text[text.index("[held_out]") :].splitlines()
    )
    path.write_text(head + "[[sampling.sources]]" + first + held, encoding="utf-8")
    assert main(["inputs", "list", str(path)]) == 0
    out = capsys.readouterr().out
    assert "9 inputs; text: 9 resolved, 9 distinct input ids" in out
    assert main(["inputs", "show", "packaged-text-v1:0", "--tokenizer", "minilm", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["tokens"] >= 256 and len(row["text"]) == row["characters"]
    assert main(["inputs", "show", row["input_id"], "--chars", "20"]) == 0
    assert f"document: {row['document']}" in capsys.readouterr().out


def test_show_refuses_an_unknown_id(capsys):
    assert main(["inputs", "show", "corpus:packaged-text-v1/no/such@000000000000"]) == 2
    assert "an input id of packaged-text-v1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("input_id", "corpus"),
    [
        ("corpus:packaged-text-v1/stdlib-doc/json@0123456789ab", "packaged-text-v1"),
        ("corpus:pydoc_data.topics/typesmapping", "pydoc_data.topics"),
    ],
)
def test_atlas_re_extraction_follows_the_text_corpus_of_the_input_id(monkeypatch, input_id, corpus):
    class Stop(Exception):
        pass

    seen = {}
    monkeypatch.setattr(checkpoints, "load_checkpoint", lambda path: object())

    def fake_extract(model, task, *, stand_in=False):
        seen["task"] = task
        raise Stop

    monkeypatch.setattr(stages, "extract_input", fake_extract)
    row = {
        "checkpoint": "org/text",
        "corpus_seed": 7,
        "length": 64,
        "layer": 0,
        "head": 1,
        "input_id": input_id,
        "extract_threads": 1,
    }
    with pytest.raises(Stop):
        _extract(pd.DataFrame([row]), {}, {})
    assert seen["task"].text_corpus == corpus
