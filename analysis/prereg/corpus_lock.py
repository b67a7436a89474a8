"""The packaged corpora in a lock: which corpus digests a design was locked with.

A design that reads a packaged corpus (``[sampling.inputs] text_corpus``,
``image_corpus``, ``speech_corpus`` other than the defaults) gets, in its lock, a
``corpora`` entry: each such corpus's name and SHA-256 as the installation that locked it
built it (``analysis.sources.corpora.digest.corpus_digest``; the study layer computes the
digests and hands them here, as it does the blocks' versions: this package imports no
source code). ``prereg check`` lists a changed digest as drift, ``attnrank run`` refuses
to extract under one (:func:`verify_corpora`), and ``prereg amend`` records the new one.
A lock without the entry (every lock made before it, and any design that reads only the
default corpora) is not checked. docs/prereg.md, "Corpora in the lock".

Examples
--------
>>> from analysis.prereg.corpus_lock import corpus_changes
>>> record = {"corpora": {"packaged-text-v1": "a" * 64}}
>>> corpus_changes(record, {"packaged-text-v1": "a" * 64})
[]
>>> corpus_changes(record, {"packaged-text-v1": "b" * 64})
['corpus packaged-text-v1: contents changed (digest aaaaaaaaaaaa -> bbbbbbbbbbbb)']
"""

from __future__ import annotations

from typing import Any

from analysis.prereg.lock import Lock, _refuse
from analysis.prereg.lock_diff import Corpora, check_corpora, corpus_changes
from analysis.validation import ParameterError

__all__ = ["Corpora", "check_corpora", "corpus_changes", "verify_corpora"]


def verify_corpora(lock: Any, corpora: Corpora) -> None:
    """Refuse when a packaged corpus the locked design reads differs from its lock.

    Parameters
    ----------
    lock : analysis.prereg.lock.Lock
        From ``require_locked``.
    corpora : mapping of str to str
        The design's packaged corpora and their digests now (the study layer computes
        them; ``attnrank run`` calls this before it extracts any input).

    Raises
    ------
    PreregistrationError
        Naming each changed corpus and the ``attnrank prereg amend`` command that
        records the change.

    Examples
    --------
    >>> from analysis.datasets import write_example_design
    >>> from analysis.prereg.corpus_lock import verify_corpora
    >>> from analysis.prereg.lock import lock_design, require_locked
    >>> path = write_example_design("corpora.toml")
    >>> _ = lock_design(path, corpora={"packaged-text-v1": "a" * 64})
    >>> verify_corpora(require_locked(path), {"packaged-text-v1": "a" * 64})
    >>> verify_corpora(require_locked(path), {"packaged-text-v1": "b" * 64})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: corpora.toml drifted from its lock; \
confirmatory analysis refused: corpus packaged-text-v1: contents changed (digest \
aaaaaaaaaaaa -> bbbbbbbbbbbb). A deliberate change goes through `attnrank prereg amend ...
    """
    if not isinstance(lock, Lock):
        raise ParameterError("lock", "a Lock from require_locked", type(lock).__name__)
    changes = corpus_changes(lock.record, corpora)
    if changes:
        raise _refuse(lock.design.path, changes)
