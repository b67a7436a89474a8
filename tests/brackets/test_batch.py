"""Several matrices profiled side by side (``profile_matrices``) and in blocks (``profile_file``)."""

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.brackets import profile_matrices, profile_matrix
from analysis.brackets.io import MatrixInput, profile_file
from analysis.executor import RunSpec
from analysis.validation import ParameterError
from tests.fixtures.known import aI_bJ, aI_bJ_threshold, blocks, blocks_threshold, permute

EPS = (0.05, 0.1, 0.2)


def smooth_stack(rng, h=3, n=24):
    X = rng.normal(size=(h, n, 3))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return softmax64(X, X, np.linspace(3.0, 9.0, h))


def test_known_answers_side_by_side(rng):
    """Three different known answers in one batch: each keeps its own exact rank."""
    sizes, h = [5, 7, 4, 8], 0.2
    smoothed = permute(blocks(sizes, h), rng)
    eps_b = 0.5 * blocks_threshold(sizes, h)
    ident = permute(aI_bJ(24, 0.9), rng)
    eps_i = 0.9 * aI_bJ_threshold(24, 0.9)
    uniform = np.full((24, 24), 1 / 24)
    grid = (eps_b, eps_i)
    profs = profile_matrices([smoothed, ident, uniform], eps=grid)
    assert profs[0].bracket(eps_b) == (4, 4)
    assert profs[1].bracket(eps_i) == (24, 24)
    assert profs[2].bracket(eps_b) == (1, 1) and profs[2].bracket(eps_i) == (1, 1)
    for A, p in zip([smoothed, ident, uniform], profs, strict=True):
        assert p.reverify(A) == []
        assert p.stats["batch"] == 3


def test_batched_search_sound_and_not_worse_than_fast(rng):
    A = smooth_stack(rng)
    profs = profile_matrices(A, eps=EPS)
    for a, p in zip(A, profs, strict=True):
        assert p.reverify(a) == []
        fast = profile_matrix(a, eps=EPS, effort="fast")
        for b, f in zip(p.brackets(EPS), fast.brackets(EPS), strict=True):
            assert f.lo <= b.lo <= b.hi <= f.hi


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"A": []}, "A"),
        ({"A": [np.full((4, 4), 0.25), np.full((4, 5), 0.2)]}, "A"),
        ({"A": [np.full((4, 4), 0.25)] * 2, "previous": [None] * 3}, "previous"),
        ({"A": [np.full((4, 4), 0.25)], "effort": "slow"}, "effort"),
    ],
)
def test_invalid_input_names_the_parameter(kwargs, param):
    A = kwargs.pop("A")
    with pytest.raises(ParameterError, match=param):
        profile_matrices(A, eps=EPS, **kwargs)


def _data(A):
    return MatrixInput(A, [None] * len(A), [None] * len(A), "sha", None, False)


def _brackets(profs):
    return [p.brackets(EPS) for p in profs]


def test_blocks_do_not_depend_on_workers_and_resume_whole(rng, tmp_path):
    """Fixed blocks: the same brackets with 1 or 2 workers, and a resumed run (one
    block stored, one torn away) gives those of an uninterrupted one."""
    data = _data(smooth_stack(rng, h=5, n=20))
    one = profile_file(data, eps=EPS, execution=RunSpec(workers=1, batch=2, progress=False))
    two = profile_file(data, eps=EPS, execution=RunSpec(workers=2, batch=2, progress=False))
    assert _brackets(one) == _brackets(two)
    ck = tmp_path / "ck.jsonl"
    profile_file(data, eps=EPS, checkpoint=ck, execution=RunSpec(batch=2, progress=False))
    lines = ck.read_text().splitlines()
    assert len(lines) == 5
    ck.write_text("\n".join(lines[:3]) + "\n")  # block 0 stored; block 1 only half
    resumed = profile_file(data, eps=EPS, checkpoint=ck, execution=RunSpec(batch=2, progress=False))
    assert _brackets(resumed) == _brackets(one)
    assert len(ck.read_text().splitlines()) == 5


def test_batch_is_validated(rng):
    with pytest.raises(ParameterError, match="^batch:"):
        profile_file(
            _data(smooth_stack(rng, h=2)), eps=EPS, execution=RunSpec(batch=0, progress=False)
        )


def test_previous_profiles_are_kept_per_matrix(rng):
    A = smooth_stack(rng, h=2, n=20)
    first = profile_matrix(A[0], eps=(0.1,), effort="fast")
    profs = profile_matrices(A, eps=(0.3,), effort="fast", previous=[first, None])
    assert profs[0].eps_targets == (0.1, 0.3) and profs[1].eps_targets == (0.3,)
    lo, hi = first.bracket(0.1)
    lo2, hi2 = profs[0].bracket(0.1)
    assert lo2 >= lo and hi2 <= hi  # the earlier witnesses were re-verified and kept
    assert all(p.reverify(a) == [] for a, p in zip(A, profs, strict=True))
