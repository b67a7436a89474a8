"""Error rates of the decision: Clopper-Pearson intervals, the boundary null, conditional
widths, the design's covariate counts and strata in the simulation, the MDE search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import beta, spearmanr

from analysis.power import (
    PowerAssumptions,
    PowerSpec,
    StudySizes,
    clopper_pearson,
    load_widths,
    simulate_study,
    sizes_from_design,
    validate_comparison,
)
from analysis.power.error_rates import _boundary_share, _mde
from analysis.power.rates import Rate
from analysis.power.simulate import one_study
from analysis.power.widths import WidthModel
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "preregistration" / "offline-minilm.toml"
PAPER = ROOT / "preregistration" / "paper-checkpoints.toml"


def _widths(path: Path, eps=(0.05, 0.1, 0.2)) -> Path:
    rows = [(e, lo, lo * r) for e in eps for lo in (2, 3, 5) for r in (1, 2, 3)]
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)
    return path


# --- Clopper-Pearson ------------------------------------------------------------------


def test_clopper_pearson_known_values():
    # 5 of 10: the textbook exact interval (R: binom.test(5, 10)$conf.int)
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(0.187086, abs=5e-7) and hi == pytest.approx(0.812914, abs=5e-7)
    # k = 0 and k = n have closed forms: 1 - (alpha/2)^(1/n) and (alpha/2)^(1/n)
    assert clopper_pearson(0, 400) == (0.0, pytest.approx(1 - 0.025 ** (1 / 400), rel=1e-9))
    assert clopper_pearson(400, 400) == (pytest.approx(0.025 ** (1 / 400), rel=1e-9), 1.0)
    # otherwise the Beta quantiles
    lo, hi = clopper_pearson(20, 400)
    assert lo == pytest.approx(beta.ppf(0.025, 20, 381), rel=1e-9)
    assert hi == pytest.approx(beta.ppf(0.975, 21, 380), rel=1e-9)
    with pytest.raises(ParameterError, match="k"):
        clopper_pearson(5, 4)


def test_rate_carries_its_interval():
    rows = pd.DataFrame(
        {
            "adds_information": [True] * 3 + [False] * 7,
            "effect": np.arange(10.0),
            "p_value": np.linspace(0.001, 0.5, 10),
        }
    )
    r = Rate.of(0.1, rows, alpha=0.1)
    assert r.p_below_alpha == 0.2
    assert (r.k, r.n, r.rate) == (3, 10, 0.3)
    assert (r.ci_low, r.ci_high) == clopper_pearson(3, 10)
    assert r.mean_effect == 4.5 and r.mean_effect_se == pytest.approx(
        np.std(np.arange(10.0), ddof=1) / np.sqrt(10)
    )


# --- the boundary null ----------------------------------------------------------------


class _FakeCurve:
    """A deterministic mean-effect curve m(s), as the common-random-number curve is."""

    def __init__(self, m):
        self.m = m
        self.rows = {}

    def __call__(self, s):
        self.rows[float(s)] = None
        return Rate(float(s), 0.0, 0, 1, 0.0, 1.0, float(self.m(s)), 0.0, 0.0)


def test_boundary_share_is_the_root_of_the_mean_effect():
    # bent like the simulated curve: m(s) = s m_S + (1 - s) m(0) + c sqrt(s)
    def m(s):
        return 0.4 * s - 0.03 * (1 - s) + 0.01 * np.sqrt(s)

    root = brentq(m, 0.0, 1.0, xtol=1e-14)
    s_b, m_b = _boundary_share(_FakeCurve(m), 0.1, tol=1e-10, max_iter=50)
    assert s_b == pytest.approx(root, abs=1e-8) and abs(m_b) <= 1e-10
    # the alternative below the root: the bracket is doubled until m > 0
    s_b, _ = _boundary_share(_FakeCurve(m), 0.01, tol=1e-10, max_iter=50)
    assert s_b == pytest.approx(root, abs=1e-8)
    # a simple null already at or above 0 is its own boundary; no root: NaN
    assert _boundary_share(_FakeCurve(lambda s: 0.01 + s), 0.1, tol=0, max_iter=5)[0] == 0.0
    assert np.isnan(_boundary_share(_FakeCurve(lambda s: -1.0), 0.1, tol=0, max_iter=5)[0])


def test_mde_bisection_brackets_the_target():
    class Power(_FakeCurve):
        def __call__(self, s):
            self.rows[float(s)] = None
            p = min(1.0, 2 * s)  # power 0.8 at s = 0.4
            return Rate(float(s), p, 0, 1, 0.0, 1.0, 0.0, 0.0)

    curve = Power(None)
    curve(0.0), curve(0.1)
    curve.rates = lambda: tuple(curve(s) for s in sorted(curve.rows))
    mde, lo, hi = _mde(curve, target=0.8, steps=6)
    assert lo < 0.4 <= hi and hi - lo == pytest.approx((0.95 - 0.1) / 2**6)
    assert mde == pytest.approx(0.4, abs=1e-9)  # linear power: interpolation is exact


def test_simulated_boundary_null_has_mean_effect_zero(tmp_path):
    """On the calibration seeds the expected held-out effect at the boundary share is 0 (to
    the calibration tolerance, deterministically: common random numbers), while the simple
    null's is negative; the same seed's data barely move between nearby shares."""
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=32, n_held_out=8, n_boot=199)
    res = validate_comparison(
        w, PowerSpec(simulations=12, sizes=sizes, mde_steps=0, random_state=4)
    )
    (h,) = res.hypotheses
    assert h.size_simple.mean_effect < 0 < h.boundary_share < 0.95
    tol = 0.25 * h.size_simple.mean_effect_se
    assert abs(h.boundary_mean_effect) <= tol, (h.boundary_mean_effect, tol)
    # the boundary rate is measured on other seeds (B) than the calibration (A)
    runs = res.runs
    b = runs[runs.scenario == "boundary_null"]
    a = runs[(runs.seeds == "A") & np.isclose(runs.share, h.boundary_share)]
    assert len(b) == len(a) == 12 and not np.allclose(b["effect"], a["effect"])
    # common random numbers: per seed, the effect moves little between nearby shares
    wm = WidthModel.from_frame(w, sizes.eps)
    seeds = np.random.SeedSequence(9).spawn(6)
    e1 = [one_study(sizes, wm, 0.05, PowerAssumptions(), ("M0", "M1"), s)["effect"] for s in seeds]
    e2 = [one_study(sizes, wm, 0.055, PowerAssumptions(), ("M0", "M1"), s)["effect"] for s in seeds]
    assert np.std(np.subtract(e2, e1)) < 0.2 * np.std(e1)


def test_validate_comparison_hypotheses_and_skips(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = sizes_from_design(SHIPPED, features={"baseline": 5, "native": 2, "intrinsic": 1})
    sizes = StudySizes(
        **{
            **{k: getattr(sizes, k) for k in sizes.__dataclass_fields__},
            "n_heads": 24,
            "n_held_out": 6,
            "strata": (),
            "n_boot": 199,
            "lengths": (64,),
            "temperatures": (1.0,),
        }
    )
    spec = PowerSpec(
        simulations=2, sizes=sizes, hypotheses=["H2", "S1"], mde_steps=0, random_state=1
    )
    res = validate_comparison(w, spec)
    assert [h.hypothesis for h in res.hypotheses] == ["H2"]
    assert res.hypotheses[0].signal == "intrinsic"
    assert "S1" in res.skipped and "sensitivity" in res.skipped["S1"]
    assert json.loads(json.dumps(res.to_dict()))["hypotheses"][0]["pair"] == "M0<M2"
    with pytest.raises(ParameterError, match="hypotheses"):
        validate_comparison(w, PowerSpec(simulations=2, sizes=sizes, hypotheses=["H9"]))


# --- widths depend on where the rank lies; truth not uniform in its bracket -------------


def _sloped_widths(path: Path) -> pd.DataFrame:
    """Reference brackets whose width grows with the midpoint at every eps."""
    rows = []
    for e in (0.05, 0.1, 0.2):
        for k in range(1, 41):
            lo = 2 + 3 * k
            rows.append((e, lo, int(round(lo * 2 ** (k / 20)))))
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)
    return load_widths(path)


def test_widths_follow_the_midpoint(tmp_path):
    w = _sloped_widths(tmp_path / "w.csv")
    assert spearmanr(w["midpoint"], w["width"])[0] > 0.9
    sizes = StudySizes(n_heads=200, n_held_out=50)

    def corr(bins: int) -> float:
        df = simulate_study(
            sizes, w, share=0.1, assumptions=PowerAssumptions(width_bins=bins), random_state=0
        )
        width = df["y_upper"] - df["y_lower"]
        mid = 0.5 * (df["y_upper"] + df["y_lower"])
        return min(
            spearmanr(mid[df.baseline__eps == e], width[df.baseline__eps == e])[0]
            for e in (0.05, 0.1, 0.2)
        )

    assert corr(4) > 0.6  # resampled within midpoint bins: the association is kept
    assert abs(corr(1)) < 0.1  # per eps only: independent of the outcome


def test_truth_position_follows_its_beta_law(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=200, n_held_out=50)
    # one seed: the same truth y and widths under both laws (common random numbers), so
    # lower = y - P w gives the difference of positions cell by cell
    up = simulate_study(sizes, w, share=0.0, random_state=3)  # Beta(2, 1): mean 2/3
    flat = simulate_study(
        sizes, w, share=0.0, assumptions=PowerAssumptions(truth_position=(1, 1)), random_state=3
    )
    width = (up["y_upper"] - up["y_lower"]).to_numpy()
    np.testing.assert_allclose(width, (flat["y_upper"] - flat["y_lower"]).to_numpy(), atol=1e-12)
    open_ = width > 0
    p_diff = (flat["y_lower"] - up["y_lower"]).to_numpy()[open_] / width[open_]
    # E[P_up] - E[P_flat] = 2/3 - 1/2 = 1/6; about 10^4 open cells, SE about 0.004
    assert p_diff.mean() == pytest.approx(1 / 6, abs=0.02)


# --- covariate counts and strata come from the design ------------------------------------


def test_feature_counts_come_from_the_lock():
    lock = json.loads((ROOT / "preregistration" / "offline-minilm.toml.lock").read_text())
    sizes = sizes_from_design(SHIPPED)
    want = {b: len(lock["blocks"][b]["covariates"]) for b in ("baseline", "native", "intrinsic")}
    assert dict(sizes.features) == want == {"baseline": 11, "native": 13, "intrinsic": 3}
    assert "lock" in sizes.features_note


def test_simulated_columns_follow_the_design_counts(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = sizes_from_design(SHIPPED)
    df = simulate_study(sizes, w, share=0.0, random_state=0)
    cols = {
        b: [c for c in df if c.startswith(b + "__")] for b in ("baseline", "native", "intrinsic")
    }
    assert {b: len(c) for b, c in cols.items()} == {"baseline": 11, "native": 13, "intrinsic": 3}
    # given counts (e.g. after a collinearity screen) win, and are recorded
    screened = sizes_from_design(
        SHIPPED,
        features={"baseline": ["a"] * 10, "native": ["b"] * 12, "intrinsic": ["c"] * 3},
        features_note="screened",
    )
    assert dict(screened.features) == {"baseline": 10, "native": 12, "intrinsic": 3}
    assert screened.features_note == "screened"
    # an assumption overrides the design's count
    a = PowerAssumptions(intrinsic_features=2)
    assert screened.feature_count("intrinsic", a) == 2
    assert screened.feature_count("native", a) == 12


def test_unlocked_design_needs_given_counts(tmp_path):
    design = tmp_path / "preregistration" / "d.toml"
    design.parent.mkdir()
    design.write_text(SHIPPED.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ParameterError, match="features"):
        sizes_from_design(design)


def test_held_out_heads_are_drawn_per_checkpoint(tmp_path):
    sizes = sizes_from_design(PAPER)
    lock = json.loads((ROOT / "preregistration" / "paper-checkpoints.toml.lock").read_text())
    held = lock["held_out"] if isinstance(lock["held_out"], list) else lock["held_out"]["heads"]
    want = {}
    for hid in held:
        ck = hid.rsplit(":", 2)[0]
        want[ck] = want.get(ck, 0) + 1
    assert {s: k for s, _, k in sizes.strata} == want and len(want) == 5
    assert sum(n for _, n, _ in sizes.strata) == sizes.n_heads == 840
    # the simulated table keeps each checkpoint's counts (fewer cells to keep it small)
    small = StudySizes(
        n_heads=sizes.n_heads,
        n_held_out=sizes.n_held_out,
        strata=sizes.strata,
        lengths=(64,),
        temperatures=(1.0,),
        eps=(0.1,),
    )
    df = simulate_study(small, load_widths(_widths(tmp_path / "w.csv")), share=0.0, random_state=0)
    per = df.drop_duplicates("cluster").groupby("stratum")
    assert per["held_out"].sum().to_dict() == want
    assert per.size().to_dict() == {s: n for s, n, _ in sizes.strata}
    with pytest.raises(ParameterError, match="strata"):
        StudySizes(n_heads=10, n_held_out=2, strata=(("a", 5, 1), ("b", 4, 1)))
