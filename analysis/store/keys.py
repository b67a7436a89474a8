"""Stable keys for matrices, profiles and cells.

A key is the first 20 hex digits (80 bits) of the SHA-256 of a canonical JSON list of the
record's fields. Floats enter through ``repr(float(x))`` so ``1`` and ``1.0`` give one key;
integers as integers; strings as they are.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from analysis.validation import ParameterError, check_int, check_positive_finite

__all__ = ["MATRIX_FIELDS", "cell_key", "float_token", "matrix_key"]

#: Fields that identify a matrix record, in key order.
MATRIX_FIELDS: tuple[str, ...] = ("source", "checkpoint", "layer", "head", "input_id", "length")

KEY_HEX = 20


def float_token(x: Any, name: str = "value") -> str:
    """Canonical text of a positive finite float (``repr(float(x))``).

    Examples
    --------
    >>> from analysis.store.keys import float_token
    >>> float_token(1), float_token(1.0), float_token(0.1)
    ('1.0', '1.0', '0.1')
    >>> float_token(-1, "temperature")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: temperature: expected ..., got -1
    """
    return repr(check_positive_finite(name, x))


def _digest(kind: str, parts: list[Any]) -> str:
    text = json.dumps([kind, *parts], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_HEX]


def matrix_key(
    source: str, checkpoint: str, layer: int, head: int, input_id: str, length: int
) -> str:
    """Key of a matrix record (source, checkpoint, layer, head, input_id, length).

    Parameters
    ----------
    source : str
        ``"checkpoint"`` or ``"synthetic"``.
    checkpoint : str
        Canonical checkpoint id (or synthetic family with its fixed parameters).
    layer, head : int
        0-based layer and query head.
    input_id : str
    length : int
        L (number of keys).

    Examples
    --------
    The first 20 hex digits of the SHA-256 of the canonical JSON list of the fields:

    >>> import hashlib, json
    >>> from analysis.store import matrix_key
    >>> key = matrix_key("checkpoint", "bert-base-uncased", 0, 3, "sentence-1", 12)
    >>> fields = ["matrix", "checkpoint", "bert-base-uncased", 0, 3, "sentence-1", 12]
    >>> text = json.dumps(fields, separators=(",", ":"))
    >>> key == hashlib.sha256(text.encode()).hexdigest()[:20]
    True
    >>> key == matrix_key("checkpoint", "bert-base-uncased", 0, 4, "sentence-1", 12)
    False
    """
    for name, value in (("source", source), ("checkpoint", checkpoint), ("input_id", input_id)):
        if not isinstance(value, str) or not value:
            raise ParameterError(name, "a non-empty string", value)
    parts = [
        source,
        checkpoint,
        check_int("layer", layer, minimum=0),
        check_int("head", head, minimum=0),
        input_id,
        check_int("length", length, minimum=1),
    ]
    return _digest("matrix", parts)


def cell_key(matrix: str, temperature: float, eps: float) -> str:
    """Key of a cell: a matrix key with a temperature and an eps.

    Examples
    --------
    Floats enter as ``repr(float(x))``, so ``1`` and ``1.0`` are one cell:

    >>> from analysis.store import cell_key, matrix_key
    >>> m = matrix_key("synthetic", "identity", 0, 0, "fixed", 8)
    >>> cell_key(m, 1, 0.1) == cell_key(m, 1.0, 0.1), cell_key(m, 1.0, 0.1) == cell_key(m, 1.0, 0.2)
    (True, False)
    >>> len(cell_key(m, 1.0, 0.1))
    20
    """
    return _digest(
        "cell", [matrix, float_token(temperature, "temperature"), float_token(eps, "eps")]
    )
