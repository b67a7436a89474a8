"""experiments/families.py on a toy extraction: the model's logit bias is part of A."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.sources.files import Extraction, save_extraction
from experiments.families import _job, family_note, main, run_one


def _toy(tmp_path, *, with_bias: bool):
    """One layer, two heads, L = 6: near-uniform Q K^T logits; head 1's bias puts almost
    all of each row on the diagonal (an identity-like A of full rank)."""
    rng = np.random.default_rng(0)
    L, d = 6, 4
    Q = (0.05 * rng.standard_normal((1, 2, L, d))).astype(np.float32)
    K = (0.05 * rng.standard_normal((1, 2, L, d))).astype(np.float32)
    scale = np.ones((1, 2))
    mask = np.ones((L, L), dtype=bool)
    bias = np.zeros((1, 2, L, L), dtype=np.float32)
    bias[0, 1] = 30.0 * np.eye(L, dtype=np.float32)
    bias = bias if with_bias else None
    A = softmax64(Q, K, scale, mask, bias=bias).astype(np.float32)
    meta = {
        "checkpoint": "toy",
        "input_id": "toy:0",
        "input": {"corpus_seed": 0},
        "bench_note": "toy",
    }
    tokens = np.array([f"t{i}" for i in range(L)])
    ex = Extraction(A, Q, K, scale, mask, False, tokens, meta, bias)
    save_extraction(ex, tmp_path / "toy_s0_L6.npz")
    return ex


@pytest.mark.slow
def test_bias_enters_the_bracketed_matrix(tmp_path):
    _toy(tmp_path, with_bias=True)
    df = run_one(
        "toy",
        6,
        eps=(0.05,),
        effort="fast",
        heads_limit=None,
        workers=1,
        batch=4,
        seed=0,
        out_dir=tmp_path,
    )
    by_head = df.set_index("head")
    # Head 0 (zero bias): A is near uniform, rank 1 within eps.
    assert by_head.loc[0, "upper"] == 1
    assert by_head.loc[0, "diag_mass"] < 0.2
    # Head 1: the bias makes A nearly the identity, of full rank 6 within eps 0.05.
    assert by_head.loc[1, "diag_mass"] > 0.99
    assert by_head.loc[1, "lower"] == by_head.loc[1, "upper"] == 6
    # A finished run is summarized from its table, both heads.
    main(["--checkpoint", "toy", "--summarize-only", "--effort", "fast", "--out", str(tmp_path)])
    assert pd.read_csv(tmp_path / "families_summary.csv")["heads"].tolist() == [2]


def test_family_note_names_the_bias(tmp_path):
    class _Text:
        is_vision = False

    assert "relative-position bias" in family_note(_Text(), _toy(tmp_path, with_bias=True))
    assert "bias" not in family_note(_Text(), _toy(tmp_path, with_bias=False))


@pytest.mark.slow
def test_summarize_only_reads_finished_blocks_and_runs_nothing(tmp_path):
    ex = _toy(tmp_path, with_bias=True)
    # An unfinished run: the block of head 1 done, head 0's block not.
    parts = tmp_path / "toy_s0_L6_default_all.parts"
    parts.mkdir()
    job = ([(0, 1)], ex.Q[0, 1:], ex.K[0, 1:], ex.scale[0, 1:], ex.mask, ex.bias[0, 1:])
    rows = _job((*job, (0.05, 0.1), "fast"))
    pd.DataFrame(rows).to_csv(parts / "000_001.csv", index=False)
    main(["--checkpoint", "toy", "--summarize-only", "--out", str(tmp_path)])
    summary = pd.read_csv(tmp_path / "families_summary.csv")
    assert summary["heads"].tolist() == [1, 1]
    assert summary["length"].tolist() == [6, 6]
    assert (summary["median_upper"] == 6).all()
    assert not (tmp_path / "toy_s0_L6_default_all.csv").exists()
    assert sorted(p.name for p in parts.iterdir()) == ["000_001.csv"]
