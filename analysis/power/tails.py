"""Scenarios of the method-3 power model: heavy-tailed residuals and covariate shift.

The simulated study (:func:`~analysis.power.simulate.simulate_study`) draws the head and
cell parts of its residual from a normal law by default; with
``PowerAssumptions.tail_df`` they are unit-variance Student-t draws with that many
degrees of freedom, the df fitted to the pilot's M0 residual kurtosis
(:func:`df_from_kurtosis`). ``PowerAssumptions.covariate_shift`` shifts the held-out
heads' covariates (the baseline entropy and the latent of every native / intrinsic
column) by that many SDs relative to the training heads, the outcome following them;
``held_out_signal`` scales the signal on held-out heads (1: the training heads' law, 0: the
signal does not carry over, the rich model then harms), which places the true effect
below the cost of estimation (at -SESOI). Each is 'off' at its default, and the
simulation's random numbers are then those of a design without them.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.validation import ParameterError

__all__ = [
    "COVARIATE_SHIFT",
    "DEFAULT_TAIL_DF",
    "MIN_TAIL_DF",
    "check_scenario_fields",
    "df_from_kurtosis",
    "excess_kurtosis",
    "unit_draws",
]

#: The smallest df a fitted tail takes (the kurtosis of a t law is finite above 4).
MIN_TAIL_DF = 4.5
#: The df of the heavy-tail scenario when no pilot residuals are known.
DEFAULT_TAIL_DF = 5.0
#: The covariate-shift scenario's shift of the held-out heads' covariates, in SDs.
COVARIATE_SHIFT = 0.5


def excess_kurtosis(x: np.ndarray) -> float:
    """Excess kurtosis ``m4 / m2^2 - 3`` of finite values (NaN with fewer than 4).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.power.tails import excess_kurtosis
    >>> round(excess_kurtosis(np.array([-1.0, 1.0] * 50)), 6)  # two points: -2
    -2.0
    """
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if x.size < 4:
        return float("nan")
    d = x - x.mean()
    m2 = float(np.mean(d**2))
    return float(np.mean(d**4) / m2**2 - 3.0) if m2 > 0 else float("nan")


def df_from_kurtosis(kurtosis: float) -> float | None:
    """Degrees of freedom of the Student-t law with this excess kurtosis.

    Returns
    -------
    float or None
        ``4 + 6 / kurtosis`` (the t law's excess kurtosis is ``6 / (df - 4)``), at least
        :data:`MIN_TAIL_DF`; None (normal tails) when the kurtosis is not positive or
        not finite.

    Examples
    --------
    >>> from analysis.power.tails import df_from_kurtosis
    >>> df_from_kurtosis(6.0), df_from_kurtosis(100.0), df_from_kurtosis(-0.2)
    (5.0, 4.5, None)
    """
    if kurtosis is None or not math.isfinite(kurtosis) or kurtosis <= 0:
        return None
    return max(MIN_TAIL_DF, 4.0 + 6.0 / float(kurtosis))


def unit_draws(rng: np.random.Generator, size: int, df: float | None) -> np.ndarray:
    """``size`` draws of mean 0 and variance 1: standard normal (``df`` None), else
    Student-t with ``df`` degrees of freedom scaled by ``sqrt((df - 2) / df)``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.power.tails import excess_kurtosis, unit_draws
    >>> x = unit_draws(np.random.default_rng(0), 200_000, 6.0)  # kurtosis 6 / (6 - 4) = 3
    >>> round(float(x.var()), 1), excess_kurtosis(x) > 2
    (1.0, True)
    >>> same = unit_draws(np.random.default_rng(0), 3, None)  # normal: rng.standard_normal
    >>> bool(np.all(same == np.random.default_rng(0).standard_normal(3)))
    True
    """
    if df is None:
        return rng.standard_normal(size)
    return rng.standard_t(df, size) * np.sqrt((df - 2.0) / df)


def check_scenario_fields(
    tail_df: float | None, covariate_shift: float, held_out_signal: float
) -> None:
    """Validate the scenario fields of ``PowerAssumptions`` by name.

    Raises
    ------
    ParameterError
        ``tail_df``: not None nor a number > 2; ``covariate_shift``: not finite;
        ``held_out_signal``: not a finite number in [-1, 1].

    Examples
    --------
    >>> from analysis.power.tails import check_scenario_fields
    >>> check_scenario_fields(None, 0.0, 1.0)
    >>> check_scenario_fields(2.0, 0.0, 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: tail_df: expected None (normal) or a number > 2...
    """

    def num(v: object) -> bool:
        return isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool)

    if tail_df is not None and not (num(tail_df) and math.isfinite(tail_df) and tail_df > 2):
        raise ParameterError("tail_df", "None (normal) or a number > 2", tail_df)
    if not (num(covariate_shift) and math.isfinite(covariate_shift)):
        raise ParameterError("covariate_shift", "a finite number of SDs", covariate_shift)
    if not (num(held_out_signal) and -1 <= held_out_signal <= 1):
        raise ParameterError("held_out_signal", "a number in [-1, 1]", held_out_signal)
