"""Intrinsic block version 3: version 1's covariates, ranks solved best first, no screen."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analysis.descriptors.kappa_fast as kappa_fast
from analysis.descriptors import build_registry, builtin_registry
from analysis.descriptors.builtin import BLOCK_VERSIONS
from analysis.descriptors.check import check_block
from analysis.descriptors.describe import _describe_one, _float_frame, describe_matrix
from analysis.descriptors.intrinsic import KAPPA_TOL
from analysis.descriptors.intrinsic2 import intrinsic_profile_v2
from analysis.descriptors.intrinsic3 import intrinsic_profile_v3
from analysis.descriptors.kappa import _dual_lower
from analysis.descriptors.kappa_fast import factor_radius_fast, factor_radius_weights
from analysis.descriptors.registry import MatrixData
from analysis.descriptors.versions import block_covariates, block_version
from analysis.prereg.descriptor_versions import design_block_versions
from analysis.validation import ParameterError

V1 = build_registry().get("intrinsic")
V2 = build_registry(versions={"intrinsic": 2}).get("intrinsic")
V3 = build_registry(versions={"intrinsic": 3}).get("intrinsic")
EPS = (0.05, 0.1, 0.2)


def _head(kind: str, *, L: int = 40, d: int = 10):
    rng = np.random.default_rng({"plain": 21, "causal": 22, "bias": 23, "spread": 24}[kind])
    decay = 0.6 if kind == "spread" else 0.85
    Q = rng.normal(size=(L, d)) * decay ** np.arange(d)
    K = rng.normal(size=(L, d))
    mask = np.tril(np.ones((L, L), dtype=bool)) if kind == "causal" else None
    bias = 0.2 * rng.normal(size=(L, L)) if kind == "bias" else None
    scale = 1.2 if kind == "spread" else 0.3
    return Q, K, scale, mask, bias


def _columns(df, name: str) -> np.ndarray:
    cols = [c for c in df.columns if c.startswith(f"intrinsic__{name}_r") and c[-1].isdigit()]
    cols.sort(key=lambda c: int(c.rsplit("_r", 1)[1]))
    return df[cols].to_numpy(float)


@pytest.mark.parametrize("kind", ["plain", "causal", "bias", "spread"])
def test_v3_covariates_equal_v1_to_the_certified_gaps(kind):
    Q, K, scale, mask, bias = _head(kind)
    one, three = (
        describe_matrix(
            Q=Q, K=K, scale=scale, mask=mask, eps=EPS, blocks=[block], bias=bias, diagnostics=True
        )
        for block in (V1, V3)
    )
    assert list(one.columns) == list(three.columns)  # same names, same order
    for name in ("sigma", "q", "tau"):  # the same expressions: the same floats
        np.testing.assert_array_equal(_columns(one, name), _columns(three, name))
    for col in ("intrinsic__rank_C", "intrinsic__interaction_dim", "intrinsic__r_star"):
        np.testing.assert_array_equal(one[col].to_numpy(), three[col].to_numpy())
    k1, k3 = _columns(one, "kappa")[0], _columns(three, "kappa")[0]
    lo1, lo3 = _columns(one, "kappa_lower")[0], _columns(three, "kappa_lower")[0]
    gap1, gap3 = _columns(one, "kappa_gap")[0], _columns(three, "kappa_gap")[0]
    # the minimizing ranks are finished in both; every version-3 solve is certified
    stars = one["intrinsic__r_star"].to_numpy().astype(int) - 1
    assert np.isfinite(k3[stars]).all()
    assert np.nanmax(gap3) <= KAPPA_TOL * (1 + 1e-9)
    both = np.isfinite(k1) & np.isfinite(k3)
    assert (lo3[both] <= k1[both] * (1 + 1e-12)).all()
    assert (lo1[both] <= k3[both] * (1 + 1e-12)).all()
    rel = np.abs(k3[both] / k1[both] - 1)
    assert (rel <= np.maximum(gap1[both], gap3[both]) + 1e-12).all()
    pi1, pi3 = one["intrinsic__Pi"].to_numpy(), three["intrinsic__Pi"].to_numpy()
    assert np.allclose(pi3, pi1, rtol=float(rel.max()) + 1e-12, atol=0)
    if kind == "spread":  # the minimizer moves with eps: several ranks finished
        assert len(set(stars)) > 1
    if kind == "bias":
        assert one["intrinsic__rank_C"].iloc[0] > Q.shape[1]


def test_v3_does_fewer_dual_iterations_than_v2_on_a_full_rank_head(monkeypatch):
    # a biased head: every rank up to rank C is usable and version 2 screens each
    Q, K, scale, mask, bias = _head("bias", L=60, d=8)
    cells = [(1.0, e) for e in EPS]
    calls = []
    gauge = kappa_fast._gauge
    monkeypatch.setattr(kappa_fast, "_gauge", lambda *a: calls.append(a[0].shape[1]) or gauge(*a))
    two = intrinsic_profile_v2(Q, K, scale, mask, cells=cells, bias=bias)
    n2, ranks2 = len(calls), set(calls)  # version 2: a screen at each usable rank
    calls.clear()
    three = intrinsic_profile_v3(Q, K, scale, mask, cells=cells, bias=bias)
    n3 = len(calls)
    ranks3 = set(calls)
    assert three.rank_C == two.rank_C > 2 * Q.shape[1]
    assert sorted(three.kappa) == sorted(two.kappa)  # the same ranks finished here
    # version 2 iterates at every usable rank (its screen), version 3 at the ranks it
    # finishes or prunes by a solve: a few of them, and fewer iterations in all
    assert len(ranks3) <= len(ranks2) / 4
    assert n3 < n2


def test_the_weights_of_a_solve_certify_its_lower_bound_and_other_ranks():
    rng = np.random.default_rng(6)
    U, W = rng.normal(size=(40, 7)), rng.normal(size=(30, 7)) * 0.8 ** np.arange(7)
    res, (lam, mu) = factor_radius_weights(U, W, tol=1e-6)
    same = factor_radius_fast(U, W, tol=1e-6)
    assert (res.value, res.lower, res.iterations) == (same.value, same.lower, same.iterations)
    t_max = np.abs(U @ W.T).max()
    assert res.lower == max(t_max, _dual_lower(U, W, lam, mu))
    for r in (3, 5):  # any weights bound any rank's kappa from below
        low = _dual_lower(U[:, :r], W[:, :r], lam, mu)
        solved = factor_radius_fast(U[:, :r], W[:, :r], tol=1e-8)
        assert low <= solved.value * (1 + 1e-12)
    one = factor_radius_weights(U[:, :1], W[:, :1])
    assert one[1] is None and one[0].value == np.abs(U[:, :1] @ W[:, :1].T).max()


def test_describe_frames_equal_the_column_by_column_cast():
    Q, K, scale, mask, bias = _head("bias")
    blocks = [build_registry(versions={"intrinsic": 3}).get(b) for b in builtin_registry()]
    mat = MatrixData(Q, K, scale, mask, eps_grid=EPS, temperatures=(1.0, 2.0), bias=bias)
    rows = _describe_one(mat, chosen=blocks)
    rows[1]["extra"] = None  # a key only one row has, and a None
    old = pd.DataFrame(rows)
    old = old.astype(dict.fromkeys(old.columns, np.float64))
    pd.testing.assert_frame_equal(_float_frame(rows), old, check_exact=True)


def test_v3_is_a_new_version_beside_1_and_2():
    assert builtin_registry().get("intrinsic") is BLOCK_VERSIONS["intrinsic"][1] is V1
    assert V3.func.__module__ == "analysis.descriptors.intrinsic3"
    assert len({block_version(b) for b in (V1, V2, V3)}) == 3
    check_block(V3)
    assert block_covariates(V3) == block_covariates(V1)
    assert V3.nonfinite == V1.nonfinite and V3.needs == V1.needs
    assert design_block_versions({"descriptors": {"versions": {"intrinsic": 3}}})["intrinsic"] == 3
    with pytest.raises(ParameterError):
        design_block_versions({"descriptors": {"versions": {"intrinsic": 4}}})
    assert build_registry(versions={"intrinsic": 3}).block_order() == (
        builtin_registry().block_order()
    )
