"""The SHA-256 of the analysis code a lock records (``code_sha256``).

The lock records a hash of the code that turns the design into outcomes, features and
comparisons (:data:`CODE_PATHS`); ``attnrank prereg check`` and ``attnrank run`` warn,
without refusing, when the code now differs (:func:`code_drift`). What the hash covers,
how files enter it (independent of the checkout's place and of line endings) and why a
drift warns rather than refuses: docs/prereg.md, section "The code, the first lock time,
and outcomes wherever they are stored".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["CODE_PATHS", "code_drift", "code_files", "code_sha256"]

#: What ``code_sha256`` covers, relative to the package's parent folder: the matrices
#: (sources, attention), the outcomes (bracket engine, the store's bracket runs, the
#: study's extract/bracket stage and its plan), the features (descriptor blocks, the
#: describe stage) and the comparisons (compare, the compare stage).
CODE_PATHS: tuple[str, ...] = (
    "analysis/attention.py",
    "analysis/sources",
    "analysis/brackets",
    "analysis/store/engine.py",
    "analysis/store/run.py",
    "analysis/store/compute.py",
    "analysis/study/plan.py",
    "analysis/study/stages.py",
    "analysis/descriptors",
    "analysis/study/describe.py",
    "analysis/compare",
    "analysis/study/comparison.py",
)

_SKIP_SUFFIXES = (".pyc", ".pyo")


def _package_parent() -> Path:
    return Path(__file__).resolve().parents[2]


def _files(base: Path) -> Iterator[tuple[str, Path]]:
    for entry in CODE_PATHS:
        p = base / entry
        if p.is_file():
            yield entry, p
        elif p.is_dir():
            for f in p.rglob("*"):
                rel = f.relative_to(base)
                if (
                    f.is_file()
                    and "__pycache__" not in rel.parts
                    and f.suffix not in _SKIP_SUFFIXES
                ):
                    yield rel.as_posix(), f


def code_files(base: str | Path | None = None) -> list[tuple[str, str]]:
    """The files ``code_sha256`` covers, sorted, each with its own SHA-256.

    Parameters
    ----------
    base : str or Path, optional
        The folder holding ``analysis/`` (default: this package's parent folder).

    Returns
    -------
    list of (str, str)
        ``(path relative to base with /, sha256 of its bytes with CRLF -> LF)``.

    Examples
    --------
    >>> from analysis.prereg.code_hash import code_files
    >>> files = dict(code_files())
    >>> "analysis/brackets/engine.py" in files, "analysis/report/markdown.py" in files
    (True, False)
    """
    base = _package_parent() if base is None else Path(base)
    out = {}
    for rel, f in _files(base):
        out[rel] = hashlib.sha256(f.read_bytes().replace(b"\r\n", b"\n")).hexdigest()
    return sorted(out.items())


def code_sha256(base: str | Path | None = None) -> str:
    """SHA-256 over the analysis code of :data:`CODE_PATHS` (see the module's rules).

    Parameters
    ----------
    base : str or Path, optional
        The folder holding ``analysis/`` (default: this package's parent folder).

    Returns
    -------
    str
        64 hex digits.

    Notes
    -----
    With files :math:`f_1, \\dots, f_n` sorted by relative path :math:`p_i` and their
    bytes :math:`b_i` (CRLF replaced by LF), the hash is
    :math:`\\mathrm{SHA256}(p_1 \\,0\\, |b_1| \\,0\\, b_1 \\cdots p_n \\,0\\, |b_n| \\,0\\, b_n)`
    (a zero byte between the fields, lengths in decimal), so that no two file sets give
    the same stream.

    Examples
    --------
    A copy of the covered files elsewhere, with Windows line endings, hashes the same:

    >>> from pathlib import Path
    >>> import analysis
    >>> from analysis.prereg.code_hash import code_files, code_sha256
    >>> here, copy = Path(analysis.__file__).resolve().parents[1], Path("copy")
    >>> for rel, _ in code_files():
    ...     target = copy / rel
    ...     target.parent.mkdir(parents=True, exist_ok=True)
    ...     _ = target.write_bytes((here / rel).read_bytes().replace(b"\\n", b"\\r\\n"))
    >>> code_sha256(copy) == code_sha256()
    True
    >>> edited = copy / "analysis/compare/nested.py"
    >>> _ = edited.write_text(edited.read_text() + "# an edit\\n")
    >>> code_sha256(copy) == code_sha256()
    False
    """
    base = _package_parent() if base is None else Path(base)
    h = hashlib.sha256()
    for rel, f in sorted(_files(base)):
        data = f.read_bytes().replace(b"\r\n", b"\n")
        h.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def code_drift(
    record: Mapping[str, Any], current: str | None = None, *, design_path: Any = None
) -> str | None:
    """The warning when the code differs from the one a lock recorded (None when equal).

    Parameters
    ----------
    record : mapping
        The lock record.
    current : str, optional
        The code hash now (default: :func:`code_sha256`).
    design_path : path, optional, keyword-only
        The design, as the command to run should name it (default: the lock's ``design``).

    Returns
    -------
    str or None
        Naming both hashes; for a lock without ``code_sha256`` (made before the field),
        a note saying that the code it ran under is not known.

    Examples
    --------
    >>> from analysis.prereg.code_hash import code_drift
    >>> code_drift({"code_sha256": "a" * 64}, "a" * 64) is None
    True
    >>> print(code_drift({"design": "d.toml", "code_sha256": "a" * 64}, "b" * 64))
    ... # doctest: +NORMALIZE_WHITESPACE
    d.toml: the analysis code differs from the locked code (code_sha256 locked aaaaaaaaaaaa...,
    now bbbbbbbbbbbb...): outcomes, features or comparisons may be computed by other code
    than the lock froze. Not a refusal (the engine version and each block's version, which
    decide outcomes and features, are checked separately); re-record the hash with
    `attnrank prereg amend d.toml --code --reason "..."` once the change is reviewed.
    """
    current = code_sha256() if current is None else current
    locked = record.get("code_sha256")
    name = record.get("design", "design")
    if locked == current:
        return None
    how = f'`attnrank prereg amend {design_path or name} --code --reason "..."`'
    if not locked:
        return (
            f"{name}: the lock records no code_sha256 (made before the field): the code "
            f"its outcomes were computed with is not known (now {current[:12]}...); "
            f"record it with {how}."
        )
    return (
        f"{name}: the analysis code differs from the locked code (code_sha256 locked "
        f"{locked[:12]}..., now {current[:12]}...): outcomes, features or comparisons may be "
        "computed by other code than the lock froze. Not a refusal (the engine version and "
        "each block's version, which decide outcomes and features, are checked "
        f"separately); re-record the hash with {how} once the change is reviewed."
    )
