"""Native geometry block, version 2: version 1's description without rounding noise.

Version 1 (:mod:`analysis.descriptors.native`, kept byte for byte: locked designs pin its
version) reports ``q_cond = sigma_max / sigma_min`` over all ``min(L, d)`` singular
values. When Q or K is exactly rank-deficient (fewer distinct rows than d, as on a text
with repeated tokens in a layer that carries no position), ``sigma_min`` is a rounding
residue of the SVD, anywhere from ``1e-16`` to ``1e-80`` of ``sigma_max``, and the
condition number is that residue's inverse. Version 2 takes every spectral quantity over
the numerical rank instead, and adds the ranks as covariates. A design selects it with
``[descriptors] versions = {native = 2}`` (the default under ``method = 3``); its block
is still called ``native`` and its columns ``native__*``.
"""

from __future__ import annotations

import numpy as np

from analysis.descriptors.native import bias_size
from analysis.descriptors.registry import Cell, descriptor

__all__ = ["RANK_EPS", "logit_rank", "native_v2", "numerical_rank", "spectrum"]

#: The unit roundoff of the arrays' precision: every source computes Q and K in a float32
#: forward pass and stores them as float32, so a singular value below
#: ``max(L, d) * RANK_EPS * sigma_max`` cannot be told from that arithmetic's rounding.
RANK_EPS = float(np.finfo(np.float32).eps)


def numerical_rank(sv: np.ndarray, size: int, top: float | None = None) -> int:
    """How many singular values exceed ``tol = size * RANK_EPS * top``.

    Parameters
    ----------
    sv : array
        Singular values, in decreasing order.
    size : int
        ``max(L, d)`` of the matrix (numpy's ``matrix_rank`` default tolerance).
    top : float, optional
        The scale of the tolerance (default ``sv[0]``, 0 when ``sv`` is empty).

    Returns
    -------
    int
        0 when ``top`` is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.native2 import numerical_rank
    >>> numerical_rank(np.array([2.0, 1.0, 1e-20]), size=3)  # the residue is not counted
    2
    >>> numerical_rank(np.zeros(3), size=3)
    0
    """
    sv = np.asarray(sv, dtype=np.float64)
    if top is None:
        top = float(sv[0]) if sv.size else 0.0
    return int(np.count_nonzero(sv > size * RANK_EPS * top))


def spectrum(X: np.ndarray) -> dict[str, float]:
    """Row-norm and spectral summaries of one ``[L, d]`` array over its numerical rank.

    Parameters
    ----------
    X : array ``[L, d]``

    Returns
    -------
    dict
        ``norm_max``, ``norm_mean``, ``spectral`` (``sigma_1``), ``stable_rank``
        (``||X||_F^2 / sigma_1^2``), ``rank`` (r, :func:`numerical_rank` with
        ``size = max(L, d)``) and ``cond`` (``sigma_1 / sigma_r``); the last two are NaN,
        the rank 0, for a zero X.

    Examples
    --------
    Two distinct rows in four dimensions: rank 2, and the condition number of the two
    directions it has rather than of the roundoff in the missing two:

    >>> import numpy as np
    >>> from analysis.descriptors.native2 import spectrum
    >>> X = np.array([[3.0, 0, 0, 0], [0, 1.0, 0, 0], [3.0, 0, 0, 0], [0, 1.0, 0, 0]])
    >>> g = spectrum(X)
    >>> g["rank"], round(g["cond"], 12), round(g["stable_rank"], 12)
    (2, 3.0, 1.111111111111)
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    sv = np.linalg.svd(X, compute_uv=False)
    top = float(sv[0]) if sv.size else 0.0
    r = numerical_rank(sv, max(X.shape), top)
    return {
        "norm_max": float(norms.max()),
        "norm_mean": float(norms.mean()),
        "spectral": top,
        "stable_rank": float((norms**2).sum() / top**2) if top > 0 else np.nan,
        "rank": r,
        "cond": float(top / sv[r - 1]) if r > 0 else np.nan,
    }


def logit_rank(Q: np.ndarray, K: np.ndarray, scale: float) -> int:
    """Numerical rank of ``scale Q K^T``, from the small factors of Q and K.

    Parameters
    ----------
    Q, K : array ``[L, d]`` (their row counts may differ)
    scale : float

    Returns
    -------
    int

    Notes
    -----
    With ``Q = Q_1 R_q`` and ``K = K_1 R_k`` (thin QR, ``Q_1``, ``K_1`` with orthonormal
    columns), ``Q K^T = Q_1 (R_q R_k^T) K_1^T`` has the singular values of the small core
    ``R_q R_k^T``. The tolerance is ``max(L_q, L_k, d) * RANK_EPS * |scale| sigma_1(Q)
    sigma_1(K)``: the size of what Q's and K's own rounding does to the product, so a
    product whose exact rank is low (Q and K in partly orthogonal subspaces) does not
    count the cancellation's residue, even where ``sigma_1(Q K^T)`` is far below
    ``sigma_1(Q) sigma_1(K)``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.native2 import logit_rank
    >>> Q = np.array([[1.0, 0, 0], [0, 1.0, 0]])  # span(e1, e2)
    >>> K = np.array([[0, 1.0, 0], [0, 0, 1.0]])  # span(e2, e3): Q K^T has rank 1
    >>> logit_rank(Q, K, 0.5), logit_rank(Q, Q, 0.5)
    (1, 2)
    """
    Rq = np.linalg.qr(np.asarray(Q, dtype=np.float64), mode="r")
    Rk = np.linalg.qr(np.asarray(K, dtype=np.float64), mode="r")
    core = abs(float(scale)) * (Rq @ Rk.T)
    sv = np.linalg.svd(core, compute_uv=False)
    top_q = np.linalg.norm(Rq, 2) if Rq.size else 0.0
    top_k = np.linalg.norm(Rk, 2) if Rk.size else 0.0
    size = max(Q.shape[0], K.shape[0], Q.shape[1])
    return numerical_rank(sv, size, abs(float(scale)) * top_q * top_k)


@descriptor(
    "native",
    needs=("Q", "K", "scale", "mask", "bias"),
    diagnostics=("bias_*",),
    log_scale=("q_*", "k_*", "qk_rank", "kappa", "head_dim"),
    integers=("q_rank", "k_rank", "qk_rank", "head_dim"),
    nonfinite=("q_stable_rank", "k_stable_rank", "q_cond", "k_cond", "bias_logit_share"),
)
def native_v2(cell: Cell) -> dict[str, float]:
    """Version 1's native geometry over the numerical ranks of Q and K, with the ranks.

    Parameters
    ----------
    cell : Cell
        One (matrix, temperature, eps); the block reads ``Q``, ``K``, ``scale`` and, with
        a logit bias, ``bias`` and ``mask``.

    Returns
    -------
    dict
        Feature name -> value (the covariates and diagnostics below).

    Notes
    -----
    Covariates, with ``s = scale / t``, for X = Q (prefix ``q_``) and X = K (``k_``),
    ``sigma_1 >= sigma_2 >= ...`` the singular values of X ``[L, d]``:

    - ``norm_max``, ``norm_mean``: the largest and the mean row norm (as version 1);
    - ``spectral = sigma_1`` and ``stable_rank = ||X||_F^2 / sigma_1^2`` (as version 1);
    - ``rank = r``, the numerical rank: the number of ``sigma_i > tol``, with
      ``tol = max(L, d) * eps_32 * sigma_1`` (numpy's ``matrix_rank`` default tolerance
      at the arrays' precision, float32: :data:`RANK_EPS`);
    - ``cond = sigma_1 / sigma_r`` (version 1: ``sigma_1 / sigma_min(L, d)``);

    and ``qk_rank``, the numerical rank of ``scale Q K^T`` (:func:`logit_rank`),
    ``kappa = s max_i ||q_i|| max_j ||k_j||``, ``bound_exponent = (d/2) log2(1 + kappa /
    eps^2)`` and ``head_dim = d``, as version 1. ``cond`` is at most ``1 / (max(L, d)
    eps_32)`` (about ``1.3e5`` at d = 64), where version 1's reached ``1e80`` on exactly
    rank-deficient heads. The ranks and ``cond`` move only when a singular value crosses
    ``tol``; a perturbation far below ``tol`` (the rounding of float64 arithmetic, or of
    the float32 forward pass's on a well-separated spectrum) leaves them unchanged.
    ``stable_rank`` and ``cond`` are NaN, the ranks 0, for a zero X. All of these change
    under a generic gauge ``(Q G, K G^-T)`` except ``qk_rank`` and ``head_dim``.

    With an additive logit bias, the diagnostics ``bias_spectral`` and ``bias_logit_share``
    are version 1's (:func:`analysis.descriptors.native.bias_size`).

    Examples
    --------
    Six tokens, the last three repeating the first three, in d = 4: Q and K have rank 3.
    Version 1's ``q_cond`` is the inverse of the SVD's rounding residue; version 2's is
    the condition number of the three directions Q has:

    >>> import numpy as np
    >>> from analysis.descriptors import build_registry, builtin_registry
    >>> from analysis.descriptors.registry import Cell, MatrixData, run_block
    >>> rng = np.random.default_rng(0)
    >>> Q, K = (np.tile(rng.standard_normal((3, 4)), (2, 1)) for _ in range(2))
    >>> data = MatrixData(Q, K, 0.5, None, eps_grid=(0.1,), temperatures=(1.0,))
    >>> v1 = run_block(builtin_registry().get("native"), Cell(data, 1.0, 0.1))
    >>> v2 = run_block(build_registry(versions={"native": 2}).get("native"), Cell(data, 1.0, 0.1))
    >>> bool(v1["native__q_cond"] > 1e12), bool(v2["native__q_cond"] < 100)
    (True, True)
    >>> v2["native__q_rank"], v2["native__k_rank"], v2["native__qk_rank"]
    (3.0, 3.0, 3.0)
    """
    geo = cell.cached("native_v2", lambda: (spectrum(cell.Q), spectrum(cell.K)))
    d = cell.Q.shape[1]
    s = cell.scale / cell.temperature
    kappa = s * geo[0]["norm_max"] * geo[1]["norm_max"]
    out: dict[str, float] = {}
    for prefix, g in zip(("q", "k"), geo, strict=True):
        out.update({f"{prefix}_{k}": v for k, v in g.items()})
    out.update(
        qk_rank=cell.cached("native_v2_qk", lambda: logit_rank(cell.Q, cell.K, cell.scale)),
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
