"""What the report says of the lock: first lock and first outcome, the code, and the
hypotheses an amendment after outcomes made exploratory.

Read from the study's provenance (``analysis.study.results.provenance``:
``first_locked_at``, ``first_outcome``, ``code_sha256_locked``, ``code_sha256_now``,
``exploratory_hypotheses``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lock_status_lines"]


def lock_status_lines(prov: Mapping[str, Any]) -> list[str]:
    """Markdown lines (each followed by a blank line) on the lock's status.

    Examples
    --------
    >>> from analysis.report.lock_status import lock_status_lines
    >>> prov = {"first_locked_at": "2026-12-03T12:34:16+00:00",
    ...         "first_outcome": {"time": "2026-12-06T00:02:25+00:00", "store": "s"},
    ...         "code_sha256_locked": "a" * 64, "code_sha256_now": "b" * 64,
    ...         "exploratory_hypotheses": {"H1": "amended after outcomes existed: sampling "
    ...                                          "(amendment 5, t)"}}
    >>> for line in lock_status_lines(prov)[::2]:
    ...     print(line)  # doctest: +ELLIPSIS
    **Reported as exploratory, not confirmatory: H1** (amended after outcomes existed: ...
    First locked at 2026-12-03T12:34:16+00:00; first outcome recorded at 2026-12-06T00:02:25+00:00 (store s).
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
    out = prov.get("first_outcome") or {}
    L += [
        f"First locked at {prov.get('first_locked_at')}; "
        + (
            f"first outcome recorded at {out.get('time')} (store {out.get('store')})."
            if out
            else "no outcome record found."
        ),
        "",
    ]
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
