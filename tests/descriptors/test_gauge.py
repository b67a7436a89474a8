"""Gauge invariance: (Q G, K G^-T) leaves A and every intrinsic feature unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.descriptors import builtin_registry
from analysis.descriptors.describe import describe_arrays
from analysis.descriptors.intrinsic import KAPPA_TOL

EPS = (0.1, 0.5, 1.5)
TEMPS = (1.0, 3.0)


def random_gauge(rng: np.random.Generator, d: int, cond: float) -> np.ndarray:
    """Generic non-orthogonal G with condition number ``cond``."""
    U, _ = np.linalg.qr(rng.normal(size=(d, d)))
    V, _ = np.linalg.qr(rng.normal(size=(d, d)))
    s = np.logspace(0.0, np.log10(cond), d)
    rng.shuffle(s)
    return (U * s) @ V.T


def agrees(a: float, b: float, rel: float) -> bool:
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return abs(a - b) <= rel * max(abs(a), 1e-9)


@pytest.mark.parametrize(
    "cond, rel, causal",
    [(30.0, 1e-6, False), (1e2, 1e-6, True), (1e4, 1e-4, False), (1e4, 1e-4, True)],
)
def test_intrinsic_features_are_gauge_invariant(make_arrays, cond, rel, causal):
    rng = np.random.default_rng(int(cond) + causal)
    data = make_arrays(rng, n_layer=1, n_head=2, L=20, d=4, causal=causal)
    G = random_gauge(rng, 4, cond)
    assert np.linalg.cond(G) == pytest.approx(cond, rel=1e-6)
    assert not np.allclose(G @ G.T, np.eye(4))  # generic: not orthogonal
    gauged = dict(data)
    gauged["Q"] = data["Q"] @ G
    gauged["K"] = data["K"] @ np.linalg.inv(G).T
    # A does not change.
    A0 = softmax64(data["Q"], data["K"], data["scale"], data["mask"], 1.0)
    A1 = softmax64(gauged["Q"], gauged["K"], gauged["scale"], gauged["mask"], 1.0)
    np.testing.assert_allclose(A1, A0, rtol=0, atol=1e-10 if cond > 1e2 else 1e-12)

    blocks = ["native", "intrinsic"]
    df0 = describe_arrays(data, eps=EPS, temperatures=TEMPS, blocks=blocks)
    df1 = describe_arrays(gauged, eps=EPS, temperatures=TEMPS, blocks=blocks)
    cols = [c for c in df0.columns if c.startswith("intrinsic__")]
    assert list(df1.columns) == list(df0.columns)
    # The kappa solver was exercised at several ranks (not only the trivial r = rank C).
    assert df0.filter(like="intrinsic__kappa_r").notna().any().sum() >= 2
    # Converged solves bracket kappa within the block's KAPPA_TOL, which is what makes
    # everything computed from kappa agree to it; the rest must agree to `rel`.
    gaps = pd.concat([df0, df1]).filter(like="intrinsic__kappa_gap_r").to_numpy()
    assert np.nanmax(gaps) <= KAPPA_TOL
    from_kappa = ("intrinsic__kappa", "intrinsic__profile_r", "intrinsic__Pi")
    bad = []
    for c in cols:
        integer = builtin_registry().feature_info(c).integer
        tol = max(rel, KAPPA_TOL) if c.startswith(from_kappa) else rel
        for a, b in zip(df0[c], df1[c], strict=True):
            if integer:
                ok = a == b or (np.isnan(a) and np.isnan(b))
            elif "kappa_gap" in c:
                # gap = value / lower - 1 is a cancellation: the solver-accuracy ratio
                # value / lower = 1 + gap is what must agree to relative `rel`.
                ok = agrees(1 + a, 1 + b, tol)
            else:
                ok = agrees(a, b, tol)
            if not ok:
                bad.append((c, a, b))
    assert not bad, bad[:5]
    # The native (gauge-dependent) description does change.
    k0, k1 = df0["native__kappa"].to_numpy(), df1["native__kappa"].to_numpy()
    assert (np.abs(k1 - k0) > 1e-3 * k0).all()
