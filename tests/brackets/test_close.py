"""The closing pass: new start partitions, known-answer closure, never wider, re-verifiable."""

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.brackets import (
    LowerWitness,
    Profile,
    UpperWitness,
    close_brackets,
    profile_matrix,
    search_settings,
)
from analysis.brackets import lower as L
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError
from tests.fixtures.known import blocks, blocks_threshold, permute


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


def _f32(X):
    """Float32 values, as the engine stores witnesses."""
    return np.asarray(X, dtype=np.float32).astype(np.float64)


def test_close_closes_a_known_bracket(rng):
    """Smoothed blocks: r_eps = 4 below the threshold. Start from [3, 4] (exact rank-4
    witness, a size-3 witness from merged blocks); the pass must certify size 4."""
    sizes = [4, 6, 3, 7]
    h = 0.2
    A = permute(blocks(sizes, h), rng)
    eps = 0.5 * blocks_threshold(sizes, h)
    Uf, s, Vt = np.linalg.svd(A)
    U, W = _f32(Uf[:, :4] * s[:4]), _f32(Vt[:4].T)
    upper = UpperWitness(4, certified_upper_error(A, U, W), "svd", U, W)
    assert upper.error <= eps
    # size 3: two blocks merged into one group
    _, inv = np.unique(A.T.round(12), axis=0, return_inverse=True)
    merged = np.minimum(inv.ravel(), 2)
    R, Y, _ = L.group_witness(A, merged, 3)
    R, Y = _f32(R), _f32(Y)
    lower = LowerWitness(3, certified_lower_margin(A, R, Y), "merged", R, Y)
    assert lower.margin > eps
    start = Profile(A.shape, {4: upper}, {3: lower}, (eps,), "fast")
    assert start.bracket(eps) == (3, 4)
    closed = close_brackets(A, start)
    assert closed.bracket(eps) == (4, 4)
    w = closed.lower[4]
    assert w.method.startswith("close")
    assert certified_lower_margin(A, w.R, w.Y) == w.margin > eps
    assert closed.effort == "fast" and closed.stats["closing_pass"] == "default"


@pytest.mark.parametrize("seed", [0, 3])
def test_close_never_widens_and_every_witness_reverifies(seed):
    A = _smooth_head(np.random.default_rng(seed))
    eps = (0.05, 0.1, 0.2)
    cheap = profile_matrix(A, eps=eps, effort="fast", prune=False)  # no refinement
    closed = close_brackets(A, cheap, prune=False)
    for (lo0, hi0), (lo1, hi1) in zip(
        [cheap.bracket(e) for e in eps], [closed.bracket(e) for e in eps], strict=True
    ):
        assert lo1 >= lo0 and hi1 <= hi0 and lo1 <= hi1
    for w in closed.upper.values():
        assert certified_upper_error(A, w.U, w.W) == w.error
    for w in closed.lower.values():
        assert certified_lower_margin(A, w.R, w.Y) == w.margin > 0


def test_close_with_fast_settings_changes_nothing(rng):
    A = _smooth_head(rng, n=24)
    eps = (0.05, 0.1, 0.2)
    cheap = profile_matrix(A, eps=eps, effort="fast", prune=False)
    same = close_brackets(A, cheap, effort="fast", prune=False)
    assert [same.bracket(e) for e in eps] == [cheap.bracket(e) for e in eps]
    assert same.reverify(A) == []


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"effort": "slow"}, "effort"),
        ({"profile": "not a profile"}, "profile"),
        ({"profile": Profile((4, 5), {}, {}, (0.1,), "fast")}, "profile"),
        ({"eps": []}, "eps"),
    ],
)
def test_close_brackets_names_the_bad_parameter(kwargs, param):
    A = np.full((4, 4), 0.25)
    args = {"profile": Profile((4, 4), {}, {}, (0.1,), "fast")} | kwargs
    with pytest.raises(ParameterError, match=param):
        close_brackets(A, **args)


def test_fast_effort_has_no_closing_pass(rng):
    A = _smooth_head(rng, n=24)
    fast = search_settings("fast")
    assert fast.rounds == fast.close_upper_steps == fast.close_lower_steps == 0
    prof = profile_matrix(A, eps=(0.1,), effort="fast")
    assert prof.stats["seconds"]["close"] < 0.05
    assert not any(w.method.startswith("close") for w in prof.lower.values())


def test_unpruned_profile_keeps_near_misses_with_the_same_brackets(rng):
    A = _smooth_head(rng, n=32)
    eps = (0.05, 0.1, 0.2)
    pruned = profile_matrix(A, eps=eps, effort="default")
    full = profile_matrix(A, eps=eps, effort="default", prune=False)
    assert [full.bracket(e) for e in eps] == [pruned.bracket(e) for e in eps]
    assert set(pruned.upper) <= set(full.upper) and set(pruned.lower) <= set(full.lower)
    assert len(full.upper) + len(full.lower) > len(pruned.upper) + len(pruned.lower)
    # the kept witnesses that decide nothing are still certified values
    for w in full.upper.values():
        assert certified_upper_error(A, w.U, w.W) == w.error
    for w in full.lower.values():
        assert certified_lower_margin(A, w.R, w.Y) == w.margin > 0
