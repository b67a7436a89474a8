"""How an additive logit bias enters each descriptor block.

baseline: from A, which includes the bias; native: the Q K^T factorization, with the
bias's size beside it as diagnostics; intrinsic: the full logits ``scale Q K^T + bias``.
Without a bias nothing changes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.descriptors import builtin_registry
from analysis.descriptors.describe import describe_arrays, describe_matrix
from analysis.descriptors.native import bias_size
from analysis.descriptors.versions import block_covariates
from analysis.validation import ParameterError

EPS = (0.3, 0.6)
TEMPS = (1.0, 2.0)


def _head(rng, L=10, d=2, k=2):
    """Random Q, K and a rank-k bias U V^T (so the full logits have a Q/K form too)."""
    Q, K = rng.normal(size=(L, d)), rng.normal(size=(L, d))
    U, V = rng.normal(size=(L, k)), rng.normal(size=(L, k))
    return Q, K, 1 / np.sqrt(d), U, V


def test_no_bias_output_is_unchanged_by_the_new_argument(rng):
    Q, K, s, _, _ = _head(rng)
    plain = describe_matrix(
        Q=Q, K=K, scale=s, mask=None, diagnostics=True, eps=EPS, temperatures=TEMPS
    )
    pd.testing.assert_frame_equal(
        describe_matrix(
            Q=Q, K=K, scale=s, mask=None, diagnostics=True, eps=EPS, temperatures=TEMPS, bias=None
        ),
        plain,
    )
    assert not any("bias" in c for c in plain.columns)
    # a zero bias at t = 1 is bit-for-bit the same matrix, logits and interaction
    zero = describe_matrix(
        Q=Q,
        K=K,
        scale=s,
        mask=None,
        diagnostics=True,
        eps=EPS,
        temperatures=(1.0,),
        bias=np.zeros((10, 10)),
    )
    at1 = plain[plain["temperature"] == 1.0].reset_index(drop=True)
    pd.testing.assert_frame_equal(zero[list(at1.columns)], at1)
    assert (zero["native__bias_spectral"] == 0).all()


def test_intrinsic_sees_the_full_logits(rng):
    """scale Q K^T + U V^T equals s' Q' K'^T for the augmented Q' = [Q, U / sqrt(s')]...:
    every intrinsic quantity is a function of the logits only, so both agree."""
    Q, K, s, U, V = _head(rng)
    bias = U @ V.T
    Qa = np.hstack([Q, U / np.sqrt(s)])
    Ka = np.hstack([K, V / np.sqrt(s)])
    np.testing.assert_allclose(s * Qa @ Ka.T, s * Q @ K.T + bias, rtol=1e-12, atol=1e-12)
    with_bias = describe_matrix(
        Q=Q, K=K, scale=s, mask=None, diagnostics=True, eps=EPS, temperatures=TEMPS, bias=bias
    )
    augmented = describe_matrix(
        Q=Qa, K=Ka, scale=s, mask=None, diagnostics=True, eps=EPS, temperatures=TEMPS
    )
    assert (with_bias["intrinsic__rank_C"] == 4).all()  # d + k > d = 2: the bias adds rank
    assert "intrinsic__q_r4" in with_bias.columns  # per-r columns run to rank C
    for c in ("intrinsic__rank_C", "intrinsic__r_star", "intrinsic__interaction_dim"):
        np.testing.assert_array_equal(with_bias[c], augmented[c])
    for c in ("intrinsic__Pi", "intrinsic__kappa_star", "intrinsic__tau_star", "intrinsic__q_r1"):
        np.testing.assert_allclose(with_bias[c], augmented[c], rtol=1e-6)
    # baseline reads A, which holds the bias at every temperature
    for c in ("baseline__entropy_mean", "baseline__stable_rank", "baseline__svd_rank_l2"):
        np.testing.assert_allclose(with_bias[c], augmented[c], rtol=1e-9)
    # without the bias the interaction is another one
    plain = describe_matrix(
        Q=Q, K=K, scale=s, mask=None, diagnostics=True, eps=EPS, temperatures=TEMPS
    )
    assert (plain["intrinsic__rank_C"] == 2).all()


def test_native_stays_about_qk_and_reports_the_bias_beside_it(rng):
    Q, K, s, U, V = _head(rng)
    bias = 3.0 * U @ V.T + 7.0  # a constant does not change A: it must not count
    mask = np.tril(np.ones((10, 10), dtype=bool))
    df = describe_matrix(
        Q=Q, K=K, scale=s, mask=mask, diagnostics=True, eps=EPS, temperatures=TEMPS, bias=bias
    )
    plain = describe_matrix(
        Q=Q, K=K, scale=s, mask=mask, diagnostics=True, eps=EPS, temperatures=TEMPS
    )
    covariates = [f"native__{c}" for c in block_covariates(builtin_registry().get("native"))]
    pd.testing.assert_frame_equal(df[covariates], plain[covariates])
    bias_cols = ["native__bias_spectral", "native__bias_logit_share"]
    assert builtin_registry().diagnostic_columns(bias_cols) == tuple(bias_cols)
    # direct: within-row spread over allowed keys, at t = 1; the spectral norm scales as 1/t
    S = s * Q @ K.T
    allowed = mask.sum(1, keepdims=True)

    def centered(X):
        X = np.where(mask, X, 0.0)
        return np.where(mask, X - X.sum(1, keepdims=True) / allowed, 0.0)

    vb, vs = (centered(bias) ** 2).sum(), (centered(S) ** 2).sum()
    size = bias_size(Q, K, s, bias, mask)
    np.testing.assert_allclose(size["logit_share"], vb / (vb + vs), rtol=1e-12)
    np.testing.assert_allclose(size["spectral"], np.linalg.norm(centered(bias), 2), rtol=1e-12)
    np.testing.assert_allclose(bias_size(Q, K, s, bias - 7.0, mask)["spectral"], size["spectral"])
    for t in TEMPS:
        rows = df[df["temperature"] == t]
        np.testing.assert_allclose(rows["native__bias_spectral"], size["spectral"] / t)
        np.testing.assert_allclose(rows["native__bias_logit_share"], size["logit_share"])


def test_describe_arrays_takes_each_heads_bias(rng):
    L, d = 8, 3
    Q, K = rng.normal(size=(1, 2, L, d)), rng.normal(size=(1, 2, L, d))
    bias = rng.normal(scale=2.0, size=(1, 2, L, L))
    scale = np.full((1, 2), d**-0.5)
    mask = np.ones((L, L), dtype=bool)
    A = softmax64(Q, K, scale, mask, bias=bias)
    data = {"Q": Q, "K": K, "scale": scale, "mask": mask, "A": A, "bias": bias}
    df = describe_arrays(data, eps=[0.5], blocks=["baseline", "native"])
    for h in range(2):
        one = describe_matrix(
            Q=Q[0, h],
            K=K[0, h],
            scale=scale[0, h],
            mask=mask,
            diagnostics=True,
            eps=[0.5],
            blocks=["baseline", "native"],
            bias=bias[0, h],
        )
        row = df[df["head"] == h].drop(columns=["layer", "head"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(row, one)
    assert "native__bias_spectral" in df.columns
    # the parity check of the stored A uses each head's own bias
    swapped = {**data, "bias": bias[:, ::-1].copy()}
    with pytest.raises(ParameterError, match="softmax64") as info:
        describe_arrays(swapped, eps=[0.5], blocks=["native"])
    assert info.value.name == "A"
