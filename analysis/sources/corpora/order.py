"""The fixed seed order of a packaged corpus: hashed within a group, groups spread evenly.

Every packaged corpus (text, images, speech) puts its items in one order and input seed
``s`` reads item ``s mod n``: distinct seeds within any ``n`` consecutive ones read
distinct items, and any run of consecutive seeds draws the groups (a text's genre, an
image's kind, a clip's voice) in proportion.

Examples
--------
>>> from analysis.sources.corpora.order import spread_order
>>> items = ["a1", "a2", "a3", "b1"]
>>> order = spread_order("demo", items, key=str, group=lambda s: s[0])
>>> sorted(order) == sorted(items), order.index("b1") in (1, 2)
(True, True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["item_index", "spread_order"]

T = TypeVar("T")


def spread_order(
    corpus: str, items: Iterable[T], *, key: Callable[[T], str], group: Callable[[T], str]
) -> list[T]:
    """Items within a group by SHA-256 of ``"<corpus>|<key>"``; groups spread evenly.

    Item ``i`` of a group of ``n`` sits at fraction ``(i + 1/2) / n`` of the order; ties
    are broken by the group's rank in sorted order, then the key.

    Parameters
    ----------
    corpus : str
        The corpus name (part of the hash, so two corpora order the same keys differently).
    items : iterable
    key : callable, keyword-only
        An item's stable id.
    group : callable, keyword-only
        An item's group (genre, kind, voice).

    Returns
    -------
    list
        The items in seed order.

    Examples
    --------
    >>> from analysis.sources.corpora.order import spread_order
    >>> spread_order("x", ["b", "a"], key=str, group=lambda s: "g") in (["a", "b"], ["b", "a"])
    True
    """
    by_group: dict[str, list[T]] = {}
    for item in items:
        by_group.setdefault(group(item), []).append(item)
    placed = []
    for g_index, name in enumerate(sorted(by_group)):
        ranked = sorted(
            by_group[name], key=lambda d: hashlib.sha256(f"{corpus}|{key(d)}".encode()).hexdigest()
        )
        n = len(ranked)
        placed.extend(((i + 0.5) / n, g_index, key(d), d) for i, d in enumerate(ranked))
    return [d for *_, d in sorted(placed, key=lambda t: t[:3])]


def item_index(seed: int, n: int) -> int:
    """The position input seed ``seed`` reads in a corpus of ``n`` items: ``seed mod n``.

    Examples
    --------
    >>> from analysis.sources.corpora.order import item_index
    >>> item_index(35, 33), item_index(2, 33)
    (2, 2)
    """
    from analysis.validation import check_int

    return check_int("seed", seed, minimum=0) % check_int("n", n, minimum=1)
