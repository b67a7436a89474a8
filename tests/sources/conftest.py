"""Tiny random-config models of every supported architecture (no download)."""

from __future__ import annotations

import shutil

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
}


def _build(kind: str):
    torch.manual_seed(0)
    if kind == "bert":
        cfg = transformers.BertConfig(vocab_size=100, max_position_embeddings=64, **TINY)
        model = transformers.BertModel(cfg)
    elif kind == "gpt2":
        cfg = transformers.GPT2Config(
            vocab_size=100,
            n_positions=64,
            n_embd=32,
            n_layer=2,
            n_head=4,
            bos_token_id=0,
            eos_token_id=0,
        )
        model = transformers.GPT2Model(cfg)
    elif kind == "qwen2":
        cfg = transformers.Qwen2Config(
            vocab_size=100, max_position_embeddings=64, num_key_value_heads=2, **TINY
        )
        model = transformers.Qwen2Model(cfg)
    elif kind == "vit":
        cfg = transformers.ViTConfig(image_size=32, patch_size=8, **TINY)
        model = transformers.ViTModel(cfg, add_pooling_layer=False)
    elif kind == "deit":
        cfg = transformers.DeiTConfig(image_size=32, patch_size=8, **TINY)
        model = transformers.DeiTModel(cfg, add_pooling_layer=False)
    elif kind == "mpnet":
        # Inline attention with a relative-position bias; its random init (std 0.02) is
        # too small to matter, so the bias table is redrawn at the scale of real MPNet's.
        cfg = transformers.MPNetConfig(vocab_size=100, max_position_embeddings=64, **TINY)
        model = transformers.MPNetModel(cfg, add_pooling_layer=False)
        with torch.no_grad():
            model.encoder.relative_attention_bias.weight.normal_(0.0, 2.0)
    else:
        raise KeyError(kind)
    cfg._attn_implementation = "eager"
    return model.eval()


_CACHE: dict[str, object] = {}


@pytest.fixture(scope="session")
def tiny_model():
    def get(kind: str):
        if kind not in _CACHE:
            _CACHE[kind] = _build(kind)
        return _CACHE[kind]

    return get


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh ``ATTNRANK_CACHE`` per test module, removed afterwards.

    Packaged models joined from parts (a few hundred MB) then neither reuse a developer's
    cache nor stay behind in pytest's kept temporary folders.
    """
    path = tmp_path_factory.mktemp("attnrank-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNRANK_CACHE", str(path))
        yield path
    shutil.rmtree(path)


@pytest.fixture
def cli_extract(tmp_path, monkeypatch, capsys):
    """Run ``extract ALIAS --corpus-seed SEED --length LENGTH --out X.npz`` in ``tmp_path``.

    The returned function asserts the exit status 0 and gives the printed text and the
    saved extraction.
    """
    from analysis.cli import main
    from analysis.sources.files import load_extraction

    monkeypatch.chdir(tmp_path)

    def run(alias: str, seed: int, length: int):
        argv = ["extract", alias, "--corpus-seed", str(seed), "--length", str(length)]
        assert main([*argv, "--out", "X.npz"]) == 0
        return capsys.readouterr().out, load_extraction(tmp_path / "X.npz")

    return run
