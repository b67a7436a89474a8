"""The arrays of one stored matrix: what a store's array file holds, and reading it.

A store's array file (``arrays/<k[:2]>/<k>.npz``) holds ``A`` (t = 1), ``Q``, ``K``,
``scale``, ``mask`` and, for a head whose model adds one, ``bias``. A store reads it with
its recorded SHA-256 (:func:`analysis.store.integrity.check_array_file`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from analysis.store.integrity import check_array_file
from analysis.validation import ParameterError, read_npz

__all__ = ["ARRAY_KEYS", "OPTIONAL_ARRAY_KEYS", "MatrixArrays", "load_arrays", "record_arrays"]


@dataclasses.dataclass(frozen=True)
class MatrixArrays:
    """Arrays of one matrix record.

    Attributes
    ----------
    A : ndarray ``[query, key]``
        Attention at t = 1 as stored (the model's own for checkpoints).
    Q, K : ndarray ``[L, d]``
    scale : float
    mask : ndarray bool ``[query, key]`` (True = allowed)
    bias : ndarray ``[query, key]`` or None
        The model's additive logit term beside ``scale Q K^T`` (MPNet's relative-position
        bias), None for heads without one.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import Store
    >>> with Store("arrays", create=True) as st:
    ...     arr = st.arrays(st.add_synthetic(identity(4)), verify=True)
    >>> arr.A.tolist() == np.eye(4).tolist(), arr.scale
    (True, 1000.0)
    >>> bool(np.abs(arr.at(1e6) - 0.25).max() < 1e-3)  # softmax(1000 I / t): hot, uniform
    True
    """

    A: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    scale: float
    mask: np.ndarray
    bias: np.ndarray | None = None

    def at(self, temperature: float = 1.0) -> np.ndarray:
        """``softmax64(Q, K, scale, mask, temperature, bias)``: the certified matrix, float64."""
        from analysis.attention import softmax64

        return softmax64(self.Q, self.K, self.scale, self.mask, temperature, self.bias)


def record_arrays(rec: dict[str, Any], L: int) -> dict[str, np.ndarray]:
    """The arrays of one :meth:`Store.add_matrices` record, checked, as its file holds them."""
    A = np.asarray(rec["A"])
    Q = np.asarray(rec["Q"])
    K = np.asarray(rec["K"])
    if A.ndim != 2 or A.shape[1] != L or Q.shape[0] != A.shape[0] or K.shape != (L, Q.shape[-1]):
        raise ParameterError(
            "arrays", f"A [M, {L}], Q [M, d], K [{L}, d]", (A.shape, Q.shape, K.shape)
        )
    mask = rec.get("mask")
    mask = np.ones(A.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != A.shape:
        raise ParameterError("mask", f"a bool array of shape {A.shape}", mask.shape)
    scale = np.asarray(float(rec["scale"]), dtype=np.float64)
    arrays = {"A": A, "Q": Q, "K": K, "scale": scale, "mask": mask}
    bias = rec.get("bias")
    if bias is not None:  # only then: a bias-free record's file is as before
        bias = np.asarray(bias)
        if bias.shape != A.shape or not np.isfinite(bias).all():
            raise ParameterError(
                "bias", f"a finite array of shape {A.shape}", f"{bias.dtype} {bias.shape}"
            )
        arrays["bias"] = bias
    return arrays


#: The arrays of a store's array file (``arrays/<k[:2]>/<k>.npz``).
ARRAY_KEYS = ("A", "Q", "K", "scale", "mask")
#: Arrays only some records have (a head whose model adds a logit bias).
OPTIONAL_ARRAY_KEYS = ("bias",)


def load_arrays(path: Path, sha256: str | None = None, *, key: str | None = None) -> MatrixArrays:
    """Read one matrix's ``.npz`` (``allow_pickle=False``), checking its hash when given.

    A store's reads pass the recorded ``sha256`` (:meth:`Store.arrays`, and the workers
    of ``store bracket``, which read the files themselves); ``key`` names the matrix in
    the error (default: the file's stem, which is the key in a store's layout).

    Raises
    ------
    FileNotFoundError
        ``"path: no such file: ..."`` (no ``sha256``).
    StoreIntegrityError
        Naming ``path``, the key and the file: missing, or another SHA-256 than ``sha256``.
    ParameterError
        Naming ``path``, with the file's name: not a readable ``.npz`` of
        :data:`ARRAY_KEYS` (damaged on disk).
    """
    path = Path(path)
    allowed = f"a store array file: an .npz with arrays {', '.join(ARRAY_KEYS)}"
    if sha256 is not None:
        check_array_file(path, sha256, key=key or path.stem, file=path.name)
    z = read_npz(path, required=ARRAY_KEYS, optional=OPTIONAL_ARRAY_KEYS, allowed=allowed)
    if z["scale"].size != 1 or not np.issubdtype(z["scale"].dtype, np.number):
        raise ParameterError(
            "path", allowed, f"{path.name}: scale {z['scale'].dtype} {z['scale'].shape}"
        )
    bias = z.get("bias")
    if bias is not None and bias.shape != z["A"].shape:
        raise ParameterError("path", allowed, f"{path.name}: bias {bias.shape}, A {z['A'].shape}")
    return MatrixArrays(z["A"], z["Q"], z["K"], float(z["scale"]), z["mask"].astype(bool), bias)
