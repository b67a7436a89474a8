"""SHA-256 of files (ground floor: imports no stage).

The one file hash of the package: extract inputs of ``attnrank bracket`` (``input_sha256``),
store array files, packaged checkpoint parts and the power stage's inputs all go through
:func:`file_sha256`.
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256"]

_BLOCK = 1 << 22  # bytes read at a time: a large weight file is never held in memory


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes, read in blocks.

    Parameters
    ----------
    path : str or path-like
        A readable file.

    Returns
    -------
    str
        64 lowercase hex digits, as ``hashlib.sha256(data).hexdigest()`` of the whole file.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
        As :func:`open` raises them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d) / "x.bin"
    ...     _ = p.write_bytes(b"abc")
    ...     file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()
