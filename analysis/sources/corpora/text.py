"""Text corpora built at run time from what installed packages ship, and their inputs.

Why these sources: a study of attention needs hundreds of distinct, natural texts of a
few hundred tokens that every install of this package has, offline, under a licence that
lets a study store and quote them. The Python standard library's own documentation (its
docstrings and ``pydoc_data`` help topics, PSF-2.0), the docstrings of NumPy, SciPy and
pandas (BSD-3-Clause; all three are dependencies) and the licence texts and long
descriptions that this package's dependencies ship in their ``.dist-info`` folders are all
present wherever the package runs, need no download and are openly licensed; together they
give five genres (reference prose, language reference, numerical API documentation, legal
text, project READMEs) rather than ``pydoc_data.topics`` alone. Only declared dependencies
are read (:data:`~analysis.sources.corpora.text_sources.DISTRIBUTIONS`), so the corpus is a
function of the installed versions, which it records (:attr:`TextCorpus.versions`), not of
whatever else is installed. No installed dependency ships translated prose; the only
multilingual text installed here is Sphinx's message catalogs (a dev-extra dependency),
which form the separate, optional ``packaged-text-multilingual-v1``.

Corpora (:data:`TEXT_CORPORA`):

* ``pydoc_data.topics`` - the default and the only corpus of the locked studies:
  :func:`analysis.sources.corpus_text`, unchanged.
* ``packaged-text-v1`` - English documents of the five genres, at least
  :data:`~analysis.sources.corpora.text_sources.MIN_CHARS` characters each, near-duplicates
  removed (:mod:`analysis.sources.corpora.dedup`), the API docstrings capped at
  :data:`API_PER_DISTRIBUTION` per distribution so that they do not swamp the other genres.
* ``packaged-text-multilingual-v1`` - Sphinx's translated messages, one document per
  language.

Seeds: a corpus's documents are put in one fixed order (:attr:`TextCorpus.documents`):
within each genre by the SHA-256 of ``"<corpus>|<key>"``, and the genres spread evenly
through the order (document ``i`` of a genre of ``n`` sits at fraction ``(i + 1/2) / n``),
so any run of consecutive seeds draws the genres in proportion. Seed ``s`` reads document
``s mod n``: distinct seeds within any ``n`` consecutive ones read distinct documents,
whatever the checkpoint or length, and the document does not depend on the tokenizer.

Examples
--------
>>> from analysis.sources.corpora import corpus_document, text_corpus
>>> corpus = text_corpus("packaged-text-v1")
>>> len(corpus) >= 300, sorted(corpus.genres)[:2]
(True, ['api-reference', 'changelog'])
>>> doc = corpus_document("packaged-text-v1", 61206)
>>> doc is corpus.document(61206 + len(corpus))  # seeds wrap around
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from analysis.sources.corpora import text_sources as src
from analysis.sources.corpora.dedup import near_duplicates
from analysis.sources.corpora.order import spread_order
from analysis.sources.corpora.text_sources import Document
from analysis.validation import ParameterError, check_int

__all__ = [
    "API_PER_DISTRIBUTION",
    "DEFAULT_TEXT_CORPUS",
    "TEXT_CORPORA",
    "Document",
    "TextCorpus",
    "corpus_document",
    "corpus_of_input_id",
    "packaged_text",
    "text_corpus",
]

#: The corpus of :func:`analysis.sources.corpus_text` (every locked study's text inputs).
DEFAULT_TEXT_CORPUS = "pydoc_data.topics"
#: Every text corpus a design may name (``[sampling.inputs] text_corpus``).
TEXT_CORPORA = (DEFAULT_TEXT_CORPUS, "packaged-text-v1", "packaged-text-multilingual-v1")
#: API docstrings kept per distribution (NumPy, SciPy, pandas), the first by SHA-256 order.
API_PER_DISTRIBUTION = 50

#: Genre order of the builders (priority when near-duplicates are removed).
_BUILDERS: dict[str, tuple[Callable[[], list[Document]], ...]] = {
    "packaged-text-v1": (
        src.stdlib_docstrings,
        src.pydoc_topics,
        src.stdlib_text_files,
        src.licence_texts,
        src.package_descriptions,
        src.api_docstrings,
    ),
    "packaged-text-multilingual-v1": (src.sphinx_catalogs,),
}


@dataclasses.dataclass(frozen=True)
class TextCorpus:
    """A built corpus: its documents in seed order, the versions read, and its digest.

    Examples
    --------
    >>> from analysis.sources.corpora import text_corpus
    >>> corpus = text_corpus("packaged-text-v1")
    >>> corpus.input_id(corpus.document(0)).startswith("corpus:packaged-text-v1/")
    True
    >>> sorted(corpus.versions)[:3]
    ['jinja2', 'matplotlib', 'numpy']
    """

    name: str
    documents: tuple[Document, ...]
    versions: dict[str, str]
    dropped_near_duplicates: int
    build_seconds: float

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def genres(self) -> dict[str, int]:
        """Documents per genre."""
        return dict(sorted(Counter(d.genre for d in self.documents).items()))

    @property
    def licences(self) -> dict[str, int]:
        """Documents per licence."""
        return dict(sorted(Counter(d.licence for d in self.documents).items()))

    @property
    def characters(self) -> int:
        """Characters of every document together."""
        return sum(len(d.text) for d in self.documents)

    @property
    def digest(self) -> str:
        """SHA-256 of the input ids in seed order: equal digests, equal corpora."""
        ids = "\n".join(self.input_id(d) for d in self.documents)
        return hashlib.sha256(ids.encode("utf-8")).hexdigest()

    def input_id(self, doc: Document) -> str:
        """``corpus:<corpus>/<key>@<first 12 hex of the text's SHA-256>``."""
        return f"corpus:{self.name}/{doc.key}@{doc.sha256[:12]}"

    def document(self, seed: int) -> Document:
        """The document of an input seed: ``documents[seed mod n]``."""
        s = check_int("seed", seed, minimum=0)
        return self.documents[s % len(self.documents)]

    def find(self, input_id: str) -> Document:
        """The document of an input id (:meth:`input_id`), or a ParameterError."""
        for doc in self.documents:
            if self.input_id(doc) == input_id or doc.key == input_id:
                return doc
        raise ParameterError("input_id", f"an input id of {self.name}", input_id)


def _order(name: str, docs: list[Document]) -> list[Document]:
    """Within a genre by SHA-256 of ``"<corpus>|<key>"``; genres spread evenly."""
    return spread_order(name, docs, key=lambda d: d.key, group=lambda d: d.genre)


def _cap_api(name: str, docs: list[Document]) -> list[Document]:
    count: Counter[str] = Counter()
    keep = []
    digest = {d.key: hashlib.sha256(f"{name}|{d.key}".encode()).hexdigest() for d in docs}
    for d in sorted(docs, key=lambda d: (d.genre != "api-reference", digest[d.key])):
        if d.genre == "api-reference":
            count[d.distribution] += 1
            if count[d.distribution] > API_PER_DISTRIBUTION:
                continue
        keep.append(d)
    return keep


@functools.cache
def text_corpus(name: str = "packaged-text-v1") -> TextCorpus:
    """Build (once per process) the packaged text corpus ``name``.

    Parameters
    ----------
    name : str
        ``"packaged-text-v1"`` or ``"packaged-text-multilingual-v1"``.

    Returns
    -------
    TextCorpus

    Raises
    ------
    ParameterError
        Naming ``corpus`` for an unknown name (``pydoc_data.topics`` is read by
        :func:`analysis.sources.corpus_text`, not here) or a missing optional source.
    """
    if name not in _BUILDERS:
        raise ParameterError("corpus", " or ".join(_BUILDERS), name)
    t0 = time.perf_counter()
    docs: list[Document] = []
    for build in _BUILDERS[name]:
        docs.extend(build())
    keys = [d.key for d in docs]
    if len(set(keys)) != len(keys):  # pragma: no cover - a reader's bug
        raise ValueError(f"{name}: duplicate document keys")
    drop = set(near_duplicates([d.text for d in docs]))
    kept = [d for i, d in enumerate(docs) if i not in drop]
    kept = _cap_api(name, kept)
    versions = dict(sorted({d.distribution: d.version for d in kept}.items()))
    return TextCorpus(
        name, tuple(_order(name, kept)), versions, len(drop), time.perf_counter() - t0
    )


def corpus_document(corpus: str, seed: int) -> Document:
    """The document that input seed ``seed`` reads in ``corpus`` (:meth:`TextCorpus.document`).

    Examples
    --------
    >>> from analysis.sources.corpora import corpus_document
    >>> a, b = corpus_document("packaged-text-v1", 5), corpus_document("packaged-text-v1", 6)
    >>> a.key != b.key
    True
    """
    return text_corpus(corpus).document(seed)


def corpus_of_input_id(input_id: str) -> str:
    """The text corpus an input id names; :data:`DEFAULT_TEXT_CORPUS` for any other id.

    Examples
    --------
    >>> from analysis.sources.corpora import corpus_of_input_id
    >>> corpus_of_input_id("corpus:packaged-text-v1/pydoc-topic/if@0123456789ab")
    'packaged-text-v1'
    >>> corpus_of_input_id("corpus:pydoc_data.topics/numbers")
    'pydoc_data.topics'
    """
    for name in TEXT_CORPORA[1:]:
        if str(input_id).startswith(f"corpus:{name}/"):
            return name
    return DEFAULT_TEXT_CORPUS


def packaged_text(checkpoint: Any, seed: int, length: int, *, corpus: str) -> Any:
    """The first ``length`` tokens of the document seed ``seed`` reads in ``corpus``.

    Parameters
    ----------
    checkpoint : analysis.sources.Checkpoint
        A text checkpoint with a tokenizer.
    seed : int
        The input seed (:meth:`TextCorpus.document`).
    length : int
        L, special tokens included (:func:`analysis.sources.text_input`).
    corpus : str, keyword-only
        A packaged corpus of :data:`TEXT_CORPORA`.

    Returns
    -------
    analysis.sources.ModelInput
        Its id is :meth:`TextCorpus.input_id`; ``meta`` holds the corpus, its digest, the
        document's key, source, licence, genre, language and SHA-256, and the seed.

    Raises
    ------
    ParameterError
        Naming ``length`` when the document has fewer than L tokens.

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.corpora import packaged_text
    >>> x = packaged_text(load_checkpoint("minilm"), 0, 16, corpus="packaged-text-v1")
    >>> x.length, x.input_id.startswith("corpus:packaged-text-v1/"), x.meta["licence"] != ""
    (16, True, True)
    """
    from analysis.sources.inputs import text_input

    built = text_corpus(corpus)
    doc = built.document(seed)
    meta = {
        "corpus": corpus,
        "corpus_digest": built.digest,
        "document": doc.key,
        "source": doc.source,
        "licence": doc.licence,
        "genre": doc.genre,
        "language": doc.language,
        "text_sha256": doc.sha256,
        "corpus_seed": int(seed),
    }
    return text_input(checkpoint, doc.text, length, input_id=built.input_id(doc), meta=meta)
