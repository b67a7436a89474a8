"""Extraction of A, Q, K, scale and mask: parity with the model's eager attention."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.checkpoints import (
    MINILM_ID,
    Checkpoint,
    ModelInput,
    canonical_checkpoint_id,
    capture_attention,
    extract_from_model,
    load_checkpoint,
    resolve_checkpoint,
)
from analysis.sources.files import load_extraction, save_extraction
from analysis.sources.inputs import corpus_text, image_input
from analysis.validation import ParameterError

TEXT = ("bert", "gpt2", "qwen2")
VISION = ("vit", "deit")
CAUSAL = {"gpt2", "qwen2"}


def _input(kind: str, ck: Checkpoint, length: int | None = None) -> ModelInput:
    if kind in VISION:
        img = (np.random.default_rng(1).random((37, 53, 3)) * 255).astype(np.uint8)
        return image_input(ck, img, length)
    return ModelInput.from_ids(np.random.default_rng(2).integers(1, 100, size=length or 19))


def _eager_attentions(model, model_input: ModelInput) -> np.ndarray:
    """The model's own attention probabilities, from a plain eager forward pass."""
    with torch.no_grad():
        out = model(**model_input.tensors, output_attentions=True)
    return np.stack([a[0].numpy() for a in out.attentions])


@pytest.mark.parametrize("kind", TEXT + VISION)
def test_softmax64_of_extracted_qk_matches_eager_attention(tiny_model, kind):
    model = tiny_model(kind)
    ck = Checkpoint.from_model(model, checkpoint_id=f"tiny-{kind}")
    inp = _input(kind, ck)
    ex = extract_from_model(ck, inp)
    L = inp.length
    n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
    assert ex.A.shape == (n_layers, n_heads, L, L) and ex.A.dtype == np.float32
    assert ex.Q.shape == ex.K.shape == (n_layers, n_heads, L, 8) and ex.Q.dtype == np.float32
    assert ex.scale.shape == (n_layers, n_heads)
    np.testing.assert_allclose(ex.scale, 8**-0.5)
    assert ex.mask.shape == (L, L) and ex.mask.dtype == bool
    assert len(ex.tokens) == L
    eager = _eager_attentions(model, inp)
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask)
    np.testing.assert_allclose(ex.A, eager, atol=1e-6, rtol=0)  # capture = the model's A
    np.testing.assert_allclose(rebuilt, eager, atol=1e-5, rtol=0)  # every head
    assert ex.meta["parity_max_abs"] < 1e-5
    if kind in CAUSAL:
        assert ex.causal
        np.testing.assert_array_equal(ex.mask, np.tril(np.ones((L, L), dtype=bool)))
        upper = np.triu(np.ones((L, L), dtype=bool), 1)
        assert (ex.A[..., upper] == 0).all() and (rebuilt[..., upper] == 0).all()
    else:
        assert not ex.causal and ex.mask.all()


def test_qwen2_keys_are_repeated_and_rotary_applied(tiny_model):
    from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

    model = tiny_model("qwen2")
    cfg = model.config
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # GQA really exercised
    ck = Checkpoint.from_model(model)
    inp = _input("qwen2", ck)
    ex = extract_from_model(ck, inp)
    g = cfg.num_attention_heads // cfg.num_key_value_heads
    for h in range(cfg.num_attention_heads):  # query head h uses kv head h // g
        np.testing.assert_array_equal(ex.K[:, h], ex.K[:, (h // g) * g])
    assert not np.array_equal(ex.K[:, 0], ex.K[:, g])
    # layer 0 by hand: projections, then RoPE, must give the captured Q, K
    ids = inp.tensors["input_ids"]
    L = ids.shape[1]
    with torch.no_grad():
        h0 = model.embed_tokens(ids)
        attn = model.layers[0].self_attn
        x = model.layers[0].input_layernorm(h0)
        q = attn.q_proj(x).view(1, L, -1, 8).transpose(1, 2)
        k = attn.k_proj(x).view(1, L, -1, 8).transpose(1, 2)
        cos, sin = model.rotary_emb(h0, torch.arange(L)[None])
        q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    np.testing.assert_allclose(ex.Q[0], q_rot[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(ex.K[0, ::g], k_rot[0].numpy(), atol=1e-5)
    assert not np.allclose(ex.Q[0, :, 1:], q[0, :, 1:].numpy(), atol=1e-3)  # RoPE moved them


@pytest.mark.parametrize("kind", VISION)
def test_vision_lengths_interpolate_position_embeddings(tiny_model, kind):
    model = tiny_model(kind)
    ck = Checkpoint.from_model(model)
    prefix = 2 if kind == "deit" else 1
    native = _input(kind, ck)
    assert native.length == prefix + 16 and "interpolate_pos_encoding" not in native.tensors
    inp = _input(kind, ck, prefix + 25)
    assert inp.tensors["interpolate_pos_encoding"] is True
    assert inp.tokens[:prefix] == ["[CLS]", "[DIST]"][:prefix]
    ex = extract_from_model(ck, inp)
    np.testing.assert_allclose(
        softmax64(ex.Q, ex.K, ex.scale, ex.mask), _eager_attentions(model, inp), atol=1e-5
    )
    with pytest.raises(ParameterError) as info:
        _input(kind, ck, prefix + 20)
    assert info.value.name == "length"
    assert str(prefix + 16) in str(info.value) and str(prefix + 25) in str(info.value)


def test_hooks_are_removed_even_when_the_forward_fails(tiny_model):
    import transformers.models.bert.modeling_bert as mb

    model = tiny_model("bert")
    original = mb.eager_attention_forward
    with pytest.raises(IndexError), capture_attention(model) as calls:
        assert mb.eager_attention_forward is not original
        model(input_ids=torch.tensor([[1, 2, 500]]))  # id beyond the vocabulary
    assert mb.eager_attention_forward is original
    assert calls == []
    ck = Checkpoint.from_model(model)
    extract_from_model(ck, ModelInput.from_ids([1, 2, 3]))
    assert mb.eager_attention_forward is original


def test_npz_layout_loads_without_pickle(tiny_model, tmp_path):
    ck = Checkpoint.from_model(tiny_model("gpt2"), checkpoint_id="tiny-gpt2")
    ex = extract_from_model(ck, _input("gpt2", ck))
    out = save_extraction(ex, tmp_path / "x.npz")
    with np.load(out, allow_pickle=False) as z:
        assert set(z.files) == {"A", "Q", "K", "scale", "mask", "causal", "tokens", "meta"}
        assert z["A"].dtype == np.float32 and z["Q"].dtype == np.float32
        assert z["mask"].dtype == bool and z["causal"].shape == () and bool(z["causal"])
        assert z["tokens"].dtype.kind == "U" and z["meta"].shape == ()
        meta = json.loads(str(z["meta"]))
    for field in (
        "checkpoint",
        "weights_sha256",
        "input_id",
        "length",
        "versions",
        "torch_threads",
    ):
        assert field in meta
    back = load_extraction(out)
    np.testing.assert_array_equal(back.A, ex.A)
    assert back.causal and back.head_id(1, 3) == "tiny-gpt2:1:3"
    assert not list(tmp_path.glob("*.tmp"))


def test_checkpoint_names_resolve_offline_or_fail_fast(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert canonical_checkpoint_id("minilm") == MINILM_ID
    assert canonical_checkpoint_id("gpt2") == "openai-community/gpt2"
    assert canonical_checkpoint_id("bert-base-uncased") == "google-bert/bert-base-uncased"
    r = resolve_checkpoint("minilm")
    assert r.checkpoint_id == MINILM_ID and (r.path / "config.json").is_file()
    assert resolve_checkpoint(MINILM_ID).path == r.path
    assert resolve_checkpoint(r.path).checkpoint_id == MINILM_ID  # the package folder itself
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "empty-hf-home" / "hub"))
    for name in ("gpt2", "Qwen/Qwen2.5-0.5B", "facebook/deit-small-patch16-224"):
        start = time.monotonic()
        with pytest.raises(ParameterError) as info:
            resolve_checkpoint(name)
        assert time.monotonic() - start < 10
        assert info.value.name == "checkpoint"
        assert "hf download" in str(info.value) and "local directory" in str(info.value)
    with pytest.raises(ParameterError) as info:
        resolve_checkpoint(tmp_path)  # a folder without config.json
    assert info.value.name == "checkpoint"


def test_cli_extract_text_from_local_folder(tmp_path, capsys):
    """A saved folder (tiny BERT + MiniLM's tokenizer) through `attnrank extract`."""
    import transformers

    from analysis.sources.checkpoints import minilm_package_path

    tok = transformers.AutoTokenizer.from_pretrained(minilm_package_path())
    cfg = transformers.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    folder = tmp_path / "tiny-bert"
    transformers.BertModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    out = tmp_path / "x.npz"
    argv = ["extract", str(folder), "--corpus-seed", "3", "--length", "24", "--out", str(out)]
    assert main(argv) == 0
    assert "tiny-bert" in capsys.readouterr().out
    ex = load_extraction(out)
    assert ex.A.shape == (1, 2, 24, 24) and ex.tokens[0] == "[CLS]" and ex.tokens[-1] == "[SEP]"
    assert ex.meta["input_id"].startswith("corpus:pydoc_data.topics/")
    text = tmp_path / "short.txt"
    text.write_text("only a few words here", encoding="utf-8")
    argv = ["extract", str(folder), "--text", str(text), "--length", "24", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--length" in err and "7 tokens" in err
    assert main(["extract", str(folder), "--corpus-seed", "0", "--out", str(out)]) == 2
    assert "--length" in capsys.readouterr().err
    assert main(["extract", str(folder), "--corpus-seed", "0", "--length", "65", "--out", "o"]) == 2
    assert "<= 64" in capsys.readouterr().err
    img = tmp_path / "x.png"
    img.write_bytes(b"not an image")
    assert main(["extract", str(folder), "--image", str(img), "--out", str(out)]) == 2
    assert "--image" in capsys.readouterr().err


def test_cli_extract_image_from_local_folder(tiny_model, tmp_path, capsys):
    folder = tmp_path / "tiny-vit"
    tiny_model("vit").save_pretrained(folder)
    out = tmp_path / "v.npz"
    assert main(["extract", str(folder), "--corpus-seed", "1", "--out", str(out)]) == 0
    ex = load_extraction(out)
    assert ex.A.shape[-1] == 17 and ex.meta["input_id"].startswith("corpus:sklearn")
    assert main(["extract", str(folder), "--corpus-seed", "1", "--length", "30", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "--length" in err and "26" in err and "37" in err


@pytest.mark.slow
def test_real_minilm_parity_every_head():
    ck = load_checkpoint("minilm")
    assert ck.checkpoint_id == MINILM_ID and ck.meta["weights_sha256"]
    inp = corpus_text(ck, 0, 48)
    ex = extract_from_model(ck, inp)
    assert ex.A.shape == (6, 12, 48, 48) and ex.Q.shape == (6, 12, 48, 32)
    eager = _eager_attentions(ck.model, inp)
    np.testing.assert_allclose(softmax64(ex.Q, ex.K, ex.scale, ex.mask), eager, atol=1e-5, rtol=0)
    np.testing.assert_allclose(ex.A, eager, atol=1e-6, rtol=0)
    assert not ex.causal


def test_hf_cache_checkpoint_resolves_with_revision(tiny_model, tmp_path, monkeypatch, capsys):
    """A checkpoint in a (local, offline) Hugging Face cache, under its new repo name."""
    import huggingface_hub.constants as hc
    import transformers

    from analysis.sources.checkpoints import minilm_package_path

    hub = tmp_path / "hub"
    repo = hub / "models--openai-community--gpt2"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / commit
    tiny_model("gpt2").save_pretrained(snap)
    # a stand-in tokenizer (the real GPT-2 one is not on this machine); ids < 100 suffice
    tok = transformers.AutoTokenizer.from_pretrained(minilm_package_path())
    tok.save_pretrained(snap)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(hub))
    r = resolve_checkpoint("gpt2")
    assert (r.checkpoint_id, r.revision, r.origin) == ("openai-community/gpt2", commit, "hf-cache")
    ck = load_checkpoint("openai-community/gpt2")
    assert ck.checkpoint_id == "openai-community/gpt2" and ck.meta["revision"] == commit
    ex = extract_from_model(ck, ModelInput.from_ids(np.arange(1, 13)))
    assert ex.causal and ex.head_id(0, 1) == "openai-community/gpt2:0:1"
    assert (ex.A[..., np.triu(np.ones((12, 12), dtype=bool), 1)] == 0).all()
