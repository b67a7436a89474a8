"""The study's compare stage: held-out brackets reach the held-out metrics and nothing else.

The stage builds the comparison table, seals it by the lock's held-out list, releases
every row once to the confirmatory comparison and gives the head-level analysis the
training rows only. Changing the held-out cells' brackets (permuted among themselves,
shifted by 5 in log2, replaced by one closed bracket) must leave everything fitted on
training cells byte-identical as stored: the head-level analysis, the in-sample
likelihood-ratio tests (functions of the training fits' log-likelihoods), the dropped
columns and the head-level meta; the held-out metrics must move, or the change was
never read. (``tests/compare/test_no_leak.py`` checks the fitted objects themselves.)
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.study import load_results, study_paths
from analysis.study.comparison import compare_stage
from analysis.study.core import Study

pytestmark = pytest.mark.slow

TRAINING_FILES = ("head_level.csv", "lr_tests.csv")
COMPARISON_FILES = ("comparison.csv", "comparison_ols.csv")
HELD_OUT_METRICS = [
    "base_value",
    "rich_value",
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "adds_information",
    # the equivalence columns read the held-out metrics too (analysis.compare.equivalence)
    "sesoi_share",
    "equivalence_p",
    "equivalence_p_holm",
    "decision",
]


def _permute(lo: np.ndarray, hi: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(lo.size)
    assert (perm != np.arange(lo.size)).any()
    return lo[perm], hi[perm]


def _shift(lo: np.ndarray, hi: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    return lo * 32, hi * 32  # + 5 on the log2 scale the comparison fits


def _constant(lo: np.ndarray, hi: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    return np.full_like(lo, 7), np.full_like(hi, 7)


CHANGES = {"permuted": _permute, "shifted": _shift, "constant": _constant}


@pytest.mark.parametrize("change", list(CHANGES))
def test_held_out_brackets_change_only_held_out_metrics(finished_study, study_copy, change):
    design, _ = finished_study
    stored = load_results(design)
    brackets = stored.brackets.copy()
    held = (brackets["source"] == "checkpoint") & brackets["held_out"]
    assert held.any() and ((brackets["source"] == "checkpoint") & ~brackets["held_out"]).any()
    lo, hi = CHANGES[change](
        brackets.loc[held, "lo"].to_numpy(),
        brackets.loc[held, "hi"].to_numpy(),
        np.random.default_rng(3),
    )
    brackets.loc[held, "lo"], brackets.loc[held, "hi"] = lo, hi
    assert not brackets.loc[held, ["lo", "hi"]].equals(stored.brackets.loc[held, ["lo", "hi"]])

    compare_stage(Study.open(study_copy), brackets, stored.features, lambda _: None)

    before, after = study_paths(design).results, study_paths(study_copy).results
    rec_b = json.loads((before / "compare.json").read_text())
    rec_a = json.loads((after / "compare.json").read_text())
    assert rec_a["inputs_sha256"] != rec_b["inputs_sha256"]  # refitted, not reused
    for key in ("dropped_columns", "head_level_meta", "excluded", "n_cells", "files"):
        assert rec_a[key] == rec_b[key], key
    for name in TRAINING_FILES:
        assert (after / name).read_bytes() == (before / name).read_bytes(), name
    for name in COMPARISON_FILES:
        fb, fa = pd.read_csv(before / name), pd.read_csv(after / name)
        pd.testing.assert_frame_equal(
            fa.drop(columns=HELD_OUT_METRICS), fb.drop(columns=HELD_OUT_METRICS), check_exact=True
        )
        assert (fa["base_value"] != fb["base_value"]).any(), f"{name}: held-out rows unread"
