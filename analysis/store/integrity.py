"""What a store checks before it trusts an array file, and how a damaged one is repaired.

Every read of a matrix's arrays (:meth:`analysis.store.Store.arrays`, and the workers of
``store bracket`` and of a study's descriptor stage, which read the files themselves) goes
through :func:`check_array_file`: the file named by the index row must lie inside the
store, exist, and have the SHA-256 the row recorded when the matrix was added. The hash is
computed once per process per file; a later read whose file has the same size, mtime and
inode reuses it (a changed file is hashed again). A mismatch is a
:class:`StoreIntegrityError` naming the matrix key and the file, never a silent re-read.

``store add`` of a key whose file is missing or damaged rewrites the file from the new
extract and records the repair in the row's ``meta["repaired"]``; of a key whose intact
file holds other arrays it refuses, unless told to replace them with a reason
(``meta["replaced"]``), and then drops the profiles computed from the old arrays
(:meth:`analysis.store.Store.add_matrices`).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np

from analysis.hashing import file_sha256
from analysis.validation import ParameterError

__all__ = ["StoreIntegrityError", "array_state", "check_array_file", "same_arrays"]

#: path -> (size, mtime_ns, inode, sha256) of every array file hashed in this process.
_HASHED: dict[str, tuple[int, int, int, str]] = {}

_HINT = "`attnrank store add STORE FILE.npz` of its extract repairs it"


class StoreIntegrityError(ParameterError):
    """A store's array file is not what its index row records: missing, changed or damaged
    since it was added (another SHA-256), or outside the store.

    A :class:`~analysis.validation.ParameterError` naming ``path`` (the store), whose
    message says which matrix (``key``) and which ``file``.

    Examples
    --------
    >>> from analysis.store.integrity import StoreIntegrityError
    >>> err = StoreIntegrityError(
    ...     "path", "the array file of matrix ab12 as added", "gone", key="ab12", file="x.npz"
    ... )
    >>> err.key, err.file, isinstance(err, ValueError)
    ('ab12', 'x.npz', True)
    """

    #: :func:`analysis.cli.errors.rename` may name the command's flag for ``path``.
    renamable = True

    def __init__(self, name: str, allowed: str, got: Any, *, key: str = "", file: str = ""):
        super().__init__(name, allowed, got)
        self.key = key
        self.file = file

    def __reduce__(self) -> tuple:
        # errors raised in a worker come back pickled, with their key and file
        return (
            type(self),
            (self.name, self.allowed, self.got),
            {"key": self.key, "file": self.file},
        )


def resolve_array_file(root: str | os.PathLike, array_file: str, key: str) -> Path:
    """``root / array_file``, refused unless it lies inside the store ``root``: a relative
    path without ``..`` (checked on the text, so that a store may hold its arrays behind a
    symbolic link).

    Examples
    --------
    >>> from analysis.store.integrity import resolve_array_file
    >>> resolve_array_file("store", "arrays/ab/ab12.npz", "ab12").as_posix()
    'store/arrays/ab/ab12.npz'
    >>> resolve_array_file("store", "../outside.npz", "ab12")
    Traceback (most recent call last):
    ...
    analysis.store.integrity.StoreIntegrityError: path: expected the array file of matrix ab12 inside the store, got '../outside.npz: outside the store'
    """
    parts = PurePosixPath(array_file).parts
    bad = (
        not array_file
        or PurePosixPath(array_file).is_absolute()
        or PureWindowsPath(array_file).is_absolute()
        or PureWindowsPath(array_file).drive
        or ".." in parts
        or ".." in PureWindowsPath(array_file).parts
    )
    if bad:
        raise StoreIntegrityError(
            "path",
            f"the array file of matrix {key} inside the store",
            f"{array_file}: outside the store"[-110:],
            key=key,
            file=array_file,
        )
    return Path(root) / array_file


def _sha256(path: Path, *, force: bool = False) -> str:
    """The file's SHA-256, from this process's cache when its size, mtime and inode are
    those it had when hashed (``force``: hash it again)."""
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    name = os.fspath(path)
    hit = _HASHED.get(name)
    if hit is not None and hit[:3] == stamp and not force:
        return hit[3]
    digest = file_sha256(path)
    _HASHED[name] = (*stamp, digest)
    return digest


def check_array_file(
    path: str | os.PathLike, sha256: str, *, key: str, file: str, force: bool = False
) -> Path:
    """Check that the array file ``path`` of matrix ``key`` exists and has ``sha256``;
    return it.

    ``file`` is the path as the index records it (for the message). ``force`` hashes the
    file even when this process hashed it before unchanged.

    Raises
    ------
    StoreIntegrityError
        Naming ``path``, the key and the file: missing, or another SHA-256.
    """
    path = Path(path)
    want = f"the array file {file} of matrix {key} as added (SHA-256 {sha256[:16]}...; {_HINT})"
    if not path.is_file():
        raise StoreIntegrityError("path", want, f"{path.name}: missing", key=key, file=file)
    found = _sha256(path, force=force)
    if found != sha256:
        _HASHED.pop(os.fspath(path), None)  # a mismatch is never remembered as checked
        raise StoreIntegrityError(
            "path",
            want,
            f"{path.name}: SHA-256 {found[:16]}..., changed or damaged since added",
            key=key,
            file=file,
        )
    return path


def array_state(path: Path, sha256: str) -> str:
    """``"ok"``, ``"missing"`` or ``"damaged"`` (another SHA-256) for a store array file."""
    if not path.is_file():
        return "missing"
    return "ok" if _sha256(path, force=True) == sha256 else "damaged"


def same_arrays(stored: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> bool:
    """Whether two array sets (``A``, ``Q``, ``K``, ``scale``, ``mask``, maybe ``bias``) are
    the same: the same names, and per name the same dtype, shape and values.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.store.integrity import same_arrays
    >>> a = {"A": np.eye(2), "scale": np.asarray(1.0)}
    >>> same_arrays(a, {"A": np.eye(2), "scale": np.asarray(1.0)})
    True
    >>> same_arrays(a, {"A": 1.5 * np.eye(2), "scale": np.asarray(1.0)})
    False
    """
    if set(stored) != set(new):
        return False
    for name, x in stored.items():
        x, y = np.asarray(x), np.asarray(new[name])
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
            return False
    return True
