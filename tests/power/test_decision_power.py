"""Method-3 power: the power of each decision and its sizes, with the true effect placed
directly at 0, +SESOI and -SESOI; heavy-tail and covariate-shift scenarios; the TOST p's
read from the comparison's own replicates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.compare.decisions import DECISIONS
from analysis.datasets import example_sizes, example_widths
from analysis.power.decisions import decided_study, decision_powers, held_out_losses
from analysis.power.inputs import PowerAssumptions
from analysis.power.simulate import simulate_study, simulated_comparison, study_seeds
from analysis.power.spec import PowerSpec
from analysis.power.tails import df_from_kurtosis, excess_kurtosis, unit_draws
from analysis.power.widths import _width_model

SESOI = 0.05


def _sizes():
    """The example sizes, fitted by OLS (fast; the decisions do not depend on it)."""
    return dataclasses.replace(example_sizes(), estimator="ols")


def _rates(scenario):
    for group in ("power", "size"):
        for name, r in scenario[group].items():
            yield f"{group}.{name}", r


@pytest.fixture(scope="module")
def normal_powers():
    spec = PowerSpec(simulations=3, sizes=_sizes(), random_state=0, calibration_iterations=3)
    targets = ("zero", "plus_sesoi", "minus_sesoi")
    return decision_powers(example_widths(), spec, {"M0<M1": SESOI}, targets=targets)


def test_decision_powers_and_sizes_are_rates_with_intervals(normal_powers):
    (h,) = normal_powers["hypotheses"]
    assert h["pair"] == "M0<M1" and h["sesoi"] == SESOI
    s = h["scenarios"]["normal"]
    assert set(s["power"]) == {"superiority_at_sesoi", "tost_at_zero"}
    assert set(s["size"]) == {
        "adds_information_at_zero",
        "equivalent_at_plus_sesoi",
        "equivalent_at_minus_sesoi",
    }
    for name, r in _rates(s):
        assert r is not None, name
        assert r["n"] == 3 and 0 <= r["k"] <= 3, name
        assert 0.0 <= r["ci_low"] <= r["rate"] <= r["ci_high"] <= 1.0, name
    for p in s["points"]:
        counts = sum(p["decision"][w]["k"] for w in DECISIONS)
        assert counts == 3  # every study decided once


def test_the_true_effect_is_placed_at_the_sesoi_directly(normal_powers):
    s = normal_powers["hypotheses"][0]["scenarios"]["normal"]
    points = {p["point"]: p for p in s["points"]}
    plus, minus, zero = points["plus_sesoi"], points["minus_sesoi"], points["zero"]
    # each target was reached by a share of its own, on the calibration seeds
    assert plus["reached"] and zero["reached"] and minus["reached"]
    assert plus["share"] > zero["share"] >= 0
    assert plus["calibration_mean_effect"] == pytest.approx(SESOI, abs=0.3 * SESOI)
    assert abs(zero["calibration_mean_effect"]) < 0.3 * SESOI
    # below the cost of estimation: the signal does not carry over to held-out heads
    assert minus["held_out_signal"] == 0.0
    assert minus["calibration_mean_effect"] == pytest.approx(-SESOI, abs=0.3 * SESOI)
    # the power at the SESOI is the rate counted at that share, not an interpolation
    assert s["power"]["superiority_at_sesoi"] == plus["decision"]["adds information"]
    assert s["size"]["equivalent_at_minus_sesoi"] == minus["decision"][DECISIONS[2]]


def test_tost_p_values_come_from_the_comparison_replicates():
    """The reconstructed bootstrap gives the comparison's own CI and p (same draws)."""
    from analysis.compare import ClusterBootstrap

    sizes = _sizes()
    seed = np.random.SeedSequence(5).spawn(1)[0]
    data_seed, boot_seed = study_seeds(seed)
    table = simulate_study(
        sizes, example_widths(), share=0.4, random_state=np.random.default_rng(data_seed)
    )
    res = simulated_comparison(sizes, table, random_state=np.random.default_rng(boot_seed))
    row = res.frame.iloc[0]
    loss = held_out_losses(res, table)
    held = table["held_out"].to_numpy(bool)
    boot = ClusterBootstrap(n_boot=sizes.n_boot, random_state=np.random.default_rng(boot_seed))
    eff, lo, hi, p = boot.effect(
        loss["M0"],
        loss["M1"],
        table["cluster"].to_numpy()[held],
        strata=table["stratum"].astype(str).to_numpy()[held],
    )
    assert (eff, lo, hi, p) == pytest.approx((row.effect, row.ci_low, row.ci_high, row.p_value))
    wmodel = _width_model(sizes, example_widths(), PowerAssumptions())
    out = decided_study(
        sizes, wmodel, 0.4, PowerAssumptions(), ("M0", "M1"), seed, ((("M0", "M1"), 1e-9),)
    )
    assert out["ci_low"] == row.ci_low and out["decision"] in DECISIONS
    # a SESOI far above every replicate: equivalent unless it adds information
    wide = decided_study(
        sizes, wmodel, 0.0, PowerAssumptions(), ("M0", "M1"), seed, ((("M0", "M1"), 10.0),)
    )
    assert wide["decision"] in ("equivalent within SESOI", "adds information", "harms")


def test_heavy_tails_change_the_effect_sd():
    x = unit_draws(np.random.default_rng(1), 100_000, df_from_kurtosis(3.0))
    assert excess_kurtosis(x) > 1.5 and abs(x.var() - 1) < 0.05
    spec = PowerSpec(simulations=4, sizes=_sizes(), random_state=0, calibration_iterations=0)
    out = decision_powers(
        example_widths(),
        spec,
        {"M0<M1": SESOI},
        scenarios={"normal": {}, "heavy_tails": {"tail_df": 4.5}},
        targets=("zero",),
    )
    scen = out["hypotheses"][0]["scenarios"]
    assert scen["heavy_tails"]["assumptions"] == {"tail_df": 4.5}
    sd = {k: v["points"][0]["sd_effect"] for k, v in scen.items()}
    assert np.isfinite(sd["normal"]) and np.isfinite(sd["heavy_tails"])
    assert sd["heavy_tails"] != sd["normal"]


def test_scenarios_are_off_by_default_and_shift_moves_held_out_covariates():
    sizes, widths = _sizes(), example_widths()
    base = simulate_study(sizes, widths, share=0.3, random_state=3)
    same = simulate_study(
        sizes, widths, share=0.3, random_state=3, assumptions=PowerAssumptions(tail_df=None)
    )
    assert base.equals(same)
    assert "tail_df" not in PowerAssumptions().to_dict()
    shifted = simulate_study(
        sizes, widths, share=0.3, random_state=3, assumptions=PowerAssumptions(covariate_shift=1.0)
    )
    held = base["held_out"].to_numpy(bool)
    diff = shifted["native__x0"] - base["native__x0"]
    assert np.allclose(diff[~held], 0) and diff[held].mean() > 0.5
