"""The helpers the int8 ONNX families share (no packaged model needed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.sources.families import onnx_int8
from analysis.sources.families.albert_onnx import AlbertOnnxCrossCheck
from analysis.sources.families.t5_onnx import T5OnnxCrossCheck
from analysis.sources.models import place_weights
from analysis.validation import ParameterError


def _unexpected(allowed, got):
    return ParameterError("checkpoint", f"a test graph with {allowed}", got)


def _meta_linear(**kwargs):
    with torch.device("meta"):
        return torch.nn.Linear(3, 2, **kwargs)


def test_place_weights_assigns_float32_and_names_the_parameter():
    model = _meta_linear()
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    place_weights(model, {"weight": w, "bias": np.ones(2)}, _unexpected)
    assert model.weight.dtype == torch.float32 and not model.weight.is_meta
    np.testing.assert_array_equal(model.weight.detach().numpy(), w)
    with pytest.raises(ParameterError, match=r"checkpoint.*'missing': \['bias'\]"):
        place_weights(_meta_linear(), {"weight": w}, _unexpected)
    with pytest.raises(ParameterError, match=r"checkpoint.*'unexpected': \['extra'\]"):
        state = {"weight": w, "bias": np.ones(2), "extra": np.ones(1)}
        place_weights(_meta_linear(), state, _unexpected)
    with pytest.raises(ParameterError, match=r"checkpoint.*weight of shape \(2, 3\)"):
        place_weights(_meta_linear(), {"weight": w.T, "bias": np.ones(2)}, _unexpected)


def test_place_weights_leaves_only_the_named_buffers_out():
    model = _meta_linear()
    model.register_buffer("ids", torch.zeros(2))
    state = {"weight": np.ones((2, 3)), "bias": np.ones(2)}
    with pytest.raises(ParameterError, match=r"'missing': \['ids'\]"):
        place_weights(model, state, _unexpected)
    place_weights(model, state, _unexpected, buffers=frozenset({"ids"}))
    assert not model.weight.is_meta


def test_weight_collector_refuses_a_key_twice():
    state, sources, put = onnx_int8.weight_collector(_unexpected, "each tensor once")
    put("a", np.ones(2, dtype=np.float64), "node_a")
    assert state["a"].dtype == np.float32 and sources == {"a": "node_a"}
    with pytest.raises(ParameterError, match="each tensor once"):
        put("a", np.zeros(2), "node_b")
    assert sources == {"a": "node_a"}


def test_cross_checks_apply_the_tolerance_to_their_own_quantities():
    small, big = np.array([1e-7]), np.array([1e-3])
    # T5: the position bias is held to the tolerance, ...
    assert T5OnnxCrossCheck(4, small, big, 0.0).passed
    assert not T5OnnxCrossCheck(4, small, big, 1e-3).passed
    assert not T5OnnxCrossCheck(4, big, small, 0.0).passed
    # ... ALBERT's hidden-state difference is reported only.
    assert AlbertOnnxCrossCheck(4, small, big, 1e-3).passed
    assert not AlbertOnnxCrossCheck(4, big, small, 0.0).passed
    t5 = T5OnnxCrossCheck(4, small, big, 2e-3, 0.05, tolerance=1e-5).summary()
    assert t5 == (
        "L = 4: dequantized graph max |dA| = 1.00e-07 (tolerance 1e-05), position bias max "
        "|d| = 2.00e-03; shipped int8 runtime max |dA| = 1.00e-03, layer-0 query relative "
        "error 5.0e-02"
    )
    albert = AlbertOnnxCrossCheck(4, small, big, 2e-3, 0.05).summary()
    assert albert == (
        "L = 4: dequantized graph max |dA| = 1.00e-07 (tolerance 1e-04), max |d hidden| = "
        "2.00e-03; shipped int8 runtime max |dA| = 1.00e-03, first query relative error "
        "5.0e-02"
    )


def test_require_passed_names_checkpoint_and_gives_the_summary():
    ok = T5OnnxCrossCheck(4, np.array([1e-7]), np.array([1e-3]), 0.0)
    onnx_int8.require_passed(ok, "a model")
    bad = T5OnnxCrossCheck(4, np.array([1e-2]), np.array([1e-3]), 0.0)
    with pytest.raises(ParameterError, match=r"checkpoint.*a model within 0\.0001") as err:
        onnx_int8.require_passed(bad, "a model")
    assert bad.summary()[:60] in str(err.value)  # the message shortens a long "got"


def test_first_output_keeps_the_first_call_and_removes_its_hook():
    layer = torch.nn.Linear(2, 2)
    with onnx_int8.first_output(layer) as seen, torch.no_grad():
        first = layer(torch.ones(1, 2))
        layer(torch.zeros(1, 2))
    assert torch.equal(seen["q"], first) and not layer._forward_hooks


def test_attention_differences_per_layer_and_strict_counts():
    ours = [np.zeros((1, 2, 2)), np.zeros((1, 2, 2))]
    graph = [np.full((1, 1, 2, 2), 0.5), np.full((1, 1, 2, 2), 0.25)]
    float_diff, runtime = onnx_int8.attention_differences(ours, graph, graph[::-1])
    np.testing.assert_array_equal(float_diff, [0.5, 0.25])
    np.testing.assert_array_equal(runtime, [0.25, 0.5])
    with pytest.raises(ValueError):
        onnx_int8.attention_differences(ours, graph[:1], graph)
