"""Brackets on matrices whose r_eps is known in closed form (docs/method.md section 3)."""

import numpy as np
import pytest

from analysis.brackets import profile_matrix
from tests.fixtures.known import aI_bJ, aI_bJ_threshold, blocks, blocks_threshold, permute

EPS = (0.05, 0.1, 0.2, 0.5)


@pytest.mark.parametrize("effort", ["fast", "default"])
def test_uniform_rows_rank_one(rng, effort):
    A = np.full((12, 20), 1 / 20)
    prof = profile_matrix(A, eps=EPS, effort=effort)
    assert [prof.bracket(e) for e in EPS] == [(1, 1)] * len(EPS)


def test_identity_full_rank(rng):
    A = permute(np.eye(16), rng)
    prof = profile_matrix(A, eps=EPS, effort="fast")
    assert [prof.bracket(e) for e in EPS] == [(16, 16)] * len(EPS)


def test_permuted_blocks(rng):
    sizes = [3, 5, 2, 6, 4]
    A = permute(blocks(sizes), rng)
    prof = profile_matrix(A, eps=EPS, effort="fast")
    assert [prof.bracket(e) for e in EPS] == [(5, 5)] * len(EPS)


@pytest.mark.parametrize("h", [0.2, 0.5])
def test_smoothed_blocks_exact_below_threshold(rng, h):
    sizes = [4, 6, 3, 7]
    A = permute(blocks(sizes, h), rng)
    thr = blocks_threshold(sizes, h)
    eps = (0.98 * thr, 0.5 * thr)
    prof = profile_matrix(A, eps=eps, effort="fast")
    for e in eps:
        assert prof.bracket(e) == (4, 4), (e, thr)


@pytest.mark.parametrize("a", [0.3, 0.7])
def test_aI_bJ_full_rank_below_threshold(rng, a):
    N = 10
    A = permute(aI_bJ(N, a), rng)
    thr = aI_bJ_threshold(N, a)
    prof = profile_matrix(A, eps=(0.98 * thr,), effort="fast")
    assert prof.bracket(0.98 * thr) == (N, N)


def test_eps_at_least_one():
    A = np.full((5, 7), 1 / 7)
    prof = profile_matrix(A, eps=(1.0, 1.5), effort="fast")
    # The zero witness has certified error max row sum + allowance, just above 1.
    assert prof.bracket(1.5) == (0, 0)
    lo, hi = prof.bracket(1.0)
    assert lo == 0 and hi == 1
    assert prof.upper_end(1.5).rank == 0
