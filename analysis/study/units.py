"""The resampling units a design may name beside the head: KV groups and layers.

A design's ``[inference] cluster`` names the unit its bootstrap resamples (``head``, the
default, ``kv_group`` or ``checkpoint_layer``; :mod:`analysis.prereg.options`).
:class:`~analysis.compare.NestedComparison` reads the unit from a column of the comparison
table; this module builds that column for a study's cells, only when the design asks for
it (a design that resamples heads gets the table it always had, so its comparison
digest, and every stored result, is unchanged).

- ``checkpoint_layer``: ``"{checkpoint}:{layer}"``, read from the head id
  ``"{checkpoint}:{layer}:{head}"``. Every head of one layer sees the same input, so
  their outcomes share the layer's residual stream.
- ``kv_group``: heads of one layer whose keys are the same array on every stored input
  (grouped-query attention serves several query heads from one key head). It is read
  from the stored arrays, not from a model config: the store is what the study
  measured, and the rule needs no knowledge of each architecture. Heads with keys of
  their own form a group of one.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
import pandas as pd

from analysis.validation import ParameterError

__all__ = ["checkpoint_layer", "kv_groups", "unit_column"]


def _split_head_id(head_id: str) -> tuple[str, int, int]:
    try:
        checkpoint, layer, head = str(head_id).rsplit(":", 2)
        return checkpoint, int(layer), int(head)
    except ValueError:
        raise ParameterError("head_id", "'{checkpoint}:{layer}:{head}'", head_id) from None


def checkpoint_layer(head_ids: Iterable[str]) -> list[str]:
    """The ``"{checkpoint}:{layer}"`` unit of each head id.

    Examples
    --------
    >>> from analysis.study.units import checkpoint_layer
    >>> checkpoint_layer(["org/m:3:0", "org/m:3:7", "org/m:10:0"])
    ['org/m:3', 'org/m:3', 'org/m:10']
    """
    return [f"{c}:{layer}" for c, layer, _ in map(_split_head_id, head_ids)]


def kv_groups(keys_by_head: dict[str, dict[str, np.ndarray]]) -> dict[str, str]:
    """Group the heads of each layer whose key arrays coincide on every input.

    Parameters
    ----------
    keys_by_head : dict
        ``{head_id: {input: K}}`` with ``K`` of shape ``[L, d]`` (one entry per stored
        input and length of the head).

    Returns
    -------
    dict
        ``{head_id: group}``, the group named ``"{checkpoint}:{layer}:kv{h}"`` after its
        lowest head index ``h``.

    Notes
    -----
    Two heads share a group when, for every input either was stored on, both were stored
    and their ``K`` are equal bit for bit (the same bytes, shape and dtype). Grouped-query
    attention repeats one key head for ``g`` query heads, so the extracted arrays of the
    group are identical copies; two heads with keys of their own are equal with
    probability zero, so exact equality, not a tolerance, is the right rule.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.study.units import kv_groups
    >>> k0, k1 = np.zeros((4, 2)), np.ones((4, 2))
    >>> kv_groups({"m:0:0": {"a": k0}, "m:0:1": {"a": k0.copy()}, "m:0:2": {"a": k1},
    ...            "m:1:0": {"a": k0}})
    {'m:0:0': 'm:0:kv0', 'm:0:1': 'm:0:kv0', 'm:0:2': 'm:0:kv2', 'm:1:0': 'm:1:kv0'}
    """
    by_sig: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
    for head_id, per_input in keys_by_head.items():
        checkpoint, layer, head = _split_head_id(head_id)
        sig = tuple(
            sorted(
                (str(inp), hashlib.sha256(_key_bytes(k)).hexdigest())
                for inp, k in per_input.items()
            )
        )
        by_sig[(checkpoint, layer, sig)].append((head, head_id))
    out: dict[str, str] = {}
    for (checkpoint, layer, _), members in by_sig.items():
        name = f"{checkpoint}:{layer}:kv{min(h for h, _ in members)}"
        out.update({head_id: name for _, head_id in members})
    return dict(sorted(out.items()))


def _key_bytes(k: np.ndarray) -> bytes:
    k = np.ascontiguousarray(k)
    return f"{k.dtype.str}{k.shape}".encode() + k.tobytes()


def unit_column(table: pd.DataFrame, unit: str, *, store: object = None) -> pd.DataFrame:
    """``table`` with the column of resampling unit ``unit`` added (``head``: unchanged).

    Parameters
    ----------
    table : DataFrame
        Cells with a ``cluster`` column holding the head id.
    unit : {"head", "kv_group", "checkpoint_layer"}
    store : analysis.store.Store, keyword-only
        The study's store, read for ``kv_group`` (the key arrays of every stored matrix of
        the table's heads).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.study.units import unit_column
    >>> t = pd.DataFrame({"cluster": ["m:0:0", "m:0:1", "m:2:0"]})
    >>> unit_column(t, "checkpoint_layer")["checkpoint_layer"].tolist()
    ['m:0', 'm:0', 'm:2']
    >>> unit_column(t, "kv_group")
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: store: expected the study's store (to read the key arrays of kv_group), got None
    """
    if unit == "head":
        return table
    heads = table["cluster"].astype(str)
    if unit == "checkpoint_layer":
        return table.assign(checkpoint_layer=checkpoint_layer(heads))
    if unit != "kv_group":
        raise ParameterError("unit", "head, kv_group or checkpoint_layer", unit)
    if store is None:
        raise ParameterError(
            "store", "the study's store (to read the key arrays of kv_group)", None
        )
    wanted = set(heads)
    keys: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for rec in store.matrices(source="checkpoint"):  # type: ignore[attr-defined]
        if rec.head_id in wanted:
            arrays = store.arrays(rec.key)  # type: ignore[attr-defined]
            keys[rec.head_id][f"{rec.input_id}|{rec.length}"] = arrays.K
    missing = sorted(wanted - set(keys))
    if missing:
        raise ParameterError("store", "key arrays of every head in the table", missing[:3])
    groups = kv_groups(dict(keys))
    return table.assign(kv_group=heads.map(groups).to_numpy())
