"""describe_matrix on a bare attention matrix A (no Q, K), and its covariates-only default."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.descriptors import builtin_registry, describe_matrix
from analysis.validation import ParameterError

EPS = (0.05, 0.1, 0.2)


@pytest.fixture
def head(rng):
    L, d = 12, 3
    Q, K = rng.normal(size=(L, d)), rng.normal(size=(L, d))
    scale = 0.8
    return Q, K, scale, softmax64(Q, K, scale)


def test_a_bare_matrix_gives_the_covariates_of_its_head(head):
    Q, K, scale, A = head
    bare = describe_matrix(A, eps=EPS, temperatures=(1.0, 2.0))
    full = describe_matrix(Q=Q, K=K, scale=scale, eps=EPS, temperatures=(1.0, 2.0))
    blocks = {c.split("__")[0] for c in bare.columns if "__" in c}
    assert blocks == {"baseline", "baseline_plus", "intrinsic"}  # native needs Q and K
    assert builtin_registry().diagnostic_columns(bare.columns) == ()  # covariates only
    assert list(bare.columns) == [c for c in full.columns if not c.startswith("native__")]
    # A at t = 2 is A^(1/2) renormalized, and log A has the head's interaction C
    integers = ["intrinsic__r_star", "intrinsic__interaction_dim", "baseline__svd_rank_l2"]
    pd.testing.assert_frame_equal(bare[integers], full[integers])
    np.testing.assert_allclose(bare.to_numpy(), full[bare.columns].to_numpy(), rtol=1e-7)


def test_diagnostics_true_adds_every_declared_diagnostic(head):
    Q, K, scale, A = head
    covariates = describe_matrix(A, eps=EPS)
    everything = describe_matrix(A, eps=EPS, diagnostics=True)
    extra = [c for c in everything.columns if c not in covariates.columns]
    assert "intrinsic__q_r1" in extra and "baseline_plus__svd_proj_error" in extra
    assert tuple(extra) == builtin_registry().diagnostic_columns(everything.columns)
    pd.testing.assert_frame_equal(everything[list(covariates.columns)], covariates)
    head_full = describe_matrix(Q=Q, K=K, scale=scale, eps=EPS, diagnostics=True)
    assert builtin_registry().diagnostic_columns(head_full.columns)  # the study's columns


@pytest.mark.parametrize("blocks", [["native"], ["baseline", "native"]])
def test_native_without_q_and_k_names_q(head, blocks):
    with pytest.raises(ParameterError, match="native") as info:
        describe_matrix(head[3], eps=[0.1], blocks=blocks)
    assert info.value.name == "Q"


@pytest.mark.parametrize("drop", ["Q", "K", "scale"])
def test_a_head_needs_q_k_and_scale_together(head, drop):
    Q, K, scale, _ = head
    given = {k: v for k, v in {"Q": Q, "K": K, "scale": scale}.items() if k != drop}
    with pytest.raises(ParameterError) as info:
        describe_matrix(eps=[0.1], **given)
    assert info.value.name == drop


def test_nothing_to_describe_names_a():
    with pytest.raises(ParameterError) as info:
        describe_matrix(eps=[0.1])
    assert info.value.name == "A"


def test_a_masked_bare_matrix_feeds_the_blocks_of_a_alone(rng):
    L = 8
    mask = np.tril(np.ones((L, L), dtype=bool))
    Q, K = rng.normal(size=(L, 2)), rng.normal(size=(L, 2))
    A = softmax64(Q, K, 1.0, mask)
    bare = describe_matrix(A, mask=mask, eps=EPS)
    assert {c.split("__")[0] for c in bare.columns if "__" in c} == {"baseline", "baseline_plus"}
    full = describe_matrix(Q=Q, K=K, scale=1.0, mask=mask, eps=EPS, blocks=["baseline"])
    np.testing.assert_allclose(bare[full.columns].to_numpy(), full.to_numpy(), rtol=1e-12)
    with pytest.raises(ParameterError, match="intrinsic") as info:
        describe_matrix(A, mask=mask, eps=EPS, blocks=["intrinsic"])
    assert info.value.name == "mask"
    with pytest.raises(ParameterError) as info:  # a zero A with no mask: log 0
        describe_matrix(A, eps=EPS)
    assert info.value.name == "A"
    with pytest.raises(ParameterError) as info:  # mask False where A > 0
        describe_matrix(np.full((L, L), 1.0 / L), mask=mask, eps=EPS)
    assert info.value.name == "mask"


def test_bad_inputs_name_their_parameter(head):
    Q, K, scale, A = head
    with pytest.raises(ParameterError) as info:
        describe_matrix(A * 2, eps=[0.1])  # rows sum to 2
    assert info.value.name == "A"
    with pytest.raises(ParameterError) as info:  # A given with its head: must be its softmax
        describe_matrix(A[::-1], Q=Q, K=K, scale=scale, eps=[0.1])
    assert info.value.name == "A"
    with pytest.raises(ParameterError) as info:
        describe_matrix(A, bias=np.zeros_like(A), eps=[0.1])
    assert info.value.name == "bias"
    same = describe_matrix(A, Q=Q, K=K, scale=scale, eps=[0.1])
    pd.testing.assert_frame_equal(same, describe_matrix(Q=Q, K=K, scale=scale, eps=[0.1]))


def test_a_float32_matrix_loses_only_its_rounding_noise(rng):
    """A float32 A's rounding gives log A full rank; the noise components (about 1e-6)
    are dropped, so C has the head's rank and the same minimizing rank and Pi."""
    L, d = 24, 3
    Q, K = rng.normal(size=(L, d)), rng.normal(size=(L, d))
    A32 = softmax64(Q, K, 0.7).astype(np.float32)
    bare = describe_matrix(A32, eps=EPS, diagnostics=True)
    head = describe_matrix(Q=Q, K=K, scale=0.7, eps=EPS, diagnostics=True)
    assert (bare["intrinsic__rank_C"] == d).all() and (head["intrinsic__rank_C"] == d).all()
    for c in ("intrinsic__r_star", "intrinsic__interaction_dim"):
        np.testing.assert_array_equal(bare[c], head[c])
    np.testing.assert_allclose(bare["intrinsic__Pi"], head["intrinsic__Pi"], rtol=1e-4)
    # float64 A: the same components as the head's (nothing of size above rounding dropped)
    A64 = describe_matrix(softmax64(Q, K, 0.7), eps=EPS, diagnostics=True)
    cols = [f"intrinsic__sigma_r{r}" for r in range(1, d + 1)]
    np.testing.assert_allclose(A64[cols], head[cols], rtol=1e-9)
