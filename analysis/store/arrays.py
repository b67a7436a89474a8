"""The arrays of one stored matrix: what a store's array file holds, and reading it.

A store's array file (``arrays/<k[:2]>/<k>.npz``) holds ``A`` (t = 1), ``Q``, ``K``,
``scale``, ``mask`` and, for a head whose model adds one, ``bias``. A store reads it with
its recorded SHA-256 (:func:`analysis.store.integrity.check_array_file`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from analysis.store.integrity import (
    StoreIntegrityError,
    array_state,
    check_array_file,
    resolve_array_file,
    same_arrays,
)
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


def _real_finite(name: str, value: Any) -> np.ndarray:
    """``value`` as an array, refused (naming ``name``) unless its entries are finite real
    numbers (integer or floating, not bool, complex or text)."""
    x = np.asarray(value)
    real = x.dtype != np.bool_ and (
        np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
    )
    if not real:
        raise ParameterError(name, "an array of real numbers (integer or float)", str(x.dtype))
    if not np.isfinite(x).all():
        raise ParameterError(name, "finite entries (no NaN or inf)", "NaN or inf")
    return x


def record_arrays(rec: dict[str, Any], L: int) -> dict[str, np.ndarray]:
    """The arrays of one :meth:`Store.add_matrices` record, checked, as its file holds them.

    ``A``, ``Q``, ``K`` must hold finite real numbers and ``scale`` be one finite real
    number, each refused by a :class:`ParameterError` naming it (before anything is
    written): a matrix that could not be bracketed is never stored.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.store.arrays import record_arrays
    >>> rec = {"A": np.full((2, 2), 0.5), "Q": np.ones((2, 1)), "K": np.ones((2, 1))}
    >>> sorted(record_arrays({**rec, "scale": 0.5}, 2))
    ['A', 'K', 'Q', 'mask', 'scale']
    >>> record_arrays({**rec, "Q": np.full((2, 1), np.nan), "scale": 0.5}, 2)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: Q: expected finite entries (no NaN or inf), got 'NaN or inf'
    >>> record_arrays({**rec, "scale": "x"}, 2)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: scale: expected one finite real number, got "'x' (<U1 ())"
    """
    A = _real_finite("A", rec["A"])
    Q = _real_finite("Q", rec["Q"])
    K = _real_finite("K", rec["K"])
    if A.ndim != 2 or A.shape[1] != L or Q.shape[0] != A.shape[0] or K.shape != (L, Q.shape[-1]):
        raise ParameterError(
            "arrays", f"A [M, {L}], Q [M, d], K [{L}, d]", (A.shape, Q.shape, K.shape)
        )
    mask = rec.get("mask")
    mask = np.ones(A.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != A.shape:
        raise ParameterError("mask", f"a bool array of shape {A.shape}", mask.shape)
    raw = np.asarray(rec["scale"])
    try:
        scale = _real_finite("scale", raw)
        if scale.size != 1:
            raise ValueError
    except (ParameterError, ValueError):
        got = f"{rec['scale']!r} ({raw.dtype} {raw.shape})"
        raise ParameterError("scale", "one finite real number", got[-110:]) from None
    scale = np.asarray(float(scale.reshape(())), dtype=np.float64)
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
    for name in ("A", "Q", "K", "scale"):  # as an add checks them (an older store's file)
        try:
            _real_finite(name, z[name])
        except ParameterError as exc:
            raise ParameterError("path", allowed, f"{path.name}: {name}: {exc.got}") from None
    bias = z.get("bias")
    if bias is not None and bias.shape != z["A"].shape:
        raise ParameterError("path", allowed, f"{path.name}: bias {bias.shape}, A {z['A'].shape}")
    return MatrixArrays(z["A"], z["Q"], z["K"], float(z["scale"]), z["mask"].astype(bool), bias)


def writable_array_path(path: Path, root: Path, key: str) -> Path:
    """``path``, the array file a store add is about to write for matrix ``key``, refused
    (a :class:`ParameterError` naming ``path`` and the file) when something other than a
    regular file sits there (a directory, a FIFO): an add never replaces it.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.store.arrays import writable_array_path
    >>> Path("st/arrays/ab/ab12.npz").mkdir(parents=True)
    >>> writable_array_path(Path("st/arrays/ab/ab12.npz"), Path("st"), "ab12")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: path: expected nothing or a regular file at the array path of matrix ab12 (move it away), got 'arrays/ab/ab12.npz: a directory'
    """
    if (path.exists() or path.is_symlink()) and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise ParameterError(
            "path",
            f"nothing or a regular file at the array path of matrix {key} (move it away)",
            f"{path.relative_to(root).as_posix()}: {kind}",
        )
    return path


def existing_action(
    root: Path, old: Any, arrays: dict[str, np.ndarray], replace: str | None
) -> str:
    """What adding ``arrays`` for the stored record ``old`` (a :class:`MatrixRecord` of the
    store at ``root``) does: ``"same"``, ``"repair:missing"`` / ``"repair:damaged"`` /
    ``"repair:outside"``, or ``"replace"`` (refused without a reason)."""
    try:
        path = resolve_array_file(root, old.array_file, old.key)
    except StoreIntegrityError:
        return "repair:outside"
    state = array_state(path, old.array_sha256)
    if state != "ok":
        return f"repair:{state}"
    stored = load_arrays(path)
    held = {"A": stored.A, "Q": stored.Q, "K": stored.K, "mask": stored.mask}
    held["scale"] = np.asarray(stored.scale, dtype=np.float64)
    if stored.bias is not None:
        held["bias"] = stored.bias
    if same_arrays(held, arrays):
        return "same"
    if replace is None:
        raise ParameterError(
            "replace",
            f"a reason to replace the arrays of matrix {old.key} ({old.head_id}, input "
            f"{old.input_id}): the store holds other arrays for this key",
            None,
        )
    return "replace"


def extraction_records(
    extraction: Any, source: str, heads: Iterable[tuple[int, int]] | None
) -> Iterator[dict[str, Any]]:
    """The :meth:`Store.add_matrices` records of an extraction's (layer, head) matrices,
    ``heads`` of them (None = every head), in ``[layer, head]`` order; ``heads`` is checked
    at once, the records are made lazily."""
    meta = {**extraction.meta, "tokens": [str(t) for t in extraction.tokens]}
    bias = getattr(extraction, "bias", None)
    common = {
        "source": source,
        "checkpoint": extraction.checkpoint_id,
        "input_id": extraction.input_id,
        "length": extraction.length,
        "mask": extraction.mask,
    }
    n_layers, n_heads = extraction.A.shape[:2]
    chosen = None if heads is None else {(int(a), int(b)) for a, b in heads}
    if chosen is not None:
        outside = sorted(p for p in chosen if not (0 <= p[0] < n_layers and 0 <= p[1] < n_heads))
        if outside:
            raise ParameterError(
                "heads", f"(layer, head) pairs within {n_layers} x {n_heads}", outside[:3]
            )
    return (
        {
            **common,
            "layer": layer,
            "head": head,
            "A": extraction.A[layer, head],
            "Q": extraction.Q[layer, head],
            "K": extraction.K[layer, head],
            "scale": float(extraction.scale[layer, head]),
            "bias": None if bias is None else bias[layer, head],
            "meta": meta,
        }
        for layer in range(n_layers)
        for head in range(n_heads)
        if chosen is None or (layer, head) in chosen
    )


def synthetic_record(matrix: Any, head: int, input_id: str | None) -> dict[str, Any]:
    """The :meth:`Store.add_matrices` record of a synthetic matrix (source ``"synthetic"``,
    layer 0, ``head`` a replicate index; ``input_id`` defaults to ``"seed:<seed>"``)."""
    seed = matrix.params.get("seed")
    return {
        "source": "synthetic",
        "checkpoint": matrix.checkpoint_id,
        "layer": 0,
        "head": head,
        "input_id": input_id or (f"seed:{seed}" if seed is not None else "fixed"),
        "length": matrix.length,
        "A": matrix.A,
        "Q": matrix.Q,
        "K": matrix.K,
        "scale": matrix.scale,
        "meta": {"family": matrix.family, "params": matrix.params, "known": matrix.known_rank},
    }
