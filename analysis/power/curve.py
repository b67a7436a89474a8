"""Power curves of the pre-specified comparison and their closed-form approximation.

:func:`power_curve` runs :func:`~analysis.power.simulate.simulated_decisions` over a grid
of effect shares and native head shares; :func:`approximate_power` is the normal
approximation that explains the simulated power (see its Notes and ``docs/prereg.md``);
:func:`minimum_detectable_effect` reads a curve.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.power.simulate import simulated_decisions
from analysis.power.spec import PowerSpec
from analysis.validation import ParameterError, check_random_state

__all__ = [
    "POWER_CURVE_COLUMNS",
    "approximate_power",
    "minimum_detectable_effect",
    "power_curve",
]

#: The default sizes (frozen), the default of :func:`approximate_power`.
_BUILT_IN_SIZES = StudySizes()
#: Columns of :func:`power_curve`'s table.
POWER_CURVE_COLUMNS: tuple[str, ...] = (
    "effect",
    "native_head_share",
    "icc",
    "residual_sd",
    "n_heads",
    "n_held_out",
    "native_features",
    "simulations",
    "false_positive_rate",
    "power",
    "power_se",
    "mean_effect_null",
    "mean_effect_alternative",
    "sd_effect_alternative",
    "z_approx",
    "power_approx",
    "seconds",
)


def approximate_power(
    sizes: StudySizes = _BUILT_IN_SIZES,
    *,
    effect: float = 0.10,
    icc: float = 0.5,
    native_head_share: float = 0.5,
    target_power: float = 0.8,
) -> dict[str, float]:
    """Normal approximation to the power of the decision (point outcomes, oracle fits).

    Parameters
    ----------
    sizes : StudySizes
        ``n_held_out`` (H), ``cells_per_head`` (K), ``alpha`` and the family size m.
    effect, icc, native_head_share : float, keyword-only
        As in :func:`~analysis.power.simulate.simulate_study` (``residual_sd`` cancels).
    target_power : float, keyword-only

    Returns
    -------
    dict
        ``z`` (expected effect over its cluster-bootstrap SE), ``power_holm`` (one-sided
        test at ``alpha / m``, the Holm threshold when M0<M1 has the smallest p),
        ``power_unadjusted`` (at ``alpha``, Holm's last step), and
        ``held_out_for_target``: held-out heads for ``target_power`` at ``alpha / m``.

    Notes
    -----
    With ``eps = effect``, ``s = native_head_share``, ``rho = icc``, the head mean
    ``D_h`` of the per-cell loss difference of M0 and M1 (true coefficients) has

    ``var D_h / V^2 = 4 eps rho (1 - eps) (s + (1 - s)/K) + 4 eps (1 - rho)(1 - eps)/K
    + eps^2 (2 s^2 + (4 s (1 - s) + 2 (1 - s)^2)/K)``,

    so ``z = sqrt(H) eps / sqrt(var D_h / V^2)`` and the power is about
    ``Phi(z - z_(1 - alpha'))``; the derivation, ``z = 1.27`` at the defaults and why the
    simulated power is lower: docs/prereg.md, section "Why the power is low: the variance
    of the held-out loss difference".

    Examples
    --------
    >>> from analysis.power.inputs import StudySizes
    >>> from analysis.power.curve import approximate_power
    >>> approx = approximate_power()  # the default sizes: H = 18, K = 18, 3 pairs
    >>> round(approx["z"], 2), round(approx["power_holm"], 3), round(approx["held_out_for_target"])
    (1.27, 0.197, 98)
    >>> bigger = approximate_power(StudySizes(n_heads=144, n_held_out=72))  # 4 H: 2 z
    >>> round(bigger["z"] / approx["z"], 6)
    2.0
    """
    # validated by name as the simulation's assumptions are (residual_sd cancels)
    PowerAssumptions(effect=effect, icc=icc, native_head_share=native_head_share)
    if not (isinstance(target_power, (int, float)) and 0 < target_power < 1):
        raise ParameterError("target_power", "a number in (0, 1)", target_power)
    from scipy.stats import norm

    e, s, rho, K, H = effect, native_head_share, icc, sizes.cells_per_head, sizes.n_held_out
    m = len(sizes.family)
    var_h = (
        4 * e * rho * (1 - e) * (s + (1 - s) / K)
        + 4 * e * (1 - rho) * (1 - e) / K
        + e**2 * (2 * s**2 + (4 * s * (1 - s) + 2 * (1 - s) ** 2) / K)
    )
    z = float(np.sqrt(H) * e / np.sqrt(var_h))
    z_holm = norm.ppf(1 - sizes.alpha / m)
    needed = ((z_holm + norm.ppf(target_power)) / (e / np.sqrt(var_h))) ** 2
    return {
        "z": z,
        "power_holm": float(norm.cdf(z - z_holm)),
        "power_unadjusted": float(norm.cdf(z - norm.ppf(1 - sizes.alpha))),
        "held_out_for_target": float(needed),
    }


def _offset(
    progress: Callable[[int, int], None] | None, done: int, total: int
) -> Callable[[int, int], None] | None:
    """Report one batch's ``progress(k, n)`` as ``progress(done + k, total)``."""
    if progress is None:
        return None
    return lambda k, _n: progress(done + k, total)


def power_curve(
    widths: pd.DataFrame,
    spec: PowerSpec,
    *,
    effects: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3),
    head_shares: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75),
    workers: int = 1,
    progress=None,
) -> pd.DataFrame:
    """Power over a grid of effect shares and native head shares, with the null's FPR.

    Parameters
    ----------
    widths : pandas.DataFrame
        From :func:`~analysis.power.widths.load_widths`.
    spec : PowerSpec
        ``simulations`` studies per null and per (effect, head share) alternative of
        ``sizes``; ``assumptions`` give everything but the effect and the head share,
        which the grid sets; ``random_state``.
    effects, head_shares : tuple of float, keyword-only
    workers : int, keyword-only
        Processes (results do not depend on it).
    progress : callable or None, keyword-only
        Called as ``progress(done, total)`` after each simulated study.

    Returns
    -------
    pandas.DataFrame
        One row per (head share, effect) with :data:`POWER_CURVE_COLUMNS`: the null
        (simulated once per head share, shared by its rows) gives
        ``false_positive_rate`` and ``mean_effect_null``; ``power_se`` is the binomial
        SE; ``z_approx`` / ``power_approx`` come from :func:`approximate_power`
        (``power_holm``).

    Examples
    --------
    One effect and one head share, four studies each (a real curve needs hundreds):

    >>> from analysis.datasets import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.curve import power_curve
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(simulations=4, sizes=sizes, random_state=0)
    >>> curve = power_curve(widths, spec, effects=(0.5,), head_shares=(0.5,))
    >>> cols = ["effect", "native_head_share", "false_positive_rate", "power", "power_approx"]
    >>> print(curve[cols].round(3).to_string(index=False))
     effect  native_head_share  false_positive_rate  power  power_approx
        0.5                0.5                  0.0    0.5         0.352
    """
    if not isinstance(spec, PowerSpec):
        raise ParameterError("spec", "a PowerSpec", type(spec).__name__)
    sizes, assumptions, simulations = spec.sizes, spec.assumptions, spec.simulations
    effects = tuple(effects)
    head_shares = tuple(head_shares)
    if not effects or not head_shares:
        raise ParameterError("effects/head_shares", "non-empty sequences", (effects, head_shares))
    for e in effects:
        if not (isinstance(e, (int, float)) and 0 < e < 1):
            raise ParameterError("effects", "shares in (0, 1)", e)
    per_share = {}
    for s in head_shares:
        try:
            per_share[s] = dataclasses.replace(assumptions, native_head_share=s)
        except ParameterError as exc:
            raise ParameterError("head_shares", exc.allowed, s) from None
    rng = check_random_state(spec.random_state)
    total = len(head_shares) * (1 + len(effects)) * simulations
    done = 0
    rows = []
    for s in head_shares:
        a = per_share[s]
        at = dataclasses.replace(spec, assumptions=a, random_state=rng)
        null = simulated_decisions(
            widths,
            at,
            share=0.0,
            workers=workers,
            progress=_offset(progress, done, total),
        )
        done += simulations
        for e in effects:
            t0 = time.perf_counter()
            alt = simulated_decisions(
                widths,
                at,
                share=e,
                workers=workers,
                progress=_offset(progress, done, total),
            )
            done += simulations
            power = float(alt["adds_information"].mean())
            approx = approximate_power(sizes, effect=e, icc=a.icc, native_head_share=s)
            rows.append(
                {
                    "effect": e,
                    "native_head_share": s,
                    "icc": a.icc,
                    "residual_sd": a.residual_sd,
                    "n_heads": sizes.n_heads,
                    "n_held_out": sizes.n_held_out,
                    "native_features": sizes.feature_count("native", a),
                    "simulations": simulations,
                    "false_positive_rate": float(null["adds_information"].mean()),
                    "power": power,
                    "power_se": float(np.sqrt(power * (1 - power) / simulations)),
                    "mean_effect_null": float(null["effect"].mean()),
                    "mean_effect_alternative": float(alt["effect"].mean()),
                    "sd_effect_alternative": float(alt["effect"].std(ddof=1))
                    if simulations > 1
                    else float("nan"),
                    "z_approx": approx["z"],
                    "power_approx": approx["power_holm"],
                    "seconds": time.perf_counter() - t0,
                }
            )
    return pd.DataFrame(rows, columns=list(POWER_CURVE_COLUMNS))


def minimum_detectable_effect(curve: pd.DataFrame, *, target: float = 0.8) -> pd.DataFrame:
    """Smallest effect share reaching ``target`` power, per native head share.

    Parameters
    ----------
    curve : pandas.DataFrame
        From :func:`power_curve` (columns ``effect``, ``native_head_share``, ``power``).
    target : float, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``native_head_share``, ``mde`` (linear interpolation of power in the effect
        between the first grid point at or above ``target`` and the one below it; NaN when
        no grid point reaches it, the effect itself when the smallest one does) and
        ``reached`` (bool).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.power.curve import minimum_detectable_effect
    >>> curve = pd.DataFrame({
    ...     "native_head_share": [0.5, 0.5, 0.5, 0.0, 0.0, 0.0],
    ...     "effect": [0.1, 0.2, 0.3, 0.1, 0.2, 0.3],
    ...     "power": [0.3, 0.7, 0.9, 0.1, 0.2, 0.4],
    ... })
    >>> print(minimum_detectable_effect(curve))  # 0.2 + (0.8 - 0.7) / (0.9 - 0.7) * 0.1
       native_head_share   mde  reached
    0                0.0   NaN    False
    1                0.5  0.25     True
    """
    if not (isinstance(target, (int, float)) and 0 < target < 1):
        raise ParameterError("target", "a number in (0, 1)", target)
    for c in ("effect", "native_head_share", "power"):
        if c not in curve.columns:
            raise ParameterError("curve", f"a power_curve table with a column {c}", list(curve))
    rows = []
    for s, g in curve.groupby("native_head_share", sort=True):
        g = g.sort_values("effect")
        e = g["effect"].to_numpy(float)
        p = g["power"].to_numpy(float)
        hit = np.flatnonzero(p >= target)
        if hit.size == 0:
            mde = float("nan")
        elif hit[0] == 0:
            mde = float(e[0])
        else:
            i = hit[0]
            mde = float(e[i - 1] + (target - p[i - 1]) * (e[i] - e[i - 1]) / (p[i] - p[i - 1]))
        rows.append({"native_head_share": float(s), "mde": mde, "reached": bool(hit.size)})
    return pd.DataFrame(rows)
