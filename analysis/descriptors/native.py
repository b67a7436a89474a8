"""Native geometry block: the model's own (gauge-dependent) Euclidean geometry of Q and K."""

from __future__ import annotations

import numpy as np

from analysis.descriptors.registry import Cell, descriptor


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
    needs=("Q", "K", "scale"),
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
    return out
