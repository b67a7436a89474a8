"""Row-span lower witnesses and engine 5 (analysis.brackets.rowspan, stages_rowspan)."""

import json

import numpy as np
import pytest
import torch

from analysis.brackets import lower, profile_matrices, profile_matrix, stages, stages_rowspan
from analysis.brackets.lower import group_witness, normalized_margins
from analysis.brackets.optim import Problems
from analysis.brackets.rowspan import RowSpan, inverse_transform, right_inverse, row_order
from analysis.brackets.settings import rowspan_settings
from analysis.brackets.upper import refine_upper
from analysis.brackets.verify import certified_lower_margin
from analysis.datasets import example_head
from tests.fixtures.known import aI_bJ, aI_bJ_threshold, blocks, permute

EPS = (0.05, 0.1, 0.2)
MINILM = np.load("data/examples/minilm_l64_4heads.npy")


def _builder(A):
    b = stages.Builder(A, None)
    stages.trivial_witnesses(b)
    return b


def test_engine5_profiles_reverify_and_use_rowspan():
    """Every end engine 5 reports re-verifies; row-span candidates decide some ends."""
    profs = [profile_matrix(A, eps=EPS, engine=5) for A in MINILM[[0, 2]]]
    profs += profile_matrices([example_head(seed=s) for s in (0, 3)], eps=EPS, engine=5)
    mats = [MINILM[0], MINILM[2], example_head(seed=0), example_head(seed=3)]
    methods = []
    for A, prof in zip(mats, profs, strict=True):
        assert prof.reverify(A) == []
        methods += [prof.stats["methods"][f"{e:g}"]["lower"] for e in EPS]
    assert any("rowspan" in m or "+inv" in m for m in methods), methods


def test_engine5_no_wider_than_engine4_on_minilm64():
    """On the four N = 64 heads engine 5's lower ends are at least engine 4's."""
    for A in MINILM:
        b4 = profile_matrix(A, eps=EPS, engine=4).brackets(EPS)
        b5 = profile_matrix(A, eps=EPS, engine=5).brackets(EPS)
        assert all(x.lo >= y.lo for x, y in zip(b5, b4, strict=True)), (b4, b5)


def test_row_order_is_a_permutation_with_independent_first_rows(rng):
    A = permute(blocks([3, 5, 2, 6]), rng)
    order = row_order(A)
    assert sorted(order.tolist()) == list(range(len(A)))
    assert np.linalg.matrix_rank(A[order[:4]]) == 4


def test_right_inverse_inverts_the_row_block():
    A = example_head(n=12, seed=1)
    AS = A[row_order(A)[:5]]
    d = np.linspace(0.5, 2.0, 12)
    R = right_inverse(AS, d, 0.0)
    np.testing.assert_allclose(AS @ R, np.eye(5), atol=1e-9)


def test_known_answer_blocks(rng):
    """Four uniform blocks: rank 4, so ``r_eps = 4`` for every eps < 1. The row-span family
    certifies size 4 (margin about 1) and nothing at size 5 (no positive margin can exist)."""
    A = permute(blocks([3, 5, 2, 6]), rng)
    b = _builder(A)
    fam = RowSpan(A, reweights=6, ridge=1e-4)
    assert fam.evaluate(b, 4) > 0.99
    assert not fam.evaluate(b, 5) > 0
    assert fam.scan(b, 0.5, 1, 16, 9) == 4
    assert b.lo(0.5) == 4


def test_known_answer_identity_and_diagonal_plus_constant(rng):
    """The identity: ``r_eps = N`` for eps < 1. ``a I + b J``: ``r_eps = N`` exactly for
    eps below ``1 / ||(a I + b J)^-1||_inf``; the full-size row-span witness (``R`` the
    inverse) reaches that threshold, so the scan closes the bracket just below it."""
    A = permute(np.eye(10), rng)
    b = _builder(A)
    assert RowSpan(A, reweights=2, ridge=1e-4).scan(b, 0.9, 1, 10, 9) == 10
    A = aI_bJ(12, 0.3)
    thr = aI_bJ_threshold(12, 0.3)
    b = _builder(A)
    fam = RowSpan(A, reweights=6, ridge=1e-4)
    assert fam.scan(b, 0.98 * thr, 1, 12, 9) == 12
    # ...and no witness of any kind can certify above the threshold at full size
    assert fam.evaluate(b, 12) <= thr


def test_every_kept_rowspan_witness_is_certified():
    """The family's best margins are the verifier's values of float32-rounded arrays."""
    A = MINILM[2]
    b = _builder(A)
    fam = RowSpan(A, reweights=6, ridge=1e-4)
    fam.scan(b, 0.1, 1, 20, 9)
    assert fam.best
    for m, w in b.lower.items():
        assert certified_lower_margin(A, w.R, w.Y) == w.margin
        assert np.array_equal(w.R, w.R.astype(np.float32).astype(np.float64))
        if m in fam.best and w.method == "rowspan":
            assert fam.best[m][0] == w.margin


def _dominant_start(A, m, seed):
    """A perturbed group witness whose ``Y A R`` is strictly diagonally dominant."""
    from analysis.brackets.lower import column_partitions

    labels = column_partitions(A, [m])[0]
    R, Y, _ = group_witness(A, labels, m)
    rng = np.random.default_rng(seed)
    Y = Y + 0.02 * np.abs(rng.normal(size=Y.shape)) * (Y != 0)
    R = R + 0.05 * rng.normal(size=R.shape)
    return R, Y


@pytest.mark.parametrize("seed", range(6))
def test_inverse_transform_never_lowers_a_dominant_margin(seed):
    """Varah: for ``Y A R`` strictly diagonally dominant, ``(Y A R)^-1 Y`` keeps or raises
    the margin. Certified values carry rounding allowances of order 1e-13, far below the
    1e-9 relative slack."""
    A = example_head(n=24, seed=seed)
    R, Y = _dominant_start(A, 4, seed)
    before = certified_lower_margin(A, R, Y)
    assert before > 0  # the case is Varah-dominant
    Y2 = inverse_transform(A, R, Y)
    after = certified_lower_margin(A, R, Y2)
    assert after >= before * (1 - 1e-9)
    assert normalized_margins(A, R, Y2).min() >= normalized_margins(A, R, Y).min() - 1e-12
    # and the transformed G is the identity up to the row scaling
    G = Y2 @ A @ R
    np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-10)


def test_anneal_horizon_defaults_to_the_budget():
    """``horizons=None`` is the engine-4 schedule bit for bit; a longer horizon changes it."""
    A = torch.from_numpy(example_head(n=16, seed=2))[None].float()
    rng = np.random.default_rng(0)
    U0 = torch.from_numpy(0.3 * rng.normal(size=(1, 16, 3))).float()
    W0 = torch.from_numpy(0.3 * rng.normal(size=(1, 16, 3))).float()
    run = (torch.tensor([3]), torch.tensor([0.01]), torch.tensor([120]))
    steps = run[2]
    U1, W1, e1 = refine_upper(A, U0, W0, Problems(*run))
    U2, W2, e2 = refine_upper(A, U0, W0, Problems(*run, horizons=steps.double()))
    U3, _, _ = refine_upper(A, U0, W0, Problems(*run, horizons=4 * steps.double()))
    assert torch.equal(U1, U2) and torch.equal(W1, W2) and torch.equal(e1, e2)
    assert not torch.equal(U1, U3)


def test_engine5_witnesses_reverify_after_a_file_round_trip(rng):
    """Witnesses read back from JSON (C-ordered arrays) re-check exactly: the search must
    certify them in the layout a file gives them (a transposed right inverse once failed
    here by an ulp)."""
    from analysis.brackets import Profile
    from tests.brackets.test_batch import smooth_stack

    A = smooth_stack(rng, h=5, n=20)
    for s in (0, 2):
        profs = profile_matrices(A[s : s + 2], eps=EPS, engine=5)
        for a, prof in zip(A[s : s + 2], profs, strict=True):
            for arrays in ("lists", "float32-base64"):
                back = Profile.from_dict(json.loads(json.dumps(prof.to_dict(arrays=arrays))))
                assert back.reverify(a) == []


@pytest.mark.parametrize(("seed", "eps", "sizes"), [(2, 0.3, (5, 6, 7)), (4, 0.2, (6, 7, 8))])
def test_lower_round_polishes_a_near_miss_once(monkeypatch, seed, eps, sizes):
    """A lower trial with two ascent runs (row-span and group starts) gets at most one LP
    polish, from its better run: these two cases polished twice before the tuning round."""
    calls = []
    polish = lower.lp_polish

    def counting(A, R, Y, rounds):
        calls.append(R.shape[1])
        return polish(A, R, Y, rounds=rounds)

    monkeypatch.setattr(lower, "lp_polish", counting)
    s = rowspan_settings("default")
    b = stages.Builder(example_head(seed=seed), None)
    stages.trivial_witnesses(b)
    cache = stages.cheap_stage(b, [eps])
    stages_rowspan.rowspan_scan([b], [cache], [eps], s)
    assert b.lo(eps) + 1 == sizes[0]
    stages_rowspan._lower_round([b], [cache], [(0, eps, m) for m in sizes], s)
    assert calls, "no near miss was polished: the case no longer tests the rule"
    assert len(calls) == len(set(calls)), f"a size was polished more than once: {calls}"


def test_upper_learning_rate_scale_by_rank():
    """Engine 5's rate factor is 1 up to scaled rank ``lr_rank`` and ``lr_rank / k_N``
    above it (None when off); ``refine_upper`` applies it per problem (a zero factor
    leaves the start)."""
    import dataclasses

    s = rowspan_settings("default")
    scale = stages_rowspan._lr_scale(s, 256)(torch.tensor([12, s.lr_rank, 2 * s.lr_rank]))
    assert scale.tolist() == [1.0, 1.0, 0.5]
    assert stages_rowspan._lr_scale(s, 1024)(torch.tensor([s.lr_rank])).tolist() == [0.5]
    assert stages_rowspan._lr_scale(s, 64)(torch.tensor([12, 64])) is None
    off = dataclasses.replace(s, lr_rank=0)
    assert stages_rowspan._lr_scale(off, 256)(torch.tensor([99])) is None
    A = torch.from_numpy(example_head(n=16, seed=2))[None].float().expand(2, -1, -1)
    rng = np.random.default_rng(0)
    U0 = torch.from_numpy(0.3 * rng.normal(size=(1, 16, 3))).float().expand(2, -1, -1)
    W0 = torch.from_numpy(0.3 * rng.normal(size=(1, 16, 3))).float().expand(2, -1, -1)
    run = (torch.tensor([3, 3]), torch.tensor([0.01, 0.01]), torch.tensor([120, 120]))
    U1, _, e1 = refine_upper(A, U0, W0, Problems(*run))
    U2, _, e2 = refine_upper(A, U0, W0, Problems(*run, lr_scale=torch.tensor([1.0, 0.0])))
    start = (A[0] - U0[0] @ W0[0].T).abs().sum(-1).max()
    assert torch.equal(U2[1], U0[1]) and e2[1] == start  # rate 0: the start is the best
    assert not torch.equal(U1[1], U0[1]) and e1[1] < start
    assert torch.allclose(U2[0], U1[0], atol=1e-5)  # factor 1: engine 4's rate
