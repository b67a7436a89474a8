"""The secondary by-checkpoint effects: same fits, one checkpoint's held-out heads each."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import analysis.compare.bycheckpoint as bycheckpoint
from analysis.compare import (
    BY_CHECKPOINT_COLUMNS,
    PREDICTION_COLUMNS,
    ClusterBootstrap,
    ComparisonSpec,
    NestedComparison,
    checkpoint_seed,
    effects_by_checkpoint,
    held_out_predictions,
    interval_loglik,
    interval_sq_loss,
    spearman,
)
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS

SEED = 11
N_BOOT = 199
EXTRA = [("M1", "M3")]


@pytest.fixture
def two(table) -> pd.DataFrame:
    """The compare table with two checkpoints; each holds held-out heads."""
    heads = sorted(table["cluster"].unique(), key=lambda h: int(h[1:]))
    held = set(table.loc[table["held_out"], "cluster"])
    # alternate within training and within held-out heads, so both checkpoints get some
    ck = {}
    for group in (sorted(held), [h for h in heads if h not in held]):
        for i, h in enumerate(group):
            ck[h] = "org/ckpt-a" if i % 2 == 0 else "org/ckpt-b"
    return table.assign(stratum=table["cluster"].map(ck))


@pytest.fixture
def fitted(two):
    return NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=FAMILY,
            extra_pairs=EXTRA,
            log_columns=["baseline__scale"],
            n_boot=N_BOOT,
            random_state=SEED,
            **COVARIATES,
        )
    ).fit(two)


def _direct(result, table, base, rich, ck):
    """The per-cell losses and log-likelihoods of one checkpoint's held-out cells."""
    rows = (table["held_out"] & (table["stratum"] == ck)).to_numpy()
    lo, up = table["y_lower"].to_numpy(float)[rows], table["y_upper"].to_numpy(float)[rows]
    yh = {m: result.fits[m].predict(result.covariates.matrices[m][rows]) for m in (base, rich)}
    loss = {m: interval_sq_loss(yh[m], lo, up) for m in yh}
    ll = {m: interval_loglik(yh[m], result.fits[m].sigma, lo, up) for m in yh}
    return rows, yh, loss, ll, 0.5 * (lo + up)


def test_effects_equal_a_direct_computation_on_each_checkpoint(two, fitted):
    res = effects_by_checkpoint(fitted, two, seed=SEED, labels={"M0<M1": "H1"})
    f = res.to_frame()
    assert tuple(f.columns) == BY_CHECKPOINT_COLUMNS
    pairs = [*FAMILY, *EXTRA]
    cks = ["org/ckpt-a", "org/ckpt-b"]
    assert len(f) == len(pairs) * len(cks) * 3
    assert (f["analysis"] == "secondary, by checkpoint").all()
    for i, (b, r) in enumerate(pairs):
        for j, ck in enumerate(cks):
            rows, yh, loss, ll, mid = _direct(fitted, two, b, r, ck)
            clusters = two["cluster"].to_numpy()[rows]
            sel = f[(f["pair"] == f"{b}<{r}") & (f["checkpoint"] == ck)].set_index("metric")
            assert sel.loc["interval_sq_loss", "hypothesis"] == (
                "H1" if (b, r) == FAMILY[0] else f"{b}<{r}"
            )
            assert sel["held_out_heads"].eq(len(set(clusters))).all()
            assert sel["held_out_cells"].eq(int(rows.sum())).all()
            assert sel["spawn_key"].eq(f"1,{i},{j}").all()
            for met, vals, hib in (
                ("interval_sq_loss", loss, False),
                ("interval_loglik", ll, True),
            ):
                rng = np.random.default_rng(checkpoint_seed(SEED, i, j))
                eff, lo, hi, p = ClusterBootstrap(n_boot=N_BOOT, random_state=rng).effect(vals[b], vals[r], clusters, higher_is_better=hib)  # fmt: skip
                row = sel.loc[met]
                assert row["base_value"] == vals[b].mean() and row["rich_value"] == vals[r].mean()
                assert (row["effect"], row["ci_low"], row["ci_high"], row["p_one_sided"]) == (
                    eff, lo, hi, p,
                )  # fmt: skip
            fin = np.isfinite(mid)
            sp = sel.loc["spearman_mid"]
            assert sp["effect"] == spearman(yh[r][fin], mid[fin]) - spearman(yh[b][fin], mid[fin])
            assert sp["ci_low"] <= sp["ci_high"]


def test_one_checkpoint_gives_the_overall_effects(two, fitted):
    """The same fits: with a single checkpoint every effect is the overall comparison's."""
    one = two.assign(stratum="org/only")
    res = effects_by_checkpoint(fitted, one, seed=SEED).to_frame()
    overall = fitted.to_frame()
    merged = res.merge(overall, on=["pair", "metric"], suffixes=("", "_all"))
    assert len(merged) == len(overall)
    for c in ("effect", "base_value", "rich_value"):
        np.testing.assert_array_equal(merged[c], merged[f"{c}_all"])
    assert (merged["held_out_cells"] == merged["n_cells"]).all()
    assert (merged["held_out_heads"] == merged["n_heads"]).all()


def test_the_bootstrap_resamples_only_that_checkpoints_heads(two, fitted, monkeypatch):
    sizes = []
    real = bycheckpoint.bootstrap_counts

    def spy(n_clusters, n_boot, rng, strata=None):
        sizes.append(n_clusters)
        return real(n_clusters, n_boot, rng, strata)

    monkeypatch.setattr(bycheckpoint, "bootstrap_counts", spy)
    base = effects_by_checkpoint(fitted, two, seed=SEED).to_frame()
    held = two.loc[two["held_out"]]
    per_ck = held.groupby("stratum")["cluster"].nunique()
    assert sizes == [per_ck["org/ckpt-a"], per_ck["org/ckpt-b"]] * (len(FAMILY) + len(EXTRA))
    # moving checkpoint b's held-out outcomes leaves every row of checkpoint a unchanged
    moved = two.copy()
    b_rows = moved["held_out"] & (moved["stratum"] == "org/ckpt-b")
    moved.loc[b_rows, ["y_lower", "y_upper"]] += 1.5
    after = effects_by_checkpoint(fitted, moved, seed=SEED).to_frame()
    a = base["checkpoint"] == "org/ckpt-a"
    pd.testing.assert_frame_equal(base[a], after[a], check_exact=True)
    assert not np.array_equal(base.loc[~a, "effect"], after.loc[~a, "effect"])


def test_seed_rule_is_the_documented_spawn_chain():
    for i, j in ((0, 0), (2, 1), (3, 4)):
        chain = np.random.SeedSequence(SEED).spawn(2)[1].spawn(i + 1)[i].spawn(j + 1)[j]
        np.testing.assert_array_equal(
            checkpoint_seed(SEED, i, j).generate_state(4), chain.generate_state(4)
        )
    # independent of the calibration folds' stream (child 0) and of the overall bootstrap
    fold = np.random.SeedSequence(SEED).spawn(1)[0]
    assert not np.array_equal(checkpoint_seed(SEED, 0, 0).generate_state(4), fold.generate_state(4))


def test_held_out_predictions_are_the_fits_predictions(two, fitted):
    pred = held_out_predictions(fitted, two)
    assert tuple(pred.columns) == PREDICTION_COLUMNS
    held = two["held_out"].to_numpy()
    assert len(pred) == int(held.sum()) * len(fitted.fits)
    for m, fit in fitted.fits.items():
        sub = pred[pred["model"] == m]
        np.testing.assert_array_equal(
            sub["y_hat"], fit.predict(fitted.covariates.matrices[m][held])
        )
        np.testing.assert_array_equal(sub["cell_key"], two.loc[held, "cell_key"])
        np.testing.assert_array_equal(sub["checkpoint"], two.loc[held, "stratum"])


def test_result_is_frozen_and_summarises_the_primary_metric(two, fitted):
    res = effects_by_checkpoint(fitted, two, seed=SEED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.seed = 0  # type: ignore[misc]
    text = res.summary()
    assert "secondary, outside the Holm family" in text
    assert "spawn_key=(1, pair, checkpoint)" in text
    assert text.count("org/ckpt-a") == len(FAMILY) + len(EXTRA)
    assert "interval_loglik" not in text


def test_bad_input_is_named(two, fitted):
    with pytest.raises(ParameterError, match="stratum"):
        effects_by_checkpoint(fitted, two.drop(columns="stratum"), seed=SEED)
    with pytest.raises(ParameterError) as info:
        effects_by_checkpoint(fitted, two.iloc[:-1], seed=SEED)
    assert info.value.name == "table"
    with pytest.raises(ParameterError) as info:
        held_out_predictions(fitted, two.iloc[:-1])
    assert info.value.name == "table"
    for kw, name in (({"seed": -1}, "seed"), ({"seed": SEED, "ci_level": 1.0}, "ci_level")):
        with pytest.raises(ParameterError) as info:
            effects_by_checkpoint(fitted, two, **kw)
        assert info.value.name == name
    with pytest.raises(ParameterError) as info:
        effects_by_checkpoint(two, two, seed=SEED)
    assert info.value.name == "result"
