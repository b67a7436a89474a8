"""Synthetic attention matrices with Q, K and scale, so descriptors work on them as on heads.

Every family returns a :class:`SyntheticMatrix` whose ``A`` is the family's matrix computed
directly from its definition and whose ``(Q, K, scale)`` reproduce it through
``analysis.attention.softmax64(Q, K, scale)``: to float64 rounding (an ulp or so) for the
geometric families, whose ``A`` is computed by numpy rather than torch, and for two planted
ones; exactly for ``uniform_rows``, ``identity`` and ``permuted_blocks`` (see each function).

Families
--------
- :func:`spherical`: n points uniform on the unit sphere of R^d, logits ``beta <x_i, x_j>``.
- :func:`full_ball`: n points uniform in the unit ball of R^d, same logits.
- Planted known answers (docs/method.md section 3): :func:`uniform_rows`, :func:`identity`,
  :func:`permuted_blocks`, :func:`mixed_blocks`, :func:`diagonal_plus_constant`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from analysis.validation import ParameterError, check_int, check_positive_finite, check_random_state

__all__ = [
    "SyntheticMatrix",
    "diagonal_plus_constant",
    "full_ball",
    "identity",
    "mixed_blocks",
    "permuted_blocks",
    "spherical",
    "uniform_rows",
]

#: Logit gap that makes float64 softmax entries exactly 0: exp(-HARD_GAP) underflows.
HARD_GAP = 1000.0


@dataclasses.dataclass(frozen=True)
class SyntheticMatrix:
    """One synthetic matrix with its native geometry.

    Attributes
    ----------
    A : ndarray, float64, ``[N, N]``
        Rows sum to 1.
    Q, K : ndarray, float64, ``[N, d]``
    scale : float
        ``softmax64(Q, K, scale)`` reproduces ``A``.
    family : str
    params : dict
        The family's parameters (JSON-able), including the seed where random.
    known_rank : dict or None
        For planted matrices: ``{"rank": r, "eps_below": e}``: ``r_eps(A) == r`` for every
        eps < e (docs/method.md section 3); None for the geometric families.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.attention import softmax64
    >>> from analysis.sources.synthetic import uniform_rows
    >>> m = uniform_rows(3)
    >>> m.family, m.known_rank, m.length, m.mask is None
    ('uniform', {'rank': 1, 'eps_below': 1.0}, 3, True)
    >>> bool(np.array_equal(softmax64(m.Q, m.K, m.scale), m.A))
    True
    """

    A: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    scale: float
    family: str
    params: dict[str, Any]
    known_rank: dict[str, float] | None = None

    @property
    def mask(self) -> None:
        """Synthetic matrices are unmasked."""
        return None

    @property
    def length(self) -> int:
        return int(self.A.shape[-1])

    @property
    def checkpoint_id(self) -> str:
        """Family plus its non-random parameters, the 'checkpoint' field of a store record."""
        fixed = {k: v for k, v in self.params.items() if k not in ("seed", "n")}
        return f"{self.family}" + (json.dumps(fixed, sort_keys=True) if fixed else "")


def _softmax_rows(S: np.ndarray) -> np.ndarray:
    Z = S - S.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _seed_of(random_state: Any) -> int | None:
    return int(random_state) if isinstance(random_state, (int, np.integer)) else None


def _points(kind: str, n: int, d: int, beta: float, random_state: Any) -> SyntheticMatrix:
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=1)
    beta = check_positive_finite("beta", beta)
    rng = check_random_state(random_state)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    if kind == "ball":
        X *= rng.random((n, 1)) ** (1.0 / d)
    A = _softmax_rows(beta * (X @ X.T))
    params = {"n": n, "d": d, "beta": beta, "seed": _seed_of(random_state)}
    return SyntheticMatrix(
        A, X, X.copy(), beta, "spherical" if kind == "sphere" else "ball", params
    )


def spherical(n: int, d: int, beta: float, *, random_state: Any = None) -> SyntheticMatrix:
    """Self-attention of n points uniform on the unit sphere of R^d.

    Parameters
    ----------
    n, d : int
    beta : float
        Inverse temperature (> 0).
    random_state : None, int or numpy.random.Generator

    Notes
    -----
    ``x_i = g_i / ||g_i||`` with ``g_i ~ N(0, I_d)``; ``A = softmax(beta X X^T)`` row-wise;
    ``Q = K = X``, ``scale = beta``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.attention import softmax64
    >>> from analysis.sources.synthetic import spherical
    >>> m = spherical(16, 3, 4.0, random_state=0)
    >>> m.A.shape, m.Q.shape, m.scale, m.params
    ((16, 16), (16, 3), 4.0, {'n': 16, 'd': 3, 'beta': 4.0, 'seed': 0})
    >>> bool(np.allclose(np.linalg.norm(m.Q, axis=1), 1.0))  # points on the unit sphere
    True
    >>> float(np.abs(softmax64(m.Q, m.K, m.scale) - m.A).max()) < 1e-15
    True
    """
    return _points("sphere", n, d, beta, random_state)


def full_ball(n: int, d: int, beta: float, *, random_state: Any = None) -> SyntheticMatrix:
    """Self-attention of n points uniform in the unit ball of R^d.

    Notes
    -----
    ``x_i = U_i^(1/d) g_i / ||g_i||`` with ``U_i ~ Uniform(0, 1)``; then as :func:`spherical`.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.synthetic import full_ball
    >>> m = full_ball(16, 3, 4.0, random_state=0)
    >>> bool((np.linalg.norm(m.Q, axis=1) <= 1.0).all()), m.family
    (True, 'ball')
    """
    return _points("ball", n, d, beta, random_state)


def uniform_rows(n: int) -> SyntheticMatrix:
    """``A = J / n`` (every row uniform). ``r_eps = 1`` for eps < 1.

    Notes
    -----
    ``Q = K = 0`` (one column), so every logit is 0: reproduced exactly.

    Examples
    --------
    >>> from analysis.sources.synthetic import uniform_rows
    >>> uniform_rows(4).A[0].tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    n = check_int("n", n, minimum=1)
    z = np.zeros((n, 1))
    return SyntheticMatrix(
        np.full((n, n), 1.0 / n),
        z,
        z.copy(),
        1.0,
        "uniform",
        {"n": n},
        {"rank": 1, "eps_below": 1.0},
    )


def identity(n: int) -> SyntheticMatrix:
    """``A = I_n``. ``r_eps = n`` for eps < 1.

    Notes
    -----
    ``Q = K = I_n``, ``scale = 1000``: off-diagonal logits sit 1000 below the diagonal and
    ``exp(-1000)`` underflows to exactly 0 in float64, so ``softmax64`` gives I exactly.

    Examples
    --------
    >>> from analysis.attention import softmax64
    >>> from analysis.sources.synthetic import identity
    >>> m = identity(3)
    >>> softmax64(m.Q, m.K, m.scale).tolist() == m.A.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    True
    >>> m.known_rank["rank"]
    3
    """
    n = check_int("n", n, minimum=1)
    eye = np.eye(n)
    return SyntheticMatrix(
        eye.copy(), eye, eye.copy(), HARD_GAP, "identity", {"n": n}, {"rank": n, "eps_below": 1.0}
    )


def _block_labels(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Balanced block sizes, independent random permutations for rows and columns."""
    sizes = np.full(m, n // m)
    sizes[: n % m] += 1
    labels = np.repeat(np.arange(m), sizes)
    return labels[rng.permutation(n)], labels[rng.permutation(n)]


def _check_blocks(n: int, m: int) -> tuple[int, int]:
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1)
    if m > n:
        raise ParameterError("m", f"an integer <= n = {n}", m)
    return n, m


def permuted_blocks(n: int, m: int, *, random_state: Any = None) -> SyntheticMatrix:
    """m uniform diagonal blocks, rows and columns permuted independently. ``r_eps = m``.

    Notes
    -----
    Block sizes are ``n // m`` or ``n // m + 1``. Row i belongs to block ``b_r(i)``, column
    j to ``b_c(j)``; ``A_ij = [b_r(i) = b_c(j)] / n_{b_r(i)}``. ``Q``, ``K`` are the one-hot
    block indicators and ``scale = 1000``: logits across blocks underflow to exactly 0.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.synthetic import permuted_blocks
    >>> m = permuted_blocks(6, 2, random_state=0)
    >>> int(np.linalg.matrix_rank(m.A)), sorted(set(m.A.ravel().round(6).tolist()))
    (2, [0.0, 0.333333])
    """
    n, m = _check_blocks(n, m)
    rng = check_random_state(random_state)
    br, bc = _block_labels(n, m, rng)
    sizes = np.bincount(bc, minlength=m).astype(float)
    same = br[:, None] == bc[None, :]
    A = same / sizes[br][:, None]
    Q = np.eye(m)[br]
    K = np.eye(m)[bc]
    params = {"n": n, "m": m, "seed": _seed_of(random_state)}
    return SyntheticMatrix(A, Q, K, HARD_GAP, "blocks", params, {"rank": m, "eps_below": 1.0})


def mixed_blocks(n: int, m: int, h: float, *, random_state: Any = None) -> SyntheticMatrix:
    """``(1 - h) * blocks + h * uniform`` (blocks as :func:`permuted_blocks`).

    ``r_eps = m`` exactly for ``eps < (1 - h) / (1 + h - 2 h n_min / n)`` (docs/method.md section 3).

    Parameters
    ----------
    n, m : int
        Size of the matrix and number of blocks, ``1 <= m <= n``.
    h : float
        Mixing weight in (0, 1).
    random_state : int, numpy.random.Generator or None, keyword-only
        Seed or generator of the row and column permutations.

    Notes
    -----
    Logits ``log A_ij = log(h/n) + [b_r(i) = b_c(j)] delta_{b_r(i)}`` with
    ``delta_b = log(1 + (1 - h) n / (h n_b))``; the row constant ``log(h/n)`` is invisible to
    softmax, so ``Q_i = delta_{b_r(i)} e_{b_r(i)}``, ``K_j = e_{b_c(j)}``, ``scale = 1``
    reproduce A to float64 rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.synthetic import mixed_blocks
    >>> m = mixed_blocks(6, 2, 0.1, random_state=0)
    >>> bool(np.allclose(m.A.sum(axis=1), 1.0)), round(float(m.known_rank["eps_below"]), 12)
    (True, 0.9)
    """
    n, m = _check_blocks(n, m)
    h = float(h)
    if not 0.0 < h < 1.0:
        raise ParameterError("h", "a number in (0, 1)", h)
    rng = check_random_state(random_state)
    br, bc = _block_labels(n, m, rng)
    sizes = np.bincount(bc, minlength=m).astype(float)
    same = br[:, None] == bc[None, :]
    A = (1.0 - h) * same / sizes[br][:, None] + h / n
    delta = np.log1p((1.0 - h) * n / (h * sizes))
    Q = np.eye(m)[br] * delta[br][:, None]
    K = np.eye(m)[bc]
    n_min = sizes.min()
    bound = (1.0 - h) / (1.0 + h - 2.0 * h * n_min / n)
    params = {"n": n, "m": m, "h": h, "seed": _seed_of(random_state)}
    return SyntheticMatrix(A, Q, K, 1.0, "mixed_blocks", params, {"rank": m, "eps_below": bound})


def diagonal_plus_constant(n: int, a: float) -> SyntheticMatrix:
    """``A = a I + b J`` with ``b = (1 - a) / n`` so rows sum to 1.

    ``r_eps = n`` exactly for ``eps < 1 / ||(a I + b J)^-1||_inf`` (docs/method.md section 3).

    Parameters
    ----------
    n : int
        Size of the matrix.
    a : float
        Diagonal weight in (0, 1).

    Notes
    -----
    Since ``a + n b = 1``, ``(a I + b J)^-1 = (I - b J) / a``, whose max row l1 norm is
    ``(1 + (n - 2) b) / a``; so the bound is ``a / (1 + (n - 2) b)``. Logits are ``log b``
    off the diagonal and ``log(a + b)`` on it: ``Q = delta I``, ``K = I``,
    ``delta = log(1 + a / b)``, ``scale = 1``.

    Examples
    --------
    >>> from analysis.sources.synthetic import diagonal_plus_constant
    >>> m = diagonal_plus_constant(4, 0.5)  # b = 1/8: bound a / (1 + 2 b) = 0.4
    >>> m.A[0].tolist(), round(float(m.known_rank["eps_below"]), 12)
    ([0.625, 0.125, 0.125, 0.125], 0.4)
    """
    n = check_int("n", n, minimum=1)
    a = float(a)
    if not 0.0 < a < 1.0:
        raise ParameterError("a", "a number in (0, 1)", a)
    b = (1.0 - a) / n
    A = a * np.eye(n) + b
    bound = a / (1.0 + (n - 2) * b) if n >= 2 else 1.0
    delta = np.log1p(a / b)
    eye = np.eye(n)
    params = {"n": n, "a": a}
    return SyntheticMatrix(
        A, delta * eye, eye.copy(), 1.0, "diag_plus_const", params, {"rank": n, "eps_below": bound}
    )
