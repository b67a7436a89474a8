"""An additive logit bias (MPNet's relative-position bias) from capture to store.

A tiny random MPNet (no download) stands in for the real one: its attention modules
compute their logits inline, so the capture reads them through hooks, and every layer adds
the encoder's relative-position bias.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from analysis.attention import softmax64
from analysis.brackets.approximant_tables import approximants_for_input
from analysis.cli.inputs import load_matrices, load_queries_keys
from analysis.sources.checkpoints import (
    Checkpoint,
    ModelInput,
    capture_attention,
    extract_from_model,
)
from analysis.sources.files import load_extraction, save_extraction
from analysis.store import Store
from analysis.validation import ParameterError


def _mpnet_extract(tiny_model, length: int = 11):
    model = tiny_model("mpnet")
    ck = Checkpoint.from_model(model, checkpoint_id="tiny-mpnet")
    inp = ModelInput.from_ids(np.random.default_rng(3).integers(3, 100, size=length))
    return model, inp, extract_from_model(ck, inp)


def _eager(model, inp: ModelInput) -> np.ndarray:
    with torch.no_grad():
        out = model(**inp.tensors, output_attentions=True)
    return np.stack([a[0].numpy() for a in out.attentions])


def test_inline_attention_is_captured_with_its_bias(tiny_model):
    model, inp, ex = _mpnet_extract(tiny_model)
    L, n_layers, n_heads = inp.length, 2, 4
    assert ex.A.shape == ex.bias.shape == (n_layers, n_heads, L, L)
    assert ex.bias.dtype == np.float32 and ex.Q.shape == (n_layers, n_heads, L, 8)
    np.testing.assert_array_equal(ex.scale, np.full((n_layers, n_heads), 8**-0.5))
    assert ex.mask.all() and not ex.causal
    eager = _eager(model, inp)
    np.testing.assert_array_equal(ex.A, eager)  # the module's own probabilities
    # the bias exactly as the encoder computes it and hands it to every layer
    with torch.no_grad():
        emb = model.embeddings(input_ids=inp.tensors["input_ids"])
        position_bias = model.encoder.compute_position_bias(emb)[0].numpy()
    for layer in range(n_layers):
        np.testing.assert_array_equal(ex.bias[layer], position_bias)
    rebuilt = softmax64(ex.Q, ex.K, ex.scale, ex.mask, bias=ex.bias)
    assert np.abs(rebuilt - eager).max() <= 1e-5  # every head of every layer
    assert ex.meta["parity_max_abs"] <= 1e-5
    # without the bias the stored Q, K do not give the model's attention
    assert np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max() > 0.05


def test_inline_hooks_leave_the_model_as_it_was(tiny_model):
    model = tiny_model("mpnet")
    attn = model.encoder.layer[0].attention.attn
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        plain = model(input_ids=ids)
    with torch.no_grad(), capture_attention(model) as calls:
        inside = model(input_ids=ids)  # the caller did not ask for attentions
    assert len(calls) == 2 and inside.attentions is None
    torch.testing.assert_close(inside.last_hidden_state, plain.last_hidden_state)
    with pytest.raises(IndexError), capture_attention(model):
        model(input_ids=torch.tensor([[1, 2, 500]]))  # id beyond the vocabulary
    for module in (attn, attn.q, attn.k):
        assert not module._forward_hooks and not module._forward_pre_hooks


def test_bias_round_trips_through_the_npz(tiny_model, tmp_path):
    _, _, ex = _mpnet_extract(tiny_model)
    out = save_extraction(ex, tmp_path / "m.npz")
    with np.load(out, allow_pickle=False) as z:
        assert "bias" in z.files and z["bias"].dtype == np.float32
    back = load_extraction(out)
    np.testing.assert_array_equal(back.bias, ex.bias)
    np.testing.assert_array_equal(back.A, ex.A)
    # a file without the array (every other family, older files) reads as bias None
    with np.load(out, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != "bias"}
    np.savez(tmp_path / "old.npz", **arrays)
    assert load_extraction(tmp_path / "old.npz").bias is None
    arrays["bias"] = ex.bias[:, :, :3]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ParameterError, match="bias") as info:
        load_extraction(tmp_path / "bad.npz")
    assert info.value.name == "path"


def test_bias_round_trips_through_the_store(tiny_model, tmp_path):
    _, _, ex = _mpnet_extract(tiny_model)
    with Store(tmp_path / "s", create=True) as store:
        keys = store.add_extraction(ex)
        arr = store.arrays(keys[5], verify=True)  # layer 1, head 1
        np.testing.assert_array_equal(arr.bias, ex.bias[1, 1])
        for t in (0.5, 1.0, 2.0):
            expected = softmax64(ex.Q[1, 1], ex.K[1, 1], ex.scale[1, 1], ex.mask, t, ex.bias[1, 1])
            np.testing.assert_array_equal(arr.at(t), expected)
        assert np.abs(arr.at(1.0) - ex.A[1, 1]).max() <= 1e-5
        # the study's descriptor stage reads the bias from the array file
        from analysis.study.describe import describe_task

        csv = tmp_path / "f.csv"
        array_file = str(store.path / store.matrix(keys[5]).array_file)
        describe_task(array_file, str(csv), (0.5,), (1.0, 2.0), ("native",))
        df = pd.read_csv(csv)
        assert len(df) == 2 and df["native__bias_logit_share"].between(0, 1).all()
        # a head without a bias keeps the array file it always had
        plain = store.add_matrices(
            [
                dict(
                    source="checkpoint",
                    checkpoint="c",
                    layer=0,
                    head=0,
                    input_id="i",
                    length=ex.length,
                    A=ex.A[0, 0],
                    Q=ex.Q[0, 0],
                    K=ex.K[0, 0],
                    scale=float(ex.scale[0, 0]),
                )
            ]
        )[0]
        with np.load(store.path / store.matrix(plain).array_file, allow_pickle=False) as z:
            assert set(z.files) == {"A", "Q", "K", "scale", "mask"}
        assert store.arrays(plain).bias is None
        with pytest.raises(ParameterError) as info:
            store.add_matrices(
                [
                    dict(
                        source="checkpoint",
                        checkpoint="c",
                        layer=0,
                        head=1,
                        input_id="i",
                        length=ex.length,
                        A=ex.A[0, 0],
                        Q=ex.Q[0, 0],
                        K=ex.K[0, 0],
                        scale=1.0,
                        bias=np.zeros((2, 2)),
                    )
                ]
            )[0]
        assert info.value.name == "bias"


def test_bracket_inputs_rebuild_a_with_the_bias(tiny_model, tmp_path):
    _, _, ex = _mpnet_extract(tiny_model)
    path = save_extraction(ex, tmp_path / "m.npz")
    data = load_matrices(path, temperature=1.0)
    assert np.abs(data.A - ex.A.reshape(data.A.shape).astype(np.float64)).max() <= 1e-5
    hot = load_matrices(path, temperature=2.0)
    Q, K, B = (x.reshape(-1, *x.shape[2:]) for x in (ex.Q, ex.K, ex.bias))
    np.testing.assert_array_equal(hot.A, softmax64(Q, K, ex.scale.reshape(-1), None, 2.0, B))
    qk = load_queries_keys(path, data)
    np.testing.assert_array_equal(qk.bias, B)
    # Nystrom / Linformer / Performer approximate softmax(s Q K^T): not this matrix
    table, notes = approximants_for_input(data, qk, eps=[0.5], progress=False)
    assert set(table["method"]) == {"svd", "rows"} and "logit bias" in " ".join(notes)
    with pytest.raises(ParameterError) as info:
        approximants_for_input(data, qk, eps=[0.5], methods=["nystrom"], progress=False)
    assert info.value.name == "methods"


def test_cli_describe_checks_parity_with_the_bias(tiny_model, tmp_path, capsys):
    from analysis.cli import main

    _, _, ex = _mpnet_extract(tiny_model, length=8)
    path = save_extraction(ex, tmp_path / "m.npz")
    out = tmp_path / "d.csv"
    argv = ["describe", str(path), "--eps", "0.5", "--blocks", "baseline", "native", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 8 and df["native__bias_logit_share"].between(0, 1).all()
    # the same file with its bias dropped no longer matches the stored A
    with np.load(path, allow_pickle=False) as z:
        np.savez(tmp_path / "nob.npz", **{k: z[k] for k in z.files if k != "bias"})
    nob = ["describe", str(tmp_path / "nob.npz"), "--eps", "0.5", "--out", str(out)]
    assert main(nob) == 2
    assert "softmax64" in capsys.readouterr().err
    meta = json.loads(str(np.load(path, allow_pickle=False)["meta"]))
    assert meta["parity_max_abs"] <= 1e-5
