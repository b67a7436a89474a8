"""Geometric laws: how ``r_eps`` of synthetic self-attention grows with inverse temperature.

``attnrank laws`` brackets ``r_eps(A)`` over a beta sweep of a synthetic family and fits the
slope of ``log r`` against ``log(1 + beta)`` (spherical) or ``log beta`` (full ball), using
the certified brackets as interval-valued outcomes.

Theory (METHOD.md section 6, the paper's earlier version)
---------------------------------------------------------
- ``spherical``: n points uniform on the unit sphere of R^d, logits ``beta <x_i, x_j>``
  (exactly :func:`analysis.sources.synthetic.spherical`, whose ``beta`` is this beta):
  ``r_eps = Theta(min{n, (1 + beta)^((d - 1) / 2)})``, slope ``(d - 1) / 2``. The paper's
  fitted slopes are 0.504 / 1.012 / 1.381 for d = 2 / 3 / 4.
- ``ball``: n points uniform in the unit ball, same logits:
  ``r_eps = Theta(beta^(d / 2))`` for large beta and ``n >= C_d e^(beta / 8)``; slope
  ``d / 2``. Each fit reports ``n_ok``: ``n >= e^(beta / 8)`` over its whole beta range
  (``C_d`` is unknown, so this is the condition with ``C_d = 1``).
- What the spherical theory predicts at *finite* beta, with no bracket involved: the
  harmonic rank count of :mod:`analysis.law_theory` (spherical harmonics up to the last
  degree whose softmax eigenvalue ``I_(l + nu)(beta) / I_nu(beta)`` is above eps). Each
  spherical fit reports its slope over the sweep's own betas (``harmonic_slope``), over
  the upper half, and how many certified brackets contain the count. A certified slope
  that misses ``(d - 1) / 2`` but matches ``harmonic_slope`` points at the grid (the
  pre-asymptotic Taylor regime of the kernel), not at the engine.

Design of the default sweeps (and why)
--------------------------------------
- ``eps = 0.1``: the middle of the study's grid; brackets there are tighter than at 0.05.
- ``n = 512``: the fits are only meaningful where ``r`` is well below ``n`` (the law is
  ``min{n, ...}``). The default beta grids (below) keep the measured upper ends at or
  under about ``0.3 n`` (measured max hi/n: spherical 0.07 / 0.22 / 0.29, ball 0.10 /
  0.23 / 0.21 for d = 2 / 3 / 4). ``n = 256`` leaves less room; ``n = 1024`` costs
  several times more per matrix (pilot: n = 256 -> 512 already cost 3-10x at fast
  effort; the engine's dense stages are cubic) and would blow the 20-minute budget.
- Beta grids: powers of two from 1 (spherical) or 2 (ball) up to the largest power whose
  rank stayed ``<~ n / 4`` at ``n = 512`` in a pilot, per d (:data:`DEFAULT_BETAS`): wider
  for small d, where the rank grows slowly; for the ball also ``n >= e^(beta / 8)``, i.e.
  beta <= 49 at n = 512. They are chosen from where the rank sits relative to n, never
  from the fitted slopes. ``--betas`` overrides them for every d. Known limitation: the
  curve bends at small beta (measured local slopes fall from 1.4-1.7x theory at beta
  1 -> 2 to theory at the top of each grid), and n = 512 leaves d = 3, 4 little room
  above the bend; ``local_slopes.csv`` and the post-hoc upper-half fit show it.
- 3 seeds: each (beta, seed) draws an independent point cloud (seed derived from
  ``(family, d, n, beta, seed)``), so observations are independent.
- ``effort = "thorough"``: the ranks here (up to ~150) are far larger than on learned
  heads, and at the engine's default effort the lower ascent stops short at large sizes.
  Measured on the sweep's own matrices (n = 512, eps 0.1, seed 0): d = 4, beta = 8 goes
  from [42, 150] (default, 16 s) to [58, 138] (thorough, 32 s); d = 3, beta = 16 from
  [43, 100] to [62, 96] (43 s). More ascent steps than ``thorough`` gain little (3000
  lower steps: [60, 138], 49 s). ``--quick`` uses ``n = 256``, 2 seeds, ``default``
  effort and the even powers of each grid.
- ``--design asymptotic`` (spherical, one eps): the grids above start at beta = 1, in
  the kernel's Taylor regime, where the theory's own harmonic count is steeper than its
  asymptote. This design takes each d's grid from the theory alone, before any bracket:
  powers of two from :func:`analysis.law_theory.asymptotic_onset` (every later octave of
  the count within 0.15 of ``(d - 1) / 2``) while the count stays ``<= n / 4``, at most 5;
  a d with fewer than 3 such betas is left out with the n it would need. The default
  design stays the default; the two answer different questions (the curve on a fixed
  grid, the law where it applies).

Fit
---
Per (d, eps), outcome ``y = ln r`` observed as ``[ln lo, ln hi]``; ``lo = 0`` (possible
only for eps >= 1 or an empty row, never for eps < 1, where ``lo >= 1``) is left-censored:
``ln lo = -inf``. ``x = ln(1 + beta)`` or ``ln beta``. Three numbers are reported:

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
   ``ln r`` on x given only that each lies in its bracket: with ``w_i = (x_i - xbar) /
   sum (x - xbar)^2`` the slope is ``sum w_i y_i``, minimised by ``y_i = ln lo_i`` where
   ``w_i > 0`` and ``ln hi_i`` where ``w_i < 0`` (and maximised the other way). It needs no
   model and says how far the certified brackets alone pin the slope; it is wide when the
   brackets are.
4. ``slope_threading``: the least and largest slope of a line lying inside *every*
   bracket (NaN when none does). It assumes the law is exact on the sweep (no
   seed-to-seed noise, no curvature) and is then the set of slopes the brackets cannot
   tell apart; when it is non-empty the interval-ML fit is degenerate (item 1) and its
   slope is one arbitrary-but-central member of this set.

The CI is reported, never required to cover the asymptotic value: finite n and beta bend
the curve (CONTRACTS.md, "Geometric laws").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from analysis.atomic import JsonlCheckpoint, atomic_write
from analysis.attention import derive_seed
from analysis.brackets import EFFORTS, profile_matrix
from analysis.compare.estimators import IntervalRegression
from analysis.law_theory import (
    asymptotic_betas,
    asymptotic_onset,
    harmonic_rank,
    harmonic_slope,
    n_for_asymptotic_grid,
)
from analysis.sources.synthetic import full_ball, spherical
from analysis.validation import (
    ParameterError,
    check_choice,
    check_eps_grid,
    check_int,
    check_positive_finite,
)

__all__ = [
    "DEFAULT_BETAS",
    "FAMILIES",
    "LawFit",
    "PAPER_SLOPES",
    "SweepConfig",
    "default_config",
    "fit_law",
    "fit_slope",
    "run_laws",
    "run_sweep",
    "theory_slope",
]

FAMILIES: tuple[str, ...] = ("spherical", "ball")
#: The paper's fitted spherical slopes (METHOD.md section 6), for the table.
PAPER_SLOPES: dict[str, dict[int, float]] = {"spherical": {2: 0.504, 3: 1.012, 4: 1.381}}
#: Targets: |slope - theory| <= tolerance (issue 7).
TOLERANCE: dict[str, float] = {"spherical": 0.15, "ball": 0.25}
QUICK_TOLERANCE = 0.25
#: Default beta grids per family and d (see the module docstring for the rule).
DEFAULT_BETAS: dict[str, dict[int, tuple[float, ...]]] = {
    "spherical": {
        2: (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
        3: (1.0, 2.0, 4.0, 8.0, 16.0),
        4: (1.0, 2.0, 4.0, 8.0),
    },
    "ball": {
        2: (2.0, 4.0, 8.0, 16.0, 32.0),
        3: (2.0, 4.0, 8.0, 16.0),
        4: (2.0, 4.0, 8.0),
    },
}
_GENERATORS = {"spherical": spherical, "ball": full_ball}
#: Beta-grid designs: ``default`` (:data:`DEFAULT_BETAS`) or, spherical only,
#: ``asymptotic`` (:func:`analysis.law_theory.asymptotic_betas`: from where the theory's own
#: harmonic count has settled onto the asymptotic slope, while the count is <= n / 4).
DESIGNS: tuple[str, ...] = ("default", "asymptotic")
#: The asymptotic design needs this many betas per d (a slope over two octaves).
ASYMPTOTIC_MIN_POINTS = 3
CHECKPOINT_NAME = "brackets.jsonl"


def theory_slope(family: str, d: int) -> float:
    """``(d - 1) / 2`` for ``spherical``, ``d / 2`` for ``ball``."""
    check_choice("family", family, FAMILIES)
    return (d - 1) / 2 if family == "spherical" else d / 2


def law_x(family: str, beta: np.ndarray | float) -> np.ndarray:
    """The regressor: ``ln(1 + beta)`` (spherical) or ``ln beta`` (ball)."""
    beta = np.asarray(beta, float)
    return np.log1p(beta) if family == "spherical" else np.log(beta)


# -- configuration -------------------------------------------------------------------


@dataclass(frozen=True)
class SweepConfig:
    """One sweep: every (d, beta, seed) matrix, bracketed at every eps.

    Attributes
    ----------
    family : {"spherical", "ball"}
    dims : tuple of int
        Dimensions d >= 2 (d = 1 has slope 0 or 1/2 and no interesting geometry).
    betas : dict d -> tuple of float
        Inverse temperatures per d (> 0).
    n : int
        Points per matrix (>= 8).
    eps : tuple of float
        Tolerances in (0, 1); one fit per (d, eps).
    seeds : tuple of int
        Non-negative; one independent point cloud per (d, beta, seed).
    effort : {"fast", "default", "thorough"}
    design : {"default", "asymptotic"}
        How the beta grids were chosen (:data:`DESIGNS`).
    notes : tuple of str
        What the design left out and why (printed by the CLI, kept in ``results.json``).
    """

    family: str
    dims: tuple[int, ...]
    betas: dict[int, tuple[float, ...]]
    n: int
    eps: tuple[float, ...]
    seeds: tuple[int, ...]
    effort: str
    design: str = "default"
    notes: tuple[str, ...] = ()

    def jobs(self) -> list[dict[str, Any]]:
        """Every (d, beta, seed, eps) to bracket, with its cache key."""
        out = []
        for d in self.dims:
            for beta in self.betas[d]:
                for seed in self.seeds:
                    for e in self.eps:
                        job = {
                            "family": self.family,
                            "d": d,
                            "n": self.n,
                            "beta": beta,
                            "seed": seed,
                            "eps": e,
                            "effort": self.effort,
                        }
                        job["key"] = job_key(job)
                        out.append(job)
        return out


def job_key(job: dict[str, Any]) -> str:
    """Cache key ``family:d:n:beta:seed:eps:effort:engine`` (floats by ``repr``).

    The engine version is part of the key, so brackets cached by an older engine are
    recomputed rather than mixed into a fit with a newer one's.
    """
    from analysis.brackets import __version__ as engine_version

    return (
        f"{job['family']}:{int(job['d'])}:{int(job['n'])}:{float(job['beta'])!r}:"
        f"{int(job['seed'])}:{float(job['eps'])!r}:{job['effort']}:engine{engine_version}"
    )


def _floats(name: str, values: Any) -> tuple[float, ...]:
    vals = [values] if isinstance(values, (int, float)) else list(values)
    if not vals:
        raise ParameterError(name, "at least one value", vals)
    return tuple(check_positive_finite(name, v) for v in vals)


def _ints(name: str, values: Any, minimum: int) -> tuple[int, ...]:
    vals = [values] if isinstance(values, (int, np.integer)) else list(values)
    if not vals:
        raise ParameterError(name, "at least one value", vals)
    out = tuple(check_int(name, v, minimum=minimum) for v in vals)
    if len(set(out)) != len(out):
        raise ParameterError(name, "distinct values", list(out))
    return out


def default_config(family: str, *, quick: bool = False) -> SweepConfig:
    """The default (or ``--quick``) sweep of a family; see the module docstring."""
    check_choice("--family", family, FAMILIES)
    grids = DEFAULT_BETAS[family]
    if quick:
        grids = {d: tuple(b for i, b in enumerate(g) if i % 2 == 0) for d, g in grids.items()}
        return SweepConfig(family, (2, 3, 4), grids, 256, (0.1,), (0, 1), "default")
    return SweepConfig(family, (2, 3, 4), grids, 512, (0.1,), (0, 1, 2), "thorough")


def make_config(
    family: str,
    *,
    dims: Sequence[int] | None = None,
    betas: Sequence[float] | None = None,
    n: int | None = None,
    eps: Sequence[float] | None = None,
    seeds: Sequence[int] | None = None,
    effort: str | None = None,
    quick: bool = False,
    design: str = "default",
) -> SweepConfig:
    """Validate a sweep; None means the (quick) default of that parameter.

    ``betas`` given explicitly apply to every d. Errors name the CLI flag. With
    ``design="asymptotic"`` (spherical, one eps, no ``betas``) each d gets
    :func:`analysis.law_theory.asymptotic_betas`; a d with fewer than
    :data:`ASYMPTOTIC_MIN_POINTS` betas at this n is left out, with a note giving the n
    it would need.
    """
    base = default_config(family, quick=quick)
    design = check_choice("--design", design, DESIGNS)
    dims_ = base.dims if dims is None else _ints("--dims", dims, 2)
    if design == "asymptotic":
        if family != "spherical":
            raise ParameterError("--design", "'default' for the ball (no harmonic count)", design)
        if betas is not None:
            raise ParameterError("--betas", "none with --design asymptotic (it sets them)", betas)
        if eps is not None and len(set(eps)) != 1:
            raise ParameterError("--eps", "one value with --design asymptotic", eps)
        grid: dict[int, tuple[float, ...]] = {}  # set below, once n and eps are known
    elif betas is None:
        missing = [d for d in dims_ if d not in base.betas]
        if missing:
            raise ParameterError(
                "--betas", f"explicit values for d = {missing} (defaults exist for d in 2..4)", None
            )
        grid = {d: base.betas[d] for d in dims_}
    else:
        b = _floats("--betas", betas)
        if len(set(b)) < 2:
            raise ParameterError("--betas", "at least two distinct values (a slope needs two)", b)
        grid = {d: tuple(sorted(set(b))) for d in dims_}
    n_ = base.n if n is None else check_int("--n", n, minimum=8)
    eps_ = base.eps if eps is None else check_eps_grid(eps, name="--eps")
    bad = [e for e in eps_ if e >= 1]
    if bad:
        raise ParameterError("--eps", "values in (0, 1) (r_eps = 1 or 0 for eps >= 1)", bad)
    eps_ = tuple(sorted(set(eps_)))
    seeds_ = base.seeds if seeds is None else _ints("--seeds", seeds, 0)
    effort_ = base.effort if effort is None else check_choice("--effort", effort, EFFORTS)
    notes: list[str] = []
    if design == "asymptotic":
        (e,) = eps_
        kept = []
        for d in dims_:
            g = asymptotic_betas(d, e, n_)
            if len(g) >= ASYMPTOTIC_MIN_POINTS:
                grid[d] = g
                kept.append(d)
            elif math.isnan(onset := asymptotic_onset(d, e)):
                notes.append(
                    f"d = {d} left out: at eps = {e:g} the harmonic count does not settle "
                    f"by beta = 2^16"
                )
            else:
                need = n_for_asymptotic_grid(d, e, points=ASYMPTOTIC_MIN_POINTS)
                notes.append(
                    f"d = {d} left out: at eps = {e:g} the harmonic count settles from beta = "
                    f"{onset:g}, and {ASYMPTOTIC_MIN_POINTS} betas with count <= n / 4 need "
                    f"n >= {need} (n = {n_})"
                )
        if not kept:
            raise ParameterError("--n", "a size that leaves some d an asymptotic grid", n_)
        dims_ = tuple(kept)
    return SweepConfig(family, dims_, grid, n_, eps_, seeds_, effort_, design, tuple(notes))


# -- brackets ------------------------------------------------------------------------


def bracket_job(job: dict[str, Any]) -> dict[str, Any]:
    """Draw the job's matrix and bracket it; returns the job with ``lower``, ``upper`` and costs.

    The point cloud's seed is ``derive_seed(seed, "family:d:n:beta")``, so every (beta,
    seed) is an independent draw and a re-run draws the same matrix.
    """
    rs = derive_seed(job["seed"], f"{job['family']}:{job['d']}:{job['n']}:{float(job['beta'])!r}")
    A = _GENERATORS[job["family"]](job["n"], job["d"], job["beta"], random_state=rs).A
    c0, w0 = time.process_time(), time.perf_counter()
    prof = profile_matrix(A, eps=(job["eps"],), effort=job["effort"])
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    lo, hi = prof.bracket(job["eps"])
    return job | {
        "lower": int(lo),
        "upper": int(hi),
        "matrix_seed": rs,
        "cpu_s": cpu,
        "wall_s": wall,
        "methods": prof.stats.get("methods", {}).get(f"{job['eps']:g}"),
    }


def read_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Finished records (JSON lines) by key; a torn last line is ignored (it is redone)."""
    return JsonlCheckpoint(path).read()


def run_sweep(
    config: SweepConfig,
    *,
    out: str | os.PathLike,
    workers: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """Bracket every job of ``config``, reusing and extending ``out/brackets.jsonl``.

    Each finished bracket is appended to the checkpoint (flushed and fsynced) as soon as it
    is done, so an interrupted sweep resumes where it stopped; a re-run computes nothing
    already there. Results do not depend on ``workers`` (the engine fixes its thread count
    per matrix and draws nothing random).

    Returns
    -------
    DataFrame
        One row per job of ``config`` (cached or new), with ``cached`` marking reuse.
    """
    workers = check_int("--workers", workers, minimum=1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ck = out / CHECKPOINT_NAME
    done = read_checkpoint(ck)
    jobs = config.jobs()
    todo = [j for j in jobs if j["key"] not in done]
    cached = {j["key"] for j in jobs} - {j["key"] for j in todo}
    bar = tqdm(
        total=len(jobs),
        initial=len(jobs) - len(todo),
        desc=f"laws {config.family}",
        unit="matrix",
        disable=not progress,
    )
    with contextlib.ExitStack() as stack:
        stack.callback(bar.close)
        append = stack.enter_context(JsonlCheckpoint(ck).appender())

        def keep(rec: dict[str, Any]) -> None:
            done[rec["key"]] = rec
            append(rec)
            bar.update()

        if workers == 1 or len(todo) <= 1:
            for j in todo:
                keep(bracket_job(j))
        else:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=workers))
            futures = [pool.submit(bracket_job, j) for j in todo]
            for fut in as_completed(futures):
                keep(fut.result())
    rows = [done[j["key"]] | {"cached": j["key"] in cached} for j in jobs]
    return pd.DataFrame(rows)


# -- fitting -------------------------------------------------------------------------


def log_bounds(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[ln lo, ln hi]``; ``lo = 0`` becomes ``-inf`` (left-censored)."""
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
    """Sharp bounds of the least-squares slope of y on x over all ``y_i in [ylo_i, yhi_i]``."""
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
        ``intercept``, ``slope``, ``ci`` (95% percentile bootstrap), ``sigma`` (ML residual scale),
        ``converged``, ``degenerate`` (a line threads every bracket: ``slope`` is the
        sigma -> 0 limit of the ML fit, see :func:`_ml_fit`), ``slope_mid``, ``ci_mid`` (OLS on log-midpoints, HC1),
        ``slope_set`` (identified set), ``slope_threading`` (slopes of lines inside
        every bracket, NaN if none), ``n_obs``, ``n_boot``.

    Notes
    -----
    See the module docstring for the three estimators and why the interval-ML CI is a
    bootstrap. Rows with ``lower = 0`` enter the ML fit left-censored; they make the
    midpoint and the identified set undefined (-inf / NaN) and are reported as such.
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
    """One fit of the law at one (d, eps). ``to_json()`` gives the ``--json`` entry."""

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
        (CONTRACTS.md: finite n and beta bend the curve; more seeds shrink the CI)."""
        return bool(self.ci[0] <= self.theory <= self.ci[1])

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d |= d.pop("extra")
        d["beta_range"] = list(self.beta_range)
        d["ci"] = list(self.ci)
        d["ci_mid"] = list(self.ci_mid)
        d["slope_set"] = list(self.slope_set)
        d["slope_threading"] = list(self.slope_threading)
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
    """One :class:`LawFit` per (d, eps) of a bracket table from :func:`run_sweep`."""
    check_choice("family", family, FAMILIES)
    tol = TOLERANCE[family] if tolerance is None else float(tolerance)
    fits = []
    for (d, e), g in table.groupby(["d", "eps"], sort=True):
        d = int(d)
        x = law_x(family, g["beta"].to_numpy())
        r = fit_slope(
            x,
            g["lower"].to_numpy(),
            g["upper"].to_numpy(),
            strata=g["beta"].to_numpy(),
            n_boot=n_boot,
            random_state=random_state,
        )
        # Post-hoc sensitivity (not a target): the upper half of the beta grid, where an
        # asymptotic law should show first. Needs at least two betas there.
        grid = np.sort(g["beta"].unique())
        upper = grid[len(grid) // 2 :] if len(grid) >= 4 else grid[-2:]
        gu = g[g["beta"].isin(upper)]
        ru = fit_slope(
            law_x(family, gu["beta"].to_numpy()),
            gu["lower"].to_numpy(),
            gu["upper"].to_numpy(),
            strata=gu["beta"].to_numpy(),
            n_boot=n_boot,
            random_state=random_state,
        )
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
    """The theory's finite-beta prediction on this grid (:mod:`analysis.law_theory`).

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


# -- outputs -------------------------------------------------------------------------


def _uh(f: LawFit) -> dict[str, Any]:
    return f.extra["upper_half"]


def local_frame(fits: Sequence[LawFit]) -> pd.DataFrame:
    """Local slopes between consecutive betas, one row per (d, eps, pair)."""
    return pd.DataFrame(
        [{"d": f.d, "eps": f.eps, **row} for f in fits for row in f.extra["local_slopes"]]
    )


def fits_frame(fits: Sequence[LawFit]) -> pd.DataFrame:
    rows = []
    for f in fits:
        rows.append(
            {
                "d": f.d,
                "eps": f.eps,
                "n": f.n,
                "beta_range": f"{f.beta_range[0]:g}-{f.beta_range[1]:g}",
                "slope": f.slope,
                "ci_low": f.ci[0],
                "ci_high": f.ci[1],
                "slope_mid": f.slope_mid,
                "slope_set_low": f.slope_set[0],
                "slope_set_high": f.slope_set[1],
                "slope_threading_low": f.slope_threading[0],
                "slope_threading_high": f.slope_threading[1],
                "degenerate": f.degenerate,
                "upper_half_betas": "-".join(f"{b:g}" for b in _uh(f)["beta_range"]),
                "upper_half_slope": _uh(f)["slope"],
                "upper_half_ci_low": _uh(f)["ci"][0],
                "upper_half_ci_high": _uh(f)["ci"][1],
                "paper": f.paper,
                "theory": f.theory,
                "abs_error": abs(f.slope - f.theory),
                "tolerance": f.tolerance,
                "within_tolerance": f.within_tolerance,
                "ci_covers_theory": f.ci_covers_theory,
                "median_hi_over_lo": f.median_width_ratio,
                "max_hi_over_n": f.max_upper_over_n,
            }
            | ({"n_ok": f.n_ok} if f.family == "ball" else {})
            | (
                {
                    "harmonic_slope": f.extra["harmonic"]["slope"],
                    "harmonic_upper_half_slope": f.extra["harmonic"]["upper_half_slope"],
                    "harmonic_inside": f.extra["harmonic"]["inside"],
                    "n_matrices": f.extra["harmonic"]["n_matrices"],
                }
                if "harmonic" in f.extra
                else {}
            )
        )
    return pd.DataFrame(rows)


def markdown_table(fits: Sequence[LawFit]) -> str:
    """The fits as a Markdown table (ours beside the paper's and the theory)."""
    ball = bool(fits) and fits[0].family == "ball"
    head = (
        [
            "d",
            "eps",
            "n",
            "beta",
            "slope (interval ML)",
            "95% CI",
            "midpoint OLS",
            "identified set",
            "threading lines",
            "upper-half fit (post hoc)",
            "paper",
        ]
        + (["harmonic count (theory at these beta)"] if not ball else [])
        + [
            "theory",
            "|slope - theory|",
            "CI covers theory",
            "median hi/lo",
            "max hi/n",
        ]
        + (["n >= e^(beta/8)"] if ball else [])
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in fits:
        ok = "ok" if f.within_tolerance else "MISSED"
        row = (
            [
                str(f.d),
                f"{f.eps:g}",
                str(f.n),
                f"{f.beta_range[0]:g}-{f.beta_range[1]:g}",
                f"{f.slope:.3f}" + (" (sigma -> 0)" if f.degenerate else ""),
                f"[{f.ci[0]:.3f}, {f.ci[1]:.3f}]",
                f"{f.slope_mid:.3f}",
                f"[{f.slope_set[0]:.2f}, {f.slope_set[1]:.2f}]",
                "none"
                if math.isnan(f.slope_threading[0])
                else f"[{f.slope_threading[0]:.2f}, {f.slope_threading[1]:.2f}]",
                "beta {}: {:.3f} [{:.2f}, {:.2f}]".format(
                    "-".join(f"{b:g}" for b in _uh(f)["beta_range"]),
                    _uh(f)["slope"],
                    *_uh(f)["ci"],
                ),
                "-" if f.paper is None else f"{f.paper:.3f}",
            ]
            + ([_harmonic_cell(f)] if not ball else [])
            + [
                f"{f.theory:g}",
                f"{abs(f.slope - f.theory):.3f} ({ok}, tol {f.tolerance:g})",
                "yes" if f.ci_covers_theory else "no",
                f"{f.median_width_ratio:.2f}",
                f"{f.max_upper_over_n:.2f}",
            ]
            + (["yes" if f.n_ok else "no"] if ball else [])
        )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _harmonic_cell(f: LawFit) -> str:
    h = f.extra.get("harmonic")
    if h is None:
        return "-"
    return "{:.3f}; upper half {:.3f}; inside {}/{} brackets".format(
        h["slope"], h["upper_half_slope"], h["inside"], h["n_matrices"]
    )


def plot_law(table: pd.DataFrame, fits: Sequence[LawFit], path_stem: Path) -> list[Path]:
    """Log-log figure: brackets as error bars, the interval-ML fit and the theory slope.

    One panel per d; colours per eps; spherical panels also mark the harmonic rank count
    (``x``, :mod:`analysis.law_theory`) at each beta. The theory line has the theory slope
    and passes through the fitted line at the geometric centre of the beta range, so the
    two slopes can be compared by eye. Writes ``<stem>.png`` and ``<stem>.pdf`` atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import (
        FixedLocator,
        FuncFormatter,
        NullFormatter,
        NullLocator,
    )

    family = fits[0].family
    dims = sorted({f.d for f in fits})
    eps_all = sorted({f.eps for f in fits})
    colors = dict(zip(eps_all, sns.color_palette("deep", len(eps_all)), strict=True))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, len(dims), figsize=(4.0 * len(dims), 3.6), squeeze=False)
    xlabel = "1 + beta" if family == "spherical" else "beta"
    for ax, d in zip(axes[0], dims, strict=True):
        for f in (f for f in fits if f.d == d):
            g = table[(table["d"] == d) & (table["eps"] == f.eps)].sort_values(["beta", "seed"])
            xv = (1 + g["beta"].to_numpy()) if family == "spherical" else g["beta"].to_numpy()
            seeds = sorted(g["seed"].unique())
            jit = {s: 1.0 + 0.03 * (i - (len(seeds) - 1) / 2) for i, s in enumerate(seeds)}
            xj = xv * g["seed"].map(jit).to_numpy()
            lo = np.maximum(g["lower"].to_numpy(), 0.8)
            hi = g["upper"].to_numpy()
            c = colors[f.eps]
            ax.vlines(xj, lo, hi, color=c, lw=1.6, alpha=0.8)
            ax.plot(xj, lo, "_", color=c, ms=6)
            ax.plot(xj, hi, "_", color=c, ms=6)
            closed = lo == hi  # a closed bracket is a certified point: draw it as one
            ax.plot(xj[closed], hi[closed], "o", color=c, ms=3.5)
            xs = np.geomspace(xv.min(), xv.max(), 50)
            lx = np.log(xs)
            cx = float(np.mean(np.log(xv)))
            cy = f.intercept + f.slope * cx  # the ML line at the log-centre of the range
            ax.plot(
                xs,
                np.exp(cy + f.slope * (lx - cx)),
                color=c,
                lw=1.4,
                label=(
                    f"eps={f.eps:g}: interval ML {f.slope:.2f} [{f.ci[0]:.2f}, {f.ci[1]:.2f}]"
                    f"\n  midpoint OLS {f.slope_mid:.2f}; brackets allow "
                    f"[{f.slope_set[0]:.2f}, {f.slope_set[1]:.2f}]"
                ),
            )
            if "harmonic" in f.extra:  # the theory's own count at these betas
                hb = np.array([float(b) for b in f.extra["harmonic"]["counts"]])
                hr = np.array(list(f.extra["harmonic"]["counts"].values()), float)
                ax.plot(
                    1 + hb,
                    hr,
                    "x",
                    color=c,
                    ms=5,
                    mew=1.2,
                    label=f"harmonic count (theory at these beta), slope "
                    f"{f.extra['harmonic']['slope']:.2f}",
                )
            ax.plot(
                xs,
                np.exp(cy + f.theory * (lx - cx)),
                color="0.2",
                lw=1.0,
                ls="--",
                label=f"theory slope {f.theory:g}" if f.eps == eps_all[0] else None,
            )
        n = fits[0].n
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted(set((1 + table["beta"]) if family == "spherical" else table["beta"]))
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        if table.loc[table["d"] == d, "upper"].max() > n / 8:  # show n when it is in reach
            ax.axhline(n, color="0.5", lw=0.8, ls=":")
            ax.annotate(
                f"n = {n}", (ax.get_xlim()[1], n), fontsize=7, va="top", ha="right", color="0.4"
            )
        ax.set_title(f"{family}, d = {d}, n = {n}, {len(seeds)} seeds")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("certified bracket of r_eps")
        ax.legend(fontsize=6.5, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    written = []
    for ext in ("png", "pdf"):
        p = path_stem.with_suffix("." + ext)
        with atomic_write(p, mode="wb") as fh:
            fig.savefig(fh, format=ext, dpi=150)
        written.append(p)
    plt.close(fig)
    return written


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path, mode="w") as fh:
        fh.write(text)


def run_laws(
    config: SweepConfig,
    *,
    out: str | os.PathLike,
    workers: int = 1,
    progress: bool = True,
    n_boot: int = 499,
    tolerance: float | None = None,
    figure: bool = True,
) -> dict[str, Any]:
    """Sweep, fit and write ``brackets.csv``, ``fits.csv``, ``fits.md``,
    ``local_slopes.csv``, ``results.json`` and ``law.png`` / ``law.pdf`` under ``out``.

    Returns
    -------
    dict
        The ``--json`` object: ``family``, ``fits`` (one per (d, eps)), ``config`` and
        ``timing`` (wall seconds of this call; CPU seconds summed over the matrices
        computed now and over all matrices of the sweep).
    """
    out = Path(out)
    w0 = time.perf_counter()
    table = run_sweep(config, out=out, workers=workers, progress=progress)
    fits = fit_law(table, family=config.family, tolerance=tolerance, n_boot=n_boot)
    new = table[~table["cached"]]
    timing = {
        "wall_s": time.perf_counter() - w0,
        "matrices": int(len(table)),
        "computed": int(len(new)),
        "cpu_s_computed": float(new["cpu_s"].sum()),
        "cpu_s_all": float(table["cpu_s"].sum()),
        "cpu_s_per_matrix_median": float(table["cpu_s"].median()),
        "cpu_s_per_matrix_max": float(table["cpu_s"].max()),
        "workers": workers,
    }
    result = {
        "family": config.family,
        "fits": [f.to_json() for f in fits],
        "config": {
            "dims": list(config.dims),
            "betas": {str(d): list(b) for d, b in config.betas.items()},
            "n": config.n,
            "eps": list(config.eps),
            "seeds": list(config.seeds),
            "effort": config.effort,
            "design": config.design,
            "notes": list(config.notes),
        },
        "timing": timing,
    }
    cols = ["family", "d", "n", "beta", "seed", "eps", "effort", "lower", "upper", "cpu_s"]
    _write_text(out / "brackets.csv", table[cols].to_csv(index=False))
    _write_text(out / "fits.csv", fits_frame(fits).to_csv(index=False))
    notes = "".join(f"\nNote: {note}.\n" for note in config.notes)
    _write_text(out / "fits.md", markdown_table(fits) + notes)
    _write_text(out / "local_slopes.csv", local_frame(fits).to_csv(index=False))
    _write_text(out / "results.json", json.dumps(result, indent=1))
    if figure:
        plot_law(table, fits, out / "law")
    return result


# -- command line --------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "laws",
        help="temperature scaling of r_eps on synthetic spherical / full-ball attention",
        description=(
            "Bracket r_eps over a beta sweep of a synthetic family and fit the slope of "
            "log r against log(1 + beta) (spherical) or log beta (ball)."
        ),
    )
    p.add_argument("--family", required=True, help="spherical or ball")
    p.add_argument("--dims", type=int, nargs="+", help="dimensions d (default 2 3 4)")
    p.add_argument(
        "--betas", type=float, nargs="+", help="inverse temperatures for every d (default: per d)"
    )
    p.add_argument("--n", type=int, help="points per matrix (default 512; --quick 256)")
    p.add_argument("--eps", type=float, nargs="+", help="tolerances in (0, 1) (default 0.1)")
    p.add_argument("--seeds", type=int, nargs="+", help="seeds (default 0 1 2; --quick 0 1)")
    p.add_argument(
        "--effort", help="fast, default or thorough (default: thorough; --quick default)"
    )
    p.add_argument("--quick", action="store_true", help="the small preset (< 2 minutes)")
    p.add_argument(
        "--design",
        default="default",
        help="beta grids: default, or asymptotic (spherical, one eps: from where the "
        "theory's harmonic count has settled on its slope, count <= n/4)",
    )
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    p.add_argument("--n-boot", type=int, default=499, help="bootstrap replicates for the CI")
    p.add_argument(
        "--out",
        type=Path,
        help="output folder (default reports/laws/<family>[-quick][-asymptotic])",
    )
    p.add_argument("--no-figure", action="store_true", help="skip law.png / law.pdf")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    family = check_choice("--family", args.family, FAMILIES)
    config = make_config(
        family,
        dims=args.dims,
        betas=args.betas,
        n=args.n,
        eps=args.eps,
        seeds=args.seeds,
        effort=args.effort,
        quick=args.quick,
        design=args.design,
    )
    for note in config.notes:
        print(f"note: {note}", file=sys.stderr)
    n_boot = check_int("--n-boot", args.n_boot, minimum=0)
    suffix = ("-quick" if args.quick else "") + (
        "-asymptotic" if config.design == "asymptotic" else ""
    )
    out = args.out or Path("reports") / "laws" / (family + suffix)
    tol = QUICK_TOLERANCE if args.quick else None
    res = run_laws(
        config,
        out=out,
        workers=args.workers,
        progress=not args.quiet,
        n_boot=n_boot,
        tolerance=tol,
        figure=not args.no_figure,
    )
    if args.json:
        print(json.dumps({"family": res["family"], "fits": res["fits"]}))
    else:
        print((out / "fits.md").read_text(), end="")
        t = res["timing"]
        print(
            f"{t['matrices']} matrices ({t['computed']} computed now), wall {t['wall_s']:.1f} s, "
            f"CPU {t['cpu_s_computed']:.1f} s now / {t['cpu_s_all']:.1f} s all, "
            f"median {t['cpu_s_per_matrix_median']:.2f} s per matrix; outputs in {out}",
            file=sys.stderr,
        )
    return 0
