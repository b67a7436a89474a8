"""Files in a folder only this user can use, opened without following symbolic links.

The stash of a run (``analysis.cli.outputs``) lives under the shared temporary folder, whose
names anyone can guess. So its folder is made mode 0700 and checked before use (a real
folder, not a link; owned by this user; no access for group or others), and each file in it
is opened with ``O_NOFOLLOW`` and checked to be a regular file of this user; a new file is
written to a fresh temporary name (``O_EXCL``) and renamed into place, which replaces a link
rather than writing through it. Where the system has no owners or no ``O_NOFOLLOW``
(Windows), those checks are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

__all__ = ["private_dir", "open_private", "append_private", "replace_private"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _uid() -> int | None:
    getuid = getattr(os, "getuid", None)
    return None if getuid is None else getuid()


def _refuse(path: Path, problem: str) -> PermissionError:
    return PermissionError(errno.EACCES, f"not private to this user: {problem}", str(path))


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder only this user can use: created mode 0700 when missing; one that
    exists must be a real folder (not a link), owned by this user, closed to group and others.

    Raises
    ------
    PermissionError
        When the folder that is there fails a check (nothing in it is used).

    Examples
    --------
    >>> import os, stat
    >>> from analysis.private_files import private_dir
    >>> oct(stat.S_IMODE(os.stat(private_dir("mine")).st_mode))
    '0o700'
    >>> os.chmod("mine", 0o755)
    >>> private_dir("mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    PermissionError: [Errno 13] not private to this user: mode 0o755, open to group or others: 'mine'
    """
    path = Path(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    uid = _uid()
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "not a folder (a link or a file)")
    if uid is not None and st.st_uid != uid:
        raise _refuse(path, f"owned by uid {st.st_uid}, not {uid}")
    if uid is not None and st.st_mode & 0o077:
        raise _refuse(path, f"mode {oct(stat.S_IMODE(st.st_mode))}, open to group or others")
    return path


def open_private(path: str | os.PathLike[str]) -> IO[str]:
    """``path`` opened for reading without following a link; it must be a regular file of
    this user (a link is an ``OSError``, ELOOP)."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        uid = _uid()
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(Path(path), "not a regular file")
        if uid is not None and st.st_uid != uid:
            raise _refuse(Path(path), f"owned by uid {st.st_uid}, not {uid}")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "r")


def replace_private(path: str | os.PathLike[str], lines: Iterable[str]) -> Path:
    """Write ``lines`` to a new file (``O_EXCL``, mode 0600) beside ``path``, fsync it and
    rename it to ``path``: what was at ``path`` (a link included) is replaced, never written
    through. The folder is checked with :func:`private_dir` first.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.private_files import open_private, private_dir, replace_private
    >>> _ = private_dir("vault")
    >>> Path("elsewhere.txt").write_text("precious")
    8
    >>> Path("vault/kept.jsonl").symlink_to(Path("elsewhere.txt").resolve())
    >>> _ = replace_private("vault/kept.jsonl", ["a\\n", "b\\n"])
    >>> Path("elsewhere.txt").read_text(), Path("vault/kept.jsonl").is_symlink()
    ('precious', False)
    >>> with open_private("vault/kept.jsonl") as fh:
    ...     fh.read()
    'a\\nb\\n'
    """
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def append_private(path: str | os.PathLike[str], lines: Iterable[str]) -> Path:
    """Append ``lines`` to ``path`` (created mode 0600) in a folder checked with
    :func:`private_dir`, opened without following a link, and fsync it.

    Examples
    --------
    >>> from analysis.private_files import append_private, open_private
    >>> _ = append_private("box/log.jsonl", ["a\\n"])
    >>> _ = append_private("box/log.jsonl", ["b\\n"])
    >>> with open_private("box/log.jsonl") as fh:
    ...     fh.read()
    'a\\nb\\n'
    """
    path = Path(path)
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o600)
    with os.fdopen(fd, "a") as fh:
        st = os.fstat(fh.fileno())
        uid = _uid()
        if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid):
            raise _refuse(path, "not a regular file of this user")
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())
    return path
