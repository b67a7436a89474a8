"""The closing pass: new start partitions, known-answer closure, never wider, re-verifiable."""

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.brackets import lower as L
from analysis.brackets import profile as P
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from tests.brackets.known import blocks, blocks_threshold, permute

DEFAULT = P._EFFORT_SETTINGS["default"]


def _smooth_head(rng, n=32, d=3, beta=6.0):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return softmax64(X, X, beta)


def _partition_ok(lab, N, m):
    return lab.shape == (N,) and set(np.unique(lab)) == set(range(m))


def test_kmeans_partitions_have_m_groups_and_are_deterministic(rng):
    A = _smooth_head(rng)
    parts = L.kmeans_partitions(A, 5, [0, 1])
    assert 1 <= len(parts) <= 4
    assert all(_partition_ok(lab, A.shape[1], 5) for lab in parts)
    again = L.kmeans_partitions(A, 5, [0, 1])
    assert all((a == b).all() for a, b in zip(parts, again, strict=True))


def test_kmeans_partitions_find_blocks(rng):
    sizes = [4, 6, 3, 7]
    A = permute(blocks(sizes, 0.2), rng)
    for lab in L.kmeans_partitions(A, 4, [0]):
        # every group is one block: columns with equal profiles share a label
        _, inv = np.unique(A.T.round(12), axis=0, return_inverse=True)
        assert len(set(zip(inv.ravel(), lab, strict=True))) == 4


def test_split_partitions_split_exactly_one_group(rng):
    A = _smooth_head(rng)
    labels = L.column_partitions(A, [4], method="ward")[0]
    R, _, _ = L.group_witness(A, labels, 4)
    splits = L.split_partitions(A, R, limit=3)
    assert 1 <= len(splits) <= 3
    for lab in splits:
        assert _partition_ok(lab, A.shape[1], 5)
        pairs = set(zip(labels, lab, strict=True))
        # each old group maps to one new group, except one that maps to two
        per_old = np.bincount([a for a, _ in pairs], minlength=4)
        assert sorted(per_old) == [1, 1, 1, 2]


def _builder_brackets(b, eps):
    return [(b.lo(e), b.hi(e)) for e in eps]


def test_close_closes_a_known_bracket(rng):
    """Smoothed blocks: r_eps = 4 below the threshold. Start from [3, 4] (exact rank-4
    witness, a size-3 witness from merged blocks); the pass must certify size 4."""
    sizes = [4, 6, 3, 7]
    h = 0.2
    A = permute(blocks(sizes, h), rng)
    eps = 0.5 * blocks_threshold(sizes, h)
    b = P._Builder(A, None)
    P._trivial(b)
    Uf, s, Vt = np.linalg.svd(A)
    assert b.offer_upper(Uf[:, :4] * s[:4], Vt[:4].T, "svd") <= eps
    # size 3: two blocks merged into one group
    _, inv = np.unique(A.T.round(12), axis=0, return_inverse=True)
    merged = np.minimum(inv.ravel(), 2)
    R, Y, _ = L.group_witness(A, merged, 3)
    assert b.offer_lower(R, Y, "merged") > eps
    assert _builder_brackets(b, [eps]) == [(3, 4)]
    cache = {"svd_V": Vt.T, "groups": {}}
    P._close([b], [cache], [eps], DEFAULT)
    assert _builder_brackets(b, [eps]) == [(4, 4)]
    w = b.lower[4]
    assert w.method.startswith("close")
    assert certified_lower_margin(A, w.R, w.Y) == w.margin > eps


@pytest.mark.parametrize("seed", [0, 3])
def test_close_never_widens_and_every_witness_reverifies(seed):
    A = _smooth_head(np.random.default_rng(seed))
    eps = (0.05, 0.1, 0.2)
    b = P._Builder(A, None)
    P._trivial(b)
    cache = P._cheap_stage(b, eps)
    before = _builder_brackets(b, eps)
    P._close([b], [cache], eps, DEFAULT)
    after = _builder_brackets(b, eps)
    for (lo0, hi0), (lo1, hi1) in zip(before, after, strict=True):
        assert lo1 >= lo0 and hi1 <= hi0 and lo1 <= hi1
    for w in b.upper.values():
        assert certified_upper_error(A, w.U, w.W) == w.error
    for w in b.lower.values():
        assert certified_lower_margin(A, w.R, w.Y) == w.margin > 0


def test_fast_effort_has_no_closing_pass(rng):
    A = _smooth_head(rng, n=24)
    prof = P.profile_matrix(A, eps=(0.1,), effort="fast")
    assert prof.stats["seconds"]["close"] < 0.05
    assert not any(w.method.startswith("close") for w in prof.lower.values())


def test_unpruned_profile_keeps_near_misses_with_the_same_brackets(rng):
    A = _smooth_head(rng, n=32)
    eps = (0.05, 0.1, 0.2)
    pruned = P.profile_matrix(A, eps=eps, effort="default")
    full = P.profile_matrix(A, eps=eps, effort="default", prune=False)
    assert [full.bracket(e) for e in eps] == [pruned.bracket(e) for e in eps]
    assert set(pruned.upper) <= set(full.upper) and set(pruned.lower) <= set(full.lower)
    assert len(full.upper) + len(full.lower) > len(pruned.upper) + len(pruned.lower)
    # the kept witnesses that decide nothing are still certified values
    for w in full.upper.values():
        assert certified_upper_error(A, w.U, w.W) == w.error
    for w in full.lower.values():
        assert certified_lower_margin(A, w.R, w.Y) == w.margin > 0
