"""Simulated rejection rates with exact binomial intervals (:class:`Rate`), and the check
of the simulated M0 loss against the real one (:func:`m0_loss_check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.validation import ParameterError, check_int

__all__ = [
    "M0_LOSS_TOLERANCE",
    "Rate",
    "SimulatorMismatchWarning",
    "clopper_pearson",
    "m0_loss_check",
]


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


#: Largest relative difference between the simulated and the reference M0 loss that
#: passes without a warning (``|simulated - reference| / reference``).
M0_LOSS_TOLERANCE = 0.25


class SimulatorMismatchWarning(UserWarning):
    """The simulated studies' M0 loss differs from the real one by more than 25%.

    Examples
    --------
    >>> import warnings
    >>> from analysis.power.rates import SimulatorMismatchWarning, m0_loss_check
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn(m0_loss_check(0.32, 0.0137), SimulatorMismatchWarning)
    >>> caught[0].category.__name__
    'SimulatorMismatchWarning'
    """


def m0_loss_check(
    simulated: float | None,
    reference: float | None,
    tolerance: float = M0_LOSS_TOLERANCE,
    *,
    fitted: bool = False,
) -> str | None:
    """The warning text when the simulated M0 loss is more than ``tolerance`` (relative)
    away from the reference, else None (also None when either is unknown). ``fitted``:
    the simulator was already fitted to data, so the text does not suggest fitting it.

    Examples
    --------
    >>> from analysis.power.rates import m0_loss_check
    >>> m0_loss_check(0.012, 0.010) is None  # 20% above: passes
    True
    >>> print(m0_loss_check(0.32, 0.0137))  # doctest: +ELLIPSIS
    the simulator's M0 held-out loss (0.32) is 23.4x the reference M0 loss (0.0137)...
    """
    if simulated is None or reference is None:
        return None
    if not (np.isfinite(simulated) and np.isfinite(reference)) or reference <= 0:
        return None
    rel = abs(simulated - reference) / reference
    if rel <= tolerance:
        return None
    advice = (
        "the fitted and calibrated simulator does not reproduce the data's loss: check its "
        "calibration record (converged?) and raise --calibration-studies or --simulations"
        if fitted
        else "fit the assumptions: `attnrank validate-comparison --fit training`"
    )
    return (
        f"the simulator's M0 held-out loss ({simulated:.3g}) is {simulated / reference:.3g}x "
        f"the reference M0 loss ({reference:.3g}), more than {tolerance:.0%} away: the "
        f"simulated studies do not resemble the data, so their power and sizes are not the "
        f"design's ({advice})"
    )
