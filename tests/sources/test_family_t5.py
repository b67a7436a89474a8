"""flan-t5-small's encoder rebuilt from traceforge-title-model's int8 ONNX graph.

A tiny random T5 encoder (no download) shows the capture keeps T5's relative-position
bias, which its eager attention function receives as a keyword; the real weights then show
the mapping (against the dequantized graph in ONNX Runtime), parity on every head, and the
offline CLI.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.sources.checkpoints import (
    Checkpoint,
    ModelInput,
    extract_from_model,
    load_checkpoint,
)
from analysis.sources.inputs import corpus_text
from analysis.sources.packaged import packaged_checkpoint
from analysis.validation import ParameterError

CID = "traceforge/flan-t5-small-span-encoder"


def _tiny_t5():
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=100,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
    )
    model = T5EncoderModel(cfg)
    with torch.no_grad():  # a bias at the scale real T5 learns, so it matters
        model.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_(0, 3)
    model.set_attn_implementation("eager")
    return model.eval()


def test_tiny_t5_capture_keeps_the_position_bias():
    model = _tiny_t5()
    ck = Checkpoint.from_model(model, checkpoint_id="tiny-t5")
    inp = ModelInput.from_ids(np.random.default_rng(1).integers(3, 100, size=13))
    ex = extract_from_model(ck, inp)
    assert ex.bias is not None and ex.bias.shape == ex.A.shape == (2, 4, 13, 13)
    np.testing.assert_array_equal(ex.scale, np.ones((2, 4)))  # T5 does not scale Q K^T
    with torch.no_grad():
        bias = model.encoder.block[0].layer[0].SelfAttention.compute_bias(13, 13)[0].numpy()
    for layer in range(2):  # layer 0 computes it, every layer adds the same
        np.testing.assert_array_equal(ex.bias[layer], bias)
    assert ex.meta["parity_max_abs"] <= 1e-5
    without = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - ex.A).max()
    assert without > 1e-2, without


slow = pytest.mark.slow


@pytest.fixture(scope="module")
def t5() -> Checkpoint:
    return load_checkpoint("flan-t5-small-span")


@pytest.fixture(scope="module")
def encoder(t5):
    from analysis.sources.families.t5_onnx import map_t5_encoder

    return map_t5_encoder(t5.meta["path"])


@slow
def test_loads_offline_with_provenance(t5):
    spec = packaged_checkpoint("traceforge-t5")
    assert t5.checkpoint_id == CID == spec.checkpoint_id
    assert type(t5.model).__name__ == "T5EncoderModel"
    assert t5.model.config._attn_implementation == "eager" and not t5.model.training
    assert all(p.dtype == torch.float32 for p in t5.model.parameters())
    prov = t5.meta["provenance"]
    assert prov["packages"] == {"traceforge-title-model": "0.2.0"}
    assert prov["files"] == {p.path: p.sha256 for p in spec.parts}
    assert "int8" in prov["dequantized_from"] and t5.meta["rebuilt_from"] == "onnx-int8"
    assert t5.tokenizer is not None


@slow
def test_mapping_reads_the_architecture_from_the_graph(encoder):
    c = encoder.config
    assert (c.num_layers, c.num_heads, c.d_model, c.d_kv, c.d_ff) == (8, 6, 512, 64, 1024)
    assert (c.relative_attention_num_buckets, c.relative_attention_max_distance) == (32, 128)
    assert c.layer_norm_epsilon == 1e-6 and c.feed_forward_proj == "gated-gelu"
    assert c.vocab_size == 32128
    products = [s for s in encoder.sources.values() if "via /enc/block." in s]
    assert len(products) == 8 * 7  # q, k, v, o, wi_0, wi_1, wo per layer


@slow
def test_build_refuses_missing_keys(encoder):
    from analysis.sources.families.t5_onnx import build_t5_encoder

    short = dict(encoder.state_dict)
    del short["encoder.block.3.layer.0.SelfAttention.k.weight"]
    with pytest.raises(ParameterError, match="missing"):
        build_t5_encoder(encoder.config, short)


@slow
def test_matches_the_dequantized_graph_and_measures_the_int8_runtime(t5):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.t5_onnx import verify_against_onnx

    check = verify_against_onnx(t5)
    assert check.length == 32 and check.float_per_layer.shape == (8,)
    assert check.passed, check.summary()
    assert check.bias_max_abs == 0.0  # the same dequantized table, gathered alike
    # The shipped graph quantizes activations too: it is a different computation.
    assert check.runtime_per_layer.max() > 100 * check.float_per_layer.max()
    # ... and in its first product only the activation rounding separates it from the
    # model (an independent check of the dequantized weights: a wrong scale or zero point
    # is off by far more than a few percent).
    assert 0 < check.query_rel_error < 0.05, check.query_rel_error


@slow
def test_a_swapped_weight_is_caught(t5, encoder):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.t5_onnx import build_t5_encoder, verify_against_onnx

    sd = dict(encoder.state_dict)
    q, k = "encoder.block.4.layer.0.SelfAttention.q", "encoder.block.4.layer.0.SelfAttention.k"
    sd[q + ".weight"], sd[k + ".weight"] = sd[k + ".weight"], sd[q + ".weight"]
    wrong = Checkpoint(build_t5_encoder(encoder.config, sd), CID, t5.tokenizer, None, t5.meta)
    check = verify_against_onnx(wrong)
    assert not check.passed
    assert (check.float_per_layer[:4] <= 1e-4).all() and check.float_per_layer[4] > 1e-2


@slow
@pytest.mark.parametrize("length", [32, 128])
def test_parity_every_head_needs_the_bias(t5, length):
    inp = corpus_text(t5, 0, length)
    ex = extract_from_model(t5, inp)
    assert ex.A.shape == ex.bias.shape == (8, 6, length, length)
    assert ex.Q.shape == (8, 6, length, 64) and not ex.causal and ex.mask.all()
    np.testing.assert_array_equal(ex.scale, np.ones((8, 6)))
    with torch.no_grad():
        out = t5.model(**inp.tensors, output_attentions=True)
        bias = t5.model.encoder.block[0].layer[0].SelfAttention.compute_bias(length, length)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_array_equal(ex.A, eager)
    for layer in range(8):
        np.testing.assert_array_equal(ex.bias[layer], bias[0].numpy())
    per_head = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask, bias=ex.bias) - eager)
    per_head = per_head.max(axis=(2, 3))
    assert per_head.shape == (8, 6) and per_head.max() <= 1e-5, per_head.max()
    without = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    assert without.min() > 1e-2, without.min()


@slow
def test_cli_extract_offline(t5, cli_extract):
    out, ex = cli_extract("flan-t5-small-span", 1, 48)
    assert "bias" in out
    assert ex.checkpoint_id == CID and ex.bias.shape == (8, 6, 48, 48)
    assert ex.meta["parity_max_abs"] <= 1e-5
    assert ex.meta["provenance"]["packages"] == {"traceforge-title-model": "0.2.0"}
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask, bias=ex.bias)
    assert np.abs(rebuilt - ex.A).max() <= 1e-5
