"""``[inputs] images`` / ``[inputs] speech``: a design names the corpora its seeds draw
from; without the table every task, label and input is what it was (issue 50)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

from analysis.prereg.design import Design, tomllib
from analysis.prereg.schema import IMAGE_CORPORA, SPEECH_CORPORA, validate_design
from analysis.study.plan import ExtractionTask, plan_study
from analysis.validation import ParameterError


def _design(corpora=None) -> Design:
    sampling = {
        "temperatures": [1.0],
        "eps": [0.1],
        "inputs": {"source": "corpus", "seed": 7, "per_length": 2},
        "sources": [{"kind": "checkpoint", "checkpoint": "org/vit", "layers": 1, "heads": 2}],
        "lengths": [17],
    }
    data = {"sampling": sampling, "models": {"M0": ["baseline"]}}
    if corpora is not None:
        data["inputs"] = corpora
    return Design(Path("x.toml"), data, sha256="0" * 64)


def test_the_schema_knows_the_corpora_the_sources_have():
    from analysis.sources.corpora.images import IMAGE_CORPORA as images
    from analysis.sources.corpora.speech import SPEECH_CORPORA as speech

    assert IMAGE_CORPORA == tuple(images) and SPEECH_CORPORA == tuple(speech)


def test_named_corpora_reach_the_tasks_and_their_labels():
    default = plan_study(_design()).extractions
    named = plan_study(_design({"images": "packaged-images-v1", "speech": "kokoro-ja-v1"}))
    assert [t.label for t in default] == [
        "org/vit|L=17|corpus-seed=7",
        "org/vit|L=17|corpus-seed=8",
    ]
    assert {(t.image_corpus, t.speech_corpus) for t in default} == {
        ("sklearn-sample-images", "generated")
    }
    task = named.extractions[0]
    assert (task.image_corpus, task.speech_corpus) == ("packaged-images-v1", "kokoro-ja-v1")
    assert task.label == (
        "org/vit|L=17|corpus-seed=7|images=packaged-images-v1|speech=kokoro-ja-v1"
    )


def test_unknown_corpus_is_named():
    with pytest.raises(ParameterError, match=r"^inputs\.images: expected sklearn-sample"):
        plan_study(_design({"images": "imagenet"}))
    with pytest.raises(ParameterError, match=r"^inputs\.speech: expected generated"):
        plan_study(_design({"speech": "librispeech"}))


def test_validation_names_an_unknown_corpus_and_locked_designs_name_none():
    designs = sorted((Path(__file__).parents[2] / "preregistration").glob("*.toml"))
    assert designs
    for path in designs:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert "inputs" not in data, path  # the locked studies read the default corpora
    data = tomllib.loads(designs[0].read_text(encoding="utf-8"))
    validate_design(data, require_held_out=False)
    bad = copy.deepcopy(data)
    bad["inputs"] = {"speech": "podcasts"}
    with pytest.raises(ParameterError, match=r"^inputs\.speech"):
        validate_design(bad, require_held_out=False)
    ok = copy.deepcopy(data)
    ok["inputs"] = {"images": "packaged-images-v1", "speech": "kokoro-ja-v1"}
    validate_design(ok, require_held_out=False)


def test_the_extract_stage_passes_the_corpus_to_the_source():
    from analysis.study.stages import extract_input

    task = ExtractionTask("org/vit", 17, 3, ((0, 0),), image_corpus="packaged-images-v1")
    extraction = SimpleNamespace(checkpoint_id="org/vit", meta={})
    model = SimpleNamespace(is_vision=True, model=SimpleNamespace(forward=lambda pixel_values: 0))
    with (
        mock.patch("analysis.sources.inputs.corpus_image") as image,
        mock.patch("analysis.sources.checkpoints.extract_from_model", return_value=extraction),
    ):
        extract_input(model, task)
    assert image.call_args.kwargs == {"crop": False, "corpus": "packaged-images-v1"}
    speech_task = ExtractionTask("org/w", 20, 1, ((0, 0),), speech_corpus="kokoro-ja-v1")
    audio_model = SimpleNamespace(
        is_vision=False, model=SimpleNamespace(forward=lambda input_features: 0)
    )
    extraction = SimpleNamespace(checkpoint_id="org/w", meta={})
    with (
        mock.patch("analysis.sources.audio.corpus_audio") as clip,
        mock.patch("analysis.sources.checkpoints.extract_from_model", return_value=extraction),
    ):
        extract_input(audio_model, speech_task)
    assert clip.call_args.kwargs == {"corpus": "kokoro-ja-v1"}
