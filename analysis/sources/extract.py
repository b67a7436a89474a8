"""Per-head A, Q, K, scale and mask of one input through a checkpoint (``attnrank extract``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    text : str or path, optional
        The text itself, or a UTF-8 text file holding it (text models). A
        :class:`pathlib.Path` (any ``os.PathLike``) is always a file and must exist; a
        ``str`` is a file only if it names an existing file, and otherwise is the text
        (so a mistyped file name comes back as a text of its own characters: pass a
        ``Path`` to be sure).
    image : path, optional
        An image file (ViT / DeiT).
    corpus_seed : int, optional
        Pick a bundled corpus text (``pydoc_data.topics``) or sample image deterministically;
        for a speech encoder (Whisper), the generated clip of that seed
        (:func:`analysis.sources.audio.corpus_audio`).
    length : int, optional
        L, positions including special tokens. For ``text``: its first L tokens, None = the
        whole text (every token with the tokenizer's special tokens, e.g. ``[CLS]`` and
        ``[SEP]``; at most the checkpoint's positions). Required for a corpus text and for
        speech (encoder positions, ``2 L`` log-mel frames); native size for images when
        omitted.
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
        ``checkpoint``), or ``input`` when not exactly one source is given. The input's
        own errors (no source or two, an empty text, a ``Path`` that is not a file, a
        length that is not an integer >= 1) are raised before the model loads.

    Examples
    --------
    >>> from analysis.sources import extract
    >>> x = extract("minilm", corpus_seed=0, length=8)  # MiniLM, a corpus text of 8 tokens
    >>> x.A.shape, x.causal, x.checkpoint_id
    ((6, 12, 8, 8), False, 'sentence-transformers/all-MiniLM-L6-v2')
    >>> x.tokens[:4].tolist()
    ['[CLS]', 'nu', '##meric', 'literal']

    A sentence, all of its tokens (special tokens included):

    >>> x = extract("minilm", text="The cat sat on the mat.")
    >>> x.tokens.tolist()
    ['[CLS]', 'the', 'cat', 'sat', 'on', 'the', 'mat', '.', '[SEP]']
    >>> x.A.shape
    (6, 12, 9, 9)
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
    if length is not None:
        length = check_int("length", length, minimum=1)
    source = None if text is None else _read_source(text)  # before the model loads
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
        if source is not None:
            content, meta = source
            if length is None:
                length = _whole_text_length(ckpt, content)
            model_input = inputs.text_input(ckpt, content, length, meta=meta)
        elif length is None:
            raise ParameterError("length", "the number of tokens L for a text checkpoint", None)
        elif text_corpus not in (None, "pydoc_data.topics"):
            from analysis.sources.corpora import packaged_text

            model_input = packaged_text(ckpt, corpus_seed, length, corpus=text_corpus)
        else:
            model_input = inputs.corpus_text(ckpt, corpus_seed, length)
    return extract_from_model(ckpt, model_input)


def _read_source(text: str | os.PathLike[str]) -> tuple[str, dict[str, str]]:
    """The text ``extract`` gets and its input meta (a file's name), checked.

    A ``Path`` (``os.PathLike``) is a file that must exist; a ``str`` is a file only when
    it names an existing one, else the text itself. Either must hold more than white space.
    """
    from analysis.sources.inputs import read_text

    if isinstance(text, os.PathLike):
        path = Path(text)
        if not path.is_file():
            raise ParameterError(
                "text", "an existing UTF-8 text file (a Path is a file)", str(path)
            )
    elif isinstance(text, str):
        try:
            path = Path(text) if text.strip() and Path(text).is_file() else None
        except (OSError, ValueError):  # too long a name, a NUL byte: a text, not a file
            path = None
    else:
        raise ParameterError("text", "a string or a path of a text file", type(text).__name__)
    content = text if path is None else read_text(path, name="text")
    if not content.strip():
        where = "the text" if path is None else f"the file {path}"
        raise ParameterError("text", "a text with at least one non-space character", where)
    return content, ({} if path is None else {"file": path.name})


def _whole_text_length(ckpt: Any, text: str) -> int:
    """The number of tokens of the whole ``text``, special tokens included."""
    if ckpt.tokenizer is None:
        raise ParameterError("checkpoint", "a text checkpoint with a tokenizer", ckpt.checkpoint_id)
    return len(ckpt.tokenizer(text)["input_ids"])
