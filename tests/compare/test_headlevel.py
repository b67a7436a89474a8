"""Head-level analysis: the within-head and across-head questions and their folds."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from analysis.compare import (
    FoldExtrapolationWarning,
    HeadLevelAnalysis,
    HeadLevelSpec,
    QuestionSkippedWarning,
    head_level_folds,
    residual_icc,
)
from analysis.compare.headlevel import HEAD_LEVEL_COLUMNS
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import COVARIATES, MODELS, make_table, with_separating_column

LOGS = ["baseline__scale"]


def training(rng, **kw) -> pd.DataFrame:
    t = make_table(rng, **kw)
    return t[~t["held_out"]].drop(columns="held_out").reset_index(drop=True)


def one_input_per_length(t: pd.DataFrame) -> pd.DataFrame:
    """What a design with ``per_length = 1`` gives: one input at each length."""
    return t[t["input_id"] == 0].reset_index(drop=True)


def analyse(t, **kw):
    return HeadLevelAnalysis(
        HeadLevelSpec(models=MODELS, log_columns=LOGS, random_state=3, **COVARIATES, **kw)
    ).fit(t)


def test_one_input_per_length_skips_the_within_head_question(rng):
    t = one_input_per_length(training(rng))
    with pytest.warns(QuestionSkippedWarning, match=r"within-head question skipped.*per_length"):
        res = analyse(t)
    f = res.to_frame()
    within = f[f.question == "within_head"]
    # never a silent fallback to folds over lengths: no loss, status skipped, both effects
    assert set(within["status"]) == {"skipped"} and within["cv_loss"].isna().all()
    assert sorted(set(within["fixed_effects"])) == [False, True]
    assert "within_head" not in res.folds and "single input" in res.skipped["within_head"]
    # the across-head question is answered on the same cells
    across = f[f.question == "across_head"]
    assert set(across["status"]) == {"ok"} and across["cv_loss"].notna().all()
    assert "skipped: every length has a single input" in res.summary()
    with pytest.raises(ParameterError, match="single input"):
        head_level_folds(t, "within_head")


def test_within_head_folds_never_hold_out_a_length_or_a_head(rng):
    # three inputs at one length, two at the other
    t = make_table(rng, n_heads=10, held_fraction=0.0)
    extra = make_table(rng, n_heads=10, held_fraction=0.0)
    extra = extra[(extra["length"] == 16) & (extra["input_id"] == 0)].assign(input_id=2)
    t = pd.concat([t, extra], ignore_index=True).drop(columns="held_out")
    folds, how = head_level_folds(t, "within_head")
    assert "leave one input_id out within each length" in how
    assert sorted(set(folds)) == [0, 1, 2]
    for g in set(folds):
        test, train = folds == g, folds != g
        # a fold holds out one input per length, never a whole length or head
        assert (t[test].groupby("length")["input_id"].nunique() == 1).all()
        assert set(t.loc[train, "length"]) == set(t["length"])
        assert set(t.loc[train, "cluster"]) == set(t["cluster"])
        # every (head, length) of the test part keeps other inputs in training
        pairs = set(zip(t.loc[train, "cluster"], t.loc[train, "length"], strict=True))
        assert set(zip(t.loc[test, "cluster"], t.loc[test, "length"], strict=True)) <= pairs
    with warnings.catch_warnings():
        warnings.simplefilter("error", FoldExtrapolationWarning)
        res = analyse(t)
    f = res.to_frame()
    assert (f.loc[f.question == "within_head", "n_folds"] == 3).all()
    assert (f["status"] == "ok").all() and (f["warnings"] == 0).all()
    assert (f["fits_not_converged"] == 0).all()


def test_across_head_folds_never_split_a_head(rng):
    t = training(rng, n_heads=16)  # 12 training heads
    for seed in (0, 1, 2):
        folds, how = head_level_folds(t, "across_head", random_state=seed)
        per_head = pd.Series(folds).groupby(t["cluster"].to_numpy()).nunique()
        assert (per_head == 1).all()
        assert sorted(set(folds)) == [0, 1, 2, 3, 4] and "5 folds of whole" in how
        # the seed decides the assignment: same seed, same folds
        again, _ = head_level_folds(t, "across_head", random_state=seed)
        np.testing.assert_array_equal(folds, again)
    a, _ = head_level_folds(t, "across_head", random_state=0)
    b, _ = head_level_folds(t, "across_head", random_state=1)
    assert (a != b).any()
    three = t[t.cluster.isin(sorted(set(t.cluster))[:3])]
    small, how = head_level_folds(three, "across_head")
    assert sorted(set(small)) == [0, 1, 2] and "3 folds" in how  # K capped at the heads


def test_both_questions_side_by_side(rng):
    t = training(rng, n_heads=16)
    # a head-level shift s_h that the native feature measures (constant within heads)
    codes, _ = pd.factorize(t["cluster"])
    s = 1.5 * rng.normal(size=codes.max() + 1)[codes]
    t["y_lower"] += s
    t["y_upper"] += s
    t["native__q"] = s + 0.01 * rng.normal(size=len(t))
    res = analyse(t)
    f = res.to_frame()
    assert list(f.columns) == list(HEAD_LEVEL_COLUMNS)
    assert (f["status"] == "ok").all() and (f["fits_not_converged"] == 0).all()
    assert list(f.groupby(["question", "fixed_effects"]).size().items()) == [
        (("across_head", False), 4),
        (("within_head", False), 4),
        (("within_head", True), 4),
    ]
    g = f.set_index(["question", "model", "fixed_effects"])["gain_vs_base"]
    # the head-level signal transfers to unseen heads and helps within heads without
    # head effects, and adds nothing once head effects are in
    assert g[("across_head", "M1", False)] > 0.3
    assert g[("within_head", "M1", False)] > 0.3
    assert abs(g[("within_head", "M1", True)]) < 0.1 * g[("within_head", "M1", False)]
    n = f.set_index(["question", "fixed_effects"])
    assert (n.loc[("within_head", False), "n_folds"] == 2).all()
    assert (n.loc[("across_head", False), "n_folds"] == 5).all()
    assert (f["n_cells"] == len(t)).all() and (f["n_heads"] == 12).all()
    assert -1 <= res.residual_icc <= 1
    text = res.summary()
    assert "within-head question" in text and "across-head question" in text
    assert "within-head correlation" in text
    assert res.meta()["folds"] == dict(res.folds)
    with pytest.raises(ParameterError, match="training rows only"):
        HeadLevelAnalysis(HeadLevelSpec(models=MODELS)).fit(t.assign(held_out=True))


def test_a_fold_with_a_constant_design_variable_warns(rng):
    t = training(rng, n_heads=8)
    # input 0 was run at temperature 1 only, input 1 at temperature 2 only: holding out
    # input 1 leaves training at temperature 1 while the test part is at 2
    t["temperature"] = np.where(t["input_id"] == 0, 1.0, 2.0)
    with pytest.warns(FoldExtrapolationWarning) as rec:
        res = analyse(t)
    msgs = [str(w.message) for w in rec if issubclass(w.category, FoldExtrapolationWarning)]
    assert any(
        "within-head fold 1: training holds only temperature = 1.0 while the test part "
        "holds [2.0]" in m
        for m in msgs
    ), msgs
    assert any("within-head fold 0" in m and "temperature = 2.0" in m for m in msgs)
    f = res.to_frame()
    assert (f.loc[f.question == "within_head", "warnings"] == 2).all()
    assert (f.loc[f.question == "across_head", "warnings"] == 0).all()
    assert len(res.warnings) == 2 and "fold(s) extrapolate" in res.summary()


def test_a_fold_that_cannot_learn_a_varying_variable_is_refused(rng):
    t = training(rng, n_heads=8)
    # training part of fold 1 (input 0) holds eps = 0.1 only; its test part varies eps
    t["eps"] = np.where(t["input_id"] == 0, 0.1, np.where(t.index % 2 == 0, 0.1, 0.2))
    with pytest.warns(QuestionSkippedWarning, match=r"within-head fold 1.*eps.*refused"):
        res = analyse(t)
    f = res.to_frame()
    assert set(f.loc[f.question == "within_head", "status"]) == {"skipped"}
    assert set(f.loc[f.question == "across_head", "status"]) == {"ok"}
    assert "refused" in res.skipped["within_head"]


def test_a_design_level_unseen_in_training_warns(rng):
    t = training(rng, n_heads=8)
    # both parts vary eps, but the test part of fold 1 holds a level training lacks
    even = t.index % 2 == 0
    t["eps"] = np.where(t["input_id"] == 0, np.where(even, 0.1, 0.2), np.where(even, 0.1, 0.05))
    with pytest.warns(FoldExtrapolationWarning) as rec:
        res = analyse(t)
    msgs = [str(w.message) for w in rec if issubclass(w.category, FoldExtrapolationWarning)]
    assert any(
        "within-head fold 1: the test part holds eps = [0.05], which training never holds "
        "([0.1, 0.2])" in m
        for m in msgs
    ), msgs
    assert set(res.to_frame()["status"]) == {"ok"}


def test_head_level_counts_fits_that_did_not_converge(rng):
    t = with_separating_column(make_table(rng, native_effect=0.5), rng)
    t = t[~t["held_out"]].drop(columns="held_out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' ConvergenceWarning
        res = HeadLevelAnalysis(
            HeadLevelSpec(models=MODELS, log_columns=LOGS, maxiter=1, **COVARIATES)
        ).fit(t)
    f = res.to_frame().set_index(["question", "model", "fixed_effects"])["fits_not_converged"]
    # M1 and M3 hold the separating column: every fold fit stops at the cap
    assert f[("within_head", "M1", False)] == f[("within_head", "M3", False)] == 2
    assert f[("across_head", "M1", False)] == f[("across_head", "M3", False)] == 5
    assert f[("within_head", "M0", False)] == f[("across_head", "M2", False)] == 0
    assert "5 fold fit(s) did not converge" in res.summary()


def test_bad_arguments_are_named():
    t = pd.DataFrame({"cluster": ["a", "b"], "input_id": [0, 0], "length": [8, 8]})
    with pytest.raises(ParameterError, match="question"):
        head_level_folds(t, "between_heads")
    with pytest.raises(ParameterError, match="n_head_folds"):
        head_level_folds(t, "across_head", n_head_folds=1)
    with pytest.raises(ParameterError, match="across_head"):
        head_level_folds(t.iloc[:1], "across_head")


def test_residual_icc_known_values():
    g = np.repeat(np.arange(50), 10)
    rng = np.random.default_rng(5)
    r = rng.normal(size=50)[g] + rng.normal(size=500)
    assert abs(residual_icc(r, g) - 0.5) < 0.2
    assert abs(residual_icc(rng.normal(size=500), g)) < 0.1
    assert pd.isna(residual_icc(np.ones(3), np.array([0, 0, 0])))
