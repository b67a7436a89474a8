"""Engine 6's economies (2026-12-07, second attempt): one certificate per row set, the
cheap stage's group masses by column sums, refinement batches of similar rank. Each
changes which candidates are certified or how they are computed, never how they are
certified: every witness still goes through the float64 verifier."""

import dataclasses

import numpy as np
import pytest

from analysis.brackets import lower, profile_matrix, stages
from analysis.brackets.rowspan import RowSpan, computed_margin, offer_best
from analysis.brackets.settings import SWAP_SETTINGS, rowspan_settings
from analysis.brackets.stages_rowspan import rank_groups
from analysis.brackets.swaps import certified_rowset, rowset_members
from analysis.brackets.verify import certified_lower_margin

EPS = (0.05, 0.1, 0.2)
MINILM = np.load("data/examples/minilm_l64_4heads.npy")


def _f32(X):
    return np.asarray(X, dtype=np.float32).astype(np.float64)


class _Counting(stages.Builder):
    """A builder that counts the candidates it certifies."""

    def __init__(self, A):
        super().__init__(A, None)
        self.offers = 0

    def offer_lower(self, R, Y, method):
        self.offers += 1
        return super().offer_lower(R, Y, method)


def test_engine6_settings_pinned():
    """The second attempt's settings (the first engine 6 certified every member, built
    group masses by products and ran one batch per round)."""
    for effort in ("default", "thorough"):
        s = SWAP_SETTINGS[effort]
        assert (s.certify_all, s.group_sums, s.split) == (False, True, 0.7)
        assert s.rowspan == dataclasses.replace(rowspan_settings(effort), group_max_size=0)
        assert (s.swaps, s.swap_sweeps, s.swap_out, s.swap_in) == (True, 1, 2, 2)


def test_computed_margin_is_the_plain_margin_of_the_member():
    rs = rowspan_settings("default")
    for A in MINILM[:2]:
        fam = RowSpan(A, reweights=rs.reweights, ridge=rs.ridge)
        for m in (3, 9, 20):
            for R, Y in fam.members(m):
                mc = computed_margin(A, fam.order[:m], R, Y)
                assert mc == pytest.approx(lower.normalized_margins(A, R, Y).min(), rel=1e-9)


@pytest.mark.parametrize("m", [4, 10, 24])
def test_offer_best_certifies_one_member_near_the_best_of_all(m):
    """One certificate per row set (not seven), and the member it certifies is within
    1e-4 (relative) of the best certified margin over every member; that margin
    re-certifies independently and the builder keeps it."""
    rs = rowspan_settings("default")
    for A in MINILM:
        fam = RowSpan(A, reweights=rs.reweights, ridge=rs.ridge)
        S = fam.order[:m]
        members = list(fam.members(m))
        every = max(certified_lower_margin(A, _f32(R), _f32(Y)) for R, Y in members)
        b = _Counting(A)
        mu, R, Y = offer_best(b, S, iter(members), "rowspan")
        assert b.offers == 1
        assert mu == certified_lower_margin(A, _f32(R), _f32(Y)) == b.lower[m].margin
        assert mu >= every * (1 - 1e-4)


def test_certified_rowset_one_certificate_per_row_set():
    rs = rowspan_settings("default")
    A = MINILM[3]
    S = RowSpan(A, reweights=rs.reweights, ridge=rs.ridge).order[:12]
    b_all, b_one = _Counting(A), _Counting(A)
    mu_all = certified_rowset(b_all, S, reweights=rs.reweights, ridge=rs.ridge)[0]
    mu_one = certified_rowset(b_one, S, reweights=rs.reweights, ridge=rs.ridge, certify_all=False)[
        0
    ]
    n = len(list(rowset_members(A, S, reweights=rs.reweights, ridge=rs.ridge)))
    assert (b_all.offers, b_one.offers) == (n, 1) and n == rs.reweights + 1
    assert mu_all * (1 - 1e-4) <= mu_one <= mu_all


def test_group_witness_sums_chooses_the_rows_of_group_witness():
    """Same 0/1 indicator, same chosen rows (for one group every row has mass 1 up to
    rounding, so the choice is a tie), margins equal to rounding, at every size of both
    column partitions of the cheap stage; its witnesses certify as computed."""
    for A in MINILM[:2]:
        sizes = list(range(1, 41))
        for method in ("ward", "average-cosine"):
            labels = lower.column_partitions(A, sizes, method=method)
            for m in sizes:
                R1, Y1, m1 = lower.group_witness(A, labels[m - 1], m)
                R2, Y2, m2 = lower.group_witness_sums(A, labels[m - 1], m)
                assert (R1 == R2).all()
                if m > 1:  # one group: every row's mass is 1 up to rounding, a tie
                    assert (np.abs(Y1).sum(0) > 0).tolist() == (np.abs(Y2).sum(0) > 0).tolist()
                if m1 > 1e-3:  # below, B_S is ill-conditioned and its inverse amplifies rounding
                    assert m2 == pytest.approx(m1, rel=1e-4)
                if m2 > 1e-3:
                    mu = certified_lower_margin(A, _f32(R2), _f32(Y2))
                    assert mu == pytest.approx(m2, rel=1e-4)


def test_rank_groups_partition_and_bound_the_padding():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ranks = rng.integers(1, 200, size=rng.integers(1, 9)).tolist()
        groups = rank_groups(ranks, 0.7)
        assert sorted(i for g in groups for i in g) == list(range(len(ranks)))
        for g in groups:
            assert g == sorted(g)
            assert min(ranks[i] for i in g) >= 0.7 * max(ranks[i] for i in g)
        assert rank_groups(ranks, 0.0) == [list(range(len(ranks)))]


def test_engine6_profiles_reverify_on_minilm64():
    """Every end engine 6 reports re-verifies; its brackets are proper."""
    for A in MINILM:
        prof = profile_matrix(A, eps=EPS, engine=6)
        assert prof.reverify(A) == []
        for e in EPS:
            lo, hi = prof.bracket(e)
            assert 1 <= lo <= hi
