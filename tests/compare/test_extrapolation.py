"""Held-out cells outside the training range: flags, clipping, the split and the trimmed mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import trim_mean

from analysis.compare import ComparisonSpec, NestedComparison, held_out_predictions
from analysis.compare.extrapolation import (
    CELL_COLUMNS,
    EXTRAPOLATION_COLUMNS,
    TRIM,
    trimmed_mean_replicates,
)
from analysis.compare.metrics import interval_loglik, interval_sq_loss
from analysis.prereg.design import Design
from analysis.prereg.options import check_design_options, design_options
from analysis.validation import ParameterError

MODELS = {"M0": ["base"], "M1": ["base", "rich"]}
FAR_HEADS = ("h20", "h21")  # held-out heads whose rich__q lies beyond every training value


def far_table(seed: int = 0, heads: int = 24, cells: int = 5) -> pd.DataFrame:
    """Heads 0-15 train, 16-23 are held out. Both covariates are uniform on (-1, 1), and
    head 0 reaches both ends, except ``rich__q`` of the two heads in :data:`FAR_HEADS`,
    shifted beyond the training range; y is not linear in it, so the rich model's
    extrapolation costs it there."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(heads):
        x, q = rng.uniform(-1.0, 1.0, size=(2, cells))
        if h == 0:
            x[:2] = q[:2] = -1.0, 1.0
        if f"h{h}" in FAR_HEADS:
            q = q + 4.0
        y = x + np.tanh(2.0 * q) + 0.2 * rng.normal(size=cells) + 0.3 * rng.normal()
        w = rng.choice([0.0, 0.5], size=cells)
        for i in range(cells):
            rows.append(
                {
                    "cell_key": f"{h}-{i}",
                    "cluster": f"h{h}",
                    "held_out": h >= 16,
                    "y_lower": y[i] - w[i] / 2,
                    "y_upper": y[i] + w[i] / 2,
                    "base__x": x[i],
                    "rich__q": q[i],
                }
            )
    return pd.DataFrame(rows)


def _fit(table: pd.DataFrame, **kw):
    spec = ComparisonSpec(
        models=MODELS,
        family=[("M0", "M1")],
        n_boot=199,
        random_state=3,
        metrics=["interval_sq_loss", "interval_loglik", "spearman_mid"],
        **kw,
    )
    return NestedComparison(spec).fit(table)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return far_table()


@pytest.fixture(scope="module")
def fitted(table):
    return _fit(table), _fit(table, extrapolation="clip")


def _far(frame: pd.DataFrame) -> np.ndarray:
    return frame["cluster"].isin(FAR_HEADS).to_numpy()


def test_the_far_heads_are_flagged_for_the_rich_model_only(table, fitted):
    cells = fitted[0].extrapolation().cells
    assert tuple(cells.columns) == CELL_COLUMNS
    held = table.loc[table["held_out"]]
    assert len(cells) == 2 * len(held)  # every held-out cell, by each fitted model
    rich = cells[cells["model"] == "M1"]
    np.testing.assert_array_equal(rich["extrapolated"].to_numpy(), _far(rich))
    assert set(rich.loc[rich["extrapolated"], "covariates"]) == {"rich__q"}
    assert (rich.loc[rich["extrapolated"], "n_out"] == 1).all()
    base = cells[cells["model"] == "M0"]
    assert not base["extrapolated"].any() and (base["covariates"] == "").all()


def test_clip_changes_the_predictions_of_the_extrapolated_cells_only(table, fitted):
    plain, clipped = fitted
    for m in MODELS:  # the training rows, and so the fits, are the same
        np.testing.assert_array_equal(plain.fits[m].coef, clipped.fits[m].coef)
    p0 = held_out_predictions(plain, table)
    p1 = held_out_predictions(clipped, table)
    ext = plain.extrapolation().cells
    moved = p0["y_hat"].to_numpy() != p1["y_hat"].to_numpy()
    flagged = ext["extrapolated"].to_numpy()  # the same (cell, model) order
    assert flagged.any()
    np.testing.assert_array_equal(moved, flagged)
    # the clipped covariate sits at the training maximum
    train_q = plain.covariates.matrices["M1"][~table["held_out"].to_numpy(), 1]
    far = table["cluster"].isin(FAR_HEADS).to_numpy()
    np.testing.assert_array_equal(clipped.covariates.matrices["M1"][far, 1], train_q.max())
    # clip is reported, and the headline moves only through those cells
    assert set(clipped.extrapolation().to_frame()["extrapolation"]) == {"clip"}
    e0 = plain.to_frame().set_index("metric")["effect"]
    e1 = clipped.to_frame().set_index("metric")["effect"]
    assert e0["interval_sq_loss"] != e1["interval_sq_loss"]
    in_range = [
        f.extrapolation().to_frame().query("estimate == 'in range'")["effect"].to_numpy()
        for f in fitted
    ]
    np.testing.assert_array_equal(*in_range)


@pytest.mark.parametrize("which", [0, 1])
def test_the_split_sums_back_to_the_overall_effect(fitted, which):
    result = fitted[which]
    frame = result.extrapolation().to_frame()
    assert tuple(frame.columns) == EXTRAPOLATION_COLUMNS
    assert set(frame["metric"]) == {"interval_sq_loss", "interval_loglik"}  # no Spearman
    overall = result.to_frame().set_index("metric")
    for met, rows in frame.groupby("metric"):
        rows = rows.set_index("estimate")
        n = rows.loc["in range", "n_cells"] + rows.loc["extrapolated", "n_cells"]
        assert n == overall.loc[met, "n_cells"] == rows.loc["trimmed mean", "n_cells"]
        weighted = (
            rows.loc["in range", "n_cells"] * rows.loc["in range", "effect"]
            + rows.loc["extrapolated", "n_cells"] * rows.loc["extrapolated", "effect"]
        ) / n
        assert weighted == pytest.approx(overall.loc[met, "effect"], rel=1e-12, abs=1e-12)
        assert rows.loc["extrapolated", "share_cells"] == pytest.approx(10 / 40)
        assert rows.loc["extrapolated", "n_units"] == len(FAR_HEADS)
        assert rows.loc["in range", "n_units"] == 8 - len(FAR_HEADS)
        for est in ("in range", "extrapolated", "trimmed mean"):
            lo, hi = rows.loc[est, "ci_low"], rows.loc[est, "ci_high"]
            assert lo <= rows.loc[est, "effect"] <= hi
    assert (frame["analysis"] == "secondary, unadjusted").all()


def test_the_extrapolated_cells_carry_the_rich_models_loss(fitted):
    """tanh flattens beyond the training range: the linear rich model overshoots there."""
    rows = fitted[0].extrapolation().to_frame().query("metric == 'interval_sq_loss'")
    rows = rows.set_index("estimate")["effect"]
    assert rows["extrapolated"] < 0 < rows["in range"]


def test_the_trimmed_mean_is_scipys_of_the_per_head_differences(table, fitted):
    result = fitted[0]
    preds = held_out_predictions(result, table).pivot(
        index="cell_key", columns="model", values="y_hat"
    )
    held = table.loc[table["held_out"]].set_index("cell_key").loc[preds.index]
    lo, up = held["y_lower"].to_numpy(), held["y_upper"].to_numpy()
    frame = result.extrapolation().to_frame().set_index(["metric", "estimate"])
    for met, sign in (("interval_sq_loss", -1.0), ("interval_loglik", 1.0)):
        if met == "interval_sq_loss":
            d = interval_sq_loss(preds["M1"].to_numpy(), lo, up) - interval_sq_loss(
                preds["M0"].to_numpy(), lo, up
            )
        else:
            d = interval_loglik(
                preds["M1"].to_numpy(), result.fits["M1"].sigma, lo, up
            ) - interval_loglik(preds["M0"].to_numpy(), result.fits["M0"].sigma, lo, up)
        per_head = pd.Series(sign * d, index=held["cluster"].to_numpy()).groupby(level=0).mean()
        want = trim_mean(per_head.to_numpy(), TRIM)
        row = frame.loc[(met, "trimmed mean")]
        assert row["effect"] == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert row["trim"] == TRIM and row["n_units"] == 8


def test_trimmed_mean_replicates_match_scipy():
    rng = np.random.default_rng(1)
    values = rng.standard_cauchy(23)
    counts = rng.multinomial(23, np.full(23, 1 / 23), size=50)
    got = trimmed_mean_replicates(values, counts, TRIM)
    want = [trim_mean(np.repeat(values, c), TRIM) for c in counts]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ParameterError, match="trim"):
        trimmed_mean_replicates(values, counts, 0.5)


def test_without_extrapolation_nothing_is_flagged_and_clip_changes_nothing(table):
    inside = table.loc[~table["cluster"].isin(FAR_HEADS)]
    plain, clipped = _fit(inside), _fit(inside, extrapolation="clip")
    assert not plain.extrapolation().cells["extrapolated"].any()
    np.testing.assert_array_equal(
        held_out_predictions(plain, inside)["y_hat"], held_out_predictions(clipped, inside)["y_hat"]
    )
    pd.testing.assert_frame_equal(plain.to_frame(), clipped.to_frame())
    rows = plain.extrapolation().to_frame().set_index(["metric", "estimate"])
    assert rows.loc[("interval_sq_loss", "extrapolated"), "n_cells"] == 0
    assert np.isnan(rows.loc[("interval_sq_loss", "extrapolated"), ["effect", "ci_low"]]).all()
    overall = plain.to_frame().set_index("metric").loc["interval_sq_loss", "effect"]
    assert rows.loc[("interval_sq_loss", "in range"), "effect"] == pytest.approx(overall)


def test_the_default_is_none_and_leaves_the_covariates_alone(table, fitted):
    plain = fitted[0]
    assert plain.spec.extrapolation == "none"
    far = table["cluster"].isin(FAR_HEADS).to_numpy()
    train_q = plain.covariates.matrices["M1"][~table["held_out"].to_numpy(), 1]
    assert (plain.covariates.matrices["M1"][far, 1] > train_q.max()).all()
    assert "Extrapolation (secondary, unadjusted)" in plain.extrapolation().summary()
    assert "extrapolation" not in plain.summary().lower()  # the headline summary as before


def test_a_bad_mode_is_refused():
    with pytest.raises(ParameterError, match="^extrapolation: expected none or clip"):
        ComparisonSpec(models=MODELS, family=[("M0", "M1")], extrapolation="trim")


def _design_data(**inference) -> dict:
    return {
        "metrics": {"primary": "interval_sq_loss"},
        "hypotheses": [],
        "inference": inference,
    }


@pytest.mark.parametrize("bad", ["drop", True, 1])
def test_the_design_key_is_checked(bad):
    with pytest.raises(ParameterError, match="^inference.extrapolation: expected none or clip"):
        check_design_options(_design_data(extrapolation=bad))


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (_design_data(), "none"),
        ({**_design_data(), "method": 3}, "none"),
        (_design_data(extrapolation="clip"), "clip"),
        ({**_design_data(extrapolation="clip"), "method": 2}, "clip"),
    ],
)
def test_the_design_key_reaches_the_spec(data, want):
    check_design_options(data)
    assert design_options(data)["extrapolation"] == want
    kw = {**Design(Path("x.toml"), data, "0" * 64).comparison_options()}
    assert ComparisonSpec(models=MODELS, family=[("M0", "M1")], **kw).extrapolation == want
