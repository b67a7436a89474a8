"""``attnrank approximants`` on extracts of every supported architecture (tiny random models)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.brackets.approximants import METHODS
from analysis.cli import main
from analysis.sources.checkpoints import Checkpoint, ModelInput, extract_from_model
from analysis.sources.files import save_extraction
from analysis.sources.inputs import image_input


@pytest.mark.parametrize("kind", ["bert", "gpt2", "qwen2", "vit", "deit"])
def test_approximants_on_an_extract(tiny_model, kind, tmp_path, capsys):
    model = tiny_model(kind)
    ck = Checkpoint.from_model(model, checkpoint_id=f"tiny-{kind}")
    if kind in ("vit", "deit"):
        img = (np.random.default_rng(1).random((37, 53, 3)) * 255).astype(np.uint8)
        inp = image_input(ck, img, None)
    else:
        inp = ModelInput.from_ids(np.random.default_rng(2).integers(1, 100, size=17))
    path = save_extraction(extract_from_model(ck, inp), tmp_path / "x.npz")
    out = tmp_path / "t.csv"
    assert main(["approximants", str(path), "--eps", "0.1", "--quiet", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    L = inp.length
    heads = model.config.num_hidden_layers * model.config.num_attention_heads
    causal = kind in ("gpt2", "qwen2")
    methods = ["svd", "rows"] if causal else list(METHODS)
    assert sorted(set(table["method"])) == sorted(methods)
    assert len(table) == heads * len(methods)
    assert ("masks some keys" in capsys.readouterr().err) == causal
    # Every method except Performer reproduces A at full rank, so each reaches eps at some
    # rank <= L (Linformer's pooling is the identity there, Nystromformer's landmarks are
    # Q and K themselves).
    exact = table[table["method"] != "performer"]
    assert exact["rank"].notna().all() and (exact["rank"] <= L).all()
