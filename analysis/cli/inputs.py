"""The matrices of one bracket file (``attnrank bracket / verify / approximants FILE``).

The file formats are read where they are owned (an extract ``.npz``:
:func:`analysis.sources.files.read_queries_keys`; a ``.npy``: the attention matrices as
given), and the matrices handed to the bracket engine as arrays
(:class:`analysis.brackets.io.MatrixInput`), which reads no file. Errors name the
parameters of these functions (``path``, ``temperature``); the commands name their flags.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from analysis.attention import check_attention, softmax64
from analysis.brackets.io import MatrixInput, QueriesKeys
from analysis.hashing import file_sha256
from analysis.sources.files import NPY_INPUT, read_queries_keys
from analysis.validation import ParameterError, check_positive_finite, read_npy

__all__ = ["load_matrices", "load_queries_keys"]


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
        H = A.shape[0]
        return MatrixInput(A, [None] * H, [None] * H, sha, None, renormalize)
    if path.suffix == ".npz":
        t = 1.0 if temperature is None else check_positive_finite("temperature", temperature)
        Q, K, scale, mask, bias = read_queries_keys(path)
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
    Q, K, scale, mask, bias = read_queries_keys(path)
    H = Q.shape[0] * Q.shape[1]
    if mask is not None and bool(np.all(mask)):
        mask = None
    s = scale.reshape(H).astype(np.float64) / float(data.temperature)
    if bias is not None:
        bias = bias.reshape(H, *bias.shape[2:])
    return QueriesKeys(Q.reshape(H, *Q.shape[2:]), K.reshape(H, *K.shape[2:]), s, mask, bias)
