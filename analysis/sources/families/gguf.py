"""Checkpoints shipped as one GGUF file: SmolLM2-135M-Instruct (Llama) and Gemma-3-270M.

transformers reads a GGUF file itself (``from_pretrained(folder, gguf_file=name)``): it
parses the config and the tokenizer from the file's metadata and dequantizes every tensor
to float32 (through the ``gguf`` package; ``accelerate`` is required by that code path).
The model then is an ordinary ``LlamaModel`` / ``Gemma3TextModel`` running eager attention,
so the capture of :mod:`analysis.sources.checkpoints` sees its queries and keys after the
projections, the q/k norms (Gemma-3), the rotary embedding and the head split, and the
scale it uses (``head_dim ** -0.5`` for Llama, ``query_pre_attn_scalar ** -0.5`` for
Gemma-3), without any per-architecture code here.

The weights are the dequantized quantized ones (Q4_1, Q4_K_M), not the original bf16
checkpoint: the heads are those of the quantized model, and the extract's meta says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from analysis.sources.models import Checkpoint, package_meta, prepare_model
from analysis.sources.packaged import PackagedCheckpoint, assemble
from analysis.validation import ParameterError

__all__ = ["gqa_kv_heads", "load_gguf_checkpoint"]

#: Packages transformers needs to read a GGUF file.
_READERS = ("gguf", "accelerate")


def _require_readers() -> None:
    """Raise naming ``checkpoint`` and the packages to add when a GGUF reader is missing."""
    missing = []
    for name in _READERS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ParameterError(
            "checkpoint",
            f"the {' and '.join(missing)} package{'s' if len(missing) > 1 else ''} to read "
            "GGUF weights: pip install gguf accelerate (or the families extra: "
            "pip install 'attnrank[families]')",
            f"{', '.join(missing)} not importable",
        )


def gqa_kv_heads(n_heads: int, n_kv_heads: int) -> list[int]:
    """The key/value head each query head reads under grouped-query attention.

    Parameters
    ----------
    n_heads, n_kv_heads : int
        Query heads and key/value heads of a layer (``n_heads`` a multiple of
        ``n_kv_heads``).

    Returns
    -------
    list of int
        Entry h is the key/value head of query head h.

    Notes
    -----
    transformers' ``repeat_kv`` repeats each key/value head ``g = n_heads / n_kv_heads``
    times in place, so query head h reads key/value head ``floor(h / g)``; the extraction
    repeats the stored keys the same way.

    Examples
    --------
    SmolLM2-135M: 9 query heads share 3 key/value heads, three each.

    >>> from analysis.sources.families.gguf import gqa_kv_heads
    >>> gqa_kv_heads(9, 3)
    [0, 0, 0, 1, 1, 1, 2, 2, 2]
    """
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ParameterError(
            "checkpoint", "query heads a multiple of key/value heads", (n_heads, n_kv_heads)
        )
    group = n_heads // n_kv_heads
    return [h // group for h in range(n_heads)]


def _attention_meta(config: Any) -> dict[str, Any]:
    """GQA, rotary and window settings of a decoder config, as JSON-able values."""
    n_heads = int(config.num_attention_heads)
    n_kv = int(getattr(config, "num_key_value_heads", None) or n_heads)
    rope = getattr(config, "rope_parameters", None) or {}
    if "rope_theta" in rope:
        theta: Any = float(rope["rope_theta"])
    else:  # per layer type (Gemma-3: local and global rotary bases)
        theta = {k: float(v["rope_theta"]) for k, v in rope.items() if "rope_theta" in v}
    layer_types = list(getattr(config, "layer_types", None) or [])
    sliding = [i for i, t in enumerate(layer_types) if t == "sliding_attention"]
    out: dict[str, Any] = {
        "num_key_value_heads": n_kv,
        "kv_head_of_query_head": gqa_kv_heads(n_heads, n_kv),
        "rope_theta": theta,
        "attn_logit_softcapping": getattr(config, "attn_logit_softcapping", None),
    }
    if sliding:
        out["sliding_window"] = int(config.sliding_window)
        out["sliding_layers"] = sliding
    if getattr(config, "query_pre_attn_scalar", None) is not None:
        out["query_pre_attn_scalar"] = float(config.query_pre_attn_scalar)
    return out


def load_gguf_checkpoint(spec: PackagedCheckpoint) -> Checkpoint:
    """Load a packaged GGUF checkpoint offline, dequantized to float32, eager attention.

    Parameters
    ----------
    spec : PackagedCheckpoint
        One of :data:`analysis.sources.packaged.PACKAGED` whose loader is this function.

    Returns
    -------
    Checkpoint
        The base decoder (no language-model head) with its tokenizer; ``meta`` holds the
        origin, the weights' provenance (``spec.provenance(path)``: packages, versions,
        file hashes, ``dequantized_from``), ``model_type``, and the grouped-query mapping
        ``kv_head_of_query_head`` (entry h: the key/value head query head h reads).

    Raises
    ------
    ParameterError
        Naming ``checkpoint``: ``gguf`` or ``accelerate`` is not importable (the message
        says which to install), or the weights' package is missing or altered
        (:func:`analysis.sources.packaged.assemble`).

    Examples
    --------
    Dequantizing the 135M parameters takes about 30 s on one core, so the example is not
    run here (``tests/sources/test_family_gguf.py`` runs it, marked slow);
    ``load_checkpoint("smollm2")`` reaches this loader.

    >>> from analysis.sources.families.gguf import load_gguf_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_gguf_checkpoint(packaged_checkpoint("smollm2"))  # doctest: +SKIP
    >>> ckpt.meta["num_key_value_heads"], ckpt.model.config.num_attention_heads  # doctest: +SKIP
    (3, 9)
    """
    _require_readers()
    path = Path(assemble(spec))
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    folder, name = path.parent, path.name
    config = AutoConfig.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModel.from_pretrained(
        folder,
        gguf_file=name,
        config=config,
        attn_implementation="eager",
        dtype=torch.float32,
        local_files_only=True,
    )
    prepare_model(model)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    meta = {
        # The hash of the file the weights were read from (pinned and checked by assemble).
        **package_meta(spec, model, spec.assembled_sha256 or spec.parts[0].sha256),
        **spec.provenance(path),
        **_attention_meta(config),
    }
    return Checkpoint(model, spec.checkpoint_id, tokenizer, None, meta)
