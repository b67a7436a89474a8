"""What a design's input seeds pick, before anything is computed (``attnrank inputs``).

:func:`design_inputs` lists every planned input (:func:`analysis.study.plan.plan_study`)
with its input id, source, licence and sizes (images: the picked image or crop, its pixel
size; speech: the clip, its voice and gloss, the seconds read); text inputs are resolved
with the checkpoint's tokenizer alone (:func:`analysis.sources.corpora.tokenizers.text_tokenizer`,
no weights, no forward pass). :func:`corpus_summary` and :func:`corpus_listing` describe a
packaged corpus (text, images or speech), :func:`show_input` one document.

Examples
--------
>>> from analysis.study.inputs import show_input
>>> row = show_input("packaged-text-v1:0")
>>> row["corpus"], row["input_id"].startswith("corpus:packaged-text-v1/"), row["licence"] != ""
('packaged-text-v1', True, True)
"""

from __future__ import annotations

from typing import Any

from analysis.study.plan import (
    DEFAULT_SPEECH_CORPUS,
    DEFAULT_TEXT_CORPUS,
    ExtractionTask,
    plan_study,
)
from analysis.validation import ParameterError

__all__ = ["corpus_listing", "corpus_summary", "design_corpora", "design_inputs", "show_input"]


def _modality(checkpoint: str) -> str:
    from analysis.prereg.corpora import checkpoint_modality
    from analysis.sources.checkpoints import canonical_checkpoint_id

    return checkpoint_modality(canonical_checkpoint_id(checkpoint))


def design_corpora(design: Any) -> dict[str, str]:
    """The packaged corpora a design's inputs read, each with its digest as built now.

    What ``attnrank prereg lock`` records and ``attnrank run`` checks before it extracts
    (:mod:`analysis.prereg.corpus_lock`): one corpus per modality its checkpoints read,
    the default corpora left out (they have no digest,
    :func:`analysis.sources.corpora.digest.corpus_digest`).

    Parameters
    ----------
    design : analysis.prereg.Design

    Returns
    -------
    dict of str to str
        Corpus name -> SHA-256 (hex), sorted by name; empty for a design that reads only
        default corpora (every design locked before corpora were).

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg import load_design
    >>> from analysis.study.inputs import design_corpora
    >>> design_corpora(load_design(write_example_design("plain.toml")))
    {}
    """
    from analysis.prereg.corpora import source_corpus
    from analysis.sources.corpora.digest import corpus_digest

    sampling = design.data.get("sampling", {})
    inputs = sampling.get("inputs", {})
    names = {
        source_corpus(inputs, src, i)
        for i, src in enumerate(sampling.get("sources", []))
        if src.get("kind") == "checkpoint"
    }
    digests = {name: corpus_digest(name) for name in sorted(names)}
    return {name: d for name, d in digests.items() if d is not None}


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


#: What scikit-learn states for its two sample images (``sklearn/datasets/images/README.txt``).
_SKLEARN_IMAGES_LICENCE = "CC-BY-2.0"


def _image_row(task: ExtractionTask) -> dict[str, Any]:
    """The image (or crop) the seed picks: id, source, licence, pixel size."""
    from analysis.sources.inputs import pick_image

    image, input_id, meta = pick_image(
        task.corpus_seed, crop=task.image_crop, corpus=task.image_corpus
    )
    prov = meta.get("provenance")
    source = (
        f"scikit-learn sample image {meta['image']}"
        if prov is None
        else f"{prov['distribution']} {prov['version'] or ''} {prov['path']}".replace("  ", " ")
    )
    return {
        "corpus": task.image_corpus,
        "input_id": input_id,
        "source": source,
        "licence": _SKLEARN_IMAGES_LICENCE if prov is None else prov["licence"],
        "genre": "photo" if prov is None else prov["kind"],
        "size": f"{image.shape[1]}x{image.shape[0]} px",
    }


def _speech_row(task: ExtractionTask) -> dict[str, Any]:
    """The clip the seed picks: id, voice and transcript, licence, seconds read."""
    seconds = round(task.length * 0.02, 2)  # L encoder positions = 2 L frames of 10 ms
    if task.speech_corpus == DEFAULT_SPEECH_CORPUS:
        return {
            "corpus": DEFAULT_SPEECH_CORPUS,
            "input_id": f"audio:generated/seed={task.corpus_seed}",
            "source": "analysis.sources.audio.generated_clip (speech-like, not speech)",
            "licence": "the project's (generated)",
            "genre": "synthetic",
            "size": f"{seconds} s",
        }
    from analysis.sources.corpora.speech import cached_seconds, clip_for_seed

    clip = clip_for_seed(task.speech_corpus, task.corpus_seed)
    prov = clip.provenance()
    row = {
        "corpus": task.speech_corpus,
        "input_id": f"audio:{task.speech_corpus}/{clip.clip_id}",
        "source": f"Kokoro-82M, voice {clip.voice}: {clip.gloss}",
        "licence": prov["licence"],
        "genre": "speech (TTS, ja)",
        "size": f"{seconds} s",
    }
    total = cached_seconds(clip)  # known once synthesised; nothing is synthesised here
    if total is not None and total < seconds:
        row["problem"] = f"the clip lasts {total:.2f} s < {seconds} s (L = {task.length})"
    return row


def _task_row(task: ExtractionTask, tok: Any, kind: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "checkpoint": task.checkpoint,
        "modality": kind,
        "length": task.length,
        "seed": task.corpus_seed,
        "label": task.label,
    }
    if kind == "image":
        return {**row, **_image_row(task)}
    if kind == "speech":
        return {**row, **_speech_row(task)}
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
        ``seed``, ``label``, ``corpus``, ``input_id``, ``source``, ``licence``,
        ``genre`` (an image's kind, a clip's kind) and, for text, ``document``,
        ``characters``, ``tokens`` (None when not counted); for images and speech
        ``size`` (pixels, seconds read); ``problem`` when the document (or a synthesised
        clip) is shorter than L.
    """
    from analysis.sources.corpora.tokenizers import text_tokenizer

    rows = []
    for task in plan_study(design).extractions:
        kind = _modality(task.checkpoint)
        tok = text_tokenizer(task.checkpoint) if tokens and kind == "text" else None
        rows.append(_task_row(task, tok, kind))
    return rows


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def _media_items(corpus: str) -> list[dict[str, Any]] | None:
    """Rows of a packaged image or speech corpus in seed order, or None for a text corpus."""
    from analysis.prereg.corpora import IMAGE_CORPORA, SPEECH_CORPORA

    if corpus in IMAGE_CORPORA[1:]:
        from analysis.sources.corpora.images import image_corpus, image_for_seed

        items = [image_for_seed(corpus, i) for i in range(len(image_corpus(corpus)))]
        return [
            {
                "seed": i,
                "input_id": f"corpus:{corpus}/{x.image_id}",
                "source": f"{x.distribution} {x.path}",
                "licence": x.licence,
                "genre": x.kind,
            }
            for i, x in enumerate(items)
        ]
    if corpus in SPEECH_CORPORA[1:]:
        from analysis.sources.corpora.speech import cached_seconds, clip_for_seed, speech_corpus

        clips = [clip_for_seed(corpus, i) for i in range(len(speech_corpus(corpus)))]
        return [
            {
                "seed": i,
                "input_id": f"audio:{corpus}/{c.clip_id}",
                "source": f"Kokoro-82M, voice {c.voice}: {c.gloss}",
                "licence": c.provenance()["licence"],
                "genre": c.voice,
                "seconds": _rounded(cached_seconds(c)),
            }
            for i, c in enumerate(clips)
        ]
    return None


def corpus_summary(corpus: str) -> dict[str, Any]:
    """Counts, genres (kinds, voices), licences and, for text, size, digest and versions.

    Examples
    --------
    >>> from analysis.study.inputs import corpus_summary
    >>> s = corpus_summary("packaged-text-v1")
    >>> s["documents"] >= 300, s["languages"]
    (True, {'en': ...})
    >>> corpus_summary("packaged-images-v1")["documents"]
    39
    """
    from collections import Counter

    from analysis.sources.corpora import text_corpus

    items = _media_items(corpus)
    if items is not None:
        return {
            "corpus": corpus,
            "documents": len(items),
            "genres": dict(sorted(Counter(r["genre"] for r in items).items())),
            "licences": dict(sorted(Counter(r["licence"] for r in items).items())),
        }
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
    """Every item of a packaged corpus in seed order (seed ``i`` reads row ``i mod n``).

    Examples
    --------
    >>> from analysis.study.inputs import corpus_listing
    >>> rows = corpus_listing("kokoro-ja-v1")
    >>> len(rows), len({r["input_id"] for r in rows}), rows[0]["licence"].startswith("Apache")
    (24, 24, True)
    """
    from analysis.sources.corpora import text_corpus

    items = _media_items(corpus)
    if items is not None:
        return items
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
