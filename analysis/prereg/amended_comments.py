"""Amendment comments a copied design carries from its source, and their removal.

A shipped design records its amendments beside the values they changed, e.g.
``lengths = [32, 64]    # amended 2026-12-03 (see offline-minilm.deviations.md): was
[64, 128]``. A design copied from it to start another study carries those comments,
which describe another study's history. :func:`strip_amendment_comments` removes them:
a comment that starts with ``amended`` goes whole, an ``(amended ...)`` aside inside a
comment goes alone; keys, values and strings are never touched. ``attnrank prereg draw``
applies it, since a design is drawn before its first lock, when it has no amendments of
its own.
"""

from __future__ import annotations

import re

__all__ = ["strip_amendment_comments"]

_WHOLE = re.compile(r"^#\s*amended\b", re.IGNORECASE)
_ASIDE = re.compile(r"\s*\(amended\b[^)]*\)", re.IGNORECASE)


def _comment_start(line: str) -> int | None:
    """Index of the ``#`` that starts the line's comment (outside any string), or None."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote is None:
            if c == "#":
                return i
            if c in "\"'":
                quote = c
        elif c == "\\" and quote == '"':
            i += 1  # an escaped character in a basic string
        elif c == quote:
            quote = None
        i += 1
    return None


def strip_amendment_comments(text: str) -> tuple[str, int]:
    """``text`` without its amendment comments, and how many lines changed.

    Parameters
    ----------
    text : str
        A design file's text (TOML).

    Returns
    -------
    (str, int)
        The text, every line's end kept, and the number of lines changed. A line that was
        only an amendment comment is removed.

    Examples
    --------
    >>> from analysis.prereg.amended_comments import strip_amendment_comments
    >>> text = (
    ...     "lengths = [32, 64]    # amended 2026-12-03: was [64, 128]\\n"
    ...     "lengths = [66, 146]   # 2 + P: a distillation token (amended 2026-12-03)\\n"
    ...     '# amended 2026-12-05: per_length was 1\\n'
    ...     'statement = "kept # amended"  # a note\\n'
    ... )
    >>> out, n = strip_amendment_comments(text)
    >>> print(out, end=""); n
    lengths = [32, 64]
    lengths = [66, 146]   # 2 + P: a distillation token
    statement = "kept # amended"  # a note
    3
    """
    out = []
    changed = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body) :]
        at = _comment_start(body)
        if at is None:
            out.append(line)
            continue
        code, comment = body[:at], body[at:]
        if _WHOLE.match(comment):
            new = code.rstrip()
        else:
            new = code + _ASIDE.sub("", comment)
        if new == body:
            out.append(line)
            continue
        changed += 1
        if new.strip():
            out.append(new + end)
    return "".join(out), changed
