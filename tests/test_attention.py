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
