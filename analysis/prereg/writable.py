"""The design's folder must be writable: the lock, the deviations log, the held-out draw
and the outcome record are written beside the design.

:func:`writes_beside` checks it before a command writes anything there (a probe file,
removed at once) and turns a write that fails there anyway into one line naming the
folder, instead of a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from analysis.validation import ParameterError

__all__ = ["writes_beside"]

_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def _refuse(name: str, folder: Path, why: str) -> ParameterError:
    return ParameterError(
        name,
        "a design in a folder this user can write (its lock, deviations log and outcome "
        "record are written beside it)",
        f"{folder}: {why}",
    )


@contextlib.contextmanager
def writes_beside(
    design_path: str | os.PathLike, *, name: str = "FILE", probe: bool = True
) -> Iterator[None]:
    """Check that the design's folder is writable, then run the body; a write refused
    there (permission, read-only file system) becomes a ParameterError naming the folder.

    Parameters
    ----------
    design_path : path
        The design file (a missing one is left to the command, which names it).
    name : str, default "FILE", keyword-only
        The parameter the error names (the command's positional).
    probe : bool, default True, keyword-only
        Check before the body (for a command that always writes there); without it only
        a refused write in the body is turned into the one line.

    Raises
    ------
    ParameterError
        Naming ``name`` and the folder.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.prereg.writable import writes_beside
    >>> _ = Path("w.toml").write_text("", encoding="utf-8")
    >>> with writes_beside("w.toml"):
    ...     _ = Path("w.toml.lock").write_text("{}", encoding="utf-8")
    >>> with writes_beside("w.toml"):  # doctest: +ELLIPSIS
    ...     raise PermissionError(13, "Permission denied", str(Path("w.toml.lock").resolve()))
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: FILE: expected a design in a folder this user can write (...), got '...: Permission denied'
    """
    path = Path(design_path)
    folder = path.resolve().parent
    if probe and path.is_file():
        try:
            fd, probe = tempfile.mkstemp(prefix=".attnrank-probe-", dir=folder)
        except OSError as exc:
            raise _refuse(name, folder, exc.strerror or str(exc)) from None
        os.close(fd)
        os.unlink(probe)
    try:
        yield
    except OSError as exc:
        where = Path(exc.filename).resolve().parent if exc.filename else None
        if exc.errno not in _DENIED or where != folder:
            raise  # not a write beside the design: the caller's error
        raise _refuse(name, folder, exc.strerror or str(exc)) from None
