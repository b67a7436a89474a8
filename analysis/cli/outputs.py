"""Output paths, checked before a command does any work.

A command that writes a file checks each output path first (:func:`check_output_file`):
a folder, a path under a file, a folder that cannot be created or written, is a
:class:`~analysis.validation.ParameterError` naming the flag's parameter, raised before the
input is read or anything is computed. The check writes and removes a probe file in the
output's folder, so that it sees what the final write will see (a read-only mount, a
folder of another user, a full quota on some systems) rather than guess from permissions.
An existing output must be a regular file: the final write renames a new file over it, so
a symbolic link, a FIFO, a device or a socket at the path is refused (the rename would
replace the node itself rather than write through it).

When the final write fails anyway, ``bracket --out`` keeps its finished profiles, and
``approximants --out`` its finished tables, in a stash named by the run
(:func:`stash_path`) that the next run of the same input and settings, with any
``--out``, resumes from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from analysis.atomic import JsonlCheckpoint
from analysis.private_files import open_private, private_dir, replace_private
from analysis.validation import ParameterError

__all__ = ["check_output_file", "drop_stash", "stash_path", "take_stash", "write_failed"]


def check_output_file(name: str, path: str | os.PathLike | None) -> Path | None:
    """``path`` as a :class:`~pathlib.Path` once it is known to be writable as a file (None
    passes through); its missing parent folders are created.

    Raises
    ------
    ParameterError
        Naming ``name``: ``path`` is a folder, a symbolic link or another node that is not
        a regular file (a FIFO, a device, a socket), its folder cannot be created, or
        nothing can be written there.

    Examples
    --------
    >>> from analysis.cli.outputs import check_output_file
    >>> check_output_file("out", "results/out.json").as_posix()
    'results/out.json'
    >>> check_output_file("out", "results")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: out: expected a file path, not a folder, got 'results'
    """
    if path is None:
        return None
    path = Path(path)
    _check_node(name, path)
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(
            name, "a path whose folder exists or can be created", f"{parent}: {_why(exc)}"
        ) from exc
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".probe")
    except OSError as exc:
        raise ParameterError(
            name, "a path in a folder this process can write", f"{parent}: {_why(exc)}"
        ) from exc
    os.close(fd)
    Path(probe).unlink(missing_ok=True)
    return path


def _check_node(name: str, path: Path) -> None:
    """Refuse an existing ``path`` that is not a regular file (the rename would replace it)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # nothing there (or a path under a file: the folder check says so)
        return
    if stat.S_ISLNK(mode):
        raise ParameterError(
            name, "a regular file or a new path, not a symbolic link", f"{path} (a link)"
        )
    if stat.S_ISDIR(mode):
        raise ParameterError(name, "a file path, not a folder", str(path))
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode))
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a special file"
        )
        raise ParameterError(name, "a regular file or a new path", f"{path} ({kind})")


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def stash_path(kind: str, *identity: object) -> Path:
    """Where a command of ``kind`` keeps finished work of the run ``identity`` (its input's
    hash and settings) when its final write fails: a file in this user's private folder
    under the temporary folder (``attnrank-stash-UID``, mode 0700, see
    :mod:`analysis.private_files`), the same for every run of the same input and settings.

    Examples
    --------
    >>> from analysis.cli.outputs import stash_path
    >>> stash_path("bracket", "sha", 0.1) == stash_path("bracket", "sha", 0.1)
    True
    >>> stash_path("bracket", "sha", 0.1) == stash_path("bracket", "sha", 0.2)
    False
    """
    digest = hashlib.sha256(repr(identity).encode("utf-8")).hexdigest()[:24]
    getuid = getattr(os, "getuid", None)
    folder = "attnrank-stash" if getuid is None else f"attnrank-stash-{getuid()}"
    return Path(tempfile.gettempdir()) / folder / f"{kind}-{digest}.jsonl"


def _unsafe(stash: Path, exc: OSError) -> ParameterError:
    return ParameterError(
        "stash",
        "a private folder of this user (mode 0700) holding regular files (set TMPDIR to move it)",
        f"{exc.filename or stash}: {_why(exc)}",
    )


def take_stash(stash: Path, checkpoint: Path) -> bool:
    """Seed ``checkpoint`` (when nothing is there) from ``stash``; whether it did. The
    stash stays until the run's output is written (:func:`drop_stash`).

    The stash's folder must be private to this user and the stash a regular file of this
    user, opened without following a link; the checkpoint is created new (``O_EXCL``).

    Raises
    ------
    ParameterError
        Naming ``stash``: its folder is not this user's private folder, or the stash is a
        link or not this user's regular file (nothing is loaded).
    """
    try:
        private_dir(stash.parent)
    except OSError as exc:
        raise _unsafe(stash.parent, exc) from exc
    if os.path.lexists(checkpoint):
        return False
    try:
        src = open_private(stash)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _unsafe(stash, exc) from exc
    with src, open(checkpoint, "x") as dst:
        shutil.copyfileobj(src, dst)
    return True


def drop_stash(stash: Path) -> None:
    """Remove ``stash`` once the output it stood in for is written."""
    stash.unlink(missing_ok=True)


def write_failed(
    name: str, path: Path, exc: OSError, checkpoint: Path | JsonlCheckpoint, stash: Path
) -> ParameterError:
    """The error of a final write of ``path`` that failed with ``exc``, after the finished
    work of ``checkpoint`` (its file, what it spilled to ``stash`` and what it holds in
    memory) is written to ``stash`` (where a re-run with any output path finds it): to a
    new file in the private folder renamed into place, so a link at ``stash`` is replaced,
    never written through."""
    if not isinstance(checkpoint, JsonlCheckpoint):
        checkpoint = JsonlCheckpoint(checkpoint, spill=stash)
    kept = str(checkpoint.path)
    try:
        replace_private(stash, checkpoint.lines())
        kept = str(stash)
    except OSError:
        pass
    return ParameterError(
        name,
        f"a path that can be written (finished work kept in {kept}: a re-run picks it up)",
        f"{path}: {_why(exc)}",
    )
