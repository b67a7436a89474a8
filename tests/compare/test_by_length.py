"""The secondary effects by input length: same fits, each length's held-out cells."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.compare import (
    BY_LENGTH_COLUMNS,
    ComparisonSpec,
    NestedComparison,
    checkpoint_seed,
    effects_by_checkpoint,
    effects_by_length,
    interval_loglik,
    interval_sq_loss,
    length_seed,
    spearman,
)
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, FAMILY, MODELS

SEED = 11
N_BOOT = 199
EXTRA = [("M1", "M3")]
LENGTHS = [65, 145, 257]  # as strings "145" < "257" < "65": the order must be numeric


@pytest.fixture
def three(table) -> pd.DataFrame:
    """The compare table at vision lengths 65 / 145 / 257; the first held-out head has no
    cell of length 257 (its would-be 257 cells are length 145)."""
    length = np.where(table["length"] == 16, 65, np.where(table["input_id"] == 0, 145, 257))
    out = table.assign(length=length)
    first = out.loc[out["held_out"], "cluster"].iloc[0]
    out.loc[(out["cluster"] == first) & (out["length"] == 257), "length"] = 145
    return out.assign(stratum="org/only")


@pytest.fixture
def fitted(three):
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
    ).fit(three)


def _hand_bootstrap(values_b, values_r, clusters, seed_seq, higher_is_better):
    """The percentile cluster bootstrap written out: B resamples of the group's heads
    (order of first appearance), each head bringing all its cells, means of the cells."""
    heads = list(dict.fromkeys(clusters))
    cells = {h: np.flatnonzero(clusters == h) for h in heads}
    counts = np.random.default_rng(seed_seq).multinomial(
        len(heads), np.full(len(heads), 1.0 / len(heads)), size=N_BOOT
    )
    sign = 1.0 if higher_is_better else -1.0
    effects = []
    for row in counts:
        idx = np.concatenate([np.repeat(cells[h], c) for h, c in zip(heads, row, strict=True)])
        effects.append(sign * (values_r[idx].mean() - values_b[idx].mean()))
    effects = np.array(effects)
    lo, hi = np.quantile(effects, [0.025, 0.975])
    return lo, hi, (1 + np.sum(effects <= 0)) / (N_BOOT + 1)


def test_effects_equal_a_hand_computation_at_each_length(three, fitted):
    res = effects_by_length(fitted, three, seed=SEED, labels={"M0<M1": "H1"})
    f = res.to_frame()
    assert tuple(f.columns) == BY_LENGTH_COLUMNS
    pairs = [*FAMILY, *EXTRA]
    assert len(f) == len(pairs) * len(LENGTHS) * 3
    assert (f["analysis"] == "secondary, by length").all()
    held_heads = three.loc[three["held_out"], "cluster"].nunique()
    for i, (b, r) in enumerate(pairs):
        assert f.loc[f["pair"] == f"{b}<{r}", "length"].unique().tolist() == LENGTHS
        for j, n in enumerate(LENGTHS):
            rows = (three["held_out"] & (three["length"] == n)).to_numpy()
            lo, up = three["y_lower"].to_numpy(float)[rows], three["y_upper"].to_numpy(float)[rows]
            mats = fitted.covariates.matrices
            yh = {m: fitted.fits[m].predict(mats[m][rows]) for m in (b, r)}
            clusters = three["cluster"].to_numpy()[rows]
            sel = f[(f["pair"] == f"{b}<{r}") & (f["length"] == n)].set_index("metric")
            assert sel.loc["interval_sq_loss", "hypothesis"] == (
                "H1" if (b, r) == FAMILY[0] else f"{b}<{r}"
            )
            heads = len(set(clusters))
            assert heads == (held_heads - 1 if n == 257 else held_heads)
            assert sel["held_out_heads"].eq(heads).all()
            assert sel["held_out_cells"].eq(int(rows.sum())).all()
            assert sel["spawn_key"].eq(f"2,{i},{j}").all()
            for met, vals, hib in (
                ("interval_sq_loss", {m: interval_sq_loss(yh[m], lo, up) for m in yh}, False),
                (
                    "interval_loglik",
                    {m: interval_loglik(yh[m], fitted.fits[m].sigma, lo, up) for m in yh},
                    True,
                ),
            ):
                row = sel.loc[met]
                assert row["base_value"] == vals[b].mean() and row["rich_value"] == vals[r].mean()
                sign = 1.0 if hib else -1.0
                assert row["effect"] == sign * (vals[r].mean() - vals[b].mean())
                hand = _hand_bootstrap(
                    vals[b], vals[r], clusters, np.random.SeedSequence(SEED, spawn_key=(2, i, j)),
                    hib,
                )  # fmt: skip
                np.testing.assert_allclose(
                    [row["ci_low"], row["ci_high"], row["p_one_sided"]], hand, rtol=0, atol=1e-12
                )
            mid = 0.5 * (lo + up)
            fin = np.isfinite(mid)
            sp = sel.loc["spearman_mid"]
            assert sp["effect"] == spearman(yh[r][fin], mid[fin]) - spearman(yh[b][fin], mid[fin])


def test_one_length_gives_the_overall_effects(three, fitted):
    """The same fits: with a single length every effect is the overall comparison's."""
    res = effects_by_length(fitted, three.assign(length=128), seed=SEED).to_frame()
    overall = fitted.to_frame()
    merged = res.merge(overall, on=["pair", "metric"], suffixes=("", "_all"))
    assert len(merged) == len(overall)
    for c in ("effect", "base_value", "rich_value"):
        np.testing.assert_array_equal(merged[c], merged[f"{c}_all"])
    assert (merged["held_out_cells"] == merged["n_cells"]).all()


def test_moving_one_length_leaves_the_others(three, fitted):
    base = effects_by_length(fitted, three, seed=SEED).to_frame()
    moved = three.copy()
    rows = moved["held_out"] & (moved["length"] == 257)
    moved.loc[rows, ["y_lower", "y_upper"]] += 1.5
    after = effects_by_length(fitted, moved, seed=SEED).to_frame()
    keep = base["length"] != 257
    pd.testing.assert_frame_equal(base[keep], after[keep], check_exact=True)
    assert not np.array_equal(base.loc[~keep, "effect"], after.loc[~keep, "effect"])


def test_seed_branch_is_its_own_and_by_checkpoint_is_untouched(three, fitted):
    for i, j in ((0, 0), (2, 1), (3, 4)):
        chain = np.random.SeedSequence(SEED).spawn(3)[2].spawn(i + 1)[i].spawn(j + 1)[j]
        np.testing.assert_array_equal(
            length_seed(SEED, i, j).generate_state(4), chain.generate_state(4)
        )
        assert not np.array_equal(
            length_seed(SEED, i, j).generate_state(4), checkpoint_seed(SEED, i, j).generate_state(4)
        )
    # a length column does not move the by-checkpoint rows (branch 1 is theirs)
    ck = effects_by_checkpoint(fitted, three, seed=SEED).to_frame()
    assert ck["spawn_key"].str.startswith("1,").all()
    ck2 = effects_by_checkpoint(fitted, three.assign(length=1), seed=SEED).to_frame()
    pd.testing.assert_frame_equal(ck, ck2, check_exact=True)


def test_result_is_frozen_and_summarises_the_primary_metric(three, fitted):
    res = effects_by_length(fitted, three, seed=SEED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.seed = 0  # type: ignore[misc]
    text = res.summary()
    assert text.startswith("Effects by length (secondary, outside the Holm family")
    assert "spawn_key=(2, pair, length)" in text
    assert text.count("length   257") == len(FAMILY) + len(EXTRA)
    assert "interval_loglik" not in text


@pytest.mark.parametrize("bad", [0, 64.5, np.nan, "long"])
def test_bad_input_is_named(three, fitted, bad):
    with pytest.raises(ParameterError, match="length"):
        effects_by_length(fitted, three.drop(columns="length"), seed=SEED)
    broken = three.astype({"length": object})
    broken.loc[broken.index[broken["held_out"]][0], "length"] = bad
    with pytest.raises(ParameterError) as info:
        effects_by_length(fitted, broken, seed=SEED)
    assert info.value.name == "table"
    with pytest.raises(ParameterError) as info:
        effects_by_length(fitted, three.iloc[:-1], seed=SEED)
    assert info.value.name == "table"
    for kw, name in (({"seed": -1}, "seed"), ({"seed": SEED, "ci_level": 0.0}, "ci_level")):
        with pytest.raises(ParameterError) as info:
            effects_by_length(fitted, three, **kw)
        assert info.value.name == name
