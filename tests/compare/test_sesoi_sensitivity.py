"""Method 3's SESOI sensitivity: the family decided again at half and twice the SESOI
(docs/method.md, "Decision rule"); method 2 computes none of it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.decisions import EQUIVALENT
from analysis.compare.equivalence import sesoi_p_values
from analysis.compare.sesoi_sensitivity import (
    SESOI_FACTORS,
    SESOI_SENSITIVITY_COLUMNS,
    sesoi_columns,
    sesoi_sensitivity,
)
from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table, null_table

SESOI = {
    p: {"interval_sq_loss": 0.05, "interval_loglik": 0.05, "spearman_mid": 0.02}
    for p in ("M0<M1", "M0<M2", "M0<M3")
}
#: The columns factor 1 repeats from the confirmatory frame.
SAME = (
    "sesoi",
    "ci_low",
    "ci_high",
    "p_holm",
    "equivalence_p",
    "equivalence_p_holm",
    "non_superiority_p",
    "non_superiority_p_holm",
    "decision",
    "metric_role",
    "status",
)


def _run(method: int, boot: str = "cluster", **kw):
    t = make_table(np.random.default_rng(2026), n_heads=16, cells=6, native_effect=0.5)
    t["stratum"] = np.where(t["cluster"].str[1:].astype(int) % 2 == 0, "ck-a", "ck-b")
    spec = ComparisonSpec(
        models=MODELS,
        family=FAMILY[:2],
        extra_pairs=[FAMILY[2]],  # outside the family: not in the sensitivity
        estimator="ols",
        n_boot=199,
        random_state=7,
        log_columns=["baseline__scale"],
        bootstrap=boot,
        sesoi=SESOI,
        method=method,
        **kw,
        **COVARIATES,
    )
    return NestedComparison(spec).fit(t)


def _check_factor_one(result, family_pairs, extra_pair) -> None:
    frame, sens = result.to_frame(), result.sesoi_sensitivity
    assert tuple(sens.columns) == SESOI_SENSITIVITY_COLUMNS
    family = frame[frame["pair"].isin(family_pairs)]
    assert family["sesoi"].notna().all()
    assert len(family) == len(family_pairs) * len(result.spec.metrics)
    # every family (pair, metric) three times, in the frame's order, factors ascending
    keys = list(zip(family["pair"], family["metric"], strict=True))
    assert list(zip(sens["pair"], sens["metric"], strict=True)) == [k for k in keys for _ in "abc"]
    assert sens["sesoi_factor"].tolist() == list(SESOI_FACTORS) * len(keys)
    assert extra_pair in set(frame["pair"]) and extra_pair not in set(sens["pair"])
    one = sens[sens["sesoi_factor"] == 1.0].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        one.loc[:, list(SAME)], family.loc[:, list(SAME)].reset_index(drop=True), check_exact=True
    )
    # the SESOI column is the factor times the declared SESOI
    declared = np.repeat(family["sesoi"].to_numpy(), 3)
    np.testing.assert_array_equal(sens["sesoi"], declared * np.tile(SESOI_FACTORS, len(keys)))


@pytest.mark.parametrize("boot", ["cluster", "studentized"])
def test_factor_one_reproduces_the_confirmatory_decisions_exactly(boot):
    result = _run(3, boot)
    _check_factor_one(result, ["M0<M1", "M0<M2"], "M0<M3")
    sens = result.sesoi_sensitivity
    # a wider margin is easier to be within: the TOST p never rises with the factor
    tost = sens.pivot_table(
        index=["pair", "metric"], columns="sesoi_factor", values="equivalence_p"
    )
    assert (tost[0.5] >= tost[1.0]).all() and (tost[1.0] >= tost[2.0]).all()
    # the sensitivity's columns never reach the confirmatory table
    assert not any(c.startswith("_") for c in result.to_frame().columns)


def test_with_the_refit_bootstrap_as_confirmatory_the_margins_use_the_refits():
    spec = ComparisonSpec(
        models=EXAMPLE_MODELS,
        family=[("base", "rich")],
        extra_pairs=[("base", "noisy")],
        metrics=["interval_sq_loss", "spearman_mid"],
        estimator="ols",
        n_boot=199,
        random_state=0,
        sesoi={
            p: {"interval_sq_loss": 0.1, "spearman_mid": 0.05} for p in ("base<rich", "base<noisy")
        },
        refit_replicates=19,
        refit_confirmatory=True,
        method=3,
    )
    result = NestedComparison(spec).fit(example_comparison_table())
    _check_factor_one(result, ["base<rich"], "base<noisy")
    sens = result.sesoi_sensitivity
    # percentile p over R = 19 refits: multiples of 1 / 20 at every margin (the held-out
    # bootstrap's B = 199 would give multiples of 1 / 200)
    for col in ("equivalence_p", "non_superiority_p"):
        twenty = sens[col].to_numpy() * 20
        np.testing.assert_allclose(twenty, np.round(twenty), atol=1e-9)


def _null_fit(table: pd.DataFrame, sesoi: float, boot: str):
    spec = ComparisonSpec(
        models={"M0": ["base"], "M1": ["base", "rich"]},
        family=[("M0", "M1")],
        metrics=["interval_sq_loss"],
        estimator="ols",
        n_boot=499,
        random_state=0,
        bootstrap=boot,
        sesoi={"M0<M1": {"interval_sq_loss": sesoi}},
        method=3,
    )
    return NestedComparison(spec).fit(table)


@pytest.mark.parametrize("boot", ["cluster", "studentized"])
def test_a_ci_within_twice_but_not_half_the_sesoi_is_equivalent_only_at_twice(boot):
    table = null_table()
    row = _null_fit(table, 1.0, boot).to_frame().iloc[0]
    reach = max(abs(row["ci_low"]), abs(row["ci_high"]))
    sesoi = 0.75 * reach  # the CI lies within +-2 SESOI, not within +-SESOI / 2
    result = _null_fit(table, sesoi, boot)
    sens = result.sesoi_sensitivity.set_index("sesoi_factor")
    assert -2 * sesoi < row["ci_low"] and row["ci_high"] < 2 * sesoi
    assert row["ci_low"] < -sesoi / 2 or row["ci_high"] > sesoi / 2
    assert sens.loc[2.0, "decision"] == EQUIVALENT
    assert sens.loc[2.0, "equivalence_p_holm"] < 0.05
    assert sens.loc[0.5, "decision"] != EQUIVALENT
    assert sens.loc[0.5, "equivalence_p_holm"] >= 0.05
    assert sens.loc[1.0, "decision"] == result.to_frame()["decision"].iloc[0]


def _decided_frame() -> tuple[pd.DataFrame, ComparisonSpec]:
    """Three decided rows: two family pairs with a SESOI and an extra pair, with the
    hidden p columns at 0.5 and 2 set by hand."""
    models = {"A": ["a"], "B": ["a", "b"], "C": ["a", "c"], "D": ["a", "d"]}
    spec = ComparisonSpec(
        models=models,
        family=[("A", "B"), ("A", "C")],
        extra_pairs=[("A", "D")],
        metrics=["interval_sq_loss"],
        sesoi={p: {"interval_sq_loss": 0.1} for p in ("A<B", "A<C", "A<D")},
        method=3,
    )
    frame = pd.DataFrame(
        {
            "pair": ["A<B", "A<C", "A<D"],
            "base_model": ["A"] * 3,
            "rich_model": ["B", "C", "D"],
            "metric": ["interval_sq_loss"] * 3,
            "base_value": [1.0] * 3,
            "status": ["ok"] * 3,
            "ci_low": [-0.05, -0.04, -0.05],
            "ci_high": [0.05, 0.06, 0.05],
            "p_value": [0.5, 0.4, 0.5],
            "p_holm": [0.8, 0.8, np.nan],
            "adds_information": [False] * 3,
            "sesoi": [0.1] * 3,
            "equivalence_p": [0.02, 0.01, 0.01],
            "non_superiority_p": [0.01, 0.01, 0.01],
            "_equivalence_p_at_0.5": [0.01, 0.03, 0.001],
            "_non_superiority_p_at_0.5": [0.2, 0.01, 0.001],
            "_equivalence_p_at_2": [0.001, 0.2, 0.001],
            "_non_superiority_p_at_2": [0.001, 0.001, 0.001],
        }
    )
    return frame, spec


def test_holm_runs_over_the_family_at_each_margin():
    frame, spec = _decided_frame()
    sens = sesoi_sensitivity(frame, spec).set_index(["pair", "sesoi_factor"])
    assert set(sens.index.get_level_values("pair")) == {"A<B", "A<C"}  # A<D: no family
    # Holm of (0.01, 0.03) over the two family pairs: 2 x 0.01, max(0.02, 0.03)
    assert sens.loc[("A<B", 0.5), "equivalence_p_holm"] == pytest.approx(0.02)
    assert sens.loc[("A<C", 0.5), "equivalence_p_holm"] == pytest.approx(0.03)
    # non-superiority at 0.5: (0.2, 0.01) -> (0.2, 0.02); the TOST of A<B rejects anyway
    assert sens.loc[("A<C", 0.5), "non_superiority_p_holm"] == pytest.approx(0.02)
    assert sens.loc[("A<B", 0.5), "decision"] == EQUIVALENT
    # at 2: (0.001, 0.2) -> (0.002, 0.2): A<B equivalent, A<C only non-superior
    assert sens.loc[("A<B", 2.0), "equivalence_p_holm"] == pytest.approx(0.002)
    assert sens.loc[("A<C", 2.0), "decision"] == "non-superior only"
    assert (sens["sesoi"] == 0.1 * sens.index.get_level_values("sesoi_factor")).all()


def test_a_failed_fit_counts_with_p_one_at_every_margin():
    frame, spec = _decided_frame()
    frame.loc[1, "status"] = "fit failed"
    sens = sesoi_sensitivity(frame, spec).set_index(["pair", "sesoi_factor"])
    for f in SESOI_FACTORS:
        assert sens.loc[("A<C", f), "equivalence_p_holm"] == 1.0
        assert sens.loc[("A<C", f), "decision"] == "inconclusive"
    # A<B at 0.5: Holm of (0.01, 1) -> 0.02
    assert sens.loc[("A<B", 0.5), "equivalence_p_holm"] == pytest.approx(0.02)


def test_method_2_has_no_sensitivity_and_unchanged_p_columns():
    result = _run(2)
    assert result.sesoi_sensitivity is None
    frame, spec = _decided_frame()
    assert sesoi_sensitivity(frame, replace(spec, method=2)) is None
    effects = np.linspace(-1.0, 1.0, 99)
    same = sesoi_columns(replace(spec, method=2), 0.3, replicates=effects)
    assert same == sesoi_p_values(2, 0.3, replicates=effects)


def test_without_sensitivities_nothing_is_computed():
    # the refits of a refit bootstrap run so: no scaled p values, no table
    frame, spec = _decided_frame()
    quiet = replace(spec, sensitivities=False)
    assert sesoi_sensitivity(frame, quiet) is None
    effects = np.linspace(-1.0, 1.0, 99)
    assert sesoi_columns(quiet, 0.3, replicates=effects) == sesoi_p_values(
        3, 0.3, replicates=effects
    )
    assert "_equivalence_p_at_2" in sesoi_columns(spec, 0.3, replicates=effects)
    with pytest.raises(ParameterError) as info:
        sesoi_sensitivity(frame, {"method": 3})
    assert info.value.name == "spec"
