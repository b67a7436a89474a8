"""Bracket widths of a design's training heads on bundled texts (``attnrank reference-widths``).

The simulations that validate the pre-specified comparison (``attnrank
validate-comparison``) draw interval widths from real certified brackets, never from a
study's held-out heads. This module produces that reference table
(``data/reference/minilm_bracket_widths.csv`` for the shipped MiniLM design): the design's
one checkpoint is run on one bundled text per length (:mod:`pydoc_data.topics`, through
:mod:`analysis.sources`), and each training head (the design's population minus
``held_out.heads``) is bracketed at t = 1 with the engine, alone. Held-out heads are never
bracketed here.

Command::

    attnrank reference-widths --design preregistration/offline-minilm.toml \\
        --lengths 96 128 --workers 2 --out data/reference/minilm_bracket_widths.csv
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.executor import check_executor
from analysis.validation import ParameterError, check_choice, check_eps_grid, check_int

__all__ = [
    "COLUMNS",
    "FORWARD_THREADS",
    "TOPIC_INDEX",
    "corpus_extraction",
    "corpus_heads",
    "reference_widths",
    "write_reference_widths",
]

#: Columns of the reference table, in order.
COLUMNS: tuple[str, ...] = ("length", "layer", "head", "eps", "lower", "upper")
#: Which bundled text each length uses: the n-th topic of :mod:`pydoc_data.topics` (sorted
#: by name) among those with at least L tokens; a different text per length, so the
#: lengths are not prefixes of one input. Lengths not listed use the first (n = 0).
TOPIC_INDEX: dict[int, int] = {64: 0, 96: 3, 128: 5, 256: 1}
#: Torch threads of the float32 forward pass. The last bits of the heads depend on it
#: (docs/sources.md, Reproducibility), and the engine can react to them at a near miss; the
#: shipped reference was made with 2, so a machine with more cores repeats it.
FORWARD_THREADS = 2
DEFAULT_LENGTHS: tuple[int, ...] = (96, 128)
DEFAULT_EPS: tuple[float, ...] = (0.05, 0.1, 0.2)


def _check_lengths(lengths: Any) -> tuple[int, ...]:
    vals = [lengths] if isinstance(lengths, (int, np.integer)) else list(lengths)
    if not vals:
        raise ParameterError("lengths", "at least one length", vals)
    out = tuple(check_int("lengths", v, minimum=2) for v in vals)
    if len(set(out)) != len(out):
        raise ParameterError("lengths", "distinct lengths", list(out))
    return out


def corpus_extraction(
    checkpoint: Any,
    length: int,
    *,
    topic_index: int | None = None,
    threads: int | None = FORWARD_THREADS,
) -> Any:
    """Extract every head of a text checkpoint on one bundled text of ``length`` tokens.

    Parameters
    ----------
    checkpoint : str, path, model or analysis.sources.checkpoints.Checkpoint
        A text checkpoint (see :func:`analysis.sources.checkpoints.load_checkpoint`); a
        loaded ``Checkpoint`` is used as is.
    length : int
        L, tokens including special tokens.
    topic_index : int, optional
        The text: the ``topic_index``-th topic of :mod:`pydoc_data.topics` (sorted by name)
        among those with at least L tokens, truncated to L tokens. Default
        ``TOPIC_INDEX.get(length, 0)``.
    threads : int or None
        Torch threads for the forward pass (None: as the caller left them).

    Returns
    -------
    analysis.sources.checkpoints.Extraction
        Input id ``"corpus:pydoc_data.topics/<topic>"``.

    Raises
    ------
    ParameterError
        Naming ``topic_index`` when fewer topics have L tokens.

    Examples
    --------
    An extraction runs the checkpoint's forward pass (its weights), so this example shows
    only the contract on inputs that stop it before any weight is read:

    >>> from analysis.study.reference import corpus_extraction
    >>> corpus_extraction("minilm", 1)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: lengths: expected an integer >= 2, got 1
    >>> corpus_extraction("org/not-on-disk", 16)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected a local directory with config.json and weights; ...; or a Hugging Face id in the local cache ... (offline, and not in the cache) ..., got ...
    """
    from pydoc_data.topics import topics

    from analysis.attention import fixed_torch_threads
    from analysis.sources.checkpoints import Checkpoint, extract_from_model, load_checkpoint
    from analysis.sources.inputs import text_input

    L = check_int("lengths", length, minimum=2)
    n = check_int("topic_index", TOPIC_INDEX.get(L, 0) if topic_index is None else topic_index)
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    tok = ckpt.tokenizer
    if tok is None:
        raise ParameterError("checkpoint", "a text checkpoint with a tokenizer", ckpt.checkpoint_id)
    # Truncating at L decides "at least L tokens" without tokenizing whole long topics.
    names = [
        k
        for k in sorted(topics)
        if len(tok(topics[k], truncation=True, max_length=L)["input_ids"]) >= L
    ]
    if not 0 <= n < len(names):
        raise ParameterError("topic_index", f"0 .. {len(names) - 1} at L = {L}", n)
    name = names[n]
    model_input = text_input(
        ckpt,
        topics[name],
        L,
        input_id=f"corpus:pydoc_data.topics/{name}",
        meta={"corpus": "pydoc_data.topics", "topic": name, "topic_index": n},
    )
    if threads is None:
        return extract_from_model(ckpt, model_input)
    with fixed_torch_threads(check_int("threads", threads, minimum=1)):
        return extract_from_model(ckpt, model_input)


def corpus_heads(
    checkpoint: Any,
    length: int,
    *,
    topic_index: int | None = None,
    threads: int | None = FORWARD_THREADS,
) -> np.ndarray:
    """:func:`corpus_extraction`'s attention as float64 ``[layer * head, L, L]``.

    The flat index is ``layer * heads + head``; the values are the model's eager float32
    probabilities (t = 1). Parameters as in :func:`corpus_extraction`.

    Examples
    --------
    The heads come from a forward pass (model weights), so this example shows only that
    the checks of :func:`corpus_extraction` apply before any weight is read:

    >>> from analysis.study.reference import corpus_heads
    >>> corpus_heads("minilm", 16.5)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: lengths: expected an integer, got 16.5
    """
    ex = corpus_extraction(checkpoint, length, topic_index=topic_index, threads=threads)
    return ex.A.reshape(-1, ex.length, ex.length).astype(np.float64)


def _design_heads(design: Any) -> tuple[str, list[tuple[int, int]], set[tuple[int, int]]]:
    """The design's one checkpoint, its population ``(layer, head)`` sorted, the held-out."""
    checkpoints = [
        s["checkpoint"] for s in design.data["sampling"]["sources"] if s.get("kind") == "checkpoint"
    ]
    if len(set(checkpoints)) != 1:
        raise ParameterError(
            "design", "a design with exactly one checkpoint source", sorted(set(checkpoints))
        )

    def split(head_id: str) -> tuple[int, int]:
        _, layer, head = head_id.rsplit(":", 2)
        return int(layer), int(head)

    population = [split(h) for h in design.population()]
    held_out = {split(h) for h in design.held_out}
    return checkpoints[0], population, held_out


def _design_engine(design: Any) -> int | None:
    """The engine a design pins, its lock read when there is one (else the newest)."""
    import json

    from analysis.prereg.engine_pin import pinned_engine
    from analysis.prereg.lock import lock_path
    from analysis.study.core import engine_versions

    lp = lock_path(design.path)
    record = json.loads(lp.read_text(encoding="utf-8")) if lp.is_file() else None
    return pinned_engine(design.data, record, engines=engine_versions())


def reference_widths(
    design_path: str | os.PathLike[str],
    *,
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    eps: Sequence[float] = DEFAULT_EPS,
    effort: str | None = None,
    workers: int = 1,
    progress: bool = False,
    executor: Executor | None = None,
    engine: int | None = None,
) -> pd.DataFrame:
    """Certified brackets of a design's training heads, one bundled text per length.

    Parameters
    ----------
    design_path : path
        A design file with one checkpoint source and its drawn ``held_out.heads``.
    lengths : sequence of int
        Token lengths L (distinct, >= 2); the text of each is given by
        :data:`TOPIC_INDEX`.
    eps : sequence of float
        Tolerances.
    effort : str, optional
        Engine effort; default the design's ``effort``.
    workers : int
        Processes sharing the heads (results do not depend on it).
    progress : bool
        Show the engine's progress bar.
    executor : concurrent.futures.Executor, optional
        Share the heads out there instead (a dask cluster's; ``workers`` must then be 1).
    engine : int, optional
        Bracket engine version; default the one the design pins (its ``engine``, else its
        lock's, else the newest: :mod:`analysis.prereg.engine_pin`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`, one row per (length, training head, eps), sorted by
        ``length, layer, head, eps``.

    Notes
    -----
    Each head is bracketed alone (``analysis.brackets.profile_matrix``; the bracket
    runner's ``batch=1``), as the shipped reference was made. Side by side in a block, a
    head's bracket can differ in the last bits of the batched float32 products with its
    companions (:func:`analysis.brackets.profile_matrices`); alone, it depends on the head
    only, whichever heads the design holds out.

    Examples
    --------
    The brackets need the checkpoint's heads (model weights), so this example shows only
    what is refused before any weight is read: repeated lengths, and a design with two
    checkpoints (written to the current folder):

    >>> from analysis.study.reference import reference_widths
    >>> reference_widths("any.toml", lengths=[96, 96])
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: lengths: expected distinct lengths, got [96, 96]
    >>> from analysis.datasets import write_example_design
    >>> _ = write_example_design("two.toml", checkpoints=("org/a", "org/b"),
    ...                          held_out=("org/a:1:1", "org/b:0:1"))
    >>> reference_widths("two.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: design: expected ... source, got ['org/a', 'org/b']
    """
    from analysis.brackets import EFFORTS, check_engine
    from analysis.brackets.io import MatrixInput, profile_file
    from analysis.executor import RunSpec
    from analysis.prereg.design import load_design
    from analysis.sources.checkpoints import load_checkpoint

    Ls = _check_lengths(lengths)
    grid = check_eps_grid(eps, "eps")
    workers = check_executor(executor, workers)
    design = load_design(design_path)
    effort = design.data.get("effort", "default") if effort is None else effort
    check_choice("effort", effort, EFFORTS)
    if engine is None:
        engine = _design_engine(design)
    engine = check_engine(engine)
    checkpoint, population, held_out = _design_heads(design)
    training = [h for h in population if h not in held_out]
    if not training:
        raise ParameterError("design", "at least one head that is not held out", population)
    layers = [layer for layer, _ in training]
    heads = [head for _, head in training]
    ckpt = load_checkpoint(checkpoint)
    rows = []
    for L in Ls:
        ex = corpus_extraction(ckpt, L)
        if max(layers) >= ex.A.shape[0] or max(heads) >= ex.A.shape[1]:
            raise ParameterError(
                "design", f"heads of {checkpoint} ({ex.A.shape[0]} x {ex.A.shape[1]})", training
            )
        data = MatrixInput(
            ex.A[layers, heads].astype(np.float64),
            layers,
            heads,
            f"{checkpoint}:{ex.input_id}:L{L}",
            None,
            False,
        )
        profiles = profile_file(
            data,
            eps=grid,
            effort=effort,
            engine=engine,
            execution=RunSpec(workers=workers, batch=1, progress=progress, executor=executor),
        )
        for (layer, head), prof in zip(training, profiles, strict=True):
            for e in grid:
                lo, hi = prof.bracket(e)
                rows.append((L, layer, head, e, lo, hi))
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return table.sort_values(["length", "layer", "head", "eps"], ignore_index=True)


def write_reference_widths(
    design_path: str | os.PathLike[str], out: str | os.PathLike[str], **kwargs: Any
) -> pd.DataFrame:
    """:func:`reference_widths` written to ``out`` as CSV (atomically); the table.

    ``kwargs`` go to :func:`reference_widths`. The file holds exactly the lengths asked
    for; an existing file is replaced whole, and only once the table is complete.

    Examples
    --------
    The table needs a checkpoint's heads (model weights), so this example shows only that
    a refused call leaves an existing file as it was:

    >>> from pathlib import Path
    >>> from analysis.study.reference import write_reference_widths
    >>> _ = Path("widths.csv").write_text("an older table", encoding="utf-8")
    >>> write_reference_widths("any.toml", "widths.csv", eps=[0.1, -0.2])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: eps: ...
    >>> Path("widths.csv").read_text(encoding="utf-8")
    'an older table'
    """
    table = reference_widths(design_path, **kwargs)
    with atomic_write(out, mode="w") as fh:
        table.to_csv(fh, index=False)
    return table
