"""Simulated rejection rates with exact binomial intervals (:class:`Rate`).

Split from :mod:`analysis.power.error_rates`, which re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.validation import ParameterError, check_int

__all__ = ["Rate", "clopper_pearson"]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion ``k / n``.

    ``scipy.stats.binomtest(k, n).proportion_ci(level, method="exact")``: the
    ``(1 - level) / 2`` quantile of ``Beta(k, n - k + 1)`` (0 when k = 0) and the
    ``(1 + level) / 2`` quantile of ``Beta(k + 1, n - k)`` (1 when k = n).

    Examples
    --------
    >>> from analysis.power.rates import clopper_pearson
    >>> low, high = clopper_pearson(0, 10)  # the upper end is 1 - 0.025^(1/10)
    >>> low, round(high, 6), round(1 - 0.025 ** (1 / 10), 6)
    (0.0, 0.308497, 0.308497)
    >>> tuple(round(x, 4) for x in clopper_pearson(5, 10))  # symmetric about 1/2
    (0.1871, 0.8129)
    """
    from scipy.stats import binomtest

    k = check_int("k", k, minimum=0)
    n = check_int("n", n, minimum=1)
    if k > n:
        raise ParameterError("k", f"an integer in [0, {n}]", k)
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Rate:
    """A simulated rejection rate with its Clopper-Pearson 95% interval.

    Attributes
    ----------
    share : float
        The effect share it was simulated at.
    rate : float
        ``k / n``.
    k, n : int
    ci_low, ci_high : float
    mean_effect, mean_effect_se : float
        Mean of the simulated held-out effects and its standard error.
    p_below_alpha : float
        Share of studies whose unadjusted one-sided p is below alpha (the pair's own
        bootstrap test, without Holm and without the CI condition of the decision).
    mean_base_value : float
        Mean held-out loss of the base model (M0) over the studies (loss units; NaN
        when the rows do not carry it).
    refit_p_below_alpha : float
        Share of studies whose refit-bootstrap sensitivity p is below alpha (NaN
        without refit replicates).

    Examples
    --------
    From four simulated decisions (the rows of
    :func:`~analysis.power.simulate.simulated_decisions`):

    >>> import pandas as pd
    >>> from analysis.power.rates import Rate
    >>> rows = pd.DataFrame({
    ...     "adds_information": [True, False, True, True], "effect": [0.3, -0.1, 0.2, 0.4],
    ...     "p_value": [0.01, 0.6, 0.04, 0.001],
    ... })
    >>> rate = Rate.of(0.2, rows)
    >>> rate.k, rate.n, rate.rate, round(rate.mean_effect, 3), rate.p_below_alpha
    (3, 4, 0.75, 0.2, 0.75)
    >>> print(rate)  # the rate and its Clopper-Pearson 95% interval
    0.750 [0.194, 0.994]
    """

    share: float
    rate: float
    k: int
    n: int
    ci_low: float
    ci_high: float
    mean_effect: float
    mean_effect_se: float
    p_below_alpha: float = float("nan")
    mean_base_value: float = float("nan")
    refit_p_below_alpha: float = float("nan")

    @classmethod
    def of(cls, share: float, rows: pd.DataFrame, alpha: float = 0.05) -> Rate:
        k = int(rows["adds_information"].sum())
        n = len(rows)
        lo, hi = clopper_pearson(k, n)
        eff = rows["effect"].to_numpy(float)
        se = float(eff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        p_low = float((rows["p_value"] < alpha).mean()) if "p_value" in rows else float("nan")
        base = float(rows["base_value"].mean()) if "base_value" in rows else float("nan")
        refit = float("nan")
        if "refit_p_value" in rows and rows["refit_p_value"].notna().any():
            refit = float((rows["refit_p_value"].dropna() < alpha).mean())
        return cls(float(share), k / n, k, n, lo, hi, float(eff.mean()), se, p_low, base, refit)

    @property
    def half_width(self) -> float:
        return 0.5 * (self.ci_high - self.ci_low)

    def to_dict(self) -> dict:
        return {
            "share": self.share,
            "rate": self.rate,
            "k": self.k,
            "n": self.n,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "mean_effect": self.mean_effect,
            "mean_effect_se": self.mean_effect_se,
            "p_below_alpha": self.p_below_alpha,
            "mean_base_value": self.mean_base_value,
            "refit_p_below_alpha": self.refit_p_below_alpha,
        }

    def __str__(self) -> str:
        return f"{self.rate:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]"
