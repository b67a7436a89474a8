"""The atlas on disk: one Parquet file with its schema version and provenance.

The file's Parquet key-value metadata holds, under :data:`METADATA_KEY`, a JSON object
``{"schema_version": N, "provenance": {...}}``: the version of the columns
(:data:`analysis.atlas.SCHEMA_VERSION`), and where the rows come from (design, its hash
and lock, engines, package version and commit, when it was written, and what the caller
adds, e.g. the command). :func:`write_atlas` writes it atomically (a reader sees the old
file or the whole new one, :func:`analysis.atomic.atomic_write`); :func:`load_atlas`
reads the current schema version and version 1 (its derived columns computed on load,
the file left as it is) and refuses any other.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.atlas.schema import READABLE_VERSIONS, SCHEMA_VERSION, conform, derive_columns
from analysis.atomic import atomic_write
from analysis.validation import ParameterError

__all__ = ["METADATA_KEY", "atlas_provenance", "load_atlas", "write_atlas"]

#: The Parquet metadata key of the atlas's schema version and provenance.
METADATA_KEY = b"attnrank.atlas"


def _default_provenance(frame: pd.DataFrame) -> dict[str, Any]:
    from analysis import __version__
    from analysis.study.core import git_commit

    def values(col: str) -> list[Any]:
        return sorted({str(v) for v in frame[col].dropna()}) if col in frame else []

    return {
        "designs": values("design"),
        "design_sha256": values("design_sha256"),
        "lock_sha256": values("lock_sha256"),
        "engines": values("engine"),
        "rows": len(frame),
        "package_version": __version__,
        "git_commit": git_commit(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_atlas(
    frame: pd.DataFrame, path: str | os.PathLike, *, provenance: Mapping[str, Any] | None = None
) -> Path:
    """Write an atlas to ``path`` as Parquet, atomically, with its schema version.

    Parameters
    ----------
    frame : DataFrame
        An atlas (:func:`analysis.atlas.build_atlas`); checked and put in column order
        first (:func:`analysis.atlas.schema.conform`).
    path : path
        The Parquet file (its folder is created).
    provenance : mapping, optional, keyword-only
        Added to the provenance the file records (JSON-able; e.g. the command).

    Returns
    -------
    Path

    Raises
    ------
    ParameterError
        Naming ``atlas`` when ``frame`` lacks a fixed column or has a column that is
        neither fixed nor a feature.

    Examples
    --------
    >>> from analysis.atlas import atlas_provenance, load_atlas, write_atlas
    >>> from analysis.datasets import example_atlas
    >>> atlas = example_atlas()
    >>> path = write_atlas(atlas, "atlas/example.parquet", provenance={"command": "example"})
    >>> back = load_atlas(path)
    >>> back.equals(atlas), list(back.dtypes[["lower", "corpus_seed"]].astype(str))
    (True, ['int64', 'Int64'])
    >>> prov = atlas_provenance(path)
    >>> prov["schema_version"], prov["provenance"]["command"], prov["provenance"]["rows"]
    (2, 'example', 12)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = conform(frame)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    record = {
        "schema_version": SCHEMA_VERSION,
        "provenance": {**_default_provenance(frame), **dict(provenance or {})},
    }
    meta = dict(table.schema.metadata or {})
    meta[METADATA_KEY] = json.dumps(record, sort_keys=True, default=str).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    path = Path(path)
    with atomic_write(path) as fh:
        pq.write_table(table, fh)
    return path


def _read_table(path: str | os.PathLike) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such atlas file: {path}")
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParameterError("path", "a Parquet file", f"{path}: {exc}") from None


def _record(table: Any, path: str | os.PathLike) -> dict[str, Any]:
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ParameterError(
            "path", "an attnrank atlas (Parquet with its atlas metadata)", str(path)
        )
    try:
        record = json.loads(raw.decode("utf-8"))
        found = record["schema_version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ParameterError("path", "readable atlas metadata", f"{path}: {exc}") from None
    if type(found) is not int or found not in READABLE_VERSIONS:
        raise ParameterError(
            "schema_version",
            f"atlas schema version {' or '.join(map(str, READABLE_VERSIONS))} (this "
            "package's; rebuild the file with `attnrank atlas build`)",
            found,
        )
    return record


def atlas_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The schema version and provenance an atlas file records (its schema version checked).

    Examples
    --------
    >>> from analysis.atlas import atlas_provenance, write_atlas
    >>> from analysis.datasets import example_atlas
    >>> path = write_atlas(example_atlas(), "atlas/prov.parquet")
    >>> sorted(atlas_provenance(path)["provenance"])  # doctest: +NORMALIZE_WHITESPACE
    ['created', 'design_sha256', 'designs', 'engines', 'git_commit', 'lock_sha256',
     'package_version', 'rows']
    """
    return _record(_read_table(path), path)


def load_atlas(path: str | os.PathLike) -> pd.DataFrame:
    """Read an atlas file back as a tidy frame (its provenance in ``frame.attrs["atlas"]``).

    A file of schema version 1 (written before ``family``, ``modality`` and
    ``length_class`` existed) is read with those columns computed from its others
    (:func:`analysis.atlas.schema.derive_columns`); the frame is then the one a version-2
    file of the same rows gives, and ``frame.attrs["atlas"]["schema_version"]`` still
    says 1 (the file's).

    Parameters
    ----------
    path : path
        A file written by :func:`write_atlas`.

    Returns
    -------
    pandas.DataFrame
        The fixed columns of :data:`analysis.atlas.COLUMNS` with their dtypes, then the
        feature columns.

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ParameterError
        Naming ``path`` when the file is not Parquet or carries no atlas metadata;
        naming ``schema_version`` when it was written with a schema version this package
        does not read (:data:`analysis.atlas.schema.READABLE_VERSIONS`).

    Examples
    --------
    A file of another schema version is refused, naming the version:

    >>> import json
    >>> import pyarrow.parquet as pq
    >>> from analysis.atlas import load_atlas, write_atlas
    >>> from analysis.datasets import example_atlas
    >>> from analysis.atlas.io import METADATA_KEY
    >>> path = write_atlas(example_atlas(), "atlas/old.parquet")
    >>> table = pq.read_table(path)
    >>> meta = {**table.schema.metadata, METADATA_KEY: json.dumps({"schema_version": 0}).encode()}
    >>> pq.write_table(table.replace_schema_metadata(meta), path)
    >>> load_atlas(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: schema_version: expected atlas schema version 1 or 2 ..., got 0
    """
    table = _read_table(path)
    record = _record(table, path)
    frame = table.to_pandas()
    if record["schema_version"] == 1:
        frame = derive_columns(frame)
    frame = conform(frame)
    frame.attrs["atlas"] = record
    return frame
