"""The laws' predictions: asymptotic slopes per family and the spherical harmonic rank count.

The families and their asymptotic laws: docs/method.md section 6; :func:`theory_slope`
gives the slope each predicts. The rest of this module is the spherical law's own
finite-beta prediction, with no bracket involved: certified slopes on the grids a 2-core
machine can bracket lie above the asymptotic ``(d - 1) / 2``, and this count tells the
engine's miss from the grid's (:mod:`analysis.laws`).

Notes
-----
For points uniform on the sphere ``S^(d-1)`` the logits ``beta <x, y>`` define the kernel
``exp(beta t)``, ``t = <x, y>``. By the Funk-Hecke formula its integral operator acts on
the spherical harmonics of degree ``l`` (a space of dimension ``dim H_l``) with eigenvalue
proportional to ``I_(l + nu)(beta) / beta^nu``, ``nu = d / 2 - 1`` (``I`` the modified
Bessel function). Row normalization divides by the degree-0 eigenvalue, so the softmax
operator has, up to sampling noise, eigenvalue

    lambda_l(beta) = I_(l + nu)(beta) / I_nu(beta)

on degree ``l``. The *harmonic rank* keeps every degree whose eigenvalue exceeds eps:

    L(beta, eps) = min { L >= 0 : lambda_(L+1)(beta) <= eps },
    r_harm(d, beta, eps) = sum_(l = 0)^L dim H_l.

It is a proxy, not a certificate: the max-row-l1 error of a truncation is not the
eigenvalue of the first dropped degree, so only the shape of ``r_harm`` in beta is meant,
not its constant. Its two regimes are what matters:

- large beta: ``lambda_l ~ exp(-l^2 / (2 beta))`` while ``l << beta``, so
  ``L ~ sqrt(2 beta ln(1 / eps))`` and ``r_harm ~ L^(d - 1) ~ beta^((d - 1) / 2)``: the law;
- small beta: ``lambda_l ~ (beta / 2)^l / l!`` (the Taylor regime), where ``L`` grows
  faster than ``sqrt(beta)`` and local slopes exceed ``(d - 1) / 2``.

The crossover sits where ``L ~ beta``, i.e. ``beta ~ 2 ln(1 / eps)`` (4.6 at eps = 0.1).
Because ``L`` is an integer, ``r_harm`` jumps by whole degrees, as the certified ranks do
at small beta (``d + 1`` at beta = 1, eps = 0.1: the constant and the linear harmonics).
At eps = 0.1 its local slopes between powers of two of beta settle near ``(d - 1) / 2``
only from beta ~ 4 / 16 / 32 (d = 2 / 3 / 4), where ``r_harm`` is already 9 / 81 / 650.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import ive

from analysis.validation import (
    ParameterError,
    check_choice,
    check_eps_grid,
    check_int,
    check_positive_finite,
)

__all__ = [
    "FAMILIES",
    "POWERS",
    "asymptotic_betas",
    "asymptotic_onset",
    "harmonic_dimension",
    "harmonic_rank",
    "harmonic_slope",
    "local_harmonic_slopes",
    "n_for_asymptotic_grid",
    "theory_slope",
]

FAMILIES: tuple[str, ...] = ("spherical", "ball")


def theory_slope(family: str, d: int) -> float:
    """``(d - 1) / 2`` for ``spherical``, ``d / 2`` for ``ball``.

    Examples
    --------
    >>> from analysis.laws import theory_slope
    >>> theory_slope("spherical", 3), theory_slope("ball", 3)
    (1.0, 1.5)
    """
    check_choice("family", family, FAMILIES)
    return (d - 1) / 2 if family == "spherical" else d / 2


def _check_d(d: int) -> int:
    return check_int("d", d, minimum=2)


def _check_eps(eps: float) -> float:
    (e,) = check_eps_grid([eps])
    if not e < 1:
        raise ParameterError("eps", "a value in (0, 1)", eps)
    return e


def harmonic_dimension(degree: int, d: int) -> int:
    """Dimension of the degree-``l`` spherical harmonics on ``S^(d-1)`` in ``R^d``.

    Notes
    -----
    ``dim H_l = C(l + d - 1, d - 1) - C(l + d - 3, d - 1)`` (harmonic homogeneous
    polynomials of degree l: all of degree l minus ``|x|^2`` times those of degree
    l - 2): 1, 2, 2, ... for d = 2; ``2 l + 1`` for d = 3; ``(l + 1)^2`` for d = 4.

    Examples
    --------
    >>> from analysis.laws import harmonic_dimension
    >>> [harmonic_dimension(l, 3) for l in range(4)]  # 2 l + 1 on the 2-sphere
    [1, 3, 5, 7]
    >>> [harmonic_dimension(l, 4) for l in range(4)]  # (l + 1)^2 on the 3-sphere
    [1, 4, 9, 16]
    """
    degree = check_int("degree", degree, minimum=0)
    d = _check_d(d)
    drop = math.comb(degree + d - 3, d - 1) if degree >= 2 else 0
    return math.comb(degree + d - 1, d - 1) - drop


def harmonic_rank(d: int, beta: float, eps: float) -> int:
    """Spherical-harmonic rank count ``r_harm(d, beta, eps)`` (module Notes).

    Parameters
    ----------
    d : int
        Ambient dimension (>= 2); points live on ``S^(d-1)``.
    beta : float
        Inverse temperature (> 0), as in :func:`analysis.sources.synthetic.spherical`.
    eps : float
        Tolerance in (0, 1).

    Returns
    -------
    int
        ``sum_(l <= L) dim H_l`` with ``L`` the last degree whose eigenvalue
        ``I_(l + nu)(beta) / I_nu(beta)`` is above eps. Not a bound on ``r_eps``.

    Examples
    --------
    >>> from analysis.laws import harmonic_rank
    >>> harmonic_rank(3, 4.0, 0.1)  # degrees 0..3 on the 2-sphere: 1 + 3 + 5 + 7
    16
    """
    d = _check_d(d)
    beta = check_positive_finite("beta", beta)
    eps = _check_eps(eps)
    nu = d / 2 - 1
    # ive (exponentially scaled) keeps the ratio finite at large beta; the scale cancels.
    base = ive(nu, beta)
    degree = 0
    while ive(degree + 1 + nu, beta) / base > eps:  # lambda_l decreases in l
        degree += 1
    return sum(harmonic_dimension(lvl, d) for lvl in range(degree + 1))


def _log_ranks(d: int, betas: Sequence[float], eps: float) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray([check_positive_finite("betas", v) for v in betas], float)
    if b.size < 2 or np.unique(b).size < 2:
        raise ParameterError("betas", "at least two distinct values", list(betas))
    r = np.array([harmonic_rank(d, v, eps) for v in b], float)
    return np.log1p(b), np.log(r)


def harmonic_slope(d: int, betas: Sequence[float], eps: float) -> float:
    """OLS slope of ``ln r_harm`` on ``ln(1 + beta)`` over ``betas``.

    What the spherical law's own expansion predicts for a sweep over this grid: the
    number to hold a certified slope against before blaming the engine.

    Examples
    --------
    >>> from analysis.laws import harmonic_slope
    >>> round(harmonic_slope(3, [16.0, 32.0, 64.0], 0.1), 3)  # the asymptote is (d - 1) / 2 = 1
    0.949
    """
    x, y = _log_ranks(d, betas, eps)
    return float(np.polyfit(x, y, 1)[0])


def local_harmonic_slopes(d: int, betas: Sequence[float], eps: float) -> np.ndarray:
    """Slopes of ``ln r_harm`` against ``ln(1 + beta)`` between consecutive sorted betas.

    Examples
    --------
    >>> from analysis.laws import local_harmonic_slopes
    >>> local_harmonic_slopes(3, [64.0, 16.0, 32.0], 0.1).round(3).tolist()  # betas sorted
    [0.867, 1.028]
    """
    x, y = _log_ranks(d, sorted(betas), eps)
    return np.diff(y) / np.diff(x)


#: Powers of two over which :func:`asymptotic_onset` checks the local slopes.
POWERS: tuple[float, ...] = tuple(float(2**i) for i in range(17))


def asymptotic_onset(d: int, eps: float, *, tolerance: float = 0.15) -> float:
    """Smallest power of two ``beta_0`` from which every local slope of the harmonic count,
    between consecutive powers of two up to ``2^16``, is within ``tolerance`` of
    ``(d - 1) / 2`` (NaN if even the last one is not).

    Where the theory's own finite-beta prediction has settled onto its asymptote: a sweep
    that starts below it measures the Taylor regime as well. At eps = 0.1 it is
    beta = 4 / 16 / 32 for d = 2 / 3 / 4; at eps = 0.2, 8 / 8 / 8.

    Examples
    --------
    >>> from analysis.laws import asymptotic_onset
    >>> asymptotic_onset(2, 0.1), asymptotic_onset(3, 0.1), asymptotic_onset(4, 0.1)
    (4.0, 16.0, 32.0)
    """
    d = _check_d(d)
    tolerance = check_positive_finite("tolerance", tolerance)
    ok = np.abs(local_harmonic_slopes(d, POWERS, eps) - (d - 1) / 2) <= tolerance
    onset = math.nan
    for i in range(len(ok) - 1, -1, -1):  # slope i joins POWERS[i] and POWERS[i + 1]
        if not ok[i]:
            break
        onset = POWERS[i]
    return onset


def asymptotic_betas(
    d: int,
    eps: float,
    n: int,
    *,
    tolerance: float = 0.15,
    max_share: float = 0.25,
    max_points: int = 5,
) -> tuple[float, ...]:
    """A beta grid chosen from the theory alone: powers of two from
    :func:`asymptotic_onset` while the harmonic count stays ``<= max_share * n``
    (the law is ``min{n, ...}``; certified upper ends run 1.2-1.5x the count), at most
    ``max_points`` of them. Possibly shorter than two points when n is too small; see
    :func:`n_for_asymptotic_grid`.

    Examples
    --------
    >>> from analysis.laws import asymptotic_betas
    >>> asymptotic_betas(3, 0.1, 512)  # too few points for a slope at n = 512
    (16.0,)
    >>> asymptotic_betas(3, 0.1, 4096)
    (16.0, 32.0, 64.0, 128.0)
    """
    n = check_int("n", n, minimum=2)
    max_share = check_positive_finite("max_share", max_share)
    max_points = check_int("max_points", max_points, minimum=1)
    beta = asymptotic_onset(d, eps, tolerance=tolerance)
    grid: list[float] = []
    while math.isfinite(beta) and len(grid) < max_points:
        if harmonic_rank(d, beta, eps) > max_share * n:
            break
        grid.append(beta)
        beta *= 2
    return tuple(grid)


def n_for_asymptotic_grid(
    d: int, eps: float, *, points: int = 3, tolerance: float = 0.15, max_share: float = 0.25
) -> int:
    """The least n for which :func:`asymptotic_betas` has ``points`` betas.

    Examples
    --------
    >>> from analysis.laws import asymptotic_betas, n_for_asymptotic_grid
    >>> n = n_for_asymptotic_grid(3, 0.1)
    >>> n, len(asymptotic_betas(3, 0.1, n)), len(asymptotic_betas(3, 0.1, n - 1))
    (1156, 3, 2)
    """
    points = check_int("points", points, minimum=1)
    onset = asymptotic_onset(d, eps, tolerance=tolerance)
    if not math.isfinite(onset):
        raise ParameterError("eps", "a tolerance whose harmonic count settles by beta = 2^16", eps)
    top = harmonic_rank(d, onset * 2 ** (points - 1), eps)
    return math.ceil(top / check_positive_finite("max_share", max_share))
