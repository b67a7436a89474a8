"""The by-checkpoint section, table and figures appear only when the design asks for them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.report import build_report
from analysis.report.family_figures import BY_CHECKPOINT_FIGURES
from analysis.report.figures import FIGURES, forest
from analysis.report.study_tables import BY_CHECKPOINT_TABLE_COLUMNS, by_checkpoint_table

SECTION = "### Effects by checkpoint (secondary, outside the Holm family)"


def _asking(study, **changes):
    design = dataclasses.replace(study.design, by_checkpoint=True)
    return dataclasses.replace(study, design=design, **changes)


@pytest.fixture(scope="module")
def asked_built(study, tmp_path_factory):
    asked = _asking(study)
    return asked, build_report(asked, tmp_path_factory.mktemp("by-ck"), figure_formats=("png",))


def _forest_ticks(results) -> list[str]:
    fig = forest(results)
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_not_asked_nothing_appears(study, built):
    files, _ = built
    # the fixture holds by-checkpoint frames, but its design does not ask for them
    assert study.by_checkpoint is not None and not study.by_checkpoint_asked
    text = files.report.read_text(encoding="utf-8")
    assert "Effects by checkpoint" not in text
    assert "by_checkpoint" not in files.tables
    assert not set(BY_CHECKPOINT_FIGURES) & (set(files.figures) | set(files.skipped_figures))
    assert by_checkpoint_table(study) is None
    assert not any("random" in t for t in _forest_ticks(study))


def test_asked_section_table_and_figures_appear(asked_built):
    asked, files = asked_built
    text = files.report.read_text(encoding="utf-8")
    assert SECTION in text
    assert set(files.figures) == set(FIGURES) | set(BY_CHECKPOINT_FIGURES)
    for name in BY_CHECKPOINT_FIGURES:
        assert files.figures[name]["png"].stat().st_size > 10_000
        assert f"figures/{name}.png" in text
    section = text.split(SECTION)[1].split("\n### ")[0]
    # one small table per hypothesis, primary metric only, values copied from the frame
    bc = asked.by_checkpoint
    prim = bc[bc["metric"] == "interval_sq_loss"]
    for h in dict.fromkeys(prim["hypothesis"]):
        assert f"**{h}** (" in section
    assert "interval_loglik" not in section
    assert "SeedSequence(7, spawn_key=(1, i, j))" in section
    for r in prim.itertuples(index=False):
        assert f"| {r.checkpoint} | {r.held_out_heads} | {r.held_out_cells} |" in section
    ticks = _forest_ticks(asked)
    assert ticks.count("bert-random") == ticks.count("gpt2-random") == prim["pair"].nunique()


def test_by_checkpoint_table_copies_every_row(study):
    asked = _asking(study)
    t = by_checkpoint_table(asked)
    assert tuple(t.columns) == BY_CHECKPOINT_TABLE_COLUMNS
    assert len(t) == len(study.by_checkpoint)
    key = ["pair", "metric", "checkpoint"]
    merged = t.merge(study.by_checkpoint, on=key, suffixes=("", "_src"))
    for c in ("effect", "ci_low", "ci_high", "p_one_sided"):
        np.testing.assert_array_equal(merged[c], merged[f"{c}_src"])
    assert t["metric"].iloc[0] == "interval_sq_loss"  # primary first
    kinds = dict(zip(t["hypothesis"], t["kind"], strict=False))
    assert kinds["H1"] == "confirmatory" and kinds["S1"] == "sensitivity"


def test_asked_but_not_stored_says_why(study, tmp_path):
    asked = _asking(study, by_checkpoint=None, held_out_predictions=None)
    files = build_report(asked, tmp_path, figure_formats=("png",))
    text = files.report.read_text(encoding="utf-8")
    assert SECTION in text
    assert "The by-checkpoint effects have not been computed" in text
    assert "predicted_vs_bracket" in files.skipped_figures
    assert "bracket_width_by_family" in files.figures  # from the brackets alone
    assert not any("random" in t for t in _forest_ticks(asked))


def test_predictions_with_lo_zero_still_draw(study):
    from analysis.report.family_figures import predicted_vs_bracket

    pred = study.held_out_predictions.copy()
    cells = pred["cell_key"].unique()[:3]
    pred.loc[pred["cell_key"].isin(cells), "y_lower"] = -np.inf  # lo = 0: log2 lo = -inf
    fig = predicted_vs_bracket(_asking(study, held_out_predictions=pred))
    assert "3 cell(s) with lo = 0" in fig.get_supxlabel()
