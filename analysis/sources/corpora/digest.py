"""One SHA-256 per packaged corpus: what a lock records of the inputs a design reads.

A packaged corpus is built from files that installed packages ship (text) or pinned by
hash in this package (images, speech clips). Which items a seed reads depends on the
whole corpus (seed ``s`` reads item ``s mod n`` of one fixed order), so a corpus built
from other package versions can hand a locked design other inputs. The lock records
:func:`corpus_digest` of each packaged corpus the design reads, and ``attnrank run``
refuses to extract when a digest differs (docs/prereg.md, "Corpora in the lock").

What each digest covers
-----------------------
- text (``packaged-text-v1``, ``packaged-text-multilingual-v1``): the input ids in seed
  order, each naming its document and the first 12 hex digits of its text's SHA-256
  (:attr:`analysis.sources.corpora.TextCorpus.digest`): the text itself is covered.
- images (``packaged-images-*``): each image's id, shipping distribution, path and
  pinned file SHA-256, in seed order (a file whose bytes differ is refused when read).
- speech (``kokoro-*``): each clip's id, voice, speed, phonemes, the synthesiser's
  model and voice-file SHA-256, in seed order: everything the waveform depends on.

The default corpora (``pydoc_data.topics``, ``sklearn-sample-images``, ``generated``)
have no digest (:func:`corpus_digest` returns None): locks made before this record have
none, and their inputs are fixed by the code and the recorded package versions.

Examples
--------
>>> from analysis.sources.corpora.digest import corpus_digest
>>> len(corpus_digest("packaged-images-v1")), corpus_digest("sklearn-sample-images")
(64, None)
>>> corpus_digest("kokoro-ja-v1") == corpus_digest("kokoro-ja-v1")
True
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from analysis.validation import ParameterError

__all__ = ["corpus_digest"]


def _sha256(items: list[Any]) -> str:
    blob = json.dumps(items, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _image_digest(name: str) -> str:
    from analysis.sources.corpora.images import image_corpus, image_for_seed

    n = len(image_corpus(name))
    order = [image_for_seed(name, s) for s in range(n)]
    return _sha256([[i.image_id, i.distribution, i.path, i.sha256] for i in order])


def _speech_digest(name: str) -> str:
    from analysis.sources.corpora.speech import (
        VOICES_FILE,
        clip_for_seed,
        speech_corpus,
    )
    from analysis.sources.packaged import packaged_checkpoint

    spec = packaged_checkpoint("kokoro-albert")
    model = spec.assembled_sha256 if spec else None
    n = len(speech_corpus(name))
    clips = [clip_for_seed(name, s) for s in range(n)]
    rows = [[c.clip_id, c.voice, c.speed, c.phonemes] for c in clips]
    return _sha256([rows, model, VOICES_FILE.sha256])


def corpus_digest(name: str) -> str | None:
    """SHA-256 (hex) of the packaged corpus ``name`` as this installation builds it.

    Parameters
    ----------
    name : str
        A corpus of ``analysis.prereg.corpora`` (``TEXT_CORPORA``, ``IMAGE_CORPORA``,
        ``SPEECH_CORPORA``).

    Returns
    -------
    str or None
        None for a default corpus (see the module docstring); a packaged text corpus is
        built first (seconds, once per process).

    Raises
    ------
    ParameterError
        Naming ``corpus`` for a name that is no corpus.

    Examples
    --------
    >>> from analysis.sources.corpora.digest import corpus_digest
    >>> corpus_digest("wikipedia")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: corpus: expected one of pydoc_data.topics, ...
    """
    from analysis.sources.corpora.images import IMAGE_CORPORA
    from analysis.sources.corpora.speech import SPEECH_CORPORA
    from analysis.sources.corpora.text import TEXT_CORPORA, text_corpus

    defaults = (TEXT_CORPORA[0], next(iter(IMAGE_CORPORA)), next(iter(SPEECH_CORPORA)))
    if name in defaults:
        return None
    if name in TEXT_CORPORA:
        return text_corpus(name).digest
    if name in IMAGE_CORPORA:
        return _image_digest(name)
    if name in SPEECH_CORPORA:
        return _speech_digest(name)
    known = [*TEXT_CORPORA, *IMAGE_CORPORA, *SPEECH_CORPORA]
    raise ParameterError("corpus", "one of " + ", ".join(known), name)
