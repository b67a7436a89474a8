"""Engine 6: engine 5 whose row-span lower trials start from exchange-swapped row sets
(analysis.brackets.swaps, stages_rowspan.swapped_starts)."""

import json

import numpy as np
import pytest

from analysis.brackets import Profile, profile_matrices, profile_matrix, stages
from analysis.brackets.rowspan import RowSpan
from analysis.brackets.settings import SWAP_SETTINGS, rowspan_settings
from analysis.brackets.swaps import exchange_swaps
from analysis.brackets.verify import certified_lower_margin
from analysis.datasets import example_head
from tests.fixtures.known import aI_bJ, aI_bJ_threshold, blocks, blocks_threshold, permute

EPS = (0.05, 0.1, 0.2)
MINILM = np.load("data/examples/minilm_l64_4heads.npy")


def _f32(X):
    return np.asarray(X, dtype=np.float32).astype(np.float64)


def test_engine6_profiles_reverify_and_use_swapped_starts():
    """Every end engine 6 reports re-verifies (the independent verifier), also after a
    file round trip; swapped row sets were tried."""
    profs = [profile_matrix(A, eps=EPS, engine=6) for A in MINILM[[0, 1]]]
    mats = [example_head(seed=s) for s in (0, 3)]
    profs += profile_matrices(mats, eps=EPS, engine=6)
    for A, prof in zip([*MINILM[[0, 1]], *mats], profs, strict=True):
        assert prof.reverify(A) == []
        for e in EPS:
            lo, hi = prof.bracket(e)
            assert 1 <= lo <= hi
    methods = {w.method for p in profs for w in p.lower.values()}
    assert methods & {"rowspan-swap", "ascent", "ascent+inv"}


def test_engine6_witnesses_reverify_after_a_file_round_trip():
    """Witnesses read back from JSON (C-ordered arrays) re-check exactly."""
    A = MINILM[1]
    prof = profile_matrix(A, eps=EPS, engine=6)
    for arrays in ("lists", "float32-base64"):
        back = Profile.from_dict(json.loads(json.dumps(prof.to_dict(arrays=arrays))))
        assert back.reverify(A) == []
        assert back.brackets(EPS) == prof.brackets(EPS)


def test_engine6_lower_ends_at_least_engine5_on_a_minilm_head():
    """On this N = 64 head engine 6's lower ends are at least engine 5's at every eps and
    above it at one (the swapped starts reach sizes engine 5's QR starts miss); its upper
    ends are engine 5's."""
    A = MINILM[1]
    b5 = profile_matrix(A, eps=EPS, engine=5).brackets(EPS)
    b6 = profile_matrix(A, eps=EPS, engine=6).brackets(EPS)
    assert all(x.lo >= y.lo for x, y in zip(b6, b5, strict=True)), (b5, b6)
    assert any(x.lo > y.lo for x, y in zip(b6, b5, strict=True)), (b5, b6)


def test_identity_and_blocks_known_answers(rng):
    I16 = permute(np.eye(16), rng)
    prof = profile_matrix(I16, eps=EPS, engine=6)
    assert [tuple(b) for b in prof.brackets(EPS)] == [(16, 16)] * 3
    assert prof.reverify(I16) == []
    sizes = [4, 6, 3, 7]
    h = 0.2
    B = permute(blocks(sizes, h), rng)
    thr = blocks_threshold(sizes, h)
    eps = (0.98 * thr, 0.5 * thr)
    prof = profile_matrix(B, eps=eps, engine=6)
    assert [tuple(prof.bracket(e)) for e in eps] == [(4, 4), (4, 4)]
    assert prof.reverify(B) == []


@pytest.mark.parametrize("a", [0.3, 0.7])
def test_aI_bJ_full_rank_below_threshold(rng, a):
    N = 10
    A = permute(aI_bJ(N, a), rng)
    e = 0.98 * aI_bJ_threshold(N, a)
    prof = profile_matrix(A, eps=(e, 0.5), engine=6)
    assert tuple(prof.bracket(e)) == (N, N)
    lo, hi = prof.bracket(0.5)
    assert 1 <= lo <= hi <= N
    assert prof.reverify(A) == []


def test_swaps_never_return_a_row_set_below_the_start():
    """From engine 5's pivoted-QR row set and its certified member, the swapped row set's
    witness re-certifies (independently of the routine) at no less than the start."""
    rs = rowspan_settings("default")
    sw = SWAP_SETTINGS["default"]
    improved = 0
    for A in MINILM:
        fam = RowSpan(A, reweights=rs.reweights, ridge=rs.ridge)
        b = stages.Builder(A, None)
        for m in (6, 12):
            start = fam.evaluate(b, m)
            got = exchange_swaps(
                b,
                fam.order[:m],
                fam.best[m],
                sweeps=sw.swap_sweeps,
                n_out=sw.swap_out,
                n_in=sw.swap_in,
                reweights=rs.reweights,
                ridge=rs.ridge,
            )
            S = got.rows
            assert len(set(S.tolist())) == m and 0 <= S.min() and S.max() < A.shape[0]
            mu = certified_lower_margin(A, _f32(got.R), _f32(got.Y))
            assert mu == got.margin >= start
            assert b.lower[m].margin >= mu  # offered to the builder, which keeps the best
            improved += mu > start
    assert improved >= 2  # not vacuous: the swaps raise the certificate somewhere


def test_engine6_fast_is_engine5_fast():
    """Effort fast has no lower trials, so no swaps: engine 6's brackets are engine 5's."""
    A = MINILM[2]
    assert profile_matrix(A, eps=EPS, effort="fast", engine=6).brackets(EPS) == profile_matrix(
        A, eps=EPS, effort="fast", engine=5
    ).brackets(EPS)
