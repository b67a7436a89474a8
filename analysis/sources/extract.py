"""Per-head A, Q, K, scale and mask of one input through a checkpoint (``attnrank extract``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.sources.files import Extraction
from analysis.validation import ParameterError, check_int

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["extract"]


def extract(
    checkpoint: str | os.PathLike[str] | PreTrainedModel,
    *,
    text: str | os.PathLike[str] | None = None,
    image: str | os.PathLike[str] | None = None,
    corpus_seed: int | None = None,
    length: int | None = None,
    text_corpus: str | None = None,
) -> Extraction:
    """Load ``checkpoint`` offline and extract one input (exactly one of the three sources).

    Parameters
    ----------
    checkpoint : str, path or model
        Name, alias, local folder or in-memory model (see ``load_checkpoint``).
    text, image : path, optional
        A UTF-8 text file (text models) or an image file (ViT / DeiT).
    corpus_seed : int, optional
        Pick a bundled corpus text (``pydoc_data.topics``) or sample image deterministically;
        for a speech encoder (Whisper), the generated clip of that seed
        (:func:`analysis.sources.audio.corpus_audio`).
    length : int, optional
        L, positions including special tokens; required for text and speech (encoder
        positions, ``2 L`` log-mel frames), native size for images when omitted.
    text_corpus : str, optional
        With ``corpus_seed`` and a text checkpoint: a packaged corpus of
        :data:`analysis.sources.corpora.TEXT_CORPORA` (``"packaged-text-v1"``: document
        ``corpus_seed mod n``); None or ``"pydoc_data.topics"`` is :func:`corpus_text`.

    Returns
    -------
    Extraction
        Frozen: per-head ``A``, ``Q``, ``K`` ``[layer, head, ...]``, ``scale``, ``mask``,
        ``causal``, ``tokens``, ``meta`` and ``bias``; :func:`save_extraction` writes it.

    Raises
    ------
    ParameterError
        Naming the parameter at fault (``text``, ``image``, ``corpus_seed``, ``length``,
        ``checkpoint``), or ``input`` when not exactly one source is given.

    Examples
    --------
    >>> from analysis.sources import extract
    >>> x = extract("minilm", corpus_seed=0, length=8)  # MiniLM, a corpus text of 8 tokens
    >>> x.A.shape, x.causal, x.checkpoint_id
    ((6, 12, 8, 8), False, 'sentence-transformers/all-MiniLM-L6-v2')
    >>> x.tokens[:4].tolist()
    ['[CLS]', 'nu', '##meric', 'literal']
    >>> extract("minilm", corpus_seed=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: length: expected the number of tokens L for a text checkpoint, got None
    """
    from analysis.sources import inputs
    from analysis.sources.checkpoints import extract_from_model, load_checkpoint

    given = [
        name
        for name, v in (("text", text), ("image", image), ("corpus_seed", corpus_seed))
        if v is not None
    ]
    if len(given) != 1:
        raise ParameterError("input", "exactly one of text, image, corpus_seed", given)
    if text_corpus is not None and corpus_seed is None:
        raise ParameterError("text_corpus", "a corpus seed with it (corpus_seed)", text_corpus)
    if corpus_seed is not None:
        corpus_seed = check_int("corpus_seed", corpus_seed, minimum=0)
    ckpt = load_checkpoint(checkpoint)
    from analysis.sources import audio

    if audio.is_audio(ckpt):
        # A speech encoder: the generated clip of the seed, 2 L log-mel frames.
        if corpus_seed is None:
            raise ParameterError(
                "input", "a corpus seed for a speech checkpoint (a generated clip)", given
            )
        if length is None:
            raise ParameterError("length", "the number of encoder positions L", None)
        model_input = audio.corpus_audio(ckpt, corpus_seed, length)
    elif ckpt.is_vision:
        if text is not None:
            raise ParameterError(
                "text", "an image or a corpus seed for an image checkpoint", str(text)
            )
        if image is not None:
            model_input = inputs.image_input(
                ckpt,
                inputs.read_image(image, name="image"),
                length,
                meta={"file": Path(image).name},
            )
        else:
            model_input = inputs.corpus_image(ckpt, corpus_seed, length)
    else:
        if image is not None:
            raise ParameterError(
                "image", "a text or a corpus seed for a text checkpoint", str(image)
            )
        if length is None:
            raise ParameterError("length", "the number of tokens L for a text checkpoint", None)
        if text is not None:
            model_input = inputs.text_input(
                ckpt, inputs.read_text(text, name="text"), length, meta={"file": Path(text).name}
            )
        elif text_corpus not in (None, "pydoc_data.topics"):
            from analysis.sources.corpora import packaged_text

            model_input = packaged_text(ckpt, corpus_seed, length, corpus=text_corpus)
        else:
            model_input = inputs.corpus_text(ckpt, corpus_seed, length)
    return extract_from_model(ckpt, model_input)
