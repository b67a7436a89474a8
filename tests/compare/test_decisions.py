"""Method 3's decisions say what they test: TOST, harms, non-superiority (docs/method.md,
"Decision rule"); method 2 keeps every column and word its locked studies ran under."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.compare import RESULT_COLUMNS, ComparisonSpec, NestedComparison
from analysis.compare.bootstrap import bootstrap_counts, percentile_ci_and_p
from analysis.compare.decisions import (
    ADDS_INFORMATION,
    DECISIONS,
    EQUIVALENT,
    HARMS,
    INCONCLUSIVE,
    NON_SUPERIOR,
    decide,
)
from analysis.compare.equivalence import (
    decide_equivalence,
    decide_method3,
    percentile_tost_p,
    studentized_tost_p,
)
from analysis.compare.estimators import fit_ols
from analysis.compare.lrtests import WALD_TEST, cluster_wald_tests, lr_tests
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS, make_table, null_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: ``to_frame()`` and ``lr_tests`` of the comparison below, written by the code of commit
#: 0f22546 (before method 3 existed), with a trailing ``bootstrap`` column.
GOLDEN = FIXTURES / "comparison_method2_0f22546.csv"
GOLDEN_LR = FIXTURES / "lr_tests_method2_0f22546.csv"
SESOI = {
    p: {"interval_sq_loss": 0.05, "interval_loglik": 0.05, "spearman_mid": 0.02}
    for p in ("M0<M1", "M0<M2")
}


# --- decide(): one case per branch, first match wins ---------------------------------


@pytest.mark.parametrize(
    ("kw", "want"),
    [
        # superiority: Holm p < alpha and the CI above 0
        (dict(ci_low=0.01, ci_high=0.05, p_holm=0.01), ADDS_INFORMATION),
        # ... wins over a TOST that would also reject
        (dict(ci_low=0.001, ci_high=0.002, p_holm=0.01, tost_p_holm=0.01), ADDS_INFORMATION),
        # a CI above 0 with Holm p >= alpha is not superiority
        (dict(ci_low=0.01, ci_high=0.05, p_holm=0.2), INCONCLUSIVE),
        # the whole CI below 0: harms, even where both SESOI tests reject
        (dict(ci_low=-0.05, ci_high=-0.01, p_holm=1.0), HARMS),
        (
            dict(
                ci_low=-0.05,
                ci_high=-0.01,
                p_holm=1.0,
                tost_p_holm=0.001,
                non_superiority_p_holm=0.001,
            ),
            HARMS,
        ),
        # both halves of the TOST reject
        (
            dict(
                ci_low=-0.001,
                ci_high=0.001,
                p_holm=0.5,
                tost_p_holm=0.01,
                non_superiority_p_holm=0.01,
            ),
            EQUIVALENT,
        ),
        # only the upper half rejects
        (
            dict(
                ci_low=-0.02,
                ci_high=0.0009,
                p_holm=0.9,
                tost_p_holm=0.65,
                non_superiority_p_holm=0.02,
            ),
            NON_SUPERIOR,
        ),
        # nothing rejects; and without a SESOI nothing but superiority or harm can
        (
            dict(
                ci_low=-0.02, ci_high=0.01, p_holm=0.5, tost_p_holm=0.3, non_superiority_p_holm=0.2
            ),
            INCONCLUSIVE,
        ),
        (dict(ci_low=-0.02, ci_high=0.01, p_holm=0.5), INCONCLUSIVE),
        # NaN (a failed fit) decides nothing
        (
            dict(
                ci_low=np.nan,
                ci_high=np.nan,
                p_holm=1.0,
                tost_p_holm=np.nan,
                non_superiority_p_holm=np.nan,
            ),
            INCONCLUSIVE,
        ),
        # alpha is strict
        (dict(ci_low=0.01, ci_high=0.05, p_holm=0.05), INCONCLUSIVE),
    ],
)
def test_decide_each_branch(kw, want):
    args = {"tost_p_holm": None, "non_superiority_p_holm": None, "alpha": 0.05, **kw}
    assert decide(**args) == want
    assert want in DECISIONS


def test_the_vocabulary_is_the_shared_contract():
    assert DECISIONS == (
        "adds information",
        "harms",
        "equivalent within SESOI",
        "non-superior only",
        "inconclusive",
    )


# --- the two one-sided tests from the same replicates ---------------------------------


def _h1_like_replicates(b: int = 3999) -> np.ndarray:
    """Replicate effects whose 95% percentile CI is about [-0.0224, +0.0009] (H1)."""
    rng = np.random.default_rng(11)
    return rng.normal(-0.01075, 0.0059, b)


def test_a_ci_reaching_far_below_minus_sesoi_is_not_equivalent():
    eff = _h1_like_replicates()
    lo, hi, p = percentile_ci_and_p(eff, 0.95)
    assert -0.025 < lo < -0.02 and 0.0 < hi < 0.002  # about [-0.0224, +0.0009]
    p_lower, p_upper = percentile_tost_p(eff, 0.001)
    # the upper half (effect < +SESOI) rejects; the lower (effect > -SESOI) is far from it
    assert p_upper < 0.05 and p_lower > 0.9
    row = pd.DataFrame(
        {
            "metric": ["loss"],
            "ci_low": [lo],
            "ci_high": [hi],
            "p_value": [p],
            "p_holm": [p],
            "sesoi": [0.001],
            "equivalence_p": [max(p_lower, p_upper)],
            "non_superiority_p": [p_upper],
            "adds_information": [False],
        }
    )
    kw = dict(in_family=np.ones(1, bool), ok=np.ones(1, bool), metrics=["loss"])
    out = decide_method3(row, primary_metric="loss", alpha=0.05, **kw)
    assert out["decision"].tolist() == [NON_SUPERIOR]
    assert out["equivalence_p_holm"].iloc[0] > 0.9
    # method 2's one-sided test called the same interval "equivalent"
    old = decide_equivalence(
        row.drop(columns="non_superiority_p").assign(equivalence_p=p_upper, base_value=1.0),
        primary_metric="loss",
        alpha=0.05,
        **kw,
    )
    assert old["decision"].tolist() == ["equivalent within SESOI"]


def test_tost_p_is_the_larger_half_and_is_symmetric():
    eff = np.random.default_rng(3).normal(0.0, 0.01, 1999)
    lower, upper = percentile_tost_p(eff, 0.03)
    assert lower < 0.05 and upper < 0.05
    mirrored = percentile_tost_p(-eff, 0.03)
    assert mirrored == (upper, lower)


def test_studentized_halves_mirror_each_other():
    rng = np.random.default_rng(5)
    sums, sizes = rng.normal(0.5, 1.0, 30), np.full(30, 2.0)  # effect about 0.25
    counts = bootstrap_counts(30, 499, np.random.default_rng(0))
    low, up = studentized_tost_p(sums, sizes, counts, np.zeros(30), 0.1)
    neg_low, neg_up = studentized_tost_p(-sums, sizes, counts, np.zeros(30), 0.1)
    # +0.25 is far above -0.1 (lower half rejects) and not below +0.1 (upper does not)
    assert low < 0.05 < up
    assert (neg_low, neg_up) == (up, low)


# --- the comparison under method 3 ----------------------------------------------------


def _harm_table(seed: int = 0, n_heads: int = 60, cells: int = 8) -> pd.DataFrame:
    """y = x + z on training heads, y = x - z on held-out heads: the rich model's z
    slope, learned on training heads, makes held-out predictions worse."""
    rng = np.random.default_rng(seed)
    head = np.repeat(np.arange(n_heads), cells)
    held = np.isin(head, rng.choice(n_heads, n_heads // 3, replace=False))
    x, z = rng.normal(size=head.size), rng.normal(size=head.size)
    y = x + np.where(held, -z, z) + 0.3 * rng.normal(size=head.size)
    lo = np.floor(2 * y) / 2
    return pd.DataFrame(
        {
            "cell_key": np.arange(head.size),
            "cluster": head,
            "held_out": held,
            "y_lower": lo,
            "y_upper": lo + 0.5,
            "base__x": x,
            "rich__z": z,
        }
    )


def _fit(table: pd.DataFrame, sesoi: float, **kw) -> pd.DataFrame:
    spec = ComparisonSpec(
        models={"M0": ["base"], "M1": ["base", "rich"]},
        family=[("M0", "M1")],
        metrics=["interval_sq_loss"],
        estimator="ols",
        n_boot=499,
        random_state=0,
        sesoi={"M0<M1": {"interval_sq_loss": sesoi}},
        **kw,
    )
    return NestedComparison(spec).fit(table).to_frame()


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_a_block_that_harms_is_harms_not_equivalent(bootstrap):
    table = _harm_table()
    old = _fit(table, 0.05, bootstrap=bootstrap).iloc[0]
    new = _fit(table, 0.05, bootstrap=bootstrap, method=3).iloc[0]
    assert new["ci_high"] < -0.05  # the whole CI below -SESOI
    # method 2's one-sided test called this block "equivalent"; method 3 says harms
    assert old["decision"] == "equivalent within SESOI"
    assert new["decision"] == HARMS and not new["adds_information"]
    # the TOST rejects nothing (the lower half, effect > -SESOI, is far from it) ...
    assert new["equivalence_p"] > 0.9 and new["equivalence_p_holm"] > 0.9
    # ... while the one-sided p keeps its value under its own name
    assert new["non_superiority_p"] == old["equivalence_p"]
    assert new["non_superiority_p_holm"] == old["equivalence_p_holm"]


@pytest.mark.parametrize("bootstrap", ["cluster", "studentized"])
def test_a_ci_within_the_sesoi_with_both_halves_significant_is_equivalent(bootstrap):
    row = _fit(null_table(), 0.05, bootstrap=bootstrap, method=3).iloc[0]
    assert -0.05 < row["ci_low"] and row["ci_high"] < 0.05
    assert row["equivalence_p_holm"] < 0.05 and row["non_superiority_p_holm"] < 0.05
    assert row["equivalence_p"] >= row["non_superiority_p"]  # the max of the two halves
    assert row["decision"] == EQUIVALENT


def test_method3_columns_and_the_failed_fit():
    frame = _fit(null_table(n_heads=40), 0.05, method=3)
    assert list(frame.columns) == [*RESULT_COLUMNS, "non_superiority_p", "non_superiority_p_holm"]
    assert set(frame["decision"]) <= set(DECISIONS)
    row = pd.DataFrame(
        {
            "metric": ["loss"] * 2,
            "ci_low": [-0.3, -0.3],
            "ci_high": [-0.1, -0.1],
            "p_value": [1.0, 1.0],
            "p_holm": [1.0, 1.0],
            "sesoi": [0.05, np.nan],
            "equivalence_p": [0.001, np.nan],
            "non_superiority_p": [0.001, np.nan],
            "adds_information": [False, False],
        }
    )
    out = decide_method3(
        row,
        in_family=np.ones(2, bool),
        ok=np.array([False, True]),
        metrics=["loss"],
        primary_metric="loss",
        alpha=0.05,
    )
    # a failed fit decides nothing (its CI is no result); a row without a SESOI can harm
    assert out["decision"].tolist() == [INCONCLUSIVE, HARMS]
    assert out["equivalence_p_holm"].iloc[0] == 1.0


def test_method_must_be_2_or_3():
    for bad in (1, 4, True, "3"):
        with pytest.raises(ParameterError) as info:
            ComparisonSpec(models={"M0": ["b"]}, family=[("M0", "M0")], method=bad)
        assert info.value.name == "method"


# --- method 2 is unchanged -------------------------------------------------------------


def _golden_run(boot: str, **kw):
    t = make_table(np.random.default_rng(2026), n_heads=16, cells=6, native_effect=0.5)
    t["stratum"] = np.where(t["cluster"].str[1:].astype(int) % 2 == 0, "ck-a", "ck-b")
    spec = ComparisonSpec(
        models=MODELS,
        family=FAMILY,
        estimator="ols",
        n_boot=199,
        random_state=7,
        log_columns=["baseline__scale"],
        bootstrap=boot,
        sesoi=SESOI,
        **kw,
        **COVARIATES,
    )
    return NestedComparison(spec).fit(t)


def _same_table(new: pd.DataFrame, golden: Path) -> None:
    """Every non-float cell as recorded; every float to 1e-9 relative (1e-13 absolute).

    The golden files were written on the machine of commit 0f22546. Another CPU's BLAS
    sums in another order, which moves the last one or two digits of a float (measured:
    effects and CI ends by <= 2e-15 relative, gradient norms of 5e-16 by 1e-16), so a
    byte comparison tests the machine, not the code; a change of the method moves these
    numbers by many orders of magnitude more than the tolerance.
    """
    old = pd.read_csv(golden)
    back = pd.read_csv(io.StringIO(new.to_csv(index=False)))  # the same CSV round trip
    assert list(back.columns) == list(old.columns)
    floats = [c for c in old.columns if old[c].dtype.kind == "f" or back[c].dtype.kind == "f"]
    others = [c for c in old.columns if c not in floats]
    pd.testing.assert_frame_equal(back[others], old[others], check_exact=True)
    pd.testing.assert_frame_equal(
        back[floats].astype(float), old[floats].astype(float), rtol=1e-9, atol=1e-13
    )


def test_method2_tables_are_those_before_method3():
    runs = [(b, _golden_run(b)) for b in ("cluster", "studentized")]
    frame = pd.concat([r.to_frame().assign(bootstrap=b) for b, r in runs], ignore_index=True)
    lr = pd.concat([r.lr_tests.assign(bootstrap=b) for b, r in runs], ignore_index=True)
    assert list(frame.columns[:-1]) == list(RESULT_COLUMNS)
    _same_table(frame, GOLDEN)
    _same_table(lr, GOLDEN_LR)
    # the explicit method 2 is the default
    explicit = _golden_run("cluster", method=2).to_frame()
    pd.testing.assert_frame_equal(explicit, runs[0][1].to_frame(), check_exact=True)


def test_method3_changes_only_the_sesoi_columns_and_the_decision():
    old = _golden_run("cluster").to_frame()
    new = _golden_run("cluster", method=3).to_frame()
    same = [
        c for c in RESULT_COLUMNS if c not in ("equivalence_p", "equivalence_p_holm", "decision")
    ]
    pd.testing.assert_frame_equal(new[same], old[same], check_exact=True)
    pd.testing.assert_series_equal(
        new["non_superiority_p"], old["equivalence_p"], check_names=False, check_exact=True
    )
    has = new["sesoi"].notna()
    assert (new.loc[has, "equivalence_p"] >= new.loc[has, "non_superiority_p"]).all()
    assert ((new["decision"] == ADDS_INFORMATION) == new["adds_information"]).all()


# --- item 7: the in-sample tests under method 3 ---------------------------------------


def test_method3_replaces_the_likelihood_ratio_test_by_a_cluster_robust_wald():
    r2 = _golden_run("cluster")
    r3 = _golden_run("cluster", method=3)
    assert "test" not in r2.lr_tests.columns
    assert set(r3.lr_tests["test"]) == {WALD_TEST}
    assert (r3.lr_tests["clusters"] == 12).all()  # the training heads
    assert r3.lr_tests["p_value"].between(0, 1).all()
    # M1 adds the native block that drives y
    assert r3.lr_tests.set_index("pair").loc["M0<M1", "p_value"] < 0.05


def test_the_wald_test_holds_its_size_where_the_lr_test_does_not():
    """A head-level covariate that carries nothing, heads with strong random effects:
    the cell-level LR test rejects far too often, the cluster-robust Wald test does not."""
    n_sim, n_heads, cells = 60, 30, 20
    rng = np.random.default_rng(42)
    groups = np.repeat(np.arange(n_heads), cells)
    lr_rej = wald_rej = 0
    for _ in range(n_sim):
        x = rng.normal(size=groups.size)
        z = rng.normal(size=n_heads)[groups]  # constant within a head
        y = x + 1.0 * rng.normal(size=n_heads)[groups] + 0.3 * rng.normal(size=groups.size)
        X = {"M0": x[:, None], "M1": np.column_stack([x, z])}
        fits = {m: fit_ols(X[m], y, y) for m in X}
        cols = {"M0": ["x"], "M1": ["x", "z"]}
        lr_rej += lr_tests([("M0", "M1")], fits)["p_value"].iloc[0] < 0.05
        wald = cluster_wald_tests([("M0", "M1")], fits, cols, X, (y, y), groups)
        wald_rej += wald["p_value"].iloc[0] < 0.05
    assert lr_rej / n_sim > 0.4
    assert wald_rej / n_sim < 0.15


def test_the_wald_test_on_interval_fits_and_a_ridge_fit():
    from analysis.compare.estimators import fit_interval, fit_ridge

    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(20), 6)
    x, z = rng.normal(size=120), rng.normal(size=120)
    lo = np.floor(x + z + 0.3 * rng.normal(size=120))
    X = {"M0": x[:, None], "M1": np.column_stack([x, z])}
    cols = {"M0": ["x"], "M1": ["x", "z"]}
    fits = {m: fit_interval(X[m], lo, lo + 1) for m in X}
    out = cluster_wald_tests([("M0", "M1")], fits, cols, X, (lo, lo + 1), groups).iloc[0]
    assert out["status"] == "ok" and out["df"] == 1 and out["p_value"] < 1e-6
    ridge = {m: fit_ridge(X[m], lo, lo + 1, groups=groups) for m in X}
    out = cluster_wald_tests([("M0", "M1")], ridge, cols, X, (lo, lo + 1), groups).iloc[0]
    assert out["status"] == "not available for the ridge estimator"
    assert np.isnan(out["p_value"])


def test_method3_sensitivity_rows_are_labelled_unadjusted_and_use_the_tost():
    table = make_table(np.random.default_rng(3), n_heads=16, cells=6, native_effect=0.5)
    table["stratum"] = np.where(table["cluster"].str[1:].astype(int) % 2 == 0, "ck-a", "ck-b")

    def run(method):
        spec = ComparisonSpec(
            models=MODELS,
            family=[("M0", "M1")],
            metrics=["interval_sq_loss"],
            estimator="ols",
            n_boot=199,
            random_state=1,
            sesoi={"M0<M1": {"interval_sq_loss": 0.5}},
            checkpoint_effects=True,
            method=method,
            **COVARIATES,
        )
        return NestedComparison(spec).fit(table).sensitivity

    s2, s3 = run(2), run(3)
    assert "adjustment" not in s2.columns
    assert set(s3["adjustment"]) == {"unadjusted"}
    ok = s3["equivalence_p"].notna()
    assert ok.any()
    assert (s3.loc[ok, "equivalence_p"] >= s2.loc[ok, "equivalence_p"]).all()
    pd.testing.assert_frame_equal(
        s3.drop(columns=["adjustment", "equivalence_p"]), s2.drop(columns="equivalence_p")
    )


def test_the_design_method_reaches_the_spec():
    from analysis.prereg.design import Design, tomllib

    root = Path(__file__).resolve().parents[2] / "preregistration"
    data = tomllib.loads((root / "paper-lengths.toml").read_text(encoding="utf-8"))
    assert Design(root / "x.toml", data, "0" * 64).comparison_kwargs()["method"] == 2
    data["method"] = 3
    kw = Design(root / "x.toml", data, "0" * 64).comparison_kwargs()
    assert kw["method"] == 3
    spec = ComparisonSpec(models={"M0": ["baseline"], "M1": ["baseline", "native"]}, **kw)
    assert spec.method == 3
