"""The by-length section and table appear only when the design asks for them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.report import build_report
from analysis.report.study_tables import BY_LENGTH_TABLE_COLUMNS, by_length_table

SECTION = "### Effects by length (secondary, outside the Holm family)"


def _asking(study, **changes):
    design = dataclasses.replace(study.design, by_length=True)
    return dataclasses.replace(study, design=design, **changes)


@pytest.fixture(scope="module")
def asked_built(study, tmp_path_factory):
    asked = _asking(study)
    return asked, build_report(asked, tmp_path_factory.mktemp("by-len"), figure_formats=("png",))


def test_not_asked_nothing_appears(study, built):
    files, _ = built
    # the fixture holds by-length frames, but its design does not ask for them
    assert study.by_length is not None and not study.by_length_asked
    assert "Effects by length" not in files.report.read_text(encoding="utf-8")
    assert "by_length" not in files.tables
    assert by_length_table(study) is None


def test_asked_section_and_table_files_appear(asked_built):
    asked, files = asked_built
    text = files.report.read_text(encoding="utf-8")
    assert SECTION in text
    assert set(files.tables["by_length"]) == {"md", "csv", "tex"}
    assert all(p.is_file() for p in files.tables["by_length"].values())
    assert files.tables["by_length"]["csv"].name == "by_length.csv"
    section = text.split(SECTION)[1].split("\n### ")[0]
    bl = asked.by_length
    prim = bl[bl["metric"] == "interval_sq_loss"]
    assert prim["length"].nunique() >= 2  # the fixture's lengths, each its own row
    for h in dict.fromkeys(prim["hypothesis"]):
        assert f"**{h}** (" in section
    assert "interval_loglik" not in section
    assert "SeedSequence(7, spawn_key=(2, i, j))" in section
    for r in prim.itertuples(index=False):
        assert f"| {r.length} | {r.held_out_heads} | {r.held_out_cells} |" in section
    # written values are the frame's (every metric, every row)
    written = pd.read_csv(files.tables["by_length"]["csv"], comment="#")
    assert len(written) == len(bl)


def test_by_length_table_copies_every_row(study):
    t = by_length_table(_asking(study))
    assert tuple(t.columns) == BY_LENGTH_TABLE_COLUMNS
    assert len(t) == len(study.by_length)
    merged = t.merge(study.by_length, on=["pair", "metric", "length"], suffixes=("", "_src"))
    assert len(merged) == len(t)
    for c in ("effect", "ci_low", "ci_high", "p_one_sided"):
        np.testing.assert_array_equal(merged[c], merged[f"{c}_src"])
    assert t["metric"].iloc[0] == "interval_sq_loss"  # primary first
    first = t[t["pair"] == t["pair"].iloc[0]]
    first = first[first["metric"] == "interval_sq_loss"]
    assert first["length"].tolist() == sorted(first["length"])


def test_asked_but_not_stored_says_why(study, tmp_path):
    asked = _asking(study, by_length=None, skipped={"by_length": "no reason here"})
    files = build_report(asked, tmp_path, figure_formats=("png",))
    text = files.report.read_text(encoding="utf-8")
    assert "The by-length effects have not been computed: no reason here." in text
    assert "by_length" not in files.tables
