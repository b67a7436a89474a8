"""Checkpoints by Hugging Face id: the local cache when offline, a download when online.

Nothing here reaches the network: the cache is a hub-layout folder under ``tmp_path`` and
the online path calls a stand-in for ``huggingface_hub.snapshot_download``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import huggingface_hub.constants as hc
import pytest
import torch

from analysis.cli import main
from analysis.sources.checkpoints import load_checkpoint, resolve_checkpoint
from analysis.sources.files import load_extraction
from analysis.validation import ParameterError

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hugging Face cache holding ``org/tiny`` (a random tiny BERT with a tokenizer)."""
    import transformers

    from analysis.sources.checkpoints import minilm_package_path

    root = tmp_path / "hub"
    repo = root / "models--org--tiny"
    snap = repo / "snapshots" / COMMIT
    tok = transformers.AutoTokenizer.from_pretrained(minilm_package_path())
    cfg = transformers.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    transformers.BertModel(cfg).save_pretrained(snap)
    tok.save_pretrained(snap)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(root))
    return snap


def _spy(monkeypatch, answer):
    """Replace snapshot_download; record the keyword arguments of every call."""
    calls: list[dict] = []

    def fake(repo_id, **kwargs):
        calls.append({"repo_id": repo_id, **kwargs})
        return answer(repo_id, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    return calls


def test_offline_id_loads_from_a_hub_layout_cache(hub, tmp_path, monkeypatch, capsys):
    for var in OFFLINE_VARS:
        monkeypatch.delenv(var, raising=False)
    real = huggingface_hub.snapshot_download
    calls = _spy(monkeypatch, real)
    ck = load_checkpoint("org/tiny", offline=True)  # told to stay offline, env unset
    assert (ck.checkpoint_id, ck.meta["revision"], ck.meta["origin"]) == (
        "org/tiny",
        COMMIT,
        "hf-cache",
    )
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")  # the user's environment says offline
    out = tmp_path / "x.npz"
    argv = ["extract", "org/tiny", "--corpus-seed", "3", "--length", "16", "--out", str(out)]
    assert main(argv) == 0
    assert "org/tiny" in capsys.readouterr().out
    ex = load_extraction(out)
    assert ex.A.shape == (1, 2, 16, 16) and ex.head_id(0, 1) == "org/tiny:0:1"
    assert calls and all(c["local_files_only"] is True for c in calls)


@pytest.mark.parametrize("var", OFFLINE_VARS)
def test_offline_missing_id_names_the_fetch_command(var, hub, monkeypatch, capsys):
    for other in OFFLINE_VARS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(var, "true")
    calls = _spy(monkeypatch, huggingface_hub.snapshot_download)
    with pytest.raises(ParameterError) as info:
        resolve_checkpoint("org/absent")
    assert info.value.name == "checkpoint"
    text = str(info.value)
    assert "`hf download org/absent`" in text and "offline" in text and "org/absent" in text
    assert calls and all(c["local_files_only"] is True for c in calls)
    out = str(hub.parent / "x.npz")
    assert main(["extract", "org/absent", "--corpus-seed", "0", "--length", "8", "--out", out]) == 2
    assert "hf download org/absent" in capsys.readouterr().err


def test_online_id_is_downloaded_into_the_hub_cache(hub, monkeypatch):
    for var in OFFLINE_VARS:
        monkeypatch.delenv(var, raising=False)

    def download(repo_id, **kwargs):
        assert not kwargs.get("local_files_only"), "online must not be local_files_only"
        return str(hub)

    calls = _spy(monkeypatch, download)
    r = resolve_checkpoint("org/tiny")
    assert (r.checkpoint_id, r.path, r.revision, r.origin) == ("org/tiny", hub, COMMIT, "hf-cache")
    assert [c["repo_id"] for c in calls] == ["org/tiny"]
    assert "*.safetensors" in calls[0]["allow_patterns"]
    ck = load_checkpoint("org/tiny")
    assert ck.model.config.num_attention_heads == 2

    def refused(repo_id, **kwargs):
        raise OSError("no route to host")

    _spy(monkeypatch, refused)
    with pytest.raises(ParameterError) as info:
        resolve_checkpoint("org/absent")
    assert info.value.name == "checkpoint" and "hf download org/absent" in str(info.value)


def test_packaged_checkpoints_never_call_the_hub(monkeypatch):
    for var in OFFLINE_VARS:
        monkeypatch.delenv(var, raising=False)

    def forbidden(repo_id, **kwargs):
        raise AssertionError(f"snapshot_download({repo_id!r}) for a packaged checkpoint")

    _spy(monkeypatch, forbidden)
    r = resolve_checkpoint("minilm", offline=False)
    assert r.origin.startswith("package:") and (r.path / "config.json").is_file()


def test_import_leaves_the_offline_variables_alone():
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARS}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    code = (
        "import os, analysis.sources.checkpoints, analysis.sources; "
        "print([v for v in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE') if v in os.environ])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
