"""Power analysis (validate-comparison): simulation shape, widths, CLI JSON and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.compare import ComparisonSpec, NestedComparison
from analysis.power import (
    SIMULATED_COVARIATES,
    PowerAssumptions,
    PowerSpec,
    StudySizes,
    load_widths,
    simulate_study,
    simulated_comparison,
    simulated_decisions,
    sizes_from_design,
    validate_comparison,
)
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]


def _widths(path: Path, eps=(0.05, 0.1, 0.2)) -> Path:
    rows = [(e, lo, lo * r) for e in eps for lo in (2, 3, 5) for r in (1, 2, 3)]
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)
    return path


def test_load_widths(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    assert set(w.columns) == {"eps", "lower", "upper", "width", "midpoint"}
    assert w["width"].min() == 0 and np.isclose(w["width"].max(), np.log2(3))
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"eps": [0.1], "lower": [3], "upper": [2]}).to_csv(bad, index=False)
    with pytest.raises(ParameterError, match="widths"):
        load_widths(bad)
    with pytest.raises(FileNotFoundError, match="never invented"):
        load_widths(tmp_path / "missing.csv")


def test_simulated_study_shape(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    df = simulate_study(StudySizes(), w, share=0.1, random_state=0)
    assert len(df) == 72 * 18
    assert df.groupby("cluster")["held_out"].nunique().max() == 1
    assert df.loc[df.held_out, "cluster"].nunique() == 18
    assert (df["y_lower"] <= df["y_upper"]).all()
    widths = np.round(df["y_upper"] - df["y_lower"], 9)
    assert set(widths) <= set(np.round(w["width"], 9))
    with pytest.raises(ParameterError, match="share"):
        simulate_study(StudySizes(), w, share=1.5)
    with pytest.raises(ParameterError, match="eps"):
        simulate_study(StudySizes(eps=(0.3,)), w, share=0.1)


def test_validate_comparison_small(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199)
    spec = PowerSpec(simulations=3, sizes=sizes, mde_steps=1, random_state=0)
    res = validate_comparison(w, spec)
    d = res.to_dict()
    for k in ("false_positive_rate", "size_boundary", "power", "mde", "alpha", "effect"):
        assert k in d
    assert d["simulations"] == 3 and 0 <= d["false_positive_rate"] <= 1
    (h,) = res.hypotheses
    assert h.pair == ("M0", "M1") and h.signal == "native"
    assert h.size_simple.n == h.power.n == h.size_boundary.n == 3
    runs = res.to_frame()
    assert list(runs["hypothesis"]) == ["M0<M1"] and runs["simulations"].iloc[0] == 3
    assert set(res.runs["scenario"]) >= {"simple_null", "alternative", "boundary_null"}
    again = validate_comparison(w, spec)
    pd.testing.assert_frame_equal(res.runs, again.runs)  # seeded
    with pytest.raises(ParameterError, match="simulations"):
        validate_comparison(w, PowerSpec(simulations=1))


def test_cli_json_with_design(tmp_path, capsys):
    w = _widths(tmp_path / "w.csv")
    rc = main(
        [
            "validate-comparison",
            "--design",
            str(ROOT / "preregistration" / "offline-minilm.toml"),
            "--simulations",
            "2",
            "--seed",
            "3",
            "--mde-steps",
            "0",
            "--json",
            "--widths",
            str(w),
            "--root",  # an empty root: no study store, so the counts come from the lock
            str(tmp_path),
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulations"] == 2 and out["alpha"] == 0.05 and out["effect"] == 0.1
    assert out["icc"] == 0.5 and out["design"].endswith("offline-minilm.toml")
    (h,) = out["hypotheses"]
    for k in ("size_simple", "size_boundary", "power"):
        assert 0 <= h[k]["ci_low"] <= h[k]["rate"] <= h[k]["ci_high"] <= 1
    assert out["features"] == {"baseline": 11, "native": 13, "intrinsic": 3}  # the lock's


def test_cli_refuses_without_widths(tmp_path, monkeypatch, capsys):
    design = ROOT / "preregistration" / "offline-minilm.toml"
    monkeypatch.chdir(tmp_path)
    rc = main(["validate-comparison", "--simulations", "2", "--json"])
    assert rc == 2 and "--design" in capsys.readouterr().err  # no default design here
    rc = main(
        [
            "validate-comparison",
            "--design",
            str(design),
            "--simulations",
            "2",
            "--json",
            "--widths",
            str(tmp_path / "missing.csv"),
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "missing.csv" in err and "never invented" in err
    args = ["--simulations", "1", "--seed", "0", "--widths", "x"]
    assert main(["validate-comparison", "--design", str(design), *args]) == 2
    assert "--simulations" in capsys.readouterr().err
    assert (
        main(
            [
                "validate-comparison",
                "--design",
                str(design),
                "--simulations",
                "2",
                "--seed",
                "0",
                "--effect",
                "2",
                "--widths",
                "x",
            ]
        )
        == 2
    )
    assert "--effect" in capsys.readouterr().err


# --- the simulation runs the confirmatory code path with the design's settings ---


def test_sizes_from_design_take_the_confirmatory_settings():
    from analysis.prereg import load_design

    path = ROOT / "preregistration" / "offline-minilm.toml"
    sizes = sizes_from_design(path)
    assert sizes.strata == (("sentence-transformers/all-MiniLM-L6-v2", 72, 18),)
    assert [h[0] for h in sizes.hypotheses] == ["H1", "H2", "H3", "S1"]
    kw = load_design(path).comparison_kwargs()
    assert (sizes.n_heads, sizes.n_held_out, sizes.cells_per_head) == (
        72,
        18,
        36,
    )  # 2 inputs x 2 lengths x 3 temperatures x 3 eps
    assert sizes.family == tuple(tuple(p) for p in kw["family"])
    assert sizes.confirmatory == ("M0", "M1")
    assert dict(sizes.models)["M3"] == ("baseline", "native", "intrinsic")
    mine = sizes.comparison_kwargs()
    for k in ("estimator", "primary_metric", "n_boot", "alpha", "ci_level", "bootstrap"):
        assert mine[k] == kw[k], k
    assert mine["family"] == [tuple(p) for p in kw["family"]]


def test_simulation_fits_the_comparison_like_the_confirmatory_run(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199, alpha=0.1, ci_level=0.9)
    table = simulate_study(sizes, w, share=0.1, random_state=1)
    res = simulated_comparison(sizes, table, random_state=2)
    assert (res.n_boot, res.alpha, res.estimator) == (199, 0.1, "interval")
    assert res.primary_metric == "interval_sq_loss"
    f = res.to_frame()
    assert set(f.loc[f.p_holm.notna(), "pair"]) == {f"{b}<{r}" for b, r in sizes.family}
    # exactly NestedComparison with the design's settings and the simulated blocks' facts
    want = NestedComparison(
        ComparisonSpec(
            models=dict(sizes.models),
            random_state=2,
            **sizes.comparison_kwargs(),
            **SIMULATED_COVARIATES,
        )
    ).fit(table)
    pd.testing.assert_frame_equal(f, want.to_frame(), check_exact=True)
    assert SIMULATED_COVARIATES["calibrate_blocks"] == ("baseline",)


def test_simulated_decisions_rows_and_progress(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199)
    seen = []
    spec = PowerSpec(simulations=2, sizes=sizes, random_state=5)
    rows = simulated_decisions(w, spec, share=0.2, progress=lambda k, n: seen.append((k, n)))
    assert list(rows.columns) == [
        "effect",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "adds_information",
        "base_value",
        "refit_p_value",
    ]
    assert (rows["base_value"] > 0).all()  # M0's held-out loss
    assert rows["refit_p_value"].isna().all()  # no refit replicates in these sizes
    assert len(rows) == 2 and seen == [(1, 2), (2, 2)]
    again = simulated_decisions(w, spec, share=0.2)
    pd.testing.assert_frame_equal(rows, again)  # seeded
    with pytest.raises(ParameterError, match="share"):
        simulated_decisions(w, PowerSpec(simulations=1, sizes=sizes), share=1.0)


def test_sizes_refuse_blocks_the_simulation_does_not_write():
    with pytest.raises(ParameterError, match="models.M1"):
        StudySizes(
            models=(("M0", ("baseline",)), ("M1", ("baseline", "baseline_plus"))),
            family=(("M0", "M1"),),
        )
    with pytest.raises(ParameterError, match="confirmatory"):
        StudySizes(  # the rich model adds no simulated block
            models=(("M0", ("baseline",)), ("M0b", ("baseline",))),
            family=(("M0", "M0b"),),
            confirmatory=("M0", "M0b"),
        )
    with pytest.raises(ParameterError, match="n_held_out"):
        StudySizes(n_heads=10, n_held_out=10)


# --- assumptions: validated by name, and honoured by the simulation ---


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"native_head_share": 1.5}, "native_head_share"),
        ({"native_head_share": float("nan")}, "native_head_share"),
        ({"icc": 1.0}, "icc"),
        ({"residual_sd": 0.0}, "residual_sd"),
        ({"native_features": 0}, "native_features"),
        ({"intrinsic_features": 2.5}, "intrinsic_features"),
        ({"effect": 0.0}, "effect"),
        ({"truth_position": (0.0, 1.0)}, "truth_position"),
        ({"width_bins": 0}, "width_bins"),
    ],
)
def test_assumptions_validated_by_name(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        PowerAssumptions(**kwargs)


def test_assumptions_are_one_frozen_record():
    import dataclasses

    a = PowerAssumptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.icc = 0.3
    d = a.to_dict()
    assert d["truth_position"] == [2.0, 1.0] and d["width_bins"] == 4 and d["effect"] == 0.1
    assert PowerAssumptions(**{**d, "truth_position": tuple(d["truth_position"])}) == a


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--native-head-share", "1.5"),
        ("--icc", "-0.1"),
        ("--residual-sd", "0"),
        ("--native-features", "0"),
        ("--width-bins", "0"),
    ],
)
def test_cli_names_the_bad_assumption(tmp_path, capsys, flag, value):
    w = _widths(tmp_path / "w.csv")
    argv = ["validate-comparison", "--simulations", "2", "--seed", "0", "--widths", str(w)]
    assert main([*argv, flag, value]) == 2
    assert flag in capsys.readouterr().err


def test_simulated_head_share_and_feature_counts(tmp_path):
    from analysis.compare import residual_icc

    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=400, n_held_out=100)
    a = PowerAssumptions(native_head_share=0.75, native_features=5, intrinsic_features=4)
    df = simulate_study(sizes, w, share=0.1, assumptions=a, random_state=0)
    assert [c for c in df if c.startswith("native__")] == [f"native__x{k}" for k in range(5)]
    assert [c for c in df if c.startswith("intrinsic__")] == [f"intrinsic__z{k}" for k in range(4)]
    iccs = [residual_icc(df[f"native__x{k}"].to_numpy(), df["cluster"].to_numpy()) for k in (1, 4)]
    # 400 heads: the ICC estimate has SD about 0.02
    assert all(abs(i - 0.75) < 0.08 for i in iccs), iccs


# --- the closed-form approximation and the power curve ---


def test_approximate_power_matches_its_model_by_monte_carlo():
    from analysis.power import approximate_power

    rng = np.random.default_rng(0)
    eps, rho, s, K, H = 0.1, 0.5, 0.5, 18, 200_000
    b = np.sqrt(eps)
    a = rng.standard_normal((H, 1))
    wv = np.sqrt(s) * a + np.sqrt(1 - s) * rng.standard_normal((H, K))
    u = np.sqrt(rho * (1 - eps)) * rng.standard_normal((H, 1))
    n = np.sqrt((1 - rho) * (1 - eps)) * rng.standard_normal((H, K))
    e0, e1 = b * wv + u + n, u + n
    d_h = (e0**2 - e1**2).mean(axis=1)  # per-head mean loss difference (V = 1)
    sizes = StudySizes()
    got = approximate_power(sizes, effect=eps, icc=rho, native_head_share=s)
    var_formula = sizes.n_held_out * eps**2 / got["z"] ** 2
    assert abs(d_h.mean() - eps) < 0.005
    assert abs(d_h.var() - var_formula) / var_formula < 0.03, (d_h.var(), var_formula)
    lower = approximate_power(sizes, effect=eps, icc=rho, native_head_share=0.75)
    assert lower["z"] < got["z"] and lower["held_out_for_target"] > got["held_out_for_target"]
    assert got["power_holm"] < got["power_unadjusted"]
    with pytest.raises(ParameterError, match="native_head_share"):
        approximate_power(sizes, native_head_share=2.0)


def _exact_z(effect: float, icc: float, share: float, K: int, H: int) -> float:
    """``sqrt(H) E[D_h] / sd(D_h)`` of the model of :func:`approximate_power`, by linear
    algebra rather than its moment formula: with X = (a, z_1..z_K, u, n_1..n_K) standard
    normal, each cell's residuals are e0_c = g_c . X and e1_c = h_c . X, so the head mean
    D_h = X^T Q X with Q = mean_c (g_c g_c^T - h_c h_c^T): E = tr Q, var = 2 tr(Q^2)."""
    n = 2 * K + 2
    Q = np.zeros((n, n))
    for c in range(K):
        h = np.zeros(n)
        h[K + 1] = np.sqrt(icc * (1 - effect))  # u, shared by the head's cells
        h[K + 2 + c] = np.sqrt((1 - icc) * (1 - effect))  # n_c
        g = h.copy()
        g[0] = np.sqrt(effect * share)  # b sqrt(s) a_h, b^2 = effect (V = 1)
        g[1 + c] = np.sqrt(effect * (1 - share))  # b sqrt(1 - s) z_c
        Q += (np.outer(g, g) - np.outer(h, h)) / K
    assert np.isclose(np.trace(Q), effect)  # the loss difference has mean b^2
    return float(np.sqrt(H) * np.trace(Q) / np.sqrt(2 * np.trace(Q @ Q)))


@pytest.mark.parametrize(
    ("effect", "icc", "share", "lengths", "held_out"),
    [
        (0.1, 0.5, 0.5, (64, 128), 18),  # the defaults: z = 1.27 (docs/prereg.md)
        (0.1, 0.5, 0.0, (64, 128), 18),
        (0.1, 0.5, 1.0, (64, 128), 18),
        (0.05, 0.0, 0.75, (64,), 30),
        (0.3, 0.9, 0.25, (32, 64, 128), 10),
    ],
)
def test_approximate_power_matches_the_exact_quadratic_form(effect, icc, share, lengths, held_out):
    from scipy.stats import norm

    from analysis.power import approximate_power

    sizes = StudySizes(lengths=lengths, n_held_out=held_out)
    K = len(lengths) * len(sizes.temperatures) * len(sizes.eps) * sizes.inputs_per_length
    got = approximate_power(sizes, effect=effect, icc=icc, native_head_share=share)
    z = _exact_z(effect, icc, share, K, held_out)
    assert got["z"] == pytest.approx(z, rel=1e-10)
    # one-sided normal test of the Holm family's first step (alpha / m) and its last
    z_holm = norm.ppf(1 - sizes.alpha / len(sizes.family))
    assert got["power_holm"] == pytest.approx(norm.cdf(z - z_holm), rel=1e-10)
    assert got["power_unadjusted"] == pytest.approx(norm.cdf(z - norm.ppf(0.95)), rel=1e-10)
    # z grows as sqrt(H): at held_out_for_target heads the Holm power is the target
    z_target = z * np.sqrt(got["held_out_for_target"] / held_out)
    assert norm.cdf(z_target - z_holm) == pytest.approx(0.8, rel=1e-10)
    if (effect, icc, share, lengths, held_out) == (0.1, 0.5, 0.5, (64, 128), 18):
        assert round(z, 2) == 1.27


def test_power_curve_rows(tmp_path):
    from analysis.power import POWER_CURVE_COLUMNS, power_curve

    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199)
    assumptions = PowerAssumptions(native_features=3, intrinsic_features=2)
    spec = PowerSpec(simulations=2, sizes=sizes, assumptions=assumptions, random_state=0)
    curve = power_curve(w, spec, effects=(0.1, 0.3), head_shares=(0.0, 0.5))
    assert tuple(curve.columns) == POWER_CURVE_COLUMNS
    assert len(curve) == 4
    assert set(zip(curve.effect, curve.native_head_share, strict=True)) == {
        (0.1, 0.0),
        (0.3, 0.0),
        (0.1, 0.5),
        (0.3, 0.5),
    }
    # one null per head share, shared by its rows
    assert curve.groupby("native_head_share")["false_positive_rate"].nunique().max() == 1
    assert curve.groupby("native_head_share")["mean_effect_null"].nunique().max() == 1
    assert curve["power"].between(0, 1).all() and (curve["simulations"] == 2).all()
    assert (curve["n_held_out"] == 8).all() and (curve["native_features"] == 3).all()
    with pytest.raises(ParameterError, match="head_shares"):
        power_curve(w, PowerSpec(simulations=1, sizes=sizes), head_shares=(1.2,))
    with pytest.raises(ParameterError, match="effects"):
        power_curve(w, PowerSpec(simulations=1, sizes=sizes), effects=(0.0,))


def test_minimum_detectable_effect():
    from analysis.power import minimum_detectable_effect

    curve = pd.DataFrame(
        {
            "effect": [0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3],
            "native_head_share": [0.0] * 3 + [0.5] * 3 + [0.75] * 3,
            "power": [0.85, 0.99, 1.0, 0.2, 0.6, 0.9, 0.1, 0.2, 0.3],
        }
    )
    mde = minimum_detectable_effect(curve).set_index("native_head_share")
    assert mde.loc[0.0, "mde"] == 0.1 and mde.loc[0.0, "reached"]
    assert np.isclose(mde.loc[0.5, "mde"], 0.2 + 0.2 / 0.3 * 0.1)
    assert np.isnan(mde.loc[0.75, "mde"]) and not mde.loc[0.75, "reached"]
    with pytest.raises(ParameterError, match="curve"):
        minimum_detectable_effect(curve.drop(columns="power"))
