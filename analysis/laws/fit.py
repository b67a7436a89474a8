"""Slope fits of ``ln r`` against ``ln(1 + beta)`` or ``ln beta`` from certified brackets.

Fit
---
Per (d, eps), outcome ``y = ln r`` observed as ``[ln lo, ln hi]``; ``lo = 0`` (possible
only for eps >= 1 or an empty row, never for eps < 1, where ``lo >= 1``) is left-censored:
``ln lo = -inf``. ``x = ln(1 + beta)`` or ``ln beta``. Four numbers are reported:

1. ``slope``: censored-Gaussian (interval) regression by maximum likelihood
   (:class:`analysis.compare.estimators.IntervalRegression`), with a 95% percentile CI
   from a bootstrap that resamples seeds within each beta (B = ``n_boot``, seeded). Not
   the Wald/sandwich CI: when the brackets are wide compared with the seed-to-seed
   spread, the ML scale ``sigma`` is small or collapses to 0 (when a line threads every
   bracket the supremum of the likelihood is reached only as ``sigma -> 0``, at the
   max-min-margin line, which is then reported with ``degenerate = True``); the MLE then
   sits at or near the boundary of the parameter space and Hessian-based standard errors
   are unreliable. The bootstrap needs only independent observations, which the design
   gives (one independent cloud per (beta, seed); clustering by seed would be needed, with
   only 2-3 clusters, had the clouds been shared across beta).
2. ``slope_mid``: OLS on the log-midpoints ``(ln lo + ln hi) / 2`` (sensitivity), with an
   HC1 (heteroscedasticity-robust) CI.
3. ``slope_set``: the sharp identified set of the least-squares slope of the *true*
   ``ln r`` on x given only that each lies in its bracket (closed form: docs/method.md
   section 6, "Identified set"). It needs no model and says how far the certified
   brackets alone pin the slope; it is wide when the brackets are.
4. ``slope_threading``: the least and largest slope of a line lying inside *every*
   bracket (NaN when none does). It assumes the law is exact on the sweep (no
   seed-to-seed noise, no curvature) and is then the set of slopes the brackets cannot
   tell apart; when it is non-empty the interval-ML fit is degenerate (item 1) and its
   slope is one arbitrary-but-central member of this set.

The CI is reported, never required to cover the asymptotic value: finite n and beta bend
the curve (docs/guide/conventions.md, "Geometric laws").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.compare.estimators import IntervalRegression
from analysis.laws.theory import FAMILIES, harmonic_rank, harmonic_slope, theory_slope
from analysis.validation import ParameterError, check_choice, check_int

__all__ = [
    "PAPER_SLOPES",
    "QUICK_TOLERANCE",
    "TOLERANCE",
    "LawFit",
    "fit_law",
    "fit_slope",
    "identified_slopes",
    "law_x",
    "local_slopes",
    "log_bounds",
    "threading_slopes",
]

#: The paper's fitted spherical slopes (docs/method.md section 6), for the table.
PAPER_SLOPES: dict[str, dict[int, float]] = {"spherical": {2: 0.504, 3: 1.012, 4: 1.381}}
#: Targets: |slope - theory| <= tolerance (issue 7).
TOLERANCE: dict[str, float] = {"spherical": 0.15, "ball": 0.25}
QUICK_TOLERANCE = 0.25


def law_x(family: str, beta: np.ndarray | float) -> np.ndarray:
    """The regressor: ``ln(1 + beta)`` (spherical) or ``ln beta`` (ball).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.laws import law_x
    >>> law_x("spherical", [1.0, 3.0]).round(6).tolist(), law_x("ball", np.e).item()
    ([0.693147, 1.386294], 1.0)
    """
    beta = np.asarray(beta, float)
    return np.log1p(beta) if family == "spherical" else np.log(beta)


def log_bounds(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[ln lo, ln hi]``; ``lo = 0`` becomes ``-inf`` (left-censored).

    Examples
    --------
    >>> from analysis.laws import log_bounds
    >>> lo, hi = log_bounds([0, 2], [1, 4])  # lo = 0: left-censored
    >>> lo.round(6).tolist(), hi.round(6).tolist()
    ([-inf, 0.693147], [0.0, 1.386294])
    """
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    if np.any(upper < 1) or np.any(lower > upper) or np.any(lower < 0):
        raise ParameterError("brackets", "0 <= lower <= upper with upper >= 1", (lower, upper))
    with np.errstate(divide="ignore"):
        return np.log(lower), np.log(upper)


def _threading_line(x: np.ndarray, ylo: np.ndarray, yhi: np.ndarray) -> tuple[float, float, float]:
    """The line ``a + b x`` through every closed bracket (``lo == hi``, a point) that
    maximises the least margin ``t`` to the ends of the others (an LP).

    Returns ``(a, b, t)``; ``t > 0`` means such a line passes exactly through the points and
    strictly inside every other bracket (``t = inf`` when all brackets are points on a line);
    ``t = -inf`` when no line passes through the points.
    """
    from scipy.optimize import linprog

    point = ylo == yhi
    iv = ~point
    fin = iv & np.isfinite(ylo)
    ones = np.ones_like(x)
    # variables (a, b, t); maximise t  <=>  minimise -t
    A_ub = np.vstack(
        [
            np.column_stack([-ones[fin], -x[fin], ones[fin]]),  # lo + t <= a + b x
            np.column_stack([ones[iv], x[iv], ones[iv]]),  # a + b x + t <= hi
        ]
    )
    b_ub = np.concatenate([-ylo[fin], yhi[iv]])
    A_eq = np.column_stack([ones[point], x[point], 0 * ones[point]]) if point.any() else None
    b_eq = ylo[point] if point.any() else None
    res = linprog(
        [0.0, 0.0, -1.0],
        A_ub=A_ub if iv.any() else None,
        b_ub=b_ub if iv.any() else None,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=[(None, None)] * 2 + [(None, 10.0)],
    )
    if res.status != 0:
        return math.nan, math.nan, -math.inf
    a, b, t = res.x
    return float(a), float(b), (math.inf if not iv.any() else float(t))


def threading_slopes(x: np.ndarray, ylo: np.ndarray, yhi: np.ndarray) -> tuple[float, float]:
    """Least and largest slope of a line ``a + b x`` inside every bracket (two LPs).

    ``(nan, nan)`` when no line passes through all brackets. Unlike
    :func:`identified_slopes` this assumes the law holds exactly (no seed-to-seed noise).

    Examples
    --------
    Brackets around ``r = 1 + beta`` (slope 1 in ``ln(1 + beta)``):

    >>> from analysis.laws import law_x, log_bounds, threading_slopes
    >>> x = law_x("spherical", [1.0, 3.0, 7.0, 15.0])
    >>> ylo, yhi = log_bounds([2, 4, 8, 16], [3, 5, 9, 17])
    >>> [round(b, 3) for b in threading_slopes(x, ylo, yhi)]
    [0.839, 1.029]
    """
    from scipy.optimize import linprog

    fin = np.isfinite(ylo)
    ones = np.ones_like(x)
    A_ub = np.vstack([np.column_stack([-ones[fin], -x[fin]]), np.column_stack([ones, x])])
    b_ub = np.concatenate([-ylo[fin], yhi])
    out = []
    for sign in (1.0, -1.0):
        res = linprog([0.0, sign], A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * 2)
        if res.status != 0:
            return math.nan, math.nan
        out.append(float(res.x[1]))
    return out[0], out[1]


def _ml_fit(
    x: np.ndarray, ylo: np.ndarray, yhi: np.ndarray
) -> tuple[float, float, float, bool, bool]:
    """Interval-ML ``(intercept, slope, sigma, converged, degenerate)``.

    When some line passes strictly inside every bracket (and exactly through the closed
    ones; touching an open bracket's end is enough when closed ones exist), the
    likelihood's supremum is reached only as ``sigma -> 0``, along lines whose
    least margin to the bracket ends grows fastest: the limit is the max-min-margin
    (Chebyshev) line, returned with ``sigma = 0`` and ``degenerate = True``. Otherwise the
    MLE has ``sigma > 0``.
    """
    a, b, t = _threading_line(x, ylo, yhi)
    # With closed brackets (points) a line through them makes the likelihood unbounded
    # (density ~ 1/sigma) even when it only touches an open bracket's end (t = 0: that
    # bracket keeps probability 1/2); without points the supremum needs t > 0.
    has_points = bool(np.any(ylo == yhi))
    if t > 1e-12 or (has_points and t >= -1e-12):
        return a, b, 0.0, True, True
    X = np.column_stack([np.ones_like(x), x])
    model = IntervalRegression(ylo, yhi, X)
    mid = np.where(np.isfinite(ylo), 0.5 * (ylo + yhi), yhi)
    beta, *_ = np.linalg.lstsq(X, mid, rcond=None)
    s = max(float(np.std(mid - X @ beta)), 1e-2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convergence is reported in ``converged``
        res = model.fit(
            start_params=np.append(beta, np.log(s)),
            method="bfgs",
            maxiter=500,
            disp=0,
            skip_hessian=True,
            gtol=1e-8,
        )
        params = np.asarray(res.params, float)
        conv = bool(res.mle_retvals.get("converged", True))
        if not conv:
            res = model.fit(
                start_params=params, method="nm", maxiter=4000, disp=0, skip_hessian=True
            )
            params = np.asarray(res.params, float)
            conv = bool(res.mle_retvals.get("converged", True))
    return float(params[0]), float(params[1]), float(np.exp(params[2])), conv, False


def identified_slopes(x: np.ndarray, ylo: np.ndarray, yhi: np.ndarray) -> tuple[float, float]:
    """Sharp bounds of the least-squares slope of y on x over all ``y_i in [ylo_i, yhi_i]``.

    Examples
    --------
    >>> from analysis.laws import identified_slopes, law_x, log_bounds
    >>> x = law_x("spherical", [1.0, 3.0, 7.0, 15.0])
    >>> ylo, yhi = log_bounds([2, 4, 8, 16], [3, 5, 9, 17])
    >>> [round(b, 3) for b in identified_slopes(x, ylo, yhi)]  # wider than the threading set
    [0.792, 1.043]
    """
    w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    lo_end = np.where(w > 0, ylo, yhi)
    hi_end = np.where(w > 0, yhi, ylo)
    with np.errstate(invalid="ignore"):
        return float(np.sum(w * lo_end)), float(np.sum(w * hi_end))


def fit_slope(
    x: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    *,
    strata: Sequence[Any] | None = None,
    n_boot: int = 499,
    random_state: int = 0,
) -> dict[str, Any]:
    """Slope of ``ln r`` on ``x`` from integer brackets ``[lower, upper]``.

    Parameters
    ----------
    x : array (n,)
        Regressor (``ln(1 + beta)`` or ``ln beta``); at least two distinct values.
    lower, upper : array (n,)
        Certified brackets (integers, ``0 <= lower <= upper``, ``upper >= 1``).
    strata : array (n,), optional
        Bootstrap strata (the beta of each row): rows are resampled within each stratum,
        keeping the design. Default: one stratum per distinct x.
    n_boot : int
        Bootstrap replicates for the interval-ML CI (0 skips it: CI is NaN).
    random_state : int
        Seeds the bootstrap's ``numpy.random.Generator``.

    Returns
    -------
    dict
        ``intercept``, ``slope``, ``ci`` (95% percentile bootstrap), ``sigma`` (ML
        residual scale), ``converged``, ``degenerate`` (a line threads every bracket:
        ``slope`` is the sigma -> 0 limit of the ML fit, see :func:`_ml_fit`),
        ``slope_mid``, ``ci_mid`` (OLS on log-midpoints, HC1), ``slope_set`` (identified
        set), ``slope_threading`` (slopes of lines inside every bracket, NaN if none),
        ``n_obs``, ``n_boot``.

    Notes
    -----
    See the module docstring for the estimators and why the interval-ML CI is a
    bootstrap. Rows with ``lower = 0`` enter the ML fit left-censored; they make the
    midpoint and the identified set undefined (-inf / NaN) and are reported as such.

    Examples
    --------
    >>> from analysis.laws import fit_slope, law_x
    >>> x = law_x("spherical", [1.0, 3.0, 7.0, 15.0])
    >>> r = fit_slope(x, [2, 4, 8, 16], [3, 5, 9, 17], n_boot=0)  # n_boot=0: no CI
    >>> round(r["slope"], 3), r["degenerate"], [round(b, 3) for b in r["slope_threading"]]
    (1.0, True, [0.839, 1.029])
    """
    import statsmodels.api as sm

    x = np.asarray(x, float)
    ylo, yhi = log_bounds(lower, upper)
    if x.shape != ylo.shape or x.ndim != 1:
        raise ParameterError("x", "one value per bracket", (x.shape, ylo.shape))
    if np.unique(x).size < 2:
        raise ParameterError("x", "at least two distinct values", np.unique(x).tolist())
    n_boot = check_int("n_boot", n_boot, minimum=0)
    intercept, slope, sigma, conv, degenerate = _ml_fit(x, ylo, yhi)
    strata = x if strata is None else np.asarray(strata)
    ci = (math.nan, math.nan)
    if n_boot:
        rng = np.random.default_rng(random_state)
        groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
        reps = []
        for _ in range(n_boot):
            idx = np.concatenate([rng.choice(g, size=g.size, replace=True) for g in groups])
            reps.append(_ml_fit(x[idx], ylo[idx], yhi[idx])[1])
        ci = tuple(float(v) for v in np.percentile(reps, [2.5, 97.5]))
    finite = np.isfinite(ylo)
    if finite.all():
        mid = 0.5 * (ylo + yhi)
        ols = sm.OLS(mid, sm.add_constant(x)).fit(cov_type="HC1")
        slope_mid = float(ols.params[1])
        ci_mid = tuple(float(v) for v in ols.conf_int(0.05)[1])
    else:
        slope_mid, ci_mid = math.nan, (math.nan, math.nan)
    return {
        "intercept": intercept,
        "slope": slope,
        "ci": list(ci),
        "sigma": sigma,
        "converged": conv,
        "degenerate": degenerate,
        "slope_mid": slope_mid,
        "ci_mid": list(ci_mid),
        "slope_set": list(identified_slopes(x, ylo, yhi)),
        "slope_threading": list(threading_slopes(x, ylo, yhi)),
        "n_obs": int(x.size),
        "n_boot": n_boot,
    }


@dataclass(frozen=True)
class LawFit:
    """One fit of the law at one (d, eps). ``to_json()`` gives the ``--json`` entry.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import fit_law
    >>> r = [2, 3, 4, 6, 8, 16]  # brackets [r, r + 1] around r = 1 + beta
    >>> table = pd.DataFrame(dict(beta=[b - 1.0 for b in r], lower=r, upper=[k + 1 for k in r]))
    >>> (fit,) = fit_law(table.assign(d=3, eps=0.1, n=64, seed=0), family="spherical", n_boot=0)
    >>> fit.summary()
    'spherical d=3 eps=0.1 n=64: slope 1.000 (95% CI [nan, nan]), theory 1, within tolerance 0.15'
    >>> fit.to_frame()[["d", "eps", "slope", "theory"]].round(3)
       d  eps  slope  theory
    0  3  0.1    1.0     1.0
    """

    family: str
    d: int
    eps: float
    n: int
    beta_range: tuple[float, float]
    slope: float
    ci: tuple[float, float]
    intercept: float
    theory: float
    tolerance: float
    slope_mid: float
    ci_mid: tuple[float, float]
    slope_set: tuple[float, float]
    slope_threading: tuple[float, float]
    sigma: float
    converged: bool
    degenerate: bool
    n_obs: int
    paper: float | None
    median_width_ratio: float
    max_upper_over_n: float
    n_ok: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def within_tolerance(self) -> bool:
        return bool(abs(self.slope - self.theory) <= self.tolerance)

    @property
    def ci_covers_theory(self) -> bool:
        """Whether the 95% CI contains the theory slope: reported, not a target
        (docs/guide/conventions.md, "Geometric laws": finite n and beta bend the curve;
        more seeds shrink the CI)."""
        return bool(self.ci[0] <= self.theory <= self.ci[1])

    def summary(self) -> str:
        """One line: the slope, its CI and the theory it is held against."""
        verdict = "within" if self.within_tolerance else "outside"
        return (
            f"{self.family} d={self.d} eps={self.eps:g} n={self.n}: slope {self.slope:.3f} "
            f"(95% CI [{self.ci[0]:.3f}, {self.ci[1]:.3f}]), theory {self.theory:g}, "
            f"{verdict} tolerance {self.tolerance:g}"
        )

    def row(self) -> dict[str, Any]:
        """This fit as one row of ``fits.csv``: slopes, sets, theory and verdicts."""
        uh = self.extra["upper_half"]
        return (
            {
                "d": self.d,
                "eps": self.eps,
                "n": self.n,
                "beta_range": f"{self.beta_range[0]:g}-{self.beta_range[1]:g}",
                "slope": self.slope,
                "ci_low": self.ci[0],
                "ci_high": self.ci[1],
                "slope_mid": self.slope_mid,
                "slope_set_low": self.slope_set[0],
                "slope_set_high": self.slope_set[1],
                "slope_threading_low": self.slope_threading[0],
                "slope_threading_high": self.slope_threading[1],
                "degenerate": self.degenerate,
                "upper_half_betas": "-".join(f"{b:g}" for b in uh["beta_range"]),
                "upper_half_slope": uh["slope"],
                "upper_half_ci_low": uh["ci"][0],
                "upper_half_ci_high": uh["ci"][1],
                "paper": self.paper,
                "theory": self.theory,
                "abs_error": abs(self.slope - self.theory),
                "tolerance": self.tolerance,
                "within_tolerance": self.within_tolerance,
                "ci_covers_theory": self.ci_covers_theory,
                "median_hi_over_lo": self.median_width_ratio,
                "max_hi_over_n": self.max_upper_over_n,
            }
            | ({"n_ok": self.n_ok} if self.family == "ball" else {})
            | (
                {
                    "harmonic_slope": self.extra["harmonic"]["slope"],
                    "harmonic_upper_half_slope": self.extra["harmonic"]["upper_half_slope"],
                    "harmonic_inside": self.extra["harmonic"]["inside"],
                    "n_matrices": self.extra["harmonic"]["n_matrices"],
                }
                if "harmonic" in self.extra
                else {}
            )
        )

    def to_frame(self) -> pd.DataFrame:
        """This fit as the one-row table of :func:`analysis.laws.render.fits_frame`."""
        return pd.DataFrame([self.row()])

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` entry: every field, ``extra`` merged in, and the two verdicts."""
        d = asdict(self)
        d |= d.pop("extra")
        for k in ("beta_range", "ci", "ci_mid", "slope_set", "slope_threading"):
            d[k] = list(getattr(self, k))
        d["within_tolerance"] = self.within_tolerance
        d["ci_covers_theory"] = self.ci_covers_theory
        if self.family != "ball":
            d.pop("n_ok")
        return d


def local_slopes(family: str, g: pd.DataFrame) -> list[dict[str, float]]:
    """Slopes between consecutive betas of one (d, eps): where the curve bends.

    Per beta, seed means of ``ln lo``, ``ln hi`` and the log-midpoint; between betas
    ``b1 < b2`` the midpoint slope and the range the brackets allow
    ``[(ln lo_2 - ln hi_1) / dx, (ln hi_2 - ln lo_1) / dx]`` (seed means).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import local_slopes
    >>> g = pd.DataFrame({"beta": [1.0, 3.0], "lower": [2, 4], "upper": [2, 4]})
    >>> [round(s["slope_mid"], 6) for s in local_slopes("spherical", g)]  # ln 2 / ln 2
    [1.0]
    """
    with np.errstate(divide="ignore"):
        agg = (
            g.assign(llo=np.log(g["lower"].astype(float)), lhi=np.log(g["upper"].astype(float)))
            .groupby("beta")[["llo", "lhi"]]
            .mean()
            .sort_index()
        )
    betas = agg.index.to_numpy(float)
    xs = law_x(family, betas)
    out = []
    for i in range(len(betas) - 1):
        dx = xs[i + 1] - xs[i]
        lo1, hi1 = agg.iloc[i]
        lo2, hi2 = agg.iloc[i + 1]
        out.append(
            {
                "beta_from": float(betas[i]),
                "beta_to": float(betas[i + 1]),
                "slope_mid": float(((lo2 + hi2) - (lo1 + hi1)) / (2 * dx)),
                "slope_low": float((lo2 - hi1) / dx),
                "slope_high": float((hi2 - lo1) / dx),
            }
        )
    return out


def fit_law(
    table: pd.DataFrame,
    *,
    family: str,
    tolerance: float | None = None,
    n_boot: int = 499,
    random_state: int = 0,
) -> list[LawFit]:
    """One :class:`LawFit` per (d, eps) of a bracket table from :func:`run_sweep`.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import fit_law
    >>> betas = [1.0, 2.0, 3.0, 5.0, 7.0, 15.0]
    >>> table = pd.DataFrame({"d": 3, "eps": 0.1, "n": 64, "seed": 0, "beta": betas,
    ...                       "lower": [2, 3, 4, 6, 8, 16], "upper": [3, 4, 5, 7, 9, 17]})
    >>> [(f.d, f.eps, round(f.slope, 3), f.theory, f.within_tolerance)
    ...  for f in fit_law(table, family="spherical", n_boot=0)]
    [(3, 0.1, 1.0, 1.0, True)]
    """
    check_choice("family", family, FAMILIES)
    tol = TOLERANCE[family] if tolerance is None else float(tolerance)
    fits = []

    def slope(rows: pd.DataFrame) -> dict[str, Any]:
        beta = rows["beta"].to_numpy()
        lo, hi = rows["lower"].to_numpy(), rows["upper"].to_numpy()
        return fit_slope(
            law_x(family, beta), lo, hi, strata=beta, n_boot=n_boot, random_state=random_state
        )

    for (d, e), g in table.groupby(["d", "eps"], sort=True):
        d = int(d)
        r = slope(g)
        # Post-hoc sensitivity (not a target): the upper half of the beta grid, where an
        # asymptotic law should show first. Needs at least two betas there.
        grid = np.sort(g["beta"].unique())
        upper = grid[len(grid) // 2 :] if len(grid) >= 4 else grid[-2:]
        ru = slope(g[g["beta"].isin(upper)])
        n = int(g["n"].iloc[0])
        bmin, bmax = float(g["beta"].min()), float(g["beta"].max())
        with np.errstate(divide="ignore"):
            ratio = g["upper"].to_numpy() / np.maximum(g["lower"].to_numpy(), 1)
        fits.append(
            LawFit(
                family=family,
                d=d,
                eps=float(e),
                n=n,
                beta_range=(bmin, bmax),
                slope=r["slope"],
                ci=tuple(r["ci"]),
                intercept=r["intercept"],
                theory=theory_slope(family, d),
                tolerance=tol,
                slope_mid=r["slope_mid"],
                ci_mid=tuple(r["ci_mid"]),
                slope_set=tuple(r["slope_set"]),
                slope_threading=tuple(r["slope_threading"]),
                sigma=r["sigma"],
                converged=r["converged"],
                degenerate=r["degenerate"],
                n_obs=r["n_obs"],
                paper=PAPER_SLOPES.get(family, {}).get(d),
                median_width_ratio=float(np.median(ratio)),
                max_upper_over_n=float(g["upper"].max() / n),
                n_ok=bool(n >= math.exp(bmax / 8)) if family == "ball" else None,
                extra={
                    "upper_half": {
                        "beta_range": [float(upper[0]), float(upper[-1])],
                        "slope": ru["slope"],
                        "ci": ru["ci"],
                        "slope_mid": ru["slope_mid"],
                        "slope_set": ru["slope_set"],
                        "degenerate": ru["degenerate"],
                    },
                    "local_slopes": local_slopes(family, g),
                }
                | ({"harmonic": _harmonic(d, float(e), g, upper)} if family == "spherical" else {}),
            )
        )
    return fits


def _harmonic(d: int, eps: float, g: pd.DataFrame, upper: np.ndarray) -> dict[str, Any]:
    """The theory's finite-beta prediction on this grid (:mod:`analysis.laws.theory`).

    ``slope``: OLS slope of the harmonic rank count over the sweep's betas (what the law's
    own expansion gives on this grid, no brackets involved); ``upper_half_slope``: the same
    over the post-hoc upper half; ``inside``: matrices whose bracket contains the count.
    """
    grid = np.sort(g["beta"].unique())
    counts = {float(b): harmonic_rank(d, float(b), eps) for b in grid}
    r = g["beta"].map(counts).to_numpy()
    inside = int(((g["lower"].to_numpy() <= r) & (r <= g["upper"].to_numpy())).sum())
    return {
        "counts": {f"{b:g}": c for b, c in counts.items()},
        "slope": harmonic_slope(d, grid, eps) if len(grid) >= 2 else math.nan,
        "upper_half_slope": harmonic_slope(d, upper, eps) if len(upper) >= 2 else math.nan,
        "inside": inside,
        "n_matrices": int(len(g)),
    }
