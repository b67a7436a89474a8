"""Atomic file writes: a reader sees the old file or the complete new one, never a part.

Every array file the package writes goes through :func:`atomic_write`: the bytes go to a
temporary file in the destination's folder, are flushed and fsynced, and the temporary file
is renamed over the destination with :func:`os.replace` (atomic on POSIX and Windows within
one file system).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["atomic_write", "atomic_savez", "JsonlCheckpoint", "as_checkpoint"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _refuse_special(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise FileExistsError(
            errno.EEXIST, "not a regular file; it would not be replaced", str(path)
        )


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], *, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success rename it to ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched. An
    existing ``path`` that is a FIFO, a device or a socket is never replaced: that is a
    :class:`FileExistsError` before anything is written.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.atomic import atomic_write
    >>> with atomic_write("out.txt", mode="w") as fh:
    ...     _ = fh.write("done")
    >>> Path("out.txt").read_text()
    'done'
    >>> try:
    ...     with atomic_write("out.txt", mode="w") as fh:
    ...         _ = fh.write("half")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> Path("out.txt").read_text()  # the interrupted write left the file as it was
    'done'
    """
    path = Path(path)
    _refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_savez(
    path: str | os.PathLike[str], arrays: dict[str, np.ndarray], *, compressed: bool = True
) -> Path:
    """Write ``arrays`` to an ``.npz`` file atomically (see :func:`atomic_write`).

    Object arrays are refused so that the file always loads with ``allow_pickle=False``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.atomic import atomic_savez
    >>> path = atomic_savez("arrays.npz", {"A": np.eye(2)})
    >>> with np.load(path, allow_pickle=False) as f:
    ...     f["A"].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    for name, value in arrays.items():
        if np.asarray(value).dtype == object:
            raise TypeError(f"array {name!r} has dtype object; it would need pickle to load")
    saver: Callable[..., None] = np.savez_compressed if compressed else np.savez
    with atomic_write(path) as fh:
        saver(fh, **arrays)
    return Path(path)


class JsonlCheckpoint:
    """An append-only JSON-lines checkpoint of finished records, each with a ``"key"``.

    Long runs write one line per finished unit of work and fsync it, so a crash loses at
    most the unit in progress; a re-run reads what is there and skips it. Used by the
    bracket runner and ``attnrank laws``.

    A write that fails (a full disk) does not stop the run: ``say`` gets one line, that
    record and every later one are kept in memory (:attr:`unsaved`) and written on each
    later append, and when the checkpoint is closed, to ``spill`` (a file in a private
    folder, see :mod:`analysis.private_files`) when one is given, else to the checkpoint
    again. :meth:`read` reads the checkpoint and ``spill`` together, so a re-run resumes
    from both.

    Examples
    --------
    >>> from analysis.atomic import JsonlCheckpoint
    >>> ckpt = JsonlCheckpoint("done.jsonl")
    >>> with ckpt.appender() as append:
    ...     append({"key": "a", "value": 1})
    ...     append({"key": "b", "value": 2})
    >>> with open("done.jsonl", "a") as f:  # a crash cut the next line short
    ...     _ = f.write('{"key": "c", "va')
    >>> {k: rec["value"] for k, rec in ckpt.read().items()}
    {'a': 1, 'b': 2}
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        spill: str | os.PathLike[str] | None = None,
        say: Callable[[str], None] | None = None,
    ):
        self.path = Path(path)
        self.spill = None if spill is None else Path(spill)
        self.say = say if say is not None else (lambda msg: print(msg, file=sys.stderr))
        self.unsaved: list[str] = []  # lines that no write has kept yet

    def lines(self) -> list[str]:
        """Every line kept so far, each ending in a newline: the checkpoint's, the spill's
        and the unsaved ones (a torn line stays its own line, which :meth:`read` skips). A
        spill that is a link or not a regular file of this user is not read."""
        out: list[str] = []
        for path, private in ((self.path, False), (self.spill, True)):
            if path is None or (not private and not path.is_file()):
                continue
            try:
                fh = _open_private(path) if private else open(path)
            except FileNotFoundError:
                continue
            except OSError:
                if not private:
                    raise
                continue  # a spill that is a link or not this user's: never loaded
            with fh:
                out.extend(line if line.endswith("\n") else line + "\n" for line in fh)
        return out + self.unsaved

    def read(self, decode: Callable[[dict[str, Any]], Any] = lambda rec: rec) -> dict[str, Any]:
        """Finished records by key, each passed through ``decode``.

        A line that does not parse or decode (one cut short by a crash) is skipped: that
        unit is simply redone.
        """
        done: dict[str, Any] = {}
        if not self.path.is_file() and self.spill is None and not self.unsaved:
            return done
        for line in self.lines():
            try:
                rec = json.loads(line)
                done[rec["key"]] = decode(rec)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
        return done

    @contextlib.contextmanager
    def appender(self) -> Iterator[Callable[[dict[str, Any]], None]]:
        """A function that appends one record as a line and fsyncs it.

        When the file ends in a torn line, a newline is written first, so the torn line
        cannot swallow the next record. A write that fails keeps the record (see the class).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = False
        if self.path.is_file() and self.path.stat().st_size:
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        failed: list[OSError] = []  # once a write fails, later lines skip the file

        def fail(exc: OSError) -> None:
            failed.append(exc)
            where = f"to {self.spill}" if self.spill else "again"
            self.say(
                f"note: cannot write the checkpoint {self.path} ({_why(exc)}): finished "
                f"work is kept in memory and written {where} as soon as it can be; a re-run "
                "resumes from what was written"
            )

        sink: IO[str] | None = None
        try:
            sink = open(self.path, "a")
            if torn:
                sink.write("\n")
        except OSError as exc:
            fail(exc)

        def append(rec: dict[str, Any]) -> None:
            line = json.dumps(rec) + "\n"
            if not failed and sink is not None:
                try:
                    _write_synced(sink, line)
                    return
                except OSError as exc:
                    fail(exc)
            self.unsaved.append(line)
            self._flush_unsaved()

        try:
            yield append
        finally:
            if sink is not None:
                with contextlib.suppress(OSError):  # a buffer a full disk refused
                    sink.close()
            if self.unsaved:
                self._flush_unsaved()
            if self.unsaved:
                self.say(
                    f"note: {len(self.unsaved)} finished records could not be written to "
                    f"{self.path}{' or ' + str(self.spill) if self.spill else ''}"
                )

    def _flush_unsaved(self) -> None:
        """Write the unsaved lines to the spill (else the checkpoint, after a newline that
        ends a torn line); they stay unsaved if that fails too."""
        try:
            if self.spill is not None:
                _append_private(self.spill, self.unsaved)
            else:
                with open(self.path, "a") as fh:
                    _write_synced(fh, "\n" + "".join(self.unsaved))
        except OSError:
            return
        self.unsaved = []


def as_checkpoint(
    checkpoint: str | os.PathLike[str] | JsonlCheckpoint | None,
) -> JsonlCheckpoint | None:
    """``checkpoint`` as a :class:`JsonlCheckpoint` (a path is wrapped; None stays None).

    Examples
    --------
    >>> from analysis.atomic import as_checkpoint
    >>> as_checkpoint("ck.jsonl").path.name, as_checkpoint(None)
    ('ck.jsonl', None)
    """
    if checkpoint is None or isinstance(checkpoint, JsonlCheckpoint):
        return checkpoint
    return JsonlCheckpoint(checkpoint)


def _write_synced(fh: IO[str], text: str) -> None:
    fh.write(text)
    fh.flush()
    os.fsync(fh.fileno())


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _open_private(path: Path) -> IO[str]:
    from analysis.private_files import open_private

    return open_private(path)


def _append_private(path: Path, lines: list[str]) -> None:
    from analysis.private_files import append_private

    append_private(path, lines)
