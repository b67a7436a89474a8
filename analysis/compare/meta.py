"""A random-effects summary of several studies' effects, each given with its CI.

Exploratory only: :func:`random_effects` pools effects (for ``attnrank evidence``,
effects as shares of each study's M0 loss) with statsmodels'
:func:`~statsmodels.stats.meta_analysis.combine_effects`. Each study's standard error is
read off its CI, ``se = (ci_high - ci_low) / (2 z)`` with ``z`` the normal quantile of the
CI's level: exact for a symmetric normal CI, an approximation for a percentile bootstrap
CI, which may be asymmetric. The studies of this package share heads, checkpoints and
models, so they are not independent: the pooled CI is too narrow by an unknown amount and
no decision rests on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from analysis.validation import ParameterError

__all__ = ["RandomEffects", "random_effects", "se_from_ci"]


@dataclass(frozen=True)
class RandomEffects:
    """A DerSimonian-Laird random-effects summary of ``k`` effects.

    Attributes
    ----------
    k : int
        Number of studies pooled.
    estimate, se, ci_low, ci_high : float
        The random-effects mean, its standard error and its normal CI at ``level``.
    tau2 : float
        The between-study variance (DerSimonian-Laird).
    i2 : float
        Higgins' I^2: the share of the spread beyond what the studies' own SEs explain
        (0 when Q <= its degrees of freedom).
    q, q_df, q_p : float, int, float
        Cochran's Q, its degrees of freedom ``k - 1`` and its chi-square p.
    level : float
        The CI's level.

    Examples
    --------
    >>> from analysis.compare.meta import random_effects
    >>> r = random_effects([0.1, -0.2], [0.05, -0.3], [0.15, -0.1])
    >>> r.k, r.q_df, r.tau2 > 0, 0 < r.i2 < 1
    (2, 1, True, True)
    """

    k: int
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    tau2: float
    i2: float
    q: float
    q_df: int
    q_p: float
    level: float


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ParameterError("level", "a number in (0, 1)", level)
    return float(stats.norm.ppf(0.5 + level / 2))


def se_from_ci(ci_low: Sequence[float], ci_high: Sequence[float], *, level: float = 0.95):
    """Standard errors read off CIs: ``(ci_high - ci_low) / (2 z)``.

    Parameters
    ----------
    ci_low, ci_high : sequence of float
        The CIs' ends.
    level : float, keyword-only
        Their level (default 0.95, ``z = 1.95996``).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ParameterError
        ``ci_high``: an end not finite, or below its ``ci_low``.

    Examples
    --------
    >>> from analysis.compare.meta import se_from_ci
    >>> se_from_ci([-1.959964], [1.959964]).round(6).tolist()
    [1.0]
    """
    lo = np.asarray(ci_low, dtype=float)
    hi = np.asarray(ci_high, dtype=float)
    if lo.shape != hi.shape or not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ParameterError(
            "ci_high", "finite CI ends, as many as ci_low's", (lo.tolist(), hi.tolist())
        )
    if (hi < lo).any():
        raise ParameterError(
            "ci_high", "every CI's high end >= its low end", (lo.tolist(), hi.tolist())
        )
    return (hi - lo) / (2 * _z(level))


def random_effects(
    effects: Sequence[float],
    ci_low: Sequence[float],
    ci_high: Sequence[float],
    *,
    level: float = 0.95,
) -> RandomEffects:
    """The DerSimonian-Laird random-effects summary of effects given with their CIs.

    Parameters
    ----------
    effects : sequence of float
        One effect per study.
    ci_low, ci_high : sequence of float
        Each effect's CI; its SE is :func:`se_from_ci`.
    level : float, keyword-only
        The level of the CIs given and of the summary's CI (default 0.95).

    Returns
    -------
    RandomEffects

    Raises
    ------
    ParameterError
        ``effects``: fewer than two, not finite, or a length other than the CIs'; a CI of
        zero width (no SE); the CIs as :func:`se_from_ci`.

    Notes
    -----
    ``combine_effects(effect, se**2, method_re="dl")``: Q is its ``q``; tau^2 its
    ``tau2``, truncated at 0 as DerSimonian and Laird do (statsmodels 0.15 returns the
    negative moment estimate when Q < df and weights with it), in which case the summary
    is the fixed-effect one; I^2 = max(0, (Q - df) / Q); the CI the normal one. Exploratory:
    the studies of one package share heads and models, so they are not independent.

    Examples
    --------
    Two studies that agree have Q below its df, so tau^2 = 0 and I^2 = 0, and the summary
    is the inverse-variance mean:

    >>> from analysis.compare.meta import random_effects
    >>> r = random_effects([0.10, 0.12], [0.0, 0.02], [0.2, 0.22])
    >>> round(r.estimate, 3), r.tau2, r.i2, r.q_df
    (0.11, 0.0, 0.0, 1)
    """
    eff = np.asarray(effects, dtype=float)
    se = se_from_ci(ci_low, ci_high, level=level)
    if eff.ndim != 1 or eff.shape != se.shape or len(eff) < 2 or not np.isfinite(eff).all():
        raise ParameterError(
            "effects", f"at least two finite effects, one per CI ({len(se)})", eff.tolist()
        )
    if (se <= 0).any():
        raise ParameterError(
            "ci_low", "CIs of positive width (each gives its study's SE)", se.tolist()
        )
    alpha = 1 - level
    res = combine_effects(eff, se**2, method_re="dl", alpha=alpha)
    ci_fe, ci_re, _, _ = res.conf_int(alpha=alpha, use_t=False)
    q = float(res.q)
    df = len(eff) - 1
    tau2 = float(res.tau2)
    if tau2 > 0:
        estimate, sd, (lo, hi) = float(res.mean_effect_re), float(res.sd_eff_w_re), ci_re
    else:  # DL truncates tau^2 at 0, where the summary is the fixed-effect one
        tau2 = 0.0
        estimate, sd, (lo, hi) = float(res.mean_effect_fe), float(res.sd_eff_w_fe), ci_fe
    return RandomEffects(
        k=len(eff),
        estimate=estimate,
        se=sd,
        ci_low=float(lo),
        ci_high=float(hi),
        tau2=tau2,
        i2=max(0.0, (q - df) / q) if q > 0 else 0.0,
        q=q,
        q_df=df,
        q_p=float(stats.chi2.sf(q, df)),
        level=level,
    )
