"""The exchange-swap experiment on row-span row sets (experiments/rowspan_swaps.py)."""

import numpy as np

from analysis.brackets import stages
from analysis.brackets.rowspan import RowSpan
from analysis.brackets.verify import certified_lower_margin
from experiments.rowspan_swaps import SETTINGS, exchange_swaps

MINILM = np.load("data/examples/minilm_l64_4heads.npy")


def _f32(X):
    return np.asarray(X, dtype=np.float32).astype(np.float64)


def test_swaps_never_return_a_row_set_below_the_start():
    """From engine 5's pivoted-QR row set, the swapped row set's witness re-certifies
    (independently of the routine) at no less than engine 5's own certified margin."""
    improved = 0
    for A in MINILM:
        fam = RowSpan(A, reweights=SETTINGS.reweights, ridge=SETTINGS.ridge)
        engine = stages.Builder(A, None)
        for m in (8, 16):
            start = fam.evaluate(engine, m)  # engine 5's certified margin at size m
            got = exchange_swaps(stages.Builder(A, None), fam.order[:m], sweeps=2, n_out=3, n_in=3)
            assert got.start_margin == start
            S = got.rows
            assert S.shape == (m,) and len(set(S.tolist())) == m
            assert S.min() >= 0 and S.max() < A.shape[0]
            # a row-span witness of the returned rows: Y lives on S only
            off = np.ones(A.shape[0], dtype=bool)
            off[S] = False
            assert got.R.shape == (A.shape[1], m) and got.Y.shape == (m, A.shape[0])
            assert not got.Y[:, off].any()
            mu = certified_lower_margin(A, _f32(got.R), _f32(got.Y))
            assert mu == got.margin
            assert mu >= start, (m, mu, start)
            improved += mu > start
    # not vacuous: the swaps do raise the certificate somewhere
    assert improved >= 2
