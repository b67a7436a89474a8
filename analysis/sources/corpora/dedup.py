"""Near-duplicate removal: word 3-gram shingles, hashed, compared by cosine similarity.

Two documents are near-duplicates when the cosine similarity of their binary word-3-gram
vectors (:class:`sklearn.feature_extraction.text.HashingVectorizer`, 2^20 features, no
sign flipping) reaches :data:`THRESHOLD`, either over the whole texts or over their first
:data:`HEAD_CHARS` characters (the part a short input reads). For binary vectors the
cosine is ``|A & B| / sqrt(|A| |B|)``, which is at least the Jaccard similarity of the two
shingle sets, so a pair with Jaccard >= 0.5 is always caught. Of a group of near-duplicates
the first in the given order is kept.

Examples
--------
>>> from analysis.sources.corpora.dedup import near_duplicates
>>> a = "the quick brown fox jumps over the lazy dog " * 20
>>> b = a.replace("lazy", "sleepy", 1)
>>> c = "an entirely different sentence about licences and software " * 20
>>> near_duplicates([a, b, c])  # b repeats a: index 1 goes
[1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["HEAD_CHARS", "THRESHOLD", "near_duplicates"]

#: Cosine similarity of shingle vectors at or above which two texts are near-duplicates.
THRESHOLD = 0.5
#: Characters of a text's start compared on their own (about 300 tokens).
HEAD_CHARS = 1500


def _vectors(texts: Sequence[str]):  # noqa: ANN202 - a scipy sparse matrix
    from sklearn.feature_extraction.text import HashingVectorizer

    vec = HashingVectorizer(
        analyzer="word",
        ngram_range=(3, 3),
        n_features=2**20,
        binary=True,
        norm="l2",
        alternate_sign=False,
        lowercase=True,
        token_pattern=r"(?u)\b\w+\b",
    )
    return vec.transform(list(texts))


def near_duplicates(texts: Sequence[str], *, threshold: float = THRESHOLD) -> list[int]:
    """Indices of texts that repeat an earlier text (exactly or nearly), ascending.

    Parameters
    ----------
    texts : sequence of str
        In priority order: of near-duplicates the earliest stays.
    threshold : float, keyword-only
        Cosine similarity of binary word-3-gram vectors at or above which two texts are
        near-duplicates (:data:`THRESHOLD`).

    Returns
    -------
    list of int
    """
    if not texts:
        return []
    sims = []
    for part in (list(texts), [t[:HEAD_CHARS] for t in texts]):
        X = _vectors(part)
        sims.append((X @ X.T).tocsr())
    drop: set[int] = set()
    for i in range(len(texts)):
        if i in drop:
            continue
        later = set()
        for S in sims:
            row = S.getrow(i)
            cols, vals = row.indices, row.data
            later.update(int(j) for j in cols[(vals >= threshold - 1e-12) & (cols > i)])
        drop.update(later)
    exact: dict[str, int] = {}
    for i, t in enumerate(texts):  # identical texts, even with no 3-gram (very short)
        key = " ".join(t.split())
        if key in exact:
            drop.add(i)
        else:
            exact[key] = i
    return sorted(int(i) for i in np.unique(list(drop)))
