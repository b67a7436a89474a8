"""Equivalence beside superiority: SESOI, the one-sided equivalence p, the decisions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.compare import RESULT_COLUMNS, ComparisonSpec, NestedComparison
from analysis.compare.bootstrap import (
    ClusterBootstrap,
    percentile_equivalence_p,
)
from analysis.compare.equivalence import (
    ADDS_INFORMATION,
    EQUIVALENCE_COLUMNS,
    EQUIVALENT,
    INCONCLUSIVE,
    NO_SESOI,
)
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table

#: ``to_frame()`` of the comparison below, written by the code of commit c1cca85 (before
#: the equivalence columns existed), with a leading ``bootstrap`` column.
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "comparison_no_sesoi_c1cca85.csv"
SESOI_ALL = {
    p: {"interval_sq_loss": 0.05, "interval_loglik": 0.05, "spearman_mid": 0.02}
    for p in ("M0<M1", "M0<M2", "M0<M3")
}


def _golden_run(boot: str, options: dict) -> pd.DataFrame:
    t = make_table(np.random.default_rng(2026), n_heads=16, cells=6, native_effect=0.5)
    t["stratum"] = np.where(t["cluster"].str[1:].astype(int) % 2 == 0, "ck-a", "ck-b")
    r = NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=FAMILY,
            estimator="ols",
            n_boot=199,
            random_state=7,
            log_columns=["baseline__scale"],
            bootstrap=boot,
            **options,
            **COVARIATES,
        )
    ).fit(t)
    return r.to_frame()


@pytest.mark.parametrize("boot", ["cluster", "studentized"])
def test_without_sesoi_the_older_columns_are_those_of_c1cca85(boot):
    golden = pd.read_csv(GOLDEN, keep_default_na=False, na_values=[""])
    golden = golden[golden["bootstrap"] == boot].drop(columns="bootstrap").reset_index(drop=True)
    old = list(golden.columns)
    assert list(RESULT_COLUMNS[: len(old)]) == old  # older columns keep their positions
    assert list(RESULT_COLUMNS[len(old) :]) == list(EQUIVALENCE_COLUMNS)
    new = _golden_run(boot, {})
    for c in old:
        a, b = new[c].to_numpy(), golden[c].to_numpy()
        if new[c].dtype.kind == "f":
            np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-9, atol=1e-12)
        elif c in ("calibration_folds", "calibration_seed", "lock_sha256"):
            assert new[c].isna().all() and golden[c].isna().all()
        else:
            assert a.tolist() == b.tolist(), c
    assert new["sesoi"].isna().all() and new["equivalence_p"].isna().all()
    assert new["equivalence_p_holm"].isna().all() and set(new["equivalence"]) == {"none"}
    assert set(new["decision"]) <= {ADDS_INFORMATION, NO_SESOI}
    assert (new["decision"] == ADDS_INFORMATION).tolist() == new["adds_information"].tolist()
    # a SESOI adds the equivalence test and changes no older value
    with_sesoi = _golden_run(boot, {"sesoi": SESOI_ALL})
    pd.testing.assert_frame_equal(with_sesoi[old], new[old])
    assert with_sesoi["equivalence_p"].notna().all()
    assert set(with_sesoi["equivalence"]) == {"pre-specified"}
    loss = with_sesoi["metric"] == "interval_sq_loss"
    np.testing.assert_allclose(
        with_sesoi.loc[loss, "sesoi_share"], 0.05 / with_sesoi.loc[loss, "base_value"]
    )
    assert with_sesoi.loc[~loss, "sesoi_share"].isna().all()
    roles = dict(zip(with_sesoi["metric"], with_sesoi["metric_role"], strict=True))
    assert roles == {
        "interval_sq_loss": "primary",
        "interval_loglik": "secondary",
        "spearman_mid": "secondary",
    }


def _sim(rng: np.random.Generator, n_heads: int, cells: int, effect: float) -> pd.DataFrame:
    """y = x + effect * q + head effect + noise, seen as brackets of width 1."""
    n = n_heads * cells
    head = np.repeat(np.arange(n_heads), cells)
    x, q = rng.normal(size=n), rng.normal(size=n)
    y = x + effect * q + 0.5 * rng.normal(size=n_heads)[head] + rng.normal(size=n)
    held = rng.choice(n_heads, size=round(0.3 * n_heads), replace=False)
    lo = np.floor(y)
    return pd.DataFrame(
        {
            "cell_key": np.arange(n),
            "cluster": head,
            "held_out": np.isin(head, held),
            "y_lower": lo,
            "y_upper": lo + 1.0,
            "base__x": x,
            "rich__q": q,
        }
    )


def _decide(table: pd.DataFrame, sesoi: float, bootstrap: str = "cluster") -> pd.Series:
    res = NestedComparison(
        ComparisonSpec(
            models={"M0": ["base"], "M1": ["base", "rich"]},
            family=[("M0", "M1")],
            estimator="ols",
            n_boot=499,
            random_state=0,
            bootstrap=bootstrap,
            sesoi={"M0<M1": {"interval_sq_loss": sesoi}},
        )
    ).fit(table)
    return res.to_frame().iloc[0]


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_nested_comparison_decisions_on_known_effects(bootstrap):
    # rich__q carries nothing: M0 loss is about 0.65, the SESOI 0.05 (under 8% of it)
    null = _decide(_sim(np.random.default_rng(1), 200, 10, 0.0), 0.05, bootstrap)
    assert null["decision"] == EQUIVALENT and null["equivalence_p_holm"] < 0.05
    assert not null["adds_information"]
    # rich__q carries a unit slope: a large effect
    strong = _decide(_sim(np.random.default_rng(1), 200, 10, 1.0), 0.05, bootstrap)
    assert strong["decision"] == ADDS_INFORMATION and strong["equivalence_p"] > 0.5
    # the same null with a SESOI far below the precision of 60 held-out heads
    tight = _decide(_sim(np.random.default_rng(1), 200, 10, 0.0), 1e-4, bootstrap)
    assert tight["decision"] == INCONCLUSIVE


def _cells(rng, n_heads, cells, effect, head_sd=0.5, cell_sd=0.5):
    heads = np.repeat(np.arange(n_heads), cells)
    base = 1.0 + rng.normal(0.0, cell_sd, heads.size)
    rich = base - (effect + rng.normal(0.0, head_sd, n_heads)[heads])
    rich = rich - rng.normal(0.0, cell_sd, heads.size)
    return base, rich, heads


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_bootstrap_decisions_on_known_effects(bootstrap):
    """Known true effects (base minus rich loss): 0 with a SESOI of 0.3 on 200 heads is
    equivalent; 1.0 adds information."""
    kw = {"n_boot": 999, "random_state": 3, "bootstrap": bootstrap}
    base, rich, heads = _cells(np.random.default_rng(0), 200, 5, 0.0)
    assert ClusterBootstrap(**kw).equivalence(base, rich, heads, 0.3) < 0.05
    assert ClusterBootstrap(**kw).effect(base, rich, heads)[3] > 0.05
    base, rich, heads = _cells(np.random.default_rng(0), 200, 5, 1.0)
    assert ClusterBootstrap(**kw).effect(base, rich, heads)[3] < 0.05
    assert ClusterBootstrap(**kw).equivalence(base, rich, heads, 0.3) > 0.5


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_a_tiny_sample_is_mostly_inconclusive(bootstrap):
    """True effect 0, SESOI 0.3, 6 heads x 2 cells (SE of the effect about 0.3): most
    studies decide neither way; with 200 heads nearly every study is equivalent."""
    rng = np.random.default_rng(11)
    kw = {"n_boot": 199, "random_state": rng, "bootstrap": bootstrap}

    def shares(n_heads: int, n_sim: int = 200) -> tuple[float, float]:
        eq = inc = 0
        for _ in range(n_sim):
            base, rich, heads = _cells(rng, n_heads, 2, 0.0, head_sd=0.7)
            p_eq = ClusterBootstrap(**kw).equivalence(base, rich, heads, 0.3)
            p_sup = ClusterBootstrap(**kw).effect(base, rich, heads)[3]
            eq += p_eq < 0.05
            inc += p_eq >= 0.05 and p_sup >= 0.05
        return eq / n_sim, inc / n_sim

    eq_tiny, inc_tiny = shares(6)
    eq_big, _ = shares(200)
    assert inc_tiny > 0.5 and eq_tiny < 0.5, (eq_tiny, inc_tiny)
    assert eq_big > 0.95, eq_big


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_equivalence_p_is_calibrated_at_the_sesoi(bootstrap):
    """At a true effect equal to the SESOI, the equivalence test rejects about alpha.

    2000 simulated studies of 40 heads x 5 cells, B = 199. If the size is exactly 0.05
    the rejection rate has Monte Carlo SE ``sqrt(0.05 * 0.95 / 2000) = 0.0049``; the
    tolerance is 4 SE (0.0195), which a correct test leaves with probability about
    6e-5 and which still catches a test whose size is off by a factor 1.4 or more (the
    percentile bootstrap's own small-sample excess with 40 heads measured about 0.01).
    A test of the wrong side (``effect_b <= sesoi``) rejects about 95%.
    """
    rng = np.random.default_rng(20261206)
    n_sim, alpha, sesoi = 2000, 0.05, 0.2
    rejected = 0
    for _ in range(n_sim):
        base, rich, heads = _cells(rng, 40, 5, sesoi)
        p = ClusterBootstrap(n_boot=199, random_state=rng, bootstrap=bootstrap).equivalence(
            base, rich, heads, sesoi
        )
        rejected += p < alpha
    rate = rejected / n_sim
    se = np.sqrt(alpha * (1 - alpha) / n_sim)
    assert abs(rate - alpha) <= 4 * se, rate


def test_percentile_equivalence_p_counts_replicates_at_or_above():
    effects = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    assert percentile_equivalence_p(effects, 0.3) == pytest.approx(3 / 6)
    assert percentile_equivalence_p(effects, 1.0) == pytest.approx(1 / 6)


def test_holm_applies_to_the_equivalence_p_within_the_family():
    t = make_table(np.random.default_rng(5), n_heads=40, native_effect=0.0)
    res = NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=FAMILY,
            estimator="ols",
            metrics=["interval_sq_loss"],
            n_boot=199,
            random_state=0,
            log_columns=["baseline__scale"],
            sesoi={"M0<M1": {"interval_sq_loss": 0.02}},
            **COVARIATES,
        )
    ).fit(t)
    f = res.to_frame().set_index("pair")
    # one pair with a SESOI: its Holm family of equivalence tests has one member
    assert f.loc["M0<M1", "equivalence_p_holm"] == f.loc["M0<M1", "equivalence_p"]
    assert f.loc[["M0<M2", "M0<M3"], "decision"].isin([ADDS_INFORMATION, NO_SESOI]).all()
    res2 = NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=FAMILY,
            estimator="ols",
            metrics=["interval_sq_loss"],
            n_boot=199,
            random_state=0,
            log_columns=["baseline__scale"],
            sesoi={p: {"interval_sq_loss": 0.02} for p in ("M0<M1", "M0<M2", "M0<M3")},
            **COVARIATES,
        )
    ).fit(t)
    g = res2.to_frame()
    from statsmodels.stats.multitest import multipletests

    expected = multipletests(g["equivalence_p"], method="holm")[1]
    np.testing.assert_allclose(g["equivalence_p_holm"], expected)


def test_a_failed_fit_is_never_equivalent(rng):
    from tests.fixtures.compare_tables import with_separating_column

    t = with_separating_column(make_table(rng, native_effect=0.5), rng)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=FAMILY,
                metrics=["interval_sq_loss"],
                n_boot=99,
                random_state=0,
                log_columns=["baseline__scale"],
                maxiter=1,
                sesoi={p: {"interval_sq_loss": 1e3} for p in ("M0<M1", "M0<M2", "M0<M3")},
                **COVARIATES,
            )
        ).fit(t)
    f = res.to_frame()
    failed = f[f["status"] == "fit failed"]
    assert set(failed["pair"]) == {"M0<M1", "M0<M3"}
    assert (failed["equivalence_p"] < 0.05).all()  # its numbers alone would say so
    assert (failed["decision"] == INCONCLUSIVE).all()
    assert (failed["equivalence_p_holm"] == 1.0).all()


@pytest.mark.parametrize(
    "sesoi, name",
    [
        ({"M0<M1": {"interval_sq_loss": 0.0}}, "sesoi[M0<M1][interval_sq_loss]"),
        ({"M0<M1": {"interval_sq_loss": float("nan")}}, "sesoi[M0<M1][interval_sq_loss]"),
        ({"M0<M1": {"interval_sq_loss": True}}, "sesoi[M0<M1][interval_sq_loss]"),
        ({"M0M1": {"interval_sq_loss": 0.1}}, "sesoi"),
        ({"M0<M1": {}}, "sesoi[M0<M1]"),
    ],
)
def test_invalid_sesoi_is_named(sesoi, name):
    with pytest.raises(ParameterError) as err:
        ComparisonSpec(models=MODELS, family=FAMILY, sesoi=sesoi)
    assert err.value.name == name


def test_spec_must_be_a_comparison_spec(table):
    with pytest.raises(ParameterError) as err:
        NestedComparison({"models": MODELS, "family": FAMILY})
    assert err.value.name == "spec"
