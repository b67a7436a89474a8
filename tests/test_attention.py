import numpy as np
import pytest

from analysis.attention import check_attention, softmax64
from analysis.validation import ParameterError


def test_softmax64_matches_reference_and_masks_exactly(rng):
    Q = rng.normal(size=(2, 5, 3)).astype(np.float32)
    K = rng.normal(size=(2, 5, 3)).astype(np.float32)
    mask = np.tril(np.ones((5, 5), dtype=bool))
    A = softmax64(Q, K, np.array([0.5, 2.0]), mask, t=0.7)
    assert A.dtype == np.float64
    S = np.einsum("hid,hjd->hij", Q.astype(np.float64), K.astype(np.float64))
    S = S * np.array([0.5, 2.0])[:, None, None] / 0.7
    S = np.where(mask, S, -np.inf)
    ref = np.exp(S - S.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(A, ref, rtol=1e-13, atol=0)
    assert (A[:, ~mask] == 0).all()


def _reference(Q, K, scale, bias, mask, t):
    """Row softmax of (scale Q K^T + bias) / t in float64 numpy, masked keys exactly 0."""
    S = np.einsum("hid,hjd->hij", Q.astype(np.float64), K.astype(np.float64))
    S = (S * np.asarray(scale, dtype=np.float64)[:, None, None] + bias) / t
    S = np.where(mask, S, -np.inf)
    ref = np.exp(S - S.max(-1, keepdims=True))
    return ref / ref.sum(-1, keepdims=True)


def test_softmax64_adds_a_bias_to_the_logits(rng):
    Q = rng.normal(size=(2, 6, 3)).astype(np.float32)
    K = rng.normal(size=(2, 6, 3)).astype(np.float32)
    bias = rng.normal(scale=3.0, size=(2, 6, 6)).astype(np.float32)
    mask = np.tril(np.ones((6, 6), dtype=bool))
    scale = np.array([0.5, 2.0])
    A = softmax64(Q, K, scale, mask, bias=bias)
    assert A.dtype == np.float64
    np.testing.assert_allclose(A, _reference(Q, K, scale, bias, mask, 1.0), rtol=1e-13, atol=0)
    assert (A[:, ~mask] == 0).all()
    # the bias matters, and None is exactly the bias-free matrix
    assert np.abs(A - softmax64(Q, K, scale, mask)).max() > 0.1
    np.testing.assert_array_equal(
        softmax64(Q, K, scale, mask, bias=None), softmax64(Q, K, scale, mask)
    )
    # one [L, L] bias broadcasts over heads
    np.testing.assert_allclose(
        softmax64(Q, K, scale, mask, bias=bias[0]),
        _reference(Q, K, scale, bias[[0, 0]], mask, 1.0),
        rtol=1e-13,
        atol=0,
    )


def test_softmax64_temperature_divides_the_whole_logit(rng):
    Q = rng.normal(size=(1, 5, 4))
    K = rng.normal(size=(1, 5, 4))
    bias = rng.normal(scale=2.0, size=(1, 5, 5))
    mask = np.ones((5, 5), dtype=bool)
    A = softmax64(Q, K, 0.5, mask, t=2.5, bias=bias)
    np.testing.assert_allclose(A, _reference(Q, K, [0.5], bias, mask, 2.5), rtol=1e-13, atol=0)
    # not softmax(scale Q K^T / t + bias): the bias is divided by t as well
    wrong = _reference(Q, K, [0.5 / 2.5], bias, mask, 1.0)
    assert np.abs(A - wrong).max() > 1e-3


@pytest.mark.parametrize(
    "bias, match",
    [(np.zeros((4, 3)), "broadcastable"), (np.full((3, 3), np.nan), "finite")],
)
def test_softmax64_refuses_a_bad_bias(bias, match):
    Q = np.ones((3, 2))
    with pytest.raises(ParameterError, match=match) as info:
        softmax64(Q, Q, 1.0, bias=bias)
    assert info.value.name == "bias"


def test_softmax64_large_logits_do_not_overflow():
    Q = np.array([[1000.0], [-1000.0]])
    A = softmax64(Q, Q, 1.0)
    assert np.isfinite(A).all()
    np.testing.assert_allclose(A.sum(-1), 1.0)


@pytest.mark.parametrize(
    "A, match",
    [
        (np.ones(3), "shape"),
        (np.array([[np.nan, 1.0]]), "finite"),
        (np.array([[-0.1, 1.1]]), ">= 0"),
        (np.array([[0.5, 0.6]]), "sums to"),
    ],
)
def test_check_attention_rejects_bad_input(A, match):
    with pytest.raises(ParameterError, match=match):
        check_attention(A)


def test_check_attention_renormalize():
    A = check_attention(np.array([[1.0, 3.0]]), renormalize=True)
    np.testing.assert_allclose(A, [[[0.25, 0.75]]])
