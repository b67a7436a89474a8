"""The ground floor: attention matrices from stored arrays, their checks, runtime helpers.

Every stage that touches an attention matrix (sources, store, descriptors, brackets) builds
it with :func:`softmax64` and validates it with :func:`check_attention`, so this module
imports no stage. :func:`fixed_torch_threads` and :func:`derive_seed` are the small runtime
helpers the stages share.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from analysis.validation import ParameterError, check_positive_finite

__all__ = ["ROW_SUM_TOL", "check_attention", "derive_seed", "fixed_torch_threads", "softmax64"]

ROW_SUM_TOL = 1e-4


def softmax64(
    Q: np.ndarray | torch.Tensor,
    K: np.ndarray | torch.Tensor,
    scale: float | np.ndarray,
    mask: np.ndarray | torch.Tensor | None = None,
    t: float = 1.0,
    bias: np.ndarray | torch.Tensor | None = None,
) -> np.ndarray:
    """Row softmax of ``(scale * Q K^T + bias) / t`` in float64 on the CPU.

    This is the single place where every certified matrix is built from stored arrays.

    Parameters
    ----------
    Q, K : array, shape ``[..., L, d]``
        Queries and keys, per query head (keys already repeated under grouped-query
        attention, rotary embedding already applied).
    scale : float or array broadcastable to ``Q.shape[:-2]``
        The model's own logit scale (e.g. ``1 / sqrt(d)``).
    mask : bool array ``[L_q, L_k]`` (or broadcastable), optional
        True where a query may attend to a key. Masked entries come out exactly 0.
    t : float
        Temperature; the whole logit (bias included) is divided by it.
    bias : array broadcastable to ``[..., L_q, L_k]``, optional
        An additive logit term that is not of the ``Q K^T`` form, as the model adds it
        (e.g. MPNet's relative-position bias, one ``[L, L]`` per head). Finite; never a
        mask (masked keys go in ``mask``).

    Returns
    -------
    numpy.ndarray, float64, shape ``[..., L_q, L_k]``

    Notes
    -----
    ``A_ij = exp(S_ij - max_l S_il) / sum_l exp(S_il - max_l S_il)`` over allowed l, with
    ``S = (scale * Q K^T + bias) / t`` (``S = scale * Q K^T / t`` without a bias, computed
    as ``(Q K^T) * (scale / t)``). A temperature divides the bias as well: it is part of
    the logit the model feeds to its softmax. Subtracting the row maximum keeps every
    exponent <= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.attention import softmax64
    >>> Q = K = np.eye(2)
    >>> A = softmax64(Q, K, np.log(3.0))  # logits log(3) on the diagonal, 0 off it
    >>> A.round(6).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> softmax64(Q, K, np.log(3.0), np.tril(np.ones((2, 2), bool))).round(6).tolist()
    [[1.0, 0.0], [0.25, 0.75]]
    """
    t = check_positive_finite("t", t)
    q = torch.as_tensor(np.asarray(Q), dtype=torch.float64, device="cpu")
    k = torch.as_tensor(np.asarray(K), dtype=torch.float64, device="cpu")
    if q.shape[-1] != k.shape[-1] or q.ndim < 2:
        raise ParameterError("Q, K", "arrays [..., L, d] with the same d", (q.shape, k.shape))
    s = torch.as_tensor(np.asarray(scale, dtype=np.float64))
    if bias is None:
        logits = (q @ k.transpose(-1, -2)) * (s[..., None, None] / t)
    else:
        b = torch.as_tensor(np.asarray(bias), dtype=torch.float64, device="cpu")
        qk = q @ k.transpose(-1, -2)
        try:
            shape = torch.broadcast_shapes(qk.shape, b.shape)
        except RuntimeError:
            shape = None
        if shape != qk.shape:
            raise ParameterError(
                "bias", f"an array broadcastable to the logits {tuple(qk.shape)}", tuple(b.shape)
            )
        if not bool(torch.isfinite(b).all()):
            raise ParameterError("bias", "finite entries (masked keys go in mask)", "NaN or inf")
        logits = (qk * s[..., None, None] + b) / t
    if mask is not None:
        m = torch.as_tensor(np.asarray(mask, dtype=bool))
        if not bool(m.any(-1).all()):
            raise ParameterError(
                "mask", "every query row to allow at least one key", "a row with none"
            )
        logits = logits.masked_fill(~m, -torch.inf)
    logits = logits - logits.amax(-1, keepdim=True)
    e = torch.exp(logits)  # exp(-inf) = 0 exactly for masked entries
    return (e / e.sum(-1, keepdim=True)).numpy()


def check_attention(A: np.ndarray, *, renormalize: bool = False, name: str = "A") -> np.ndarray:
    """Validate a stack of attention matrices and return it as float64 ``[H, M, N]``.

    Raises a :class:`ParameterError` naming ``name`` for a wrong ndim, NaN/inf,
    negative entries, or rows whose sums are off 1 by more than ``1e-4`` (unless
    ``renormalize``, which divides each row by its sum).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.attention import check_attention
    >>> check_attention(np.full((2, 2), 0.5)).shape  # one matrix comes back as a stack of one
    (1, 2, 2)
    >>> check_attention(np.array([[1.0, 3.0]]), renormalize=True).tolist()
    [[[0.25, 0.75]]]
    >>> check_attention(np.array([[1.0, 3.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: A: expected rows summing to 1 within 0.0001 ...
    """
    A = np.asarray(A)
    if A.ndim not in (2, 3):
        raise ParameterError(name, "an array of shape (M, N) or (H, M, N)", f"ndim={A.ndim}")
    if not np.issubdtype(A.dtype, np.floating):
        raise ParameterError(name, "a floating-point array", A.dtype)
    A = np.array(A, dtype=np.float64, copy=True)
    if A.ndim == 2:
        A = A[None]
    if min(A.shape[1:]) < 1:
        raise ParameterError(name, "at least one row and one column", A.shape)
    if not np.isfinite(A).all():
        bad = np.argwhere(~np.isfinite(A))[0].tolist()
        raise ParameterError(name, "finite entries (no NaN or inf)", f"non-finite at {bad}")
    if (A < 0).any():
        bad = np.argwhere(A < 0)[0].tolist()
        raise ParameterError(name, "entries >= 0", f"{A[tuple(bad)]:.3g} at {bad}")
    sums = A.sum(-1)
    off = np.abs(sums - 1.0)
    if renormalize:
        if (sums <= 0).any():
            bad = np.argwhere(sums <= 0)[0].tolist()
            raise ParameterError(name, "rows with positive sums to renormalize", f"zero row {bad}")
        A /= sums[..., None]
    elif off.max() > ROW_SUM_TOL:
        h, i = np.unravel_index(int(off.argmax()), off.shape)
        raise ParameterError(
            name,
            f"rows summing to 1 within {ROW_SUM_TOL:g} (pass --renormalize / renormalize=True "
            "to divide each row by its sum)",
            f"row {i} of matrix {h} sums to {sums[h, i]:.6g}",
        )
    return A


def derive_seed(seed: int, key: str) -> int:
    """A deterministic 63-bit seed from a user seed and a string key.

    Used where randomness is real and must not depend on the order of work: the point
    cloud of a synthetic matrix (``attnrank laws``), Performer's random features.

    Notes
    -----
    ``int.from_bytes(sha256(f"{seed}:{key}")[:8], "little") >> 1``.

    Examples
    --------
    >>> from analysis.attention import derive_seed
    >>> derive_seed(0, "spherical:d=3") == derive_seed(0, "spherical:d=3")
    True
    >>> derive_seed(0, "a") != derive_seed(1, "a") and 0 <= derive_seed(0, "a") < 2**63
    True
    """
    h = hashlib.sha256(f"{int(seed)}:{key}".encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


@contextlib.contextmanager
def fixed_torch_threads(n: int = 1) -> Iterator[None]:
    """Run with fixed torch and BLAS thread counts.

    Reductions then do not depend on the pool size (determinism across ``--workers``),
    and small LAPACK calls are not slowed by threads spinning against each other.

    Examples
    --------
    >>> import torch
    >>> from analysis.attention import fixed_torch_threads
    >>> before = torch.get_num_threads()
    >>> with fixed_torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        torch.set_num_threads(old)
