"""Offline corpora of documents that installed packages ship under open licences.

:mod:`analysis.sources.corpora.text` builds the text corpora (``packaged-text-v1``, English,
five genres; ``packaged-text-multilingual-v1``, Sphinx's translated message catalogs) and
picks a corpus's document for an input seed; :mod:`analysis.sources.corpora.text_sources`
reads each source and :mod:`analysis.sources.corpora.dedup` removes near-duplicates.
docs/sources.md, "Text corpora", lists them.

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
    "corpus_document",
    "corpus_of_input_id",
    "packaged_text",
    "text_corpus",
]
