"""What the report says of the lock: first lock, when this run's store first held
outcomes (and the design's earliest outcome record when that is another), the code, and
the hypotheses an amendment after outcomes made exploratory.

Read from the study's provenance (``analysis.study.results.provenance``:
``first_locked_at``, ``store_outcome``, ``first_outcome``, ``code_sha256_locked``,
``code_sha256_now``, ``exploratory_hypotheses``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lock_status_lines"]


def _outcome_words(prov: Mapping[str, Any]) -> str:
    """When this run's outcomes were first recorded, then the design's earliest record if
    it is another (e.g. the shipped study's); a provenance made before ``store_outcome``
    existed says what it recorded."""
    first = prov.get("first_outcome") or {}
    if "store_outcome" not in prov:  # a provenance.json written before the field
        if not first:
            return "No outcome record found."
        return f"First outcome recorded at {first.get('time')} (store {first.get('store')})."
    mine = prov.get("store_outcome") or {}
    text = (
        f"This run's outcomes were first recorded at {mine.get('time')} "
        f"(store {mine.get('store')})."
        if mine
        else "This run's store holds no outcome record."
    )
    if first and first.get("time") != mine.get("time"):
        text += (
            f" The design's earliest outcome record is {'older, ' if mine else ''}"
            f"{first.get('time')} ({first.get('store')}): it decides which amendments came "
            "after outcomes."
        )
    return text


def lock_status_lines(prov: Mapping[str, Any]) -> list[str]:
    """Markdown lines (each followed by a blank line) on the lock's status.

    The times are this run's: when its store first held outcomes (``store_outcome``).
    A shipped design carries the original study's outcome record beside it; when the
    design's earliest record (``first_outcome``) is another, it is named as such, since it
    is what decides which amendments came after outcomes.

    Examples
    --------
    >>> from analysis.report.lock_status import lock_status_lines
    >>> prov = {"first_locked_at": "2026-12-03T12:34:16+00:00",
    ...         "first_outcome": {"time": "2026-12-06T00:02:25+00:00", "store": "shipped"},
    ...         "store_outcome": {"time": "2026-12-08T09:00:00+00:00", "store": "mine"},
    ...         "code_sha256_locked": "a" * 64, "code_sha256_now": "b" * 64,
    ...         "exploratory_hypotheses": {"H1": "amended after outcomes existed: sampling "
    ...                                          "(amendment 5, t)"}}
    >>> for line in lock_status_lines(prov)[::2]:
    ...     print(line)  # doctest: +ELLIPSIS
    **Reported as exploratory, not confirmatory: H1** (amended after outcomes existed: ...
    First locked at 2026-12-03T12:34:16+00:00. This run's outcomes were first recorded at 2026-12-08T09:00:00+00:00 (store mine). The design's earliest outcome record is older, 2026-12-06T00:02:25+00:00 (shipped): it decides which amendments came after outcomes.
    Analysis code: locked `aaaaaaaaaaaa`, now `bbbbbbbbbbbb` (differs: ...
    >>> lock_status_lines({})
    []
    """
    if "first_locked_at" not in prov:
        return []
    L: list[str] = []
    demoted = dict(prov.get("exploratory_hypotheses") or {})
    if demoted:
        why = "; ".join(sorted(set(demoted.values())))
        L += [
            f"**Reported as exploratory, not confirmatory: {', '.join(sorted(demoted))}** "
            f"({why}). Their tests below are computed as preregistered, but the design was "
            "changed in a section that decides the answer once outcomes could be seen.",
            "",
        ]
    L += [f"First locked at {prov.get('first_locked_at')}. {_outcome_words(prov)}", ""]
    locked, now = prov.get("code_sha256_locked"), prov.get("code_sha256_now")
    if locked or now:
        state = (
            "the same"
            if locked == now
            else "differs: the results may come from other code than the lock froze"
            if locked
            else "the lock records no code hash (made before the field)"
        )
        L += [f"Analysis code: locked `{str(locked)[:12]}`, now `{str(now)[:12]}` ({state}).", ""]
    return L
