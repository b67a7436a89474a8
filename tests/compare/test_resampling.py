"""The resampling unit (head, KV group, (checkpoint, layer)) and the refit bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.refit import REFIT_BOOTSTRAP, resample_units
from analysis.validation import ParameterError

MODELS = {"M0": ["base"], "M1": ["base", "rich"]}


def shared_keys_table(seed: int = 0, groups: int = 30, per_group: int = 4, cells: int = 6):
    """Heads in KV groups of ``per_group`` that share their keys: how much the rich
    covariate helps is a property of the group (its slope ``g_k``), so the held-out
    effects of heads of one group move together."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(groups):
        g = rng.normal(0.5, 1.0)
        for j in range(per_group):
            x, q = rng.normal(size=cells), rng.normal(size=cells)
            y = x + g * q + 0.2 * rng.normal(size=cells)
            for i in range(cells):
                rows.append(
                    {
                        "cell_key": f"{k}-{j}-{i}",
                        "cluster": f"h{k}.{j}",
                        "kv_group": f"g{k}",
                        "held_out": j >= 2,  # half of each group held out
                        "y_lower": y[i],
                        "y_upper": y[i],
                        "base__x": x[i],
                        "rich__q": q[i],
                    }
                )
    return pd.DataFrame(rows)


def _run(table, unit="head", **kw):
    return (
        NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=[("M0", "M1")],
                estimator="ols",
                metrics=["interval_sq_loss"],
                n_boot=999,
                random_state=0,
                resampling_unit=unit,
                **kw,
            )
        )
        .fit(table)
        .to_frame()
        .iloc[0]
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kv_group_resampling_widens_the_ci_when_heads_share_keys(seed):
    table = shared_keys_table(seed)
    head, kv = _run(table, "head"), _run(table, "kv_group")
    assert head["effect"] == kv["effect"]  # same fits, same point
    assert head["n_heads"] == kv["n_heads"] == 60  # the column still counts heads
    # 2 held-out heads per group move together: the group bootstrap's CI is wider (about
    # 1.3x for these seeds; at most sqrt(2) when the group effect dominates), the head
    # bootstrap takes them as independent
    ratio = (kv["ci_high"] - kv["ci_low"]) / (head["ci_high"] - head["ci_low"])
    assert ratio > 1.2, ratio


def test_kv_group_resampling_with_independent_groups_changes_little():
    """One head per group: the group bootstrap resamples the same units as the head one."""
    table = shared_keys_table(0, groups=60, per_group=1)
    table["held_out"] = table["cluster"].str[1:].str.split(".").str[0].astype(int) % 3 == 0
    head, kv = _run(table, "head"), _run(table, "kv_group")
    assert (head["ci_low"], head["ci_high"]) == (kv["ci_low"], kv["ci_high"])


def test_head_unit_is_the_default_bit_for_bit():
    table = shared_keys_table(0)
    default = (
        NestedComparison(
            ComparisonSpec(
                models=MODELS, family=[("M0", "M1")], estimator="ols", n_boot=199, random_state=0
            )
        )
        .fit(table)
        .to_frame()
    )
    head = (
        NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=[("M0", "M1")],
                estimator="ols",
                n_boot=199,
                random_state=0,
                resampling_unit="head",
            )
        )
        .fit(table)
        .to_frame()
    )
    pd.testing.assert_frame_equal(default, head, check_exact=True)


def test_the_unit_column_is_required_and_constant_within_a_head():
    table = shared_keys_table(0)
    with pytest.raises(ParameterError) as err:
        _run(table.drop(columns="kv_group"), "kv_group")
    assert err.value.name == "table"
    bad = table.copy()
    bad.loc[0, "kv_group"] = "g-other"  # one cell of head h0.0 in another group
    with pytest.raises(ParameterError) as err:
        _run(bad, "kv_group")
    assert err.value.name == "kv_group"
    with pytest.raises(ParameterError) as err:
        ComparisonSpec(models=MODELS, family=[("M0", "M1")], resampling_unit="layer")
    assert err.value.name == "resampling_unit"


def test_resample_units_keeps_each_side_and_checkpoint_size():
    table = shared_keys_table(0, groups=8, per_group=2, cells=3)
    table["stratum"] = np.where(table["kv_group"].str[1:].astype(int) < 4, "a", "b")
    out = resample_units(table, "kv_group", np.random.default_rng(5))
    assert len(out) == len(table)
    for side in (False, True):
        for s in ("a", "b"):
            sel = (out["held_out"] == side) & (out["stratum"] == s)
            ref = (table["held_out"] == side) & (table["stratum"] == s)
            assert out.loc[sel, "kv_group"].nunique() == table.loc[ref, "kv_group"].nunique()
            # every copy holds whole groups: the copy's heads are the group's heads
            for g, part in out[sel].groupby("kv_group"):
                orig = g.split("#")[0]
                heads = set(part["cluster"].str.split("#").str[0])
                assert heads == set(table.loc[ref & (table["kv_group"] == orig), "cluster"])
    assert out["cell_key"].is_unique


def test_refit_bootstrap_is_a_sensitivity_row():
    table = shared_keys_table(0, groups=20)
    res = NestedComparison(
        ComparisonSpec(
            models=MODELS,
            family=[("M0", "M1")],
            estimator="ols",
            metrics=["interval_sq_loss"],
            n_boot=199,
            random_state=0,
            resampling_unit="kv_group",
            refit_replicates=30,
        )
    ).fit(table)
    row = res.sensitivity.iloc[0]
    assert row["analysis"] == REFIT_BOOTSTRAP
    assert row["subset"] == "30 refits resampling kv_group"
    assert row["effect"] == res.to_frame().iloc[0]["effect"]
    assert row["ci_low"] < row["effect"] < row["ci_high"]
    assert "over held-out kv groups" in res.summary()
    assert res.spec.refit_replicates == 30


def test_boundary_null_size_head_vs_kv_group_resampling():
    """A true effect of 0 whose per-head effects share a KV-group component (SD 1, heads
    0.3, cells 0.3; 30 groups of 2 held-out heads of 3 cells): resampling heads treats
    the two heads of a group as independent and rejects far more than alpha; resampling
    groups (what ``resampling_unit="kv_group"`` does in ``NestedComparison``) holds alpha.
    1000 studies, B = 199: Monte Carlo SE of a rate at 0.05 is 0.0069; the tolerance is
    4 SE (0.028) around 0.05, and the head rate must exceed 0.05 + 4 SE."""
    from analysis.compare.bootstrap import ClusterBootstrap

    rng = np.random.default_rng(7)
    n_sim, n_groups, per, cells = 1000, 30, 2, 3
    se = np.sqrt(0.05 * 0.95 / n_sim)
    groups = np.repeat(np.arange(n_groups), per * cells)
    heads = np.repeat(np.arange(n_groups * per), cells)
    by_head = by_group = 0
    for _ in range(n_sim):
        d = (
            rng.normal(0.0, 1.0, n_groups)[groups]
            + rng.normal(0.0, 0.3, n_groups * per)[heads]
            + rng.normal(0.0, 0.3, heads.size)
        )
        base, rich = np.zeros_like(d), -d  # effect = base - rich loss = d, mean 0
        by_head += (
            ClusterBootstrap(n_boot=199, random_state=rng).effect(base, rich, heads)[3] < 0.05
        )
        by_group += (
            ClusterBootstrap(n_boot=199, random_state=rng).effect(base, rich, groups)[3] < 0.05
        )
    assert by_head / n_sim > 0.05 + 4 * se, by_head / n_sim
    assert abs(by_group / n_sim - 0.05) <= 4 * se, by_group / n_sim
