"""The atlas's columns: names, dtypes and meanings, and the check of a frame against them.

An atlas has one row per cell (checkpoint, layer, head, input, length, temperature, eps)
of a study. Its fixed columns are :data:`COLUMNS`, in that order; the descriptor features
follow as ``<block>__<feature>`` columns (float64), the covariate columns of the study's
descriptor files as the comparison table names them
(:func:`analysis.study.comparison.covariate_columns`). :data:`SCHEMA_VERSION` is written
into every atlas file and checked when one is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from analysis.validation import ParameterError

__all__ = [
    "COLUMNS",
    "FEATURE_PATTERN",
    "SCHEMA_VERSION",
    "conform",
    "feature_columns",
    "schema_table",
]

#: Version of the atlas's columns; bumped whenever a fixed column is added, removed,
#: renamed or changes meaning. :func:`analysis.atlas.load_atlas` refuses other versions.
SCHEMA_VERSION = 1

#: The fixed columns, in order: name -> (dtype, meaning).
COLUMNS: dict[str, tuple[str, str]] = {
    "design": ("string", "the study's design name (its file's stem)"),
    "design_sha256": ("string", "SHA-256 of the locked design"),
    "lock_sha256": ("string", "SHA-256 of the design's lock when the atlas was built"),
    "cell_key": ("string", "the store's cell key (matrix key, temperature, eps)"),
    "matrix_key": (
        "string",
        "the store's matrix key (source, checkpoint, layer, head, input, length)",
    ),
    "source": ("string", "'checkpoint' (a model's head) or 'synthetic' (a generated matrix)"),
    "checkpoint": (
        "string",
        "canonical checkpoint id (synthetic: the family with its fixed parameters)",
    ),
    "synthetic_params": (
        "string",
        "JSON of a synthetic matrix's family and parameters (real: empty)",
    ),
    "head_id": ("string", "'checkpoint:layer:head' (synthetic: empty)"),
    "layer": ("int64", "0-based layer"),
    "head": ("int64", "0-based query head (synthetic: the replicate index)"),
    "n_layers": (
        "int64",
        "layers of the checkpoint (its extraction record's; without one, 1 + the deepest "
        "layer in the study; synthetic: 1)",
    ),
    "input_id": ("string", "the input's id (corpus text, image or clip; synthetic: 'seed:S')"),
    "corpus_seed": (
        "Int64",
        "the input seed the study drew it with (synthetic: the generator seed)",
    ),
    "length": ("int64", "L, the number of keys"),
    "n_queries": ("int64", "M, the number of query rows"),
    "temperature": ("float64", "t: the matrix is softmax(scale Q K^T / t) (synthetic: 1)"),
    "eps": ("float64", "the max-row-l1 tolerance"),
    "lower": ("int64", "certified lower end lo <= r_eps"),
    "upper": ("int64", "certified upper end r_eps <= hi"),
    "closed": ("bool", "lower == upper"),
    "lower_method": ("string", "construction of the lower witness ('none' when lower is 0)"),
    "upper_method": ("string", "construction of the upper witness ('identity': B = A)"),
    "engine": ("string", "label of the engine that computed the profile ('analysis.brackets 4')"),
    "engine_version": ("int64", "that engine's version (the re-derivation runs it)"),
    "effort": ("string", "the search effort of the profile"),
    "profile_eps": ("string", "JSON list: the eps grid the profile's search aimed at"),
    "search_temperatures": (
        "string",
        "JSON list: the temperatures of the matrix searched side by side",
    ),
    "profile_revision": (
        "int64",
        "the store's revision of the profile (1: computed once, from scratch)",
    ),
    "extract_threads": ("Int64", "torch threads of the extraction (synthetic: missing)"),
    "array_sha256": ("string", "SHA-256 of the store's array file of the matrix"),
    "matrix_sha256": (
        "string",
        "SHA-256 of the certified float64 matrix at the cell's temperature",
    ),
    "held_out": ("bool", "the head is one of the design's held-out heads"),
    "in_comparison": ("bool", "the cell is a row of the study's comparison table"),
}

#: A descriptor feature column: ``<block>__<feature>``, both snake case.
FEATURE_PATTERN = re.compile(r"^[a-z][a-z0-9_]*__[A-Za-z0-9_]+$")


def feature_columns(columns: Sequence[str]) -> list[str]:
    """The descriptor feature columns among ``columns``, in order.

    Examples
    --------
    >>> from analysis.atlas.schema import feature_columns
    >>> feature_columns(["cell_key", "lower", "baseline__n_keys", "native__kappa"])
    ['baseline__n_keys', 'native__kappa']
    """
    return [c for c in columns if c not in COLUMNS and FEATURE_PATTERN.match(str(c))]


def conform(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the fixed columns first, in order and of their dtypes, then the
    feature columns as float64.

    Raises
    ------
    ParameterError
        Naming ``atlas``: a fixed column is missing, or a column is neither fixed nor a
        feature.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.atlas.schema import conform
    >>> conform(pd.DataFrame({"lower": [1]}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: atlas: expected the atlas's fixed columns, got 'missing: design, ...
    """
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ParameterError("atlas", "the atlas's fixed columns", "missing: " + ", ".join(missing))
    features = feature_columns(frame.columns)
    other = sorted(set(frame.columns) - set(COLUMNS) - set(features))
    if other:
        raise ParameterError("atlas", "fixed columns and <block>__<feature> columns", other)
    frame = frame.reset_index(drop=True)
    return pd.DataFrame(
        {name: frame[name].astype(dtype) for name, (dtype, _) in COLUMNS.items()}
        | {c: frame[c].astype("float64") for c in features},
        index=frame.index,
    )


def schema_table() -> pd.DataFrame:
    """The fixed columns as a table (``column``, ``dtype``, ``meaning``), for the docs.

    Examples
    --------
    >>> from analysis.atlas.schema import schema_table
    >>> table = schema_table()
    >>> list(table.columns), table.loc[table["column"] == "lower", "dtype"].item()
    (['column', 'dtype', 'meaning'], 'int64')
    """
    return pd.DataFrame(
        [(name, dtype, meaning) for name, (dtype, meaning) in COLUMNS.items()],
        columns=["column", "dtype", "meaning"],
    )
