"""``[sampling.inputs] image_corpus`` / ``speech_corpus`` (with ``text_corpus``): a design
names the corpus each modality's seeds read; without them every task, label and input is
what it was (issue 50)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

from analysis.prereg.corpora import CORPUS_SIZES, checkpoint_modality
from analysis.prereg.design import Design, load_design, tomllib
from analysis.prereg.schema import IMAGE_CORPORA, SPEECH_CORPORA, validate_design
from analysis.sources.corpora import corpora_of_input_id
from analysis.study.plan import ExtractionTask, plan_study
from analysis.validation import ParameterError
from tests.study.conftest import PRE_CORPORA, locked_designs, pre_corpora_designs

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "preregistration" / "paper-lengths.toml"
LOCKED = pre_corpora_designs(ROOT)
OWN = 'windows = "one document per (input, length)"\n'


def _design(corpora=None, checkpoint="org/vit", lengths=(17,)) -> Design:
    inputs = {"source": "corpus", "seed": 7, "per_length": 2, **(corpora or {})}
    sampling = {
        "temperatures": [1.0],
        "eps": [0.1],
        "inputs": inputs,
        "sources": [{"kind": "checkpoint", "checkpoint": checkpoint, "layers": 1, "heads": 2}],
        "lengths": list(lengths),
    }
    data = {"sampling": sampling, "models": {"M0": ["baseline"]}}
    return Design(Path("x.toml"), data, sha256="0" * 64)


def _paper(tmp_path: Path, extra: str):
    text = PAPER.read_text(encoding="utf-8").replace(
        'images = "crops"\n', 'images = "crops"\n' + extra
    )
    path = tmp_path / "design.toml"
    path.write_text(text, encoding="utf-8")
    return load_design(path, require_held_out=False)


def test_the_schema_knows_the_corpora_the_sources_have():
    from analysis.sources.corpora.images import IMAGE_CORPORA as images
    from analysis.sources.corpora.images import image_corpus
    from analysis.sources.corpora.speech import SPEECH_CORPORA as speech
    from analysis.sources.corpora.speech import speech_corpus

    assert IMAGE_CORPORA == tuple(images) and SPEECH_CORPORA == tuple(speech)
    for name in ("packaged-images-v1", "packaged-images-v2"):
        assert CORPUS_SIZES[name] == len(image_corpus(name))
    assert CORPUS_SIZES["kokoro-ja-v1"] == len(speech_corpus("kokoro-ja-v1"))


def test_named_corpora_reach_the_tasks_and_their_labels():
    default = plan_study(_design()).extractions
    named = plan_study(
        _design({"image_corpus": "packaged-images-v1", "speech_corpus": "kokoro-ja-v1"})
    )
    assert [t.label for t in default] == [
        "org/vit|L=17|corpus-seed=7",
        "org/vit|L=17|corpus-seed=8",
    ]
    assert {(t.text_corpus, t.image_corpus, t.speech_corpus) for t in default} == {
        ("pydoc_data.topics", "sklearn-sample-images", "generated")
    }
    task = named.extractions[0]
    assert (task.image_corpus, task.speech_corpus) == ("packaged-images-v1", "kokoro-ja-v1")
    assert task.label == "org/vit|L=17|corpus-seed=7|image=packaged-images-v1|speech=kokoro-ja-v1"
    text = plan_study(_design({"text_corpus": "packaged-text-v1"})).extractions[0]
    assert text.label == "org/vit|L=17|corpus-seed=7|text=packaged-text-v1"


def test_unknown_corpus_is_named():
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.image_corpus: expected sklearn"):
        plan_study(_design({"image_corpus": "imagenet"}))
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.speech_corpus: expected gen"):
        plan_study(_design({"speech_corpus": "librispeech"}))


def test_validation_names_an_unknown_corpus_and_locked_designs_name_none():
    designs = LOCKED
    assert designs
    for path in designs:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert "inputs" not in data, path  # the locked studies read the default corpora
        keys = set(data["sampling"]["inputs"])
        assert not keys & {"text_corpus", "image_corpus", "speech_corpus", "windows"}, path
    data = tomllib.loads(designs[0].read_text(encoding="utf-8"))
    validate_design(data, require_held_out=False)
    bad = copy.deepcopy(data)
    bad["sampling"]["inputs"]["speech_corpus"] = "podcasts"
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.speech_corpus"):
        validate_design(bad, require_held_out=False)
    ok = copy.deepcopy(data)
    ok["sampling"]["inputs"].update(image_corpus="packaged-images-v1", speech_corpus="kokoro-ja-v1")
    validate_design(ok, require_held_out=False)
    # the draft's top-level [inputs] table is refused, naming where the keys live now
    old = copy.deepcopy(data)
    old["inputs"] = {"images": "packaged-images-v1"}
    with pytest.raises(ParameterError, match=r"^inputs: expected no top-level.*image_corpus"):
        validate_design(old, require_held_out=False)


def test_the_locked_designs_plan_every_modality_as_before():
    for path in LOCKED:
        for t in plan_study(load_design(path, require_held_out=False)).extractions:
            assert (t.image_corpus, t.speech_corpus) == ("sklearn-sample-images", "generated")
            assert "|image=" not in t.label and "|speech=" not in t.label


def test_one_document_per_input_and_length_gives_distinct_images_and_clips(tmp_path):
    from analysis.sources.corpora.images import image_for_seed
    from analysis.sources.corpora.speech import clip_for_seed

    design = _paper(
        tmp_path,
        'text_corpus = "packaged-text-v1"\nimage_corpus = "packaged-images-v1"\n'
        'speech_corpus = "kokoro-ja-v1"\n' + OWN,
    )
    tasks = plan_study(design).extractions
    kinds = {checkpoint_modality(t.checkpoint) for t in tasks}
    assert kinds == {"text", "image", "speech"}
    for ck in {t.checkpoint for t in tasks}:
        mine = [t for t in tasks if t.checkpoint == ck]
        assert len(mine) == 9  # 3 lengths x 3 inputs
        kind = checkpoint_modality(ck)
        if kind == "image":
            picks = {image_for_seed(t.image_corpus, t.corpus_seed).image_id for t in mine}
        elif kind == "speech":
            picks = {clip_for_seed(t.speech_corpus, t.corpus_seed).clip_id for t in mine}
        else:
            continue  # tests/sources/test_corpora.py
        assert len(picks) == 9, ck
    # shared windows: a seed's image is read at every length (the control)
    shared = plan_study(_paper(tmp_path, 'image_corpus = "packaged-images-v1"\n')).extractions
    dino = [t for t in shared if checkpoint_modality(t.checkpoint) == "image"]
    assert len({image_for_seed(t.image_corpus, t.corpus_seed).image_id for t in dino}) == 3


def test_windows_are_refused_where_a_modality_cannot_have_them():
    whole = {"windows": OWN.split(" = ")[1].strip().strip('"')}
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.windows: .*image model"):
        plan_study(_design(whole, checkpoint="dinov2"))
    plan_study(_design({**whole, "images": "crops"}, checkpoint="dinov2"))
    plan_study(_design({**whole, "image_corpus": "packaged-images-v1"}, checkpoint="dinov2"))
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.windows: .*text model"):
        plan_study(_design({**whole, "image_corpus": "packaged-images-v1"}, checkpoint="minilm"))
    plan_study(_design(whole, checkpoint="openai/whisper-base"))  # generated clips differ
    # a corpus must hold per_length x lengths items for each source reading it
    many = {**whole, "speech_corpus": "kokoro-ja-v1"}
    plan_study(_design(many, checkpoint="whisper-base", lengths=range(20, 32)))  # 24 clips
    with pytest.raises(ParameterError, match=r"^sampling\.inputs\.per_length: .*24 inputs"):
        plan_study(_design(many, checkpoint="whisper-base", lengths=range(20, 33)))


def test_the_atlas_verifier_recovers_each_corpus_from_the_input_id():
    assert corpora_of_input_id("corpus:packaged-images-v1/skimage/astronaut#crop=1,2,3") == {
        "image_corpus": "packaged-images-v1"
    }
    assert corpora_of_input_id("audio:kokoro-ja-v1/ja-01") == {"speech_corpus": "kokoro-ja-v1"}
    assert corpora_of_input_id("corpus:packaged-text-v1/stdlib-doc/json@0123456789ab") == {
        "text_corpus": "packaged-text-v1"
    }
    for default in ("corpus:sklearn.sample_images/china.jpg", "audio:generated/seed=3"):
        assert corpora_of_input_id(default) == {}


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


def test_a_source_may_name_the_corpus_of_its_own_modality(tmp_path):
    """The multilingual model reads the multilingual corpus, the other text models the
    design's; a source naming another modality's corpus is refused, naming the key."""
    from analysis.prereg.corpora import source_corpus
    from analysis.study.inputs import design_corpora

    text = PAPER.read_text(encoding="utf-8")
    anchor = 'checkpoint = "intfloat/multilingual-e5-small"'
    assert text.count(anchor) == 1
    text = text.replace(
        'images = "crops"\n', 'images = "crops"\ntext_corpus = "packaged-text-v1"\n'
    )
    text = text.replace(anchor, anchor + '\ntext_corpus = "packaged-text-multilingual-v1"')
    path = tmp_path / "design.toml"
    path.write_text(text, encoding="utf-8")
    design = load_design(path, require_held_out=False)
    validate_design(design.data, require_held_out=False)
    corpora = {
        (t.checkpoint, t.text_corpus)
        for t in plan_study(design).extractions
        if checkpoint_modality(t.checkpoint) == "text"
    }
    assert ("intfloat/multilingual-e5-small", "packaged-text-multilingual-v1") in corpora
    assert {c for ck, c in corpora if ck != "intfloat/multilingual-e5-small"} == {
        "packaged-text-v1"
    }
    assert set(design_corpora(design)) == {"packaged-text-v1", "packaged-text-multilingual-v1"}

    bad = copy.deepcopy(design.data)
    i = next(i for i, s in enumerate(bad["sampling"]["sources"]) if "dinov2" in s["checkpoint"])
    bad["sampling"]["sources"][i]["text_corpus"] = "packaged-text-v1"
    with pytest.raises(
        ParameterError, match=rf"^sampling\.sources\[{i}\]\.text_corpus: expected no"
    ):
        validate_design(bad, require_held_out=False)
    bad["sampling"]["sources"][i] = {**design.data["sampling"]["sources"][i], "image_corpus": "web"}
    with pytest.raises(ParameterError, match=rf"^sampling\.sources\[{i}\]\.image_corpus: expected"):
        validate_design(bad, require_held_out=False)
    assert source_corpus({}, {"checkpoint": "minilm"}) == "pydoc_data.topics"


def test_every_locked_design_is_either_pre_corpora_or_names_its_corpora():
    """A design locked later than the corpora names them (no silent default)."""
    locked = {p.stem for p in locked_designs(ROOT)}
    assert set(PRE_CORPORA) <= locked
    for stem in sorted(locked - set(PRE_CORPORA)):
        data = tomllib.loads(
            (ROOT / "preregistration" / f"{stem}.toml").read_text(encoding="utf-8")
        )
        inputs = data["sampling"]["inputs"]
        assert {"text_corpus", "image_corpus", "speech_corpus", "windows"} <= set(inputs), stem
