"""A text checkpoint's tokenizer without its weights (``attnrank inputs`` counts tokens).

Each packaged family's tokenizer is built from the same file its loader reads (MiniLM's
package folder, MPNet's folder, flan-t5's ``tokenizer.json``, Kokoro's vocabulary,
multilingual-e5's 4-bit file, a GGUF file's metadata), so a token count here is the count
:func:`analysis.sources.text_input` makes when the model is loaded. A checkpoint with
neither a packaged tokenizer nor a local folder gives None.

Examples
--------
>>> from analysis.sources.corpora.tokenizers import text_tokenizer
>>> tok = text_tokenizer("minilm")
>>> len(tok("Attention is all you need.")["input_ids"])
8
>>> text_tokenizer("org/not-installed") is None
True
"""

from __future__ import annotations

import functools
from typing import Any

from analysis.validation import ParameterError

__all__ = ["text_tokenizer"]


@functools.cache
def text_tokenizer(checkpoint: str) -> Any:
    """The tokenizer of a text checkpoint, weights not loaded; None when none is at hand.

    Parameters
    ----------
    checkpoint : str
        A checkpoint id or alias (``"minilm"``, ``"smollm2"``), or a local folder.

    Returns
    -------
    transformers tokenizer or None
        None for a vision or speech checkpoint, and for one not available offline.
    """
    from pathlib import Path

    from transformers import AutoTokenizer

    from analysis.sources.packaged import assemble, locate, packaged_checkpoint

    spec = packaged_checkpoint(checkpoint)
    if spec is None:
        from analysis.sources.checkpoints import resolve_checkpoint

        try:
            path = resolve_checkpoint(checkpoint).path
            return AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (ParameterError, OSError, ValueError, TypeError):
            return None
    family = spec.checkpoint_id
    if family in ("HuggingFaceTB/SmolLM2-135M-Instruct", "google/gemma-3-270m"):
        try:
            file = Path(assemble(spec))
        except ParameterError:  # optional weights not installed (Gemma-3)
            return None
        return AutoTokenizer.from_pretrained(
            file.parent, gguf_file=file.name, local_files_only=True
        )
    if family == "sentence-transformers/all-mpnet-base-v2":
        from analysis.sources.families.mpnet import model_folder

        return AutoTokenizer.from_pretrained(model_folder(spec), local_files_only=True)
    if family == "traceforge/flan-t5-small-span-encoder":
        from analysis.sources.families.t5_onnx import t5_tokenizer

        return t5_tokenizer(locate(spec, spec.parts[1]))
    if family == "hexgrad/Kokoro-82M-albert":
        from analysis.sources.families.albert_onnx import VOCAB, kokoro_tokenizer

        return kokoro_tokenizer(locate(spec, VOCAB))
    if family == "intfloat/multilingual-e5-small":
        from analysis.sources.families.e5_q4 import e5_tokenizer, read_e5_file

        return e5_tokenizer(read_e5_file(assemble(spec)))
    return None
