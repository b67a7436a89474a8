"""Geometry net of family: checkpoint fixed effects, checkpoint-equal estimand, sensitivities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.offsets import (
    CHECKPOINT_EQUAL,
    LEAVE_ONE_OUT,
    SENSITIVITY_COLUMNS,
    WIDTH_STRATIFIED,
    add_checkpoint_effects,
    width_split,
)
from analysis.validation import ParameterError

MODELS = {"M0": ["baseline"], "M1": ["baseline", "native"]}


def label_table(seed: int = 0, n_ck: int = 6, heads: int = 10, cells: int = 4) -> pd.DataFrame:
    """Checkpoints with their own offset of the outcome and nothing else: ``native__dim``
    is constant within a checkpoint (like ``head_dim``) and equals its offset."""
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0.0, 1.5, n_ck)
    rows = []
    for c in range(n_ck):
        held = rng.choice(heads, size=3, replace=False)
        for h in range(heads):
            x = rng.normal(size=cells)
            y = offsets[c] + 0.8 * x + 0.3 * rng.normal() + 0.3 * rng.normal(size=cells)
            lo = np.floor(2 * y) / 2  # brackets of width 0.5 ...
            up = lo + np.where(rng.random(cells) < 0.5, 0.5, 1.0)  # ... or 1
            for i in range(cells):
                rows.append(
                    {
                        "cell_key": f"{c}-{h}-{i}",
                        "cluster": f"ck{c}:{h}",
                        "stratum": f"ck{c}",
                        "held_out": h in held,
                        "y_lower": lo[i],
                        "y_upper": up[i],
                        "baseline__x": x[i],
                        "native__dim": offsets[c],
                    }
                )
    return pd.DataFrame(rows)


def _run(table, checkpoint_effects: bool, **kw):
    return NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=[("M0", "M1")],
            estimator=kw.pop("estimator", "ols"),
            metrics=["interval_sq_loss"],
            n_boot=199,
            random_state=0,
            checkpoint_effects=checkpoint_effects,
            sesoi={"M0<M1": {"interval_sq_loss": 0.02}},
            **kw,
        )
    ).fit(table)


@pytest.mark.parametrize("estimator", ["ols", "interval"])
def test_a_checkpoint_label_adds_information_only_without_checkpoint_effects(estimator):
    table = label_table()
    plain = _run(table, False, estimator=estimator)
    fixed = _run(table, True, estimator=estimator)
    p, f = plain.to_frame().iloc[0], fixed.to_frame().iloc[0]
    # without checkpoint effects, the label "adds information" (it carries the offsets)
    assert p["adds_information"] and p["decision"] == "adds information"
    # with them, M0 holds the offsets too: the label is dropped and adds nothing
    assert not f["adds_information"]
    assert f["decision"] == "equivalent within SESOI"
    assert f["effect"] == pytest.approx(0.0, abs=1e-9)
    assert "native__dim" not in fixed.columns["M1"]
    assert fixed.columns["M0"][-5:] == tuple(f"checkpoint__ck{c}" for c in range(1, 6))
    dropped = fixed.dropped.set_index(["model", "column"])["reason"]
    assert dropped[("M1", "native__dim")] == "constant within checkpoint"
    # M0 itself absorbs the offsets: its held-out loss falls far below the plain M0's
    assert f["base_value"] < 0.3 * p["base_value"]
    assert "checkpoint fixed effects in every model" in fixed.summary()
    assert "checkpoint fixed effects" not in plain.summary()


def test_sensitivity_rows_with_checkpoint_effects():
    table = label_table(seed=1)
    res = _run(table, True)
    s = res.sensitivity
    assert list(s.columns) == list(SENSITIVITY_COLUMNS)
    assert set(s["analysis"]) == {CHECKPOINT_EQUAL, WIDTH_STRATIFIED, LEAVE_ONE_OUT}
    loo = s[s["analysis"] == LEAVE_ONE_OUT]
    assert sorted(loo["subset"]) == [f"without ck{c}" for c in range(6)]
    assert (loo["n_heads"] == 15).all()  # 5 checkpoints x 3 held-out heads
    train = ~table["held_out"].to_numpy()
    w = width_split(table["y_lower"], table["y_upper"], train)
    assert w == np.median((table["y_upper"] - table["y_lower"])[train])
    width = s[s["analysis"] == WIDTH_STRATIFIED].set_index("subset")
    held = table[table["held_out"]]
    n_narrow = int(((held["y_upper"] - held["y_lower"]) <= w).sum())
    assert width["n_cells"].tolist() == [n_narrow, len(held) - n_narrow]
    # without checkpoint effects no sensitivity rows
    assert _run(table, False).sensitivity.empty


def test_checkpoint_equal_estimand_weights_checkpoints_equally():
    """Two checkpoints; M1 helps only in ck1, which holds 4x as many held-out heads, so
    the head-weighted effect is near 0.8 of the ck1 effect and the checkpoint-equal one
    near half of it."""
    rng = np.random.default_rng(3)
    rows = []
    for c, n_heads in ((0, 10), (1, 40)):
        for h in range(n_heads):
            z = rng.normal(size=4)
            y = 1.0 * (c == 1) * z + 0.2 * rng.normal(size=4)
            for i in range(4):
                rows.append(
                    {
                        "cell_key": f"{c}-{h}-{i}",
                        "cluster": f"{c}:{h}",
                        "stratum": f"ck{c}",
                        "held_out": h % 2 == 0,
                        "y_lower": y[i],
                        "y_upper": y[i],
                        "baseline__x": rng.normal(),
                        "native__z": z[i] * (c == 1),
                    }
                )
    table = pd.DataFrame(rows)
    res = _run(table, True)
    head_weighted = res.to_frame().iloc[0]["effect"]
    ce = res.sensitivity[res.sensitivity["analysis"] == CHECKPOINT_EQUAL].iloc[0]
    by_ck = []
    for c in ("ck0", "ck1"):
        sub = table[table["stratum"] == c]
        held = sub["held_out"].to_numpy()
        X = {m: res.covariates.matrices[m][table["stratum"].to_numpy() == c][held] for m in MODELS}
        loss = {
            m: float(np.mean((res.fits[m].predict(X[m]) - sub["y_lower"].to_numpy()[held]) ** 2))
            for m in MODELS
        }
        by_ck.append(loss["M0"] - loss["M1"])
    assert ce["effect"] == pytest.approx(np.mean(by_ck), rel=1e-9)
    assert head_weighted == pytest.approx((by_ck[0] * 20 + by_ck[1] * 80) / 100, rel=1e-9)
    assert ce["effect"] < 0.7 * head_weighted


def test_a_checkpoint_without_training_heads_is_refused():
    table = label_table()
    only_held = (table["stratum"] == "ck0") & ~table["held_out"]
    table = table.loc[~only_held]
    with pytest.raises(ParameterError) as err:
        _run(table, True)
    assert err.value.name == "stratum"


def test_checkpoint_effects_need_the_stratum_column():
    with pytest.raises(ParameterError) as err:
        _run(label_table().drop(columns="stratum"), True)
    assert err.value.name == "table"


def test_add_checkpoint_effects_keeps_within_checkpoint_variation():
    from analysis.compare.covariates import prepare_covariates

    table = label_table()
    train = ~table["held_out"].to_numpy()
    prep = prepare_covariates(table, MODELS, train)
    fe = add_checkpoint_effects(prep, table["stratum"].to_numpy(), train)
    assert fe.columns["M0"][0] == "baseline__x"  # varies within checkpoints: kept
    X = fe.matrices["M1"]
    assert X.shape == (len(table), 1 + 5)
    np.testing.assert_array_equal(X[:, 1:].sum(axis=1), table["stratum"] != "ck0")
