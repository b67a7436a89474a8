"""Synthetic families: (Q, K, scale) reproduce A through softmax64; parameters are checked."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.sources import synthetic
from analysis.validation import ParameterError

FAMILIES = {
    "spherical": lambda: synthetic.spherical(30, 4, 5.0, random_state=1),
    "ball": lambda: synthetic.full_ball(30, 4, 5.0, random_state=1),
    "uniform": lambda: synthetic.uniform_rows(9),
    "identity": lambda: synthetic.identity(9),
    "blocks": lambda: synthetic.permuted_blocks(20, 3, random_state=2),
    "mixed_blocks": lambda: synthetic.mixed_blocks(20, 3, 0.3, random_state=2),
    "diag_plus_const": lambda: synthetic.diagonal_plus_constant(9, 0.6),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_softmax64_reproduces_each_family(name):
    sm = FAMILIES[name]()
    n = sm.length
    assert sm.A.shape == (n, n) and sm.Q.shape[0] == n and sm.K.shape == sm.Q.shape
    np.testing.assert_allclose(sm.A.sum(1), 1.0, atol=1e-12)
    assert (sm.A >= 0).all()
    np.testing.assert_allclose(softmax64(sm.Q, sm.K, sm.scale), sm.A, atol=1e-12, rtol=0)


def test_planted_zeros_are_exact():
    for sm in (synthetic.identity(7), synthetic.permuted_blocks(12, 4, random_state=0)):
        A = softmax64(sm.Q, sm.K, sm.scale)
        np.testing.assert_array_equal(A == 0, sm.A == 0)
        np.testing.assert_array_equal(A, sm.A)


def test_blocks_have_the_planted_rank_and_known_answers():
    sm = synthetic.permuted_blocks(20, 3, random_state=5)
    assert np.linalg.matrix_rank(sm.A) == 3
    assert sm.known_rank == {"rank": 3, "eps_below": 1.0}
    assert not np.array_equal(sm.A, synthetic.permuted_blocks(20, 3, random_state=6).A)
    mixed = synthetic.mixed_blocks(20, 3, 0.25, random_state=5)
    # METHOD section 3: (1-h) / (1 + h - 2 h n_min / N), n_min = 6 for 20 = 7 + 7 + 6
    assert mixed.known_rank["eps_below"] == pytest.approx(0.75 / (1.25 - 0.5 * 6 / 20))
    dpc = synthetic.diagonal_plus_constant(8, 0.5)
    inv_norm = np.abs(np.linalg.inv(dpc.A)).sum(1).max()
    assert dpc.known_rank["eps_below"] == pytest.approx(1 / inv_norm)


def test_points_geometry_and_seeding():
    s = synthetic.spherical(50, 3, 2.0, random_state=4)
    np.testing.assert_allclose(np.linalg.norm(s.Q, axis=1), 1.0)
    b = synthetic.full_ball(500, 3, 2.0, random_state=4)
    r = np.linalg.norm(b.Q, axis=1)
    assert (r <= 1).all() and np.median(r) == pytest.approx(0.5 ** (1 / 3), abs=0.05)
    np.testing.assert_array_equal(s.A, synthetic.spherical(50, 3, 2.0, random_state=4).A)
    rng = np.random.default_rng(0)
    assert synthetic.spherical(5, 2, 1.0, random_state=rng).params["seed"] is None
    assert s.checkpoint_id == 'spherical{"beta": 2.0, "d": 3}'


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: synthetic.spherical(0, 3, 1.0), "n"),
        (lambda: synthetic.spherical(5, 3, -1.0), "beta"),
        (lambda: synthetic.full_ball(5, 0, 1.0), "d"),
        (lambda: synthetic.permuted_blocks(4, 5), "m"),
        (lambda: synthetic.mixed_blocks(10, 2, 1.0), "h"),
        (lambda: synthetic.diagonal_plus_constant(4, 0.0), "a"),
        (lambda: synthetic.spherical(5, 3, 1.0, random_state="x"), "random_state"),
    ],
)
def test_bad_parameters_are_named(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name
