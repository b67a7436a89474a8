"""Parameter validation shared by every stage.

All user-facing checks live here so that every error message has the same shape:
the parameter's name, what is allowed, and what came in. That includes array files:
:func:`read_npy` and :func:`read_npz` are the one way the package opens a ``.npy`` /
``.npz`` that a user (or a store) hands it, and they turn every way such a file can be
wrong (text, a pickle, empty, truncated, corrupt, an object array, a zip that is no
``.npz``, missing arrays) into a :class:`ParameterError` naming the file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class ParameterError(ValueError):
    """A user-supplied parameter is invalid; the message names it.

    Examples
    --------
    >>> from analysis.validation import ParameterError
    >>> err = ParameterError("eps", "a finite number > 0", -1)
    >>> str(err)
    'eps: expected a finite number > 0, got -1'
    >>> (err.name, isinstance(err, ValueError))
    ('eps', True)
    """

    def __init__(self, name: str, allowed: str, got: Any):
        self.name = name
        self.allowed = allowed
        self.got = got
        super().__init__(f"{name}: expected {allowed}, got {_short(got)}")

    def __reduce__(self) -> tuple[type, tuple[str, str, Any]]:
        # Errors raised in worker processes come back pickled; the default reduce would
        # call __init__ with the message alone.
        return (type(self), (self.name, self.allowed, self.got))


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_positive_finite(name: str, value: Any) -> float:
    """Return ``value`` as a float, requiring it finite and > 0.

    Examples
    --------
    >>> from analysis.validation import check_positive_finite
    >>> check_positive_finite("beta", "2.5")
    2.5
    >>> check_positive_finite("beta", float("inf"))
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: beta: expected a finite number > 0, got inf
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, "a finite number > 0", value) from None
    if not math.isfinite(x) or x <= 0:
        raise ParameterError(name, "a finite number > 0", value)
    return x


def check_eps_grid(values: Iterable[Any], name: str = "eps") -> tuple[float, ...]:
    """Validate an eps grid: a non-empty sequence of finite numbers > 0 (order kept).

    Examples
    --------
    >>> from analysis.validation import check_eps_grid
    >>> check_eps_grid([0.2, 0.05])  # order kept
    (0.2, 0.05)
    >>> check_eps_grid(0.1)
    (0.1,)
    """
    vals = list(values) if not isinstance(values, (int, float)) else [values]
    if not vals:
        raise ParameterError(name, "at least one value", vals)
    return tuple(check_positive_finite(name, v) for v in vals)


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``; otherwise a ParameterError naming ``name``.

    Examples
    --------
    >>> from analysis.validation import check_choice
    >>> check_choice("arrays", "lists", ("lists", "float32-base64"))
    'lists'
    >>> check_choice("arrays", "csv", ("lists", "float32-base64"))
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: arrays: expected one of lists, float32-base64, got 'csv'
    """
    if value not in allowed:
        raise ParameterError(name, "one of " + ", ".join(map(str, allowed)), value)
    return value


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int: a Python or numpy integer (not a bool), ``>= minimum``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.validation import check_int
    >>> check_int("n", np.int64(4), minimum=1)
    4
    >>> check_int("n", True)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: n: expected an integer, got True
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(name, "an integer", value)
    if minimum is not None and value < minimum:
        raise ParameterError(name, f"an integer >= {minimum}", value)
    return int(value)


def check_device(value: Any, name: str = "device") -> Any:
    """A torch device that exists on this machine (``None`` stays None: the CPU).

    Accepts a ``torch.device`` or its name (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).
    A device type torch does not know, or a GPU this machine does not have, is an error
    naming ``name``, never a silent fall-back to the CPU.

    Examples
    --------
    >>> from analysis.validation import check_device
    >>> check_device(None) is None, check_device("cpu")
    (True, device(type='cpu'))
    """
    if value is None:
        return None
    import torch  # only here: validation is imported by stages that need no torch

    allowed = "'cpu', or 'cuda' / 'cuda:<index>' / 'mps' where that device is available"
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError):
        raise ParameterError(name, allowed, value) from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ParameterError(name, allowed, f"{value!s} (this machine has no CUDA device)")
        if dev.index is not None and dev.index >= n:
            raise ParameterError(name, allowed, f"{value!s} (this machine has {n} CUDA devices)")
        return dev
    if dev.type == "mps" and torch.backends.mps.is_available():
        return dev
    raise ParameterError(name, allowed, value)


def check_random_state(value: Any, name: str = "random_state") -> np.random.Generator:
    """Turn ``None``, an int seed or a Generator into a ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.validation import check_random_state
    >>> a = check_random_state(0).integers(100, size=3)
    >>> b = check_random_state(0).integers(100, size=3)
    >>> bool((a == b).all()), isinstance(check_random_state(None), np.random.Generator)
    (True, True)
    """
    if value is None or isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return np.random.default_rng(value)
    if isinstance(value, np.random.Generator):
        return value
    raise ParameterError(name, "None, an int seed or a numpy.random.Generator", value)


# -- array files --------------------------------------------------------------------------

#: The effort levels, least to most, that a design, the CLI and every engine version name
#: (the one definition: ``analysis.brackets.settings`` keys its settings by them, and a
#: design's ``effort`` is checked against them).
EFFORTS: tuple[str, ...] = ("fast", "default", "thorough")

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive
_PICKLED = "an object array (loading it would run pickle)"


def _existing(path: str | os.PathLike[str], name: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{name}: no such file: {p}")
    return p


def _sniff(path: Path, name: str, allowed: str) -> str:
    """``"npy"``, ``"zip"``, or what else the file holds, from its first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(32)
    except OSError as exc:
        raise ParameterError(name, allowed, f"{path.name}: cannot be read ({exc})") from exc
    if head.startswith(_NPY_MAGIC):
        return "npy"
    if head.startswith(_ZIP_MAGICS):
        return "zip"
    if not head:
        return "an empty file"
    if head[:1] == b"\x80":  # pickle protocol 2 and later open with PROTO
        return "a Python pickle (never loaded)"
    text = head.decode("utf-8", "replace")[:-1]  # the last character may be cut short
    if "\ufffd" not in text and all(c.isprintable() or c in "\t\r\n" for c in text):
        return f"text ({text[:16]!r}...)"
    return f"binary data ({head[:8]!r}...)"


def _damage(exc: BaseException) -> str:
    """What a failed ``numpy.load`` says about the file, in a few words."""
    kind = type(exc).__name__
    if kind == "error":  # zlib.error, struct.error: the module says what failed
        kind = f"{type(exc).__module__}.error"
    return f"truncated or corrupt ({kind}: {exc})"


def _check_header(fh: Any, p: Path, what: str, name: str, allowed: str) -> None:
    """Refuse a ``.npy`` stream whose header is unreadable or whose dtype needs pickle.

    Only the header is read, so that an object array is refused before ``numpy.load``
    gets to it, whatever numpy's own message would be.
    """
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            dtype = np.lib.format.read_array_header_1_0(fh)[2]
        else:
            dtype = np.lib.format.read_array_header_2_0(fh)[2]
    except Exception as exc:
        raise ParameterError(name, allowed, f"{p.name}{what}: {_damage(exc)}") from exc
    if dtype.hasobject:
        raise ParameterError(name, allowed, f"{p.name}{what}: {_PICKLED}")


_OTHER_KIND = {
    "npy": "a zip archive (.npz?), not a .npy file",
    "zip": "a single .npy array, not a .npz archive",
}


def _numpy_file(path: str | os.PathLike[str], want: str, name: str, allowed: str) -> Path:
    """``path`` when it exists and is a NumPy file of kind ``want`` ("npy" or "zip")."""
    p = _existing(path, name)
    kind = _sniff(p, name, allowed)
    if kind != want:
        other = _OTHER_KIND[want] if kind in _OTHER_KIND else f"not a NumPy file: {kind}"
        raise ParameterError(name, allowed, f"{p.name}: {other}")
    return p


def read_npy(
    path: str | os.PathLike[str],
    *,
    name: str = "path",
    allowed: str = "a .npy file of a numeric array (numpy.save)",
) -> np.ndarray:
    """The array of a ``.npy`` file, loaded with ``allow_pickle=False``.

    Parameters
    ----------
    path : path-like
    name : str
        The caller's parameter for the file: errors name it.
    allowed : str
        What the caller accepts, for the error message.

    Raises
    ------
    FileNotFoundError
        ``"NAME: no such file: PATH"``.
    ParameterError
        Naming ``name``, with the file's name and what is wrong with it, for anything
        that is not a readable ``.npy`` of a plain (non-object) array.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.validation import read_npy
    >>> np.save("eye.npy", np.eye(2))
    >>> read_npy("eye.npy").tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> np.save("objects.npy", np.array([{}], dtype=object), allow_pickle=True)
    >>> read_npy("objects.npy", name="input")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: input: expected a .npy file ..., got 'objects.npy: an object array ...'
    """
    p = _numpy_file(path, "npy", name, allowed)
    with open(p, "rb") as fh:
        _check_header(fh, p, "", name, allowed)
    try:
        return np.load(p, allow_pickle=False)
    except Exception as exc:  # every failure to parse means the same to the caller
        raise ParameterError(name, allowed, f"{p.name}: {_damage(exc)}") from exc


def read_npz(
    path: str | os.PathLike[str],
    *,
    required: Sequence[str],
    optional: Sequence[str] = (),
    name: str = "path",
    allowed: str = "a .npz file of numeric arrays (numpy.savez)",
) -> dict[str, np.ndarray]:
    """The ``required`` arrays of a ``.npz`` file and those of ``optional`` it has.

    Loaded with ``allow_pickle=False``. Every member's header is checked (an object
    array anywhere refuses the file), and every returned array is read here, decompressed
    and its CRC checked, so that a damaged member fails now, naming the file.

    Parameters
    ----------
    path : path-like
    required, optional : sequences of str
        Array names; a missing required one is an error.
    name : str
        The caller's parameter for the file: errors name it.
    allowed : str
        What the caller accepts, for the error message.

    Raises
    ------
    FileNotFoundError
        ``"NAME: no such file: PATH"``.
    ParameterError
        Naming ``name``, with the file's name and what is wrong with it: not a zip
        archive, truncated or corrupt, a required array missing, a member that is not a
        ``.npy`` array, an object array.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.validation import read_npz
    >>> np.savez("ab.npz", a=np.zeros(2), b=np.ones(3))
    >>> sorted(read_npz("ab.npz", required=["a"], optional=["b", "c"]))
    ['a', 'b']
    >>> read_npz("ab.npz", required=["c"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: path: expected a .npz file ..., got 'ab.npz: no array c (has a, b)'
    """
    p = _numpy_file(path, "zip", name, allowed)
    try:
        archive = np.load(p, allow_pickle=False)
    except Exception as exc:
        raise ParameterError(name, allowed, f"{p.name}: {_damage(exc)}") from exc
    with archive:
        # Every member's header, not only the arrays asked for: a file that would need
        # pickle anywhere is refused, whichever arrays the caller reads.
        for member in archive.zip.namelist():
            if member.endswith(".npy"):
                try:
                    with archive.zip.open(member) as fh:
                        _check_header(fh, p, f": {member[:-4]}", name, allowed)
                except ParameterError:
                    raise
                except Exception as exc:  # a damaged zip entry
                    got = f"{p.name}: {member[:-4]}: {_damage(exc)}"
                    raise ParameterError(name, allowed, got) from exc
        files = list(archive.files)
        missing = [k for k in required if k not in files]
        if missing:
            has = ", ".join(files) or "nothing"
            got = f"{p.name}: no array {', '.join(missing)} (has {has})"
            raise ParameterError(name, allowed, got)
        out: dict[str, np.ndarray] = {}
        for key in [*required, *(k for k in optional if k in files)]:
            try:
                value = archive[key]
            except Exception as exc:
                raise ParameterError(name, allowed, f"{p.name}: {key}: {_damage(exc)}") from exc
            if not isinstance(value, np.ndarray):  # a member without the .npy header
                raise ParameterError(name, allowed, f"{p.name}: {key}: not a .npy array")
            out[key] = value
    return out
