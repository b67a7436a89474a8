"""A checkpoint's layer and head counts from its ``config.json``, offline and without
its weights (for ``attnrank prereg draw`` and ``lock``: a design's layers and heads that
the checkpoint does not have are refused before anything is locked or drawn).

Read from a local folder, the MiniLM package, or the Hugging Face cache (never the
network). Checkpoints whose weights packages ship as GGUF, ONNX or split zip files
(:mod:`analysis.sources.packaged`) have no ``config.json`` to read without assembling
them; for those, and for a config without the counts, :func:`checkpoint_shape` says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["check_source_shapes", "checkpoint_shape"]

_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
_HEADS = ("num_attention_heads", "n_head", "num_heads")


def _config_path(name: str) -> Path | str:
    from analysis.sources.checkpoints import (
        MINILM_ID,
        canonical_checkpoint_id,
        minilm_package_path,
    )
    from analysis.sources.packaged import packaged_checkpoint

    path = Path(name).expanduser()
    if path.is_dir():
        return path / "config.json"
    cid = canonical_checkpoint_id(name)
    if cid == MINILM_ID:
        pkg = minilm_package_path()
        if pkg is not None and (pkg / "config.json").is_file():
            return pkg / "config.json"
    if packaged_checkpoint(cid) is not None:
        return "its weights are shipped packed (GGUF, ONNX or zip): no config.json to read"
    try:
        from huggingface_hub import snapshot_download

        snap = Path(snapshot_download(cid, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means: not in the local cache
        return "not on this machine (no local folder, package or Hugging Face cache entry)"
    return snap / "config.json"


def checkpoint_shape(name: str | os.PathLike[str]) -> tuple[int, int] | str:
    """``(layers, heads)`` from the checkpoint's config, or a sentence saying why not.

    Examples
    --------
    >>> from analysis.sources.config_shape import checkpoint_shape
    >>> checkpoint_shape("sentence-transformers/all-MiniLM-L6-v2")
    (6, 12)
    >>> checkpoint_shape("org/not-here")
    'not on this machine (no local folder, package or Hugging Face cache entry)'
    """
    where = _config_path(os.fspath(name))
    if isinstance(where, str):
        return where
    try:
        config = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{where} is not readable JSON ({exc})"
    layers = next((config[k] for k in _LAYERS if isinstance(config.get(k), int)), None)
    heads = next((config[k] for k in _HEADS if isinstance(config.get(k), int)), None)
    if layers is None or heads is None:
        return f"{where} names no layer and head counts"
    return int(layers), int(heads)


def check_source_shapes(data: Mapping[str, Any]) -> list[str]:
    """Refuse a design's checkpoint source whose layers or heads its checkpoint lacks.

    Parameters
    ----------
    data : mapping
        A parsed, valid design (:func:`analysis.prereg.load_design`).

    Returns
    -------
    list of str
        One note per checkpoint whose config could not be read (its layers and heads
        are then not checked here; the run checks them).

    Raises
    ------
    ParameterError
        Named ``sampling.sources[i].layers`` or ``.heads``, with the checkpoint's count.

    Examples
    --------
    >>> from analysis.sources.config_shape import check_source_shapes
    >>> src = {"kind": "checkpoint", "checkpoint": "sentence-transformers/all-MiniLM-L6-v2",
    ...        "layers": 6, "heads": [0, 11]}
    >>> check_source_shapes({"sampling": {"sources": [src]}})
    []
    >>> check_source_shapes({"sampling": {"sources": [{**src, "heads": [0, 12]}]}})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: sampling.sources[0].heads: expected head indices below 12 (sentence-transformers/all-MiniLM-L6-v2 has 12 heads per layer), got [0, 12]
    >>> check_source_shapes({"sampling": {"sources": [{**src, "checkpoint": "org/x"}]}})
    ['sampling.sources[0]: org/x: not on this machine (no local folder, package or Hugging Face cache entry); layers and heads not checked']
    """
    from analysis.validation import ParameterError

    notes = []
    for i, src in enumerate(data["sampling"]["sources"]):
        if src.get("kind") != "checkpoint":
            continue
        ckpt = src["checkpoint"]
        shape = checkpoint_shape(ckpt)
        if isinstance(shape, str):
            notes.append(f"sampling.sources[{i}]: {ckpt}: {shape}; layers and heads not checked")
            continue
        for key, count, what in (
            ("layers", shape[0], "layers"),
            ("heads", shape[1], "heads per layer"),
        ):
            value = src[key]
            top = value if isinstance(value, int) else max(value) + 1
            if top > count:
                raise ParameterError(
                    f"sampling.sources[{i}].{key}",
                    f"{key[:-1]} indices below {count} ({ckpt} has {count} {what})",
                    value,
                )
    return notes
