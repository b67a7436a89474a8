"""write_atlas / load_atlas: a round trip keeps every value and dtype; the file records its
schema version and provenance, and a file of another version (or none) is refused."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.atlas import SCHEMA_VERSION, atlas_provenance, load_atlas, write_atlas
from analysis.atlas.io import METADATA_KEY
from analysis.validation import ParameterError


def test_round_trip_keeps_the_frame_and_records_provenance(atlas, tmp_path):
    path = write_atlas(atlas, tmp_path / "atlas.parquet", provenance={"command": "test"})
    back = load_atlas(path)
    pd.testing.assert_frame_equal(back, atlas)
    record = back.attrs["atlas"]
    assert record["schema_version"] == SCHEMA_VERSION
    prov = record["provenance"]
    assert prov["command"] == "test" and prov["rows"] == len(atlas)
    assert prov["lock_sha256"] == sorted(set(atlas["lock_sha256"]))
    assert prov["engines"] == sorted(set(atlas["engine"]))
    assert atlas_provenance(path) == record


def test_write_is_atomic_and_refuses_a_frame_without_the_fixed_columns(atlas, tmp_path):
    path = write_atlas(atlas, tmp_path / "atlas.parquet")
    before = path.read_bytes()
    with pytest.raises(ParameterError, match="^atlas: .*missing: lower"):
        write_atlas(atlas.drop(columns="lower"), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atlas.parquet"]


def _with_metadata(path, record):
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    if record is None:
        meta.pop(METADATA_KEY)
    else:
        meta[METADATA_KEY] = json.dumps(record).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 0, "1"])
def test_another_schema_version_is_refused(atlas, tmp_path, version):
    path = write_atlas(atlas, tmp_path / "atlas.parquet")
    _with_metadata(path, {"schema_version": version, "provenance": {}})
    with pytest.raises(
        ParameterError, match="^schema_version: expected atlas schema version"
    ) as err:
        load_atlas(path)
    assert err.value.got == version


def test_a_parquet_file_without_atlas_metadata_or_not_parquet_is_refused(atlas, tmp_path):
    path = write_atlas(atlas, tmp_path / "atlas.parquet")
    _with_metadata(path, None)
    with pytest.raises(ParameterError, match="^path: expected an attnrank atlas"):
        load_atlas(path)
    other = tmp_path / "notes.parquet"
    other.write_text("not parquet", encoding="utf-8")
    with pytest.raises(ParameterError, match="^path: expected a Parquet file"):
        load_atlas(other)
    with pytest.raises(FileNotFoundError, match="^path: no such atlas file"):
        load_atlas(tmp_path / "absent.parquet")
