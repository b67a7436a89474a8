"""Native geometry block: the model's own (gauge-dependent) Euclidean geometry of Q and K.

The block is about the ``Q K^T`` factorization only. Where the model adds a logit bias
beside it (MPNet's relative-position bias), the bias's size is reported next to it as
diagnostics (``bias_*``), which never enter a model.
"""

from __future__ import annotations

import numpy as np

from analysis.descriptors.registry import Cell, descriptor


def bias_size(
    Q: np.ndarray, K: np.ndarray, scale: float, bias: np.ndarray, mask: np.ndarray | None
) -> dict[str, float]:
    """Size of an additive logit bias next to ``scale Q K^T``, at t = 1.

    Parameters
    ----------
    Q, K : array ``[L, d]``
    scale : float
    bias : array ``[M, N]``
    mask : bool array ``[M, N]`` or None (True = allowed)

    Returns
    -------
    dict
        ``spectral = ||R(B)||_2`` and
        ``logit_share = ||R(B)||_F^2 / (||R(scale Q K^T)||_F^2 + ||R(B)||_F^2)``, in [0, 1]
        (NaN when both parts are constant along every row).

    Notes
    -----
    ``R`` subtracts from each row its mean over the allowed keys and zeroes the masked
    entries. A row constant does not change the row softmax, so only the bias's
    within-row variation can move A: a constant bias ``c`` has ``||B||_2 = |c| sqrt(MN)``
    but ``R(B) = 0``. The share leaves out the cross term ``2 <R(B), R(scale Q K^T)>``, so
    that it stays in [0, 1].
    """
    B = np.asarray(bias, dtype=np.float64)
    S = float(scale) * (np.asarray(Q, dtype=np.float64) @ np.asarray(K, dtype=np.float64).T)
    allowed = np.ones(B.shape, dtype=bool) if mask is None else np.broadcast_to(mask, B.shape)
    n_allowed = allowed.sum(1, keepdims=True)

    def within_rows(X: np.ndarray) -> np.ndarray:
        X = np.where(allowed, X, 0.0)
        return np.where(allowed, X - X.sum(1, keepdims=True) / n_allowed, 0.0)

    rb, rs = within_rows(B), within_rows(S)
    vb, vs = float((rb**2).sum()), float((rs**2).sum())
    return {
        "spectral": float(np.linalg.norm(rb, 2)),
        "logit_share": vb / (vb + vs) if vb + vs > 0 else np.nan,
    }


def _geometry(X: np.ndarray) -> dict[str, float]:
    """Row-norm and spectral summaries of one ``[L, d]`` array."""
    norms = np.linalg.norm(X, axis=1)
    sv = np.linalg.svd(X, compute_uv=False)
    top = sv[0] if sv.size else 0.0
    return {
        "norm_max": float(norms.max()),
        "norm_mean": float(norms.mean()),
        "spectral": float(top),
        "stable_rank": float((sv**2).sum() / top**2) if top > 0 else np.nan,
        "cond": float(top / sv[-1]) if sv[-1] > 0 else np.inf,
    }


@descriptor(
    "native",
    needs=("Q", "K", "scale", "mask", "bias"),
    diagnostics=("bias_*",),
    log_scale=("q_*", "k_*", "kappa", "head_dim"),
    integers=("head_dim",),
)
def native(cell: Cell) -> dict[str, float]:
    """Max/mean row norms, kappa_native, the native bound exponent, spectra of Q and K.

    Notes
    -----
    With ``s = scale / t``: ``kappa = s max_i ||q_i|| max_j ||k_j||`` and
    ``bound_exponent = (d/2) log2(1 + kappa / eps^2)``. ``q_spectral = ||Q||_2``,
    ``q_stable_rank = ||Q||_F^2 / ||Q||_2^2``, ``q_cond = sigma_max / sigma_min`` over the
    ``min(L, d)`` singular values (inf when singular); likewise for K. ``head_dim = d``.
    All of these change under a generic gauge ``(Q G, K G^-T)``.

    With an additive logit bias B (``cell.bias``; the logits are ``(scale Q K^T + B) / t``)
    the covariates above still describe the ``Q K^T`` factorization alone, and two
    diagnostics give the bias's size beside them (:func:`bias_size`):
    ``bias_spectral = ||R(B)||_2 / t``, the spectral norm of the bias as it enters the
    logits at temperature t, each row's mean over its allowed keys removed (row constants
    cancel in the softmax), and ``bias_logit_share``, its share of the within-row logit
    variance (the same at every t). Without a bias neither column is written.
    """
    geo = cell.cached("native", lambda: (_geometry(cell.Q), _geometry(cell.K)))
    d = cell.Q.shape[1]
    s = cell.scale / cell.temperature
    kappa = s * geo[0]["norm_max"] * geo[1]["norm_max"]
    out: dict[str, float] = {}
    for prefix, g in zip(("q", "k"), geo, strict=True):
        out.update({f"{prefix}_{k}": v for k, v in g.items()})
    out.update(
        kappa=kappa,
        bound_exponent=0.5 * d * np.log2(1.0 + kappa / cell.eps**2),
        head_dim=d,
    )
    if cell.bias is not None:
        size = cell.cached(
            "native_bias", lambda: bias_size(cell.Q, cell.K, cell.scale, cell.bias, cell.mask)
        )
        out.update(
            bias_spectral=size["spectral"] / cell.temperature,
            bias_logit_share=size["logit_share"],
        )
    return out
