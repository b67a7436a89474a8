"""Reading the extract ``.npz`` that ``attnrank extract`` writes: the format's owner.

:func:`read_queries_keys` reads and checks the arrays a bracket file needs from an
extract (``Q``, ``K``, ``scale``; ``mask`` and ``bias`` when stored), without pickle.
The command line builds the matrices from them (:mod:`analysis.cli.inputs`); the bracket
engine takes arrays and reads no file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from analysis.validation import ParameterError, read_npz

__all__ = ["NPY_INPUT", "NPZ_INPUT", "read_queries_keys"]

#: What a bracket file may be, for the error messages of its readers.
NPY_INPUT = "a .npy file of attention matrices (M, N) or (H, M, N) (numpy.save)"
NPZ_INPUT = "an `attnrank extract` .npz with arrays Q, K, scale (mask, bias optional)"


def read_queries_keys(
    path: str | os.PathLike[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``Q``, ``K``, ``scale``, ``mask``, ``bias`` of an extract ``.npz``, checked.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` written by ``attnrank extract``.

    Returns
    -------
    Q, K : array ``[layer, head, L, d]``
    scale : array ``[layer, head]``
    mask : array or None
        As stored (None when the file has none).
    bias : array ``[layer, head, L, L]`` or None
        The additive logit term at t = 1 (None when the file has none).

    Raises
    ------
    ParameterError
        Naming ``path``: not a readable ``.npz`` of these arrays (:func:`read_npz`), a
        non-numeric ``Q``, ``K`` or ``scale``, shapes that do not match, or a ``bias`` that
        is not numeric ``[layer, head, L, L]``.
    """
    path = Path(path)
    z = read_npz(path, required=("Q", "K", "scale"), optional=("mask", "bias"), allowed=NPZ_INPUT)
    Q, K, scale, mask, bias = z["Q"], z["K"], z["scale"], z.get("mask"), z.get("bias")
    if not all(np.issubdtype(x.dtype, np.number) for x in (Q, K, scale)):
        raise ParameterError(
            "path", "numeric Q, K, scale", f"{path.name}: {(Q.dtype, K.dtype, scale.dtype)}"
        )
    if Q.ndim != 4 or K.shape != Q.shape or scale.shape != Q.shape[:2]:
        raise ParameterError(
            "path",
            "Q, K [layer, head, L, d] and scale [layer, head]",
            (Q.shape, K.shape, scale.shape),
        )
    L = Q.shape[2]
    if bias is not None and (
        bias.shape != (*Q.shape[:2], L, L) or not np.issubdtype(bias.dtype, np.number)
    ):
        raise ParameterError(
            "path", "a numeric bias [layer, head, L, L]", f"{path.name}: bias {bias.shape}"
        )
    return Q, K, scale, mask, bias
