"""The extract ``.npz`` that ``attnrank extract`` writes: the format's owner and its one reader.

:func:`save_extraction` writes an :class:`Extraction`; :func:`read_extract` reads the file
and checks every array it reads, each failure a ``ParameterError`` naming ``path``, the
file and the array. :func:`load_extraction`, the bracket commands
(:mod:`analysis.cli.inputs`) and ``attnrank describe`` read through it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.atomic import atomic_savez
from analysis.validation import ParameterError, read_npz

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NPY_INPUT",
    "NPZ_KEYS",
    "QUERIES_KEYS",
    "Extraction",
    "load_extraction",
    "read_extract",
    "save_extraction",
]

#: What a bracket file may be, for the error messages of its readers.
NPY_INPUT = "a .npy file of attention matrices (M, N) or (H, M, N) (numpy.save)"
#: Every array of the layout; ``bias`` is stored only for models that add one.
NPZ_KEYS = ("A", "Q", "K", "scale", "mask", "causal", "tokens", "meta")
#: The arrays every reader needs: the rest of the layout rebuilds from them.
QUERIES_KEYS = ("Q", "K", "scale")


@dataclasses.dataclass(frozen=True)
class Extraction:
    """Per-head attention of one input through one checkpoint.

    Attributes
    ----------
    A : ndarray, float32, ``[layer, head, query, key]``
        The model's eager attention probabilities (t = 1).
    Q, K : ndarray, float32, ``[layer, head, L, d]``
        Queries and keys per query head, after rotary embedding, keys repeated under
        grouped-query attention.
    scale : ndarray, float64, ``[layer, head]``
        The model's logit scale.
    mask : ndarray, bool, ``[query, key]``
        True where a query may attend to a key.
    causal : bool
    tokens : ndarray of str, ``[L]``
    meta : dict
        JSON-able provenance (checkpoint, revision / weights hash, input id, length, library
        versions, parity of ``softmax64(Q, K, scale, mask, bias=bias)`` with ``A``).
    bias : ndarray, float32, ``[layer, head, query, key]``, or None
        An additive logit term that is not of the ``Q K^T`` form, exactly as the model adds
        it (MPNet's relative-position bias); None for models without one.

    Notes
    -----
    ``A[l, h] == softmax(scale[l, h] * Q[l, h] K[l, h]^T + bias[l, h] + log mask)``
    row-wise (no bias term when ``bias`` is None), up to the float32 arithmetic of the
    model (checked at extraction; ``meta["parity_max_abs"]``).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import extract
    >>> x = extract("minilm", corpus_seed=0, length=8)
    >>> x.A.shape, x.Q.shape, x.scale.shape  # [layer, head, L, L], [layer, head, L, d]
    ((6, 12, 8, 8), (6, 12, 8, 32), (6, 12))
    >>> x.head_id(0, 3), x.input_id
    ('sentence-transformers/all-MiniLM-L6-v2:0:3', 'corpus:pydoc_data.topics/numbers')
    >>> bool(np.allclose(x.A.sum(axis=-1), 1.0, atol=1e-5)), x.meta["parity_max_abs"] < 1e-5
    (True, True)
    """

    A: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    scale: np.ndarray
    mask: np.ndarray
    causal: bool
    tokens: np.ndarray
    meta: dict[str, Any]
    bias: np.ndarray | None = None

    @property
    def checkpoint_id(self) -> str:
        return str(self.meta["checkpoint"])

    @property
    def input_id(self) -> str:
        return str(self.meta["input_id"])

    @property
    def length(self) -> int:
        return int(self.A.shape[-1])

    def head_id(self, layer: int, head: int) -> str:
        """``"<checkpoint>:<layer>:<head>"``."""
        return f"{self.checkpoint_id}:{layer}:{head}"

    def summary(self) -> str:
        """One line: checkpoint, input, heads, length, mask and parity.

        Examples
        --------
        >>> from analysis.sources import extract
        >>> print(extract("minilm", corpus_seed=0, length=8).summary())  # doctest: +ELLIPSIS
        sentence-transformers/all-MiniLM-L6-v2 on corpus:pydoc_data.topics/numbers: 6 layers x 12 heads, L = 8, not causal, no bias, parity ...
        """
        n_layer, n_head = self.A.shape[:2]
        parity = self.meta.get("parity_max_abs")
        return (
            f"{self.checkpoint_id} on {self.input_id}: {n_layer} layers x {n_head} heads, "
            f"L = {self.length}, {'causal' if self.causal else 'not causal'}, "
            f"{'no bias' if self.bias is None else 'with a logit bias'}, parity "
            + ("not recorded" if parity is None else f"{float(parity):.1e}")
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per head: ``layer``, ``head``, ``head_id``, ``scale``.

        Examples
        --------
        >>> from analysis.sources import extract
        >>> extract("minilm", corpus_seed=0, length=8).to_frame().head(2)
           layer  head                                   head_id     scale
        0      0     0  sentence-transformers/all-MiniLM-L6-v2:0:0  0.176777
        1      0     1  sentence-transformers/all-MiniLM-L6-v2:0:1  0.176777
        """
        import pandas as pd

        n_layer, n_head = self.A.shape[:2]
        layer, head = np.divmod(np.arange(n_layer * n_head), n_head)
        return pd.DataFrame(
            {
                "layer": layer,
                "head": head,
                "head_id": [
                    self.head_id(int(li), int(hi)) for li, hi in zip(layer, head, strict=True)
                ],
                "scale": np.asarray(self.scale, dtype=np.float64).reshape(-1),
            }
        )


def save_extraction(extraction: Extraction, path: str | os.PathLike[str]) -> Path:
    """Write the ``.npz`` layout (docs/guide/conventions.md, "Extraction") atomically; it loads
    with ``allow_pickle=False``.

    Keys: ``A`` [layer, head, L, L] float32, ``Q``/``K`` [layer, head, L, d] float32,
    ``scale`` [layer, head] float64, ``mask`` bool [L, L], ``causal`` 0-d bool, ``tokens``
    str [L], ``meta`` 0-d str (JSON), and ``bias`` [layer, head, L, L] float32 only when
    the model adds one (a file without it is read as bias None).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import extract, load_extraction, save_extraction
    >>> x = extract("minilm", corpus_seed=0, length=8)
    >>> path = save_extraction(x, "minilm.npz")
    >>> y = load_extraction(path)
    >>> bool(np.array_equal(y.A, x.A) and np.array_equal(y.Q, x.Q)), y.meta == x.meta
    (True, True)
    """
    arrays = {
        "A": extraction.A,
        "Q": extraction.Q,
        "K": extraction.K,
        "scale": extraction.scale,
        "mask": extraction.mask.astype(bool),
        "causal": np.asarray(bool(extraction.causal)),
        "tokens": np.asarray(extraction.tokens, dtype=str),
        "meta": np.asarray(json.dumps(extraction.meta, sort_keys=True, default=str)),
    }
    if extraction.bias is not None:
        arrays["bias"] = np.asarray(extraction.bias, dtype=np.float32)
    return atomic_savez(path, arrays, compressed=True)


def read_extract(
    path: str | os.PathLike[str],
    *,
    required: Sequence[str] = NPZ_KEYS,
    optional: Sequence[str] = ("bias",),
) -> dict[str, Any]:
    """The ``required`` arrays of an extract ``.npz`` and those of ``optional`` it has, checked.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` written by :func:`save_extraction` (``attnrank extract``).
    required, optional : sequences of str, keyword-only
        Names of :data:`NPZ_KEYS` and ``bias``; ``required`` holds :data:`QUERIES_KEYS`.

    Returns
    -------
    dict
        The arrays as stored (no dtype changed), ``meta`` parsed from its JSON.

    Raises
    ------
    FileNotFoundError
        ``"path: no such file: ..."``.
    ParameterError
        Naming ``path``, with the file's name and the array at fault: not a readable
        ``.npz`` (:func:`~analysis.validation.read_npz`), a required array missing, ``Q`` or
        ``K`` not numeric, finite, non-empty ``[layer, head, L, d]`` of one shape; ``scale``
        not numeric ``[layer, head]``, finite and > 0; ``mask`` not bool ``[L, L]`` with a key
        in every row; ``A`` or ``bias`` not finite float ``[layer, head, L, L]``; ``causal``
        not a bool; ``tokens`` not ``L`` strings; ``meta`` not a JSON object.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.files import read_extract
    >>> Q = np.ones((1, 2, 3, 4))
    >>> np.savez("qk.npz", Q=Q, K=Q, scale=np.full((1, 2), 0.5))
    >>> sorted(read_extract("qk.npz", required=("Q", "K", "scale"), optional=("mask",)))
    ['K', 'Q', 'scale']
    >>> np.savez("nan.npz", Q=Q * np.nan, K=Q, scale=np.full((1, 2), 0.5))
    >>> read_extract("nan.npz", required=("Q", "K", "scale"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: path: expected ...: Q finite, got 'nan.npz: Q has NaN or inf'
    """
    path = Path(path)
    allowed = f"an `attnrank extract` .npz with arrays {', '.join(required)}" + (
        f" ({', '.join(optional)} optional)" if optional else ""
    )
    z: dict[str, Any] = read_npz(path, required=required, optional=optional, allowed=allowed)

    positive = " and > 0"

    def refuse(rule: str, got: str) -> ParameterError:
        return ParameterError("path", f"{allowed}: {rule}", f"{path.name}: {got}")

    def check(name: str, rule: str, shape: tuple[int, ...] | None, kind: Any) -> None:
        x = z[name]
        if (shape is not None and x.shape != shape) or not np.issubdtype(x.dtype, kind):
            raise refuse(f"{name} {rule}", f"{name} {x.dtype} {x.shape}")
        if kind in (np.number, np.floating) and not np.isfinite(x).all():
            raise refuse(f"{name} finite" + positive * (name == "scale"), f"{name} has NaN or inf")

    check("Q", "numeric [layer, head, L, d]", None, np.number)
    if z["Q"].ndim != 4 or min(z["Q"].shape) < 1:
        raise refuse("Q non-empty [layer, head, L, d]", f"Q {z['Q'].shape}")
    n_layer, n_head, L, _ = z["Q"].shape
    check("K", f"numeric of the shape of Q {z['Q'].shape}", z["Q"].shape, np.number)
    check("scale", f"numeric {(n_layer, n_head)}", (n_layer, n_head), np.number)
    if not (z["scale"] > 0).all():
        raise refuse("scale finite" + positive, f"scale {z['scale'].min()}")
    square = (n_layer, n_head, L, L)
    rules = {
        "A": ("float [layer, head, L, L]", square, np.floating),
        "bias": ("float [layer, head, L, L] (masked keys go in mask)", square, np.floating),
        "mask": ("bool [L, L]", (L, L), np.bool_),
        "causal": ("a bool", (), np.bool_),
        "tokens": ("L strings", (L,), np.str_),
    }
    for name, (rule, shape, kind) in rules.items():
        if name in z:
            check(name, rule, shape, kind)
    if "mask" in z and not z["mask"].any(axis=1).all():
        raise refuse("mask allowing every query row a key", "mask has a row with none")
    if "meta" in z:
        try:
            z["meta"] = json.loads(str(z["meta"]))
        except ValueError:
            z["meta"] = None
        if not isinstance(z["meta"], dict):
            raise refuse("meta a JSON object", "meta is not a JSON object")
    return z


def load_extraction(path: str | os.PathLike[str]) -> Extraction:
    """Read a whole ``extract`` ``.npz`` (:func:`read_extract`, every check).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import load_extraction
    >>> np.savez("other.npz", A=np.eye(2))
    >>> load_extraction("other.npz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: path: expected an `attnrank extract` .npz ..., got 'other.npz: no array Q, K, ...'
    """
    z = read_extract(path)
    z["causal"] = bool(z["causal"])
    return Extraction(**{k: z[k] for k in NPZ_KEYS}, bias=z.get("bias"))
