"""The matrices of one bracket file (``attnrank bracket / verify / approximants FILE``),
and the size rule of every command that reads one (``--max-size``, also ``describe``).

The file formats are read where they are owned (an extract ``.npz``:
:func:`analysis.sources.files.read_extract`; a ``.npy``: the attention matrices as
given), and the matrices handed to the bracket engine as arrays
(:class:`analysis.brackets.io.MatrixInput`), which reads no file. Errors name the
parameters of these functions (``path``, ``temperature``); the commands name their flags.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from analysis.attention import check_attention, softmax64
from analysis.brackets.io import MatrixInput, QueriesKeys
from analysis.hashing import file_sha256
from analysis.sources.files import NPY_INPUT, QUERIES_KEYS, read_extract
from analysis.validation import ParameterError, check_positive_finite, read_npy

__all__ = ["check_size", "input_shape", "load_matrices", "load_queries_keys"]

#: The most rows or keys ``attnrank bracket`` takes unless ``--max-size`` says more.
MAX_SIZE = 4096
#: Seconds of one CPU thread per matrix at 128 x 128, default effort: 24 MiniLM heads in
#: 101 s one at a time (``benchmarks/bench_brackets_sample.py --batch``); the search scales
#: about as ``M N min(M, N)`` (products with the matrix at every rank it tries).
_SECONDS_128 = 4.2
#: Bytes the search holds per matrix entry beside the float64 stack (witness candidates,
#: optimizer state, float32 copies); a rough allowance, not a measurement.
_WORK_BYTES = 64
#: Seconds of one CPU thread per (matrix, temperature) at 128 x 128 for every descriptor
#: block: 0.2-5 s wall (median) on MiniLM, SmolLM2 and MPNet heads on a shared 2-core
#: machine (``benchmarks/bench_descriptors.py``, docs/results/descriptors.md); a rough
#: scale, rounded up.
_DESCRIBE_SECONDS_128 = 2.0
#: Bytes the descriptor blocks hold per matrix entry (a few N x N float64 work arrays of
#: the factor-radius solve and the SVDs); a rough allowance, not a measurement.
_DESCRIBE_WORK_BYTES = 128


def add_max_size_argument(p: argparse.ArgumentParser, default_note: str = "") -> None:
    """Add ``--max-size N`` (default :data:`MAX_SIZE`; ``default_note`` follows it)."""
    p.add_argument(
        "--max-size",
        type=int,
        default=MAX_SIZE,
        metavar="N",
        help=f"refuse matrices of more than N rows or keys before reading them (default "
        f"{MAX_SIZE}{default_note}); the refusal, and any run over a minute or a gigabyte, "
        "prints a rough estimate of time and memory first",
    )


def _no_single_column(shape: tuple[int, ...], name: str) -> None:
    """A matrix with one key has every row equal to [1]: nothing to search, and the lower
    search's clustering of columns has nothing to cluster."""
    if shape[-1] < 2:
        raise ParameterError(
            "path",
            "matrices of at least 2 columns (keys): with one key every row is [1], so "
            "r_eps = 1 for eps < 1 and 0 for eps >= 1",
            f"{name}: shape {tuple(shape)}",
        )


def load_matrices(
    path: str | os.PathLike, *, temperature: float | None = None, renormalize: bool = False
) -> MatrixInput:
    """Load the matrices a bracket file certifies.

    ``.npy``: an array ``(M, N)`` or ``(H, M, N)``, used as given (``temperature`` must be
    None). ``.npz`` (as written by ``attnrank extract``): ``A = softmax64(Q, K, scale, mask,
    t, bias)`` for every layer and head (``bias`` when the extract has one), index
    ``layer * H + head``; ``temperature`` defaults to 1.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file: {path}")
    sha = file_sha256(path)
    if path.suffix == ".npy":
        if temperature is not None:
            raise ParameterError("temperature", "no temperature with a .npy input", temperature)
        A = check_attention(read_npy(path, allowed=NPY_INPUT), renormalize=renormalize, name="path")
        _no_single_column(A.shape, path.name)
        H = A.shape[0]
        return MatrixInput(A, [None] * H, [None] * H, sha, None, renormalize)
    if path.suffix == ".npz":
        t = 1.0 if temperature is None else check_positive_finite("temperature", temperature)
        Q, K, scale, mask, bias = _read_extract(path)
        A = softmax64(Q, K, scale, mask, t, bias)
        nl, nh = A.shape[:2]
        A = check_attention(A.reshape(nl * nh, *A.shape[2:]), renormalize=renormalize, name="path")
        layers = [i // nh for i in range(nl * nh)]
        heads = [i % nh for i in range(nl * nh)]
        return MatrixInput(A, layers, heads, sha, t, renormalize)
    raise ParameterError("path", "a .npy or .npz file", path.name)


def load_queries_keys(path: str | os.PathLike, data: MatrixInput) -> QueriesKeys | None:
    """The :class:`~analysis.brackets.io.QueriesKeys` of an extract ``.npz`` (read and
    checked as :func:`load_matrices` does); None for a ``.npy`` input."""
    path = Path(path)
    if path.suffix != ".npz":
        return None
    Q, K, scale, mask, bias = _read_extract(path)
    H = Q.shape[0] * Q.shape[1]
    if mask is not None and bool(np.all(mask)):
        mask = None
    s = scale.reshape(H).astype(np.float64) / float(data.temperature)
    if bias is not None:
        bias = bias.reshape(H, *bias.shape[2:])
    return QueriesKeys(Q.reshape(H, *Q.shape[2:]), K.reshape(H, *K.shape[2:]), s, mask, bias)


def _read_extract(path: Path) -> tuple:
    """``Q``, ``K``, ``scale``, ``mask``, ``bias`` of an extract (:func:`read_extract`, every
    check), with at least 2 keys."""
    z = read_extract(path, required=QUERIES_KEYS, optional=("mask", "bias"))
    _no_single_column(z["K"].shape[:-1], path.name)
    return z["Q"], z["K"], z["scale"], z.get("mask"), z.get("bias")


def input_shape(path: str | os.PathLike) -> tuple[int, int, int] | None:
    """``(H, M, N)`` of the matrices a bracket file holds, from the array headers alone
    (nothing is loaded); None when the file cannot say (:func:`load_matrices` then names
    what is wrong with it).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.cli.inputs import input_shape
    >>> np.save("three.npy", np.full((3, 4, 4), 0.25))
    >>> input_shape("three.npy")
    (3, 4, 4)
    """
    import zipfile

    path = Path(path)

    def header(f) -> tuple[int, ...]:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
            version, np.lib.format.read_array_header_2_0
        )
        return tuple(int(n) for n in read(f)[0])

    try:
        if path.suffix == ".npy":
            with open(path, "rb") as f:
                shape = header(f)
            return (1, *shape) if len(shape) == 2 else shape if len(shape) == 3 else None
        if path.suffix == ".npz":
            with zipfile.ZipFile(path) as z, z.open("Q.npy") as f:
                shape = header(f)
            return (shape[0] * shape[1], shape[2], shape[2]) if len(shape) == 4 else None
    except Exception:  # noqa: BLE001 - a damaged file (zlib, zip, header): load_matrices names it
        return None
    return None


def estimate(
    shape: tuple[int, int, int], workers: int = 1, *, work: str = "bracket", temperatures: int = 1
) -> tuple[float, float]:
    r"""Rough ``(seconds, bytes)`` of ``work`` on ``H`` matrices ``M x N`` on ``workers``
    processes: a scale from 128 x 128, for an order of magnitude.

    Parameters
    ----------
    shape : tuple of int
        ``(H, M, N)``, as :func:`input_shape` reads it.
    workers : int, default 1
        Processes sharing the matrices.
    work : {"bracket", "describe"}, keyword-only
        The bracket search at the default effort (``attnrank bracket``), or every
        descriptor block at each of ``temperatures`` (``attnrank describe``).
    temperatures : int, keyword-only
        Temperatures each matrix is described at (``describe`` only).

    Notes
    -----
    The bracket search scales about as :math:`M N \min(M, N)` per matrix (products with
    the matrix at every rank it tries); the descriptor blocks as :math:`N^3` per matrix
    and temperature (the factor-radius solve takes an eigendecomposition of an
    :math:`N \times N` matrix per iteration). Memory is the float64 stack plus a work
    allowance per entry for each matrix in progress.

    Examples
    --------
    >>> from analysis.cli.inputs import estimate
    >>> seconds, size = estimate((24, 128, 128))
    >>> round(seconds), size < 2**30
    (101, True)
    >>> seconds, size = estimate((1, 5000, 5000), work="describe")
    >>> seconds > 3600, size > 1e9
    (True, True)
    """
    H, M, N = shape
    workers = max(1, workers)
    if work == "bracket":
        seconds = H * _SECONDS_128 * (M * N * min(M, N)) / 128**3 / workers
        size = H * M * N * 8 + workers * M * N * _WORK_BYTES
    elif work == "describe":
        cells = H * max(1, temperatures)
        seconds = cells * _DESCRIBE_SECONDS_128 * (M * N * min(M, N)) / 128**3 / workers
        size = H * M * N * 8 + workers * M * N * _DESCRIBE_WORK_BYTES
    else:
        raise ParameterError("work", "'bracket' or 'describe'", work)
    return seconds, float(size)


def describe_estimate(
    shape: tuple[int, int, int], workers: int = 1, *, work: str = "bracket", temperatures: int = 1
) -> str:
    """:func:`estimate` in words: memory in MB below 0.1 GB, time in minutes below an hour.

    Examples
    --------
    >>> from analysis.cli.inputs import describe_estimate
    >>> describe_estimate((72, 128, 128), work="describe", temperatures=3)  # doctest: +ELLIPSIS
    '72 matrices 128 x 128: about 12 MB and 7 min of descriptors at 3 temperatures on 1 worker...'
    """
    seconds, size = estimate(shape, workers, work=work, temperatures=temperatures)
    H, M, N = shape
    what = (
        "of search at the default effort"
        if work == "bracket"
        else f"of descriptors at {temperatures} temperature{'s' * (temperatures != 1)}"
    )
    memory = f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.0f} MB"
    duration = f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"
    return (
        f"{H} matri{'x' if H == 1 else 'ces'} {M} x {N}: about {memory} and {duration} {what} "
        f"on {workers} worker{'s' * (workers != 1)} (a rough scale from 128 x 128)"
    )


def check_size(
    path: str | os.PathLike,
    max_size: int,
    workers: int = 1,
    *,
    work: str = "bracket",
    temperatures: int = 1,
) -> str | None:
    """Refuse an input file whose matrices have more than ``max_size`` rows or keys (from
    its headers, before it is read); return an estimate line for a run long or large
    enough to mention (over a minute or a gigabyte), else None.

    The one size rule of the commands that read a matrix file (``bracket``: ``work``
    ``"bracket"``; ``describe``: ``"describe"`` at ``temperatures`` temperatures); the
    estimate is :func:`estimate`'s.

    Raises
    ------
    ParameterError
        Naming ``max_size``: not an integer >= 1, or matrices larger than it.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.cli.inputs import check_size
    >>> np.save("small.npy", np.full((2, 4, 4), 0.25))
    >>> check_size("small.npy", 4096) is None  # small and quick: nothing to say
    True
    >>> check_size("small.npy", 3, work="describe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: max_size: expected matrices of at most 3 rows and keys...
    """
    from analysis.validation import check_int

    max_size = check_int("max_size", max_size, minimum=1)
    shape = input_shape(path)
    if shape is None:
        return None
    words = describe_estimate(shape, workers, work=work, temperatures=temperatures)
    if max(shape[1:]) > max_size:
        raise ParameterError(
            "max_size",
            f"matrices of at most {max_size} rows and keys; raise it to run on {words}",
            f"{shape[1]} x {shape[2]}",
        )
    seconds, size = estimate(shape, workers, work=work, temperatures=temperatures)
    if seconds > 60 or size > 1e9:
        return f"note: estimate for {words}"
    return None
