"""Error rates of the pre-specified decision: size at two nulls, power, minimum detectable effect.

:func:`validate_comparison` simulates a design's study (:mod:`analysis.power.simulate`) for
each tested hypothesis and reports, with Clopper-Pearson intervals,

- the size at the **simple null** (no block carries information: the richer model's
  extra columns only cost estimation noise, so its expected held-out effect is negative),
- the size at the **boundary null** (the richer block carries real signal, exactly offset
  by that cost, so the expected held-out effect is 0: the least favourable point of the
  null ``effect <= 0``),
- the power at the assumed effect share, and the **minimum detectable effect** (the share
  at power 0.8), found by bisection on the simulated power curve.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.power.fit import SimulatorMismatchWarning
from analysis.power.inputs import PowerAssumptions, StudySizes, signal_block
from analysis.power.rates import Rate, clopper_pearson
from analysis.power.simulate import DECISION_COLUMNS, StudyRunner
from analysis.power.widths import StratumWidths, WidthModel
from analysis.validation import ParameterError, check_int

__all__ = [
    "HypothesisPower",
    "RUN_COLUMNS",
    "Rate",
    "ValidationResult",
    "clopper_pearson",
    "validate_comparison",
]

#: Columns of :attr:`ValidationResult.runs`, one row per simulated study.
RUN_COLUMNS: tuple[str, ...] = (
    "hypothesis",
    "pair",
    "scenario",
    "share",
    "seeds",
    "simulation",
    *DECISION_COLUMNS,
)
#: Shares are searched up to this value (the simulation needs share < 1).
MAX_SHARE = 0.95
_DEFAULT_SIZES = StudySizes()
_DEFAULT_ASSUMPTIONS = PowerAssumptions()


@dataclass(frozen=True)
class HypothesisPower:
    """Size, power and minimum detectable effect of one hypothesis's decision.

    Attributes
    ----------
    hypothesis, kind : str
    pair : (base, rich)
    signal : str
        The block that carries the simulated signal.
    size_simple, size_boundary, power : Rate
        Rejection rates at the simple null (share 0), at the boundary null (share
        ``boundary_share``, fresh seeds) and at the assumed effect share.
    boundary_share : float
        The share at which the mean held-out effect is 0 (see
        :func:`validate_comparison`, Notes); 0 when the simple null's mean effect is
        already >= 0, NaN when no share up to 0.95 reaches it.
    boundary_mean_effect : float
        Mean effect at ``boundary_share`` on the calibration seeds (0 up to the
        calibration tolerance).
    size_ok : bool
        ``size_boundary.rate <= alpha + size_boundary.half_width``.
    mde, mde_low, mde_high : float
        The minimum detectable effect (share at power ``mde_target``, linear
        interpolation between the bracketing shares) and the bracket
        ``[mde_low, mde_high]`` the bisection ended with (its resolution); NaN when no
        share up to 0.95 reaches the target.
    mde_target : float
    curve : tuple of Rate
        Every share simulated on the calibration seeds, sorted.

    Examples
    --------
    Made by :func:`validate_comparison`, one per simulated hypothesis (here by
    :func:`analysis.prereg.examples.example_validation`):

    >>> from analysis.prereg.examples import example_validation
    >>> result = example_validation()  # 2 studies per share: far too few for real use
    >>> h = result.hypotheses[0]
    >>> h.hypothesis, h.pair, h.signal, h.size_simple.n
    ('M0<M1', ('M0', 'M1'), 'native', 2)
    >>> [rate.share for rate in h.curve] == sorted(rate.share for rate in h.curve)
    True
    >>> sorted(h.to_dict())[:4]
    ['boundary_mean_effect', 'boundary_share', 'curve', 'effect_loss']
    """

    hypothesis: str
    kind: str
    pair: tuple[str, str]
    signal: str
    size_simple: Rate
    size_boundary: Rate | None
    power: Rate
    boundary_share: float
    boundary_mean_effect: float
    size_ok: bool
    mde: float
    mde_low: float
    mde_high: float
    mde_target: float
    curve: tuple[Rate, ...] = field(repr=False)

    @property
    def simulated_m0_loss(self) -> float:
        """Mean held-out loss of the base model in the simulated studies at the null."""
        return self.size_simple.mean_base_value

    @property
    def effect_loss(self) -> float:
        """The alternative in loss units: the mean simulated held-out loss difference
        (base minus rich) at the assumed effect share."""
        return self.power.mean_effect

    @property
    def mde_loss(self) -> float:
        """The MDE in loss units: the mean simulated effect at the MDE share (linear
        interpolation on the simulated curve); NaN without an MDE."""
        if not np.isfinite(self.mde):
            return float("nan")
        shares = np.array([r.share for r in self.curve])
        effects = np.array([r.mean_effect for r in self.curve])
        return float(np.interp(self.mde, shares, effects))

    def loss_units(self) -> dict:
        """The effect share and the MDE beside their held-out loss differences and
        their shares of the simulated M0 loss."""
        m0 = self.simulated_m0_loss
        frac = (lambda x: x / m0) if np.isfinite(m0) and m0 > 0 else (lambda x: float("nan"))
        return {
            "effect_share": self.power.share,
            "effect_loss": self.effect_loss,
            "effect_share_of_m0_loss": frac(self.effect_loss),
            "mde_loss": self.mde_loss,
            "mde_share_of_m0_loss": frac(self.mde_loss),
            "simulated_m0_loss": m0,
        }

    def to_dict(self) -> dict:
        return {
            **self.loss_units(),
            "hypothesis": self.hypothesis,
            "kind": self.kind,
            "pair": f"{self.pair[0]}<{self.pair[1]}",
            "signal": self.signal,
            "size_simple": self.size_simple.to_dict(),
            "size_boundary": None if self.size_boundary is None else self.size_boundary.to_dict(),
            "power": self.power.to_dict(),
            "boundary_share": self.boundary_share,
            "boundary_mean_effect": self.boundary_mean_effect,
            "size_ok": self.size_ok,
            "mde": self.mde,
            "mde_low": self.mde_low,
            "mde_high": self.mde_high,
            "mde_target": self.mde_target,
            "curve": [r.to_dict() for r in self.curve],
        }

    def summary(self, alpha: float) -> str:
        pair = f"{self.pair[0]}<{self.pair[1]}"
        if self.size_boundary is None:
            boundary = "boundary null not reached below share 0.95"
        else:
            verdict = "ok" if self.size_ok else "ABOVE alpha + half-width"
            boundary = (
                f"size at the boundary null (share {self.boundary_share:.3f}) "
                f"{self.size_boundary} ({verdict}; unadjusted one-sided p < alpha in "
                f"{self.size_boundary.p_below_alpha:.3f})"
            )
        mde = (
            f"MDE {self.mde:.3f} (bracket [{self.mde_low:.3f}, {self.mde_high:.3f}])"
            if np.isfinite(self.mde)
            else f"MDE > {self.mde_low:.2f} (power {self.mde_target} not reached)"
        )
        u = self.loss_units()
        loss = (
            f" (held-out loss difference {u['effect_loss']:.3g}, "
            f"{u['effect_share_of_m0_loss']:.1%} of the simulated M0 loss "
            f"{u['simulated_m0_loss']:.3g})"
            if np.isfinite(u["simulated_m0_loss"])
            else ""
        )
        refit = ""
        if self.size_boundary is not None and np.isfinite(self.size_boundary.refit_p_below_alpha):
            refit = (
                "; refit-bootstrap p < alpha at the boundary null in "
                f"{self.size_boundary.refit_p_below_alpha:.3f}"
            )
        return (
            f"{self.hypothesis} ({pair}, signal in {self.signal}): size at the simple null "
            f"{self.size_simple}; {boundary}{refit}; power {self.power} at share "
            f"{self.power.share:g}{loss} (alpha {alpha:g}); {mde}"
            + (f" = loss {self.mde_loss:.3g}" if np.isfinite(self.mde_loss) else "")
        )


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`validate_comparison`.

    Attributes
    ----------
    design : str
    simulations : int
        Simulated studies per scenario and share.
    alpha : float
    bootstrap : str
        The bootstrap the comparison used (``"cluster"``: percentile cluster bootstrap).
    assumptions : PowerAssumptions
    features : dict
        Block -> covariate columns simulated; ``features_note`` says where they came from.
    features_note : str
    strata : tuple of (label, heads, held_out)
    hypotheses : tuple of HypothesisPower
    skipped : dict
        Hypothesis id -> why it was not simulated.
    seed : int or None
    seconds : float
    runs : pandas.DataFrame
        :data:`RUN_COLUMNS`, one row per simulated study.
    reference_m0_loss : float or None
        The real M0 held-out loss the simulator is checked against (training or pilot
        cells, :func:`~analysis.power.fit.reference_m0_loss`); None when unknown.
    fit : dict or None
        :meth:`~analysis.power.fit.FittedAssumptions.to_dict` when the
        assumptions were fitted.

    Examples
    --------
    Made by :func:`validate_comparison` (here by
    :func:`analysis.prereg.examples.example_validation`):

    >>> from analysis.prereg.examples import example_validation
    >>> result = example_validation()  # 2 studies per share: far too few for real use
    >>> result.confirmatory.hypothesis, result.simulations, result.alpha
    ('M0<M1', 2, 0.05)
    >>> from analysis.power.error_rates import RUN_COLUMNS
    >>> list(result.runs.columns) == list(RUN_COLUMNS)
    True
    >>> print(result.summary())  # doctest: +ELLIPSIS
    validate-comparison on simulated study (default sizes, not a design): 2 simulations ...
    """

    design: str
    simulations: int
    alpha: float
    bootstrap: str
    assumptions: PowerAssumptions
    features: dict
    features_note: str
    strata: tuple
    hypotheses: tuple[HypothesisPower, ...]
    skipped: dict
    seed: int | None
    seconds: float
    runs: pd.DataFrame = field(repr=False)
    reference_m0_loss: float | None = None
    fit: dict | None = None

    @property
    def simulated_m0_loss(self) -> float | None:
        """Mean M0 held-out loss of the simulated studies at the null (the confirmatory
        hypothesis's simple-null studies)."""
        c = self.confirmatory
        if c is None or not np.isfinite(c.simulated_m0_loss):
            return None
        return float(c.simulated_m0_loss)

    @property
    def warnings(self) -> list[str]:
        """Design-check warnings: the simulated M0 loss more than 25% away from the
        reference (:func:`~analysis.power.fit.m0_loss_check`)."""
        from analysis.power.fit import m0_loss_check

        text = m0_loss_check(
            self.simulated_m0_loss, self.reference_m0_loss, fitted=self.fit is not None
        )
        return [] if text is None else [text]

    @property
    def confirmatory(self) -> HypothesisPower | None:
        for h in self.hypotheses:
            if h.kind == "confirmatory":
                return h
        return self.hypotheses[0] if self.hypotheses else None

    def to_dict(self) -> dict:
        """The JSON that ``attnrank validate-comparison --json`` prints.

        ``false_positive_rate`` (size at the simple null), ``size_boundary``, ``power``
        and ``mde`` repeat the confirmatory hypothesis's numbers at the top level.
        """
        c = self.confirmatory
        return {
            "design": self.design,
            "simulations": self.simulations,
            "alpha": self.alpha,
            "bootstrap": self.bootstrap,
            "effect": self.assumptions.effect,
            "icc": self.assumptions.icc,
            "assumptions": self.assumptions.to_dict(),
            "features": dict(self.features),
            "features_note": self.features_note,
            "strata": [list(s) for s in self.strata],
            "false_positive_rate": c.size_simple.rate if c else None,
            "size_boundary": c.size_boundary.rate if c and c.size_boundary else None,
            "power": c.power.rate if c else None,
            "mde": c.mde if c else None,
            "simulated_m0_loss": self.simulated_m0_loss,
            "reference_m0_loss": self.reference_m0_loss,
            "m0_loss_ratio": None
            if not (self.simulated_m0_loss and self.reference_m0_loss)
            else self.simulated_m0_loss / self.reference_m0_loss,
            "warnings": self.warnings,
            "fit": self.fit,
            "hypotheses": [h.to_dict() for h in self.hypotheses],
            "skipped": dict(self.skipped),
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per hypothesis: sizes with intervals, power, boundary share, MDE.

        ``calibration_mean_effect`` is the mean effect at the boundary share on the
        calibration seeds (0 up to the tolerance), ``boundary_mean_effect`` that on the
        fresh seeds the boundary size is measured on.
        """
        rows = []
        for h in self.hypotheses:
            sb = h.size_boundary
            rows.append(
                {
                    "hypothesis": h.hypothesis,
                    "pair": f"{h.pair[0]}<{h.pair[1]}",
                    "signal": h.signal,
                    "size_simple": h.size_simple.rate,
                    "size_simple_ci_low": h.size_simple.ci_low,
                    "size_simple_ci_high": h.size_simple.ci_high,
                    "boundary_share": h.boundary_share,
                    "size_boundary": sb.rate if sb else np.nan,
                    "size_boundary_ci_low": sb.ci_low if sb else np.nan,
                    "size_boundary_ci_high": sb.ci_high if sb else np.nan,
                    "calibration_mean_effect": h.boundary_mean_effect,
                    "boundary_mean_effect": sb.mean_effect if sb else np.nan,
                    "boundary_p_below_alpha": sb.p_below_alpha if sb else np.nan,
                    "size_ok": h.size_ok,
                    "effect": h.power.share,
                    "power": h.power.rate,
                    "power_ci_low": h.power.ci_low,
                    "power_ci_high": h.power.ci_high,
                    "mde": h.mde,
                    "mde_low": h.mde_low,
                    "mde_high": h.mde_high,
                    "simulations": self.simulations,
                }
            )
        return pd.DataFrame(rows)

    def summary(self) -> str:
        a = self.assumptions
        lines = [
            f"validate-comparison on {self.design}: {self.simulations} simulations per "
            f"scenario; alpha {self.alpha:g}; bootstrap {self.bootstrap}; "
            f"{len(self.strata)} stratum/strata of held-out heads; {self.seconds:.0f} s",
            f"  assumptions: effect {a.effect:g}, ICC {a.icc:g}, residual SD "
            f"{a.residual_sd:g}, head share {a.native_head_share:g}, truth in bracket "
            f"Beta{a.truth_position}, widths in {a.width_bins} midpoint bins per eps",
            "  features: "
            + ", ".join(f"{b} {n}" for b, n in self.features.items())
            + f" ({self.features_note})",
        ]
        if self.fit is not None:
            lines.append(
                f"  fitted to {self.fit['source']} ({self.fit['n_heads']} heads, "
                f"{self.fit['n_cells']} cells): layer share {a.layer_share:.3f}, "
                f"{len(a.strata_effects)} checkpoint offsets / scales, widths per checkpoint"
            )
        sim, ref = self.simulated_m0_loss, self.reference_m0_loss
        lines.append(
            "  M0 held-out loss: simulated "
            + ("n/a" if sim is None else f"{sim:.4g}")
            + ", reference "
            + ("not known" if ref is None else f"{ref:.4g}")
        )
        lines += ["  " + h.summary(self.alpha) for h in self.hypotheses]
        lines += [f"  {k}: not simulated: {v}" for k, v in self.skipped.items()]
        lines += [f"  WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


class _Curve:
    """Simulated rejection rates by share on one set of seeds (cached per share)."""

    def __init__(
        self, run: Callable[[float, Sequence], pd.DataFrame], seeds: Sequence, alpha: float
    ):
        self._run = run
        self.seeds = seeds
        self.alpha = alpha
        self.rows: dict[float, pd.DataFrame] = {}

    def __call__(self, share: float) -> Rate:
        share = float(share)
        if share not in self.rows:
            self.rows[share] = self._run(share, self.seeds)
        return Rate.of(share, self.rows[share], self.alpha)

    def rates(self) -> tuple[Rate, ...]:
        return tuple(self(s) for s in sorted(self.rows))


def _boundary_share(
    curve: _Curve, effect: float, *, tol: float, max_iter: int
) -> tuple[float, float]:
    """The share with mean effect 0 on ``curve``'s seeds (regula falsi, Illinois).

    Returns ``(share, mean effect there)``; ``(0, m0)`` when the simple null's mean
    effect ``m0`` is already >= 0, ``(nan, nan)`` when no share up to
    :data:`MAX_SHARE` has a positive mean effect.
    """
    lo, m_lo = 0.0, curve(0.0).mean_effect
    if m_lo >= 0:
        return 0.0, m_lo
    hi, m_hi = effect, curve(effect).mean_effect
    while m_hi <= 0:
        if hi >= MAX_SHARE:
            return float("nan"), float("nan")
        lo, m_lo = hi, m_hi
        hi = min(MAX_SHARE, 2 * hi)
        m_hi = curve(hi).mean_effect
    best = (lo, m_lo) if abs(m_lo) <= abs(m_hi) else (hi, m_hi)
    side = 0
    for _ in range(max_iter):
        if abs(best[1]) <= tol:
            break
        s = (lo * m_hi - hi * m_lo) / (m_hi - m_lo)
        m = curve(s).mean_effect
        if abs(m) < abs(best[1]):
            best = (s, m)
        if m < 0:
            lo, m_lo = s, m
            if side == -1:
                m_hi /= 2
            side = -1
        else:
            hi, m_hi = s, m
            if side == 1:
                m_lo /= 2
            side = 1
    return best


def _mde(curve: _Curve, *, target: float, steps: int) -> tuple[float, float, float]:
    """Bisection for the smallest share with power >= target on ``curve``'s seeds.

    Returns ``(mde, low, high)``: the bracket ``[low, high]`` (power below the target at
    ``low``, at or above at ``high``) after ``steps`` halvings, and the linear
    interpolation of power within it; ``(nan, MAX_SHARE, nan)`` when the target is not
    reached at :data:`MAX_SHARE`.
    """
    rates = curve.rates()
    hits = [r.share for r in rates if r.rate >= target]
    if not hits:
        top = curve(MAX_SHARE)
        if top.rate < target:
            return float("nan"), MAX_SHARE, float("nan")
        hits = [MAX_SHARE]
    hi = min(hits)
    below = [r.share for r in curve.rates() if r.share < hi and r.rate < target]
    if not below:
        return hi, hi, hi
    lo = max(below)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if curve(mid).rate >= target:
            hi = mid
        else:
            lo = mid
    p_lo, p_hi = curve(lo).rate, curve(hi).rate
    mde = hi if p_hi == p_lo else lo + (target - p_lo) * (hi - lo) / (p_hi - p_lo)
    return float(mde), float(lo), float(hi)


def validate_comparison(
    widths: pd.DataFrame | WidthModel | StratumWidths,
    *,
    simulations: int,
    sizes: StudySizes = _DEFAULT_SIZES,
    assumptions: PowerAssumptions = _DEFAULT_ASSUMPTIONS,
    hypotheses: Sequence[str] | None = None,
    mde_target: float = 0.8,
    mde_steps: int = 5,
    calibration_iterations: int = 6,
    random_state: int | None = None,
    workers: int = 1,
    progress: Callable[[int, int | None], None] | None = None,
    executor: Executor | None = None,
    reference_m0_loss: float | None = None,
    fit: dict | None = None,
) -> ValidationResult:
    """Size at the simple and boundary nulls, power and MDE of the pre-specified decision.

    Parameters
    ----------
    widths : pandas.DataFrame, WidthModel or StratumWidths
        From :func:`~analysis.power.simulate.load_widths`.
    simulations : int, keyword-only
        Simulated studies per scenario and per share (>= 2).
    sizes : StudySizes, keyword-only
        From :func:`~analysis.power.simulate.sizes_from_design`.
    assumptions : PowerAssumptions, keyword-only
    hypotheses : sequence of str, keyword-only
        Hypothesis ids (``sizes.hypotheses``) to simulate; default the confirmatory one.
        Hypotheses outside the Holm family, or whose rich model adds no simulated block,
        are listed in ``skipped``.
    mde_target : float, keyword-only
        Power at which the MDE is read (0.8).
    mde_steps : int, keyword-only
        Bisection steps of the MDE search (5).
    calibration_iterations : int, keyword-only
        Most regula falsi steps of the boundary calibration (6).
    random_state : int or None, keyword-only
    workers : int, keyword-only
        Processes (results do not depend on it).
    progress : callable or None, keyword-only
        Called as ``progress(done, None)`` after each simulated study (the total is not
        known in advance: the searches decide how many shares they need).
    executor : concurrent.futures.Executor, optional, keyword-only
        Run the simulated studies there instead (a dask cluster's; ``workers`` must then
        be 1); results do not depend on it either.
    reference_m0_loss : float or None, keyword-only
        The real M0 held-out loss (training or pilot cells) the simulated one is checked
        against: more than 25% away warns (:class:`SimulatorMismatchWarning`, and
        ``ValidationResult.warnings``).
    fit : dict or None, keyword-only
        The fitted assumptions' record, kept in the result.

    Returns
    -------
    ValidationResult

    Notes
    -----
    Per hypothesis (pair base < rich, signal in the block the rich model adds) two sets of
    ``simulations`` seeds are spawned: A (calibration) and B (boundary size). Every share
    on A uses the same seeds, and a seed's heads, noise, widths and positions do not
    depend on the share (common random numbers, :func:`~analysis.power.simulate.simulate_study`),
    so rates and mean effects on A are deterministic functions of the share.

    *Simple null*: share 0 on A; the mean effect ``m(0)`` is negative (the rich model's
    extra columns add estimation noise to its held-out predictions).

    *Boundary null*: the share ``s_b`` with ``m(s_b) = 0``: the signal the rich block
    carries is exactly offset by its estimation cost, so the expected held-out effect
    (base loss minus rich loss) is 0, the least favourable point of ``effect <= 0``.
    Derivation: write ``y(s) = f + sqrt(s) S + sqrt(1 - s) R`` with ``S = sqrt(V) w``
    and ``R`` the residual at share 0 (fixed per seed). For point outcomes and least
    squares fits, fitted values are linear in y, so each model's held-out loss is a
    quadratic form in ``(sqrt(s) S, sqrt(1 - s) R)``; R is symmetric and independent of
    S and the covariates, so its cross terms vanish in expectation and
    ``m(s) = s m_S + (1 - s) m(0) + sqrt(s) c`` with a small ``c`` (from the part of f
    the baseline misses): nearly linear, one root ``s_b ~ m(0) / (m(0) - m_S)``. With
    intervals, interval fits and calibration the curve is bent a little, so the root is
    found numerically on A: regula falsi (Illinois) from ``[0, effect]`` (doubled until
    ``m > 0``), stopped when ``|m(s)| <= SE(m) / 4`` or after
    ``calibration_iterations`` steps; the share with the smallest ``|m|`` is kept. The
    size at the boundary is the rejection rate at ``s_b`` on the fresh seeds B, so the
    calibration does not condition the size estimate; B's mean effect checks the
    calibration (it should be within about 2 SE of 0).

    *Power*: the rejection rate at ``assumptions.effect`` on A. *MDE*: starting from the
    shares simulated on A, the bracket between the largest share with power below
    ``mde_target`` and the smallest with power at or above it (``0.95`` added when none
    reaches it) is halved ``mde_steps`` times; the MDE is the linear interpolation of
    power in that bracket, whose width is the search's resolution (the starting bracket
    over ``2^mde_steps``).

    Rates are shares of studies in which the pair is declared to add information (Holm
    within the design's family, ``ci_low > 0``). Intervals are Clopper-Pearson 95%
    (:func:`clopper_pearson`). The size passes when the boundary rate is at most
    ``alpha`` plus its interval's half-width.

    Examples
    --------
    A small study (made-up reference widths), two studies per share, no MDE bisection:

    >>> from analysis.power.inputs import PowerAssumptions
    >>> from analysis.prereg.examples import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.error_rates import validate_comparison
    >>> result = validate_comparison(  # 2 studies per share: far too few for real use
    ...     widths, simulations=2, sizes=sizes, assumptions=PowerAssumptions(effect=0.9),
    ...     mde_steps=0, calibration_iterations=0, random_state=0,
    ... )
    >>> row = result.to_frame().iloc[0]
    >>> row["hypothesis"], float(row["effect"]), int(row["simulations"])
    ('M0<M1', 0.9, 2)
    >>> float(row["power"]), float(row["size_simple"])  # both studies reject at share 0.9
    (1.0, 0.0)
    >>> from analysis.power.error_rates import clopper_pearson
    >>> k = round(row["size_simple"] * 2)  # rejections at the simple null, out of 2
    >>> (row["size_simple_ci_low"], row["size_simple_ci_high"]) == clopper_pearson(k, 2)
    True
    """
    simulations = check_int("simulations", simulations, minimum=2)
    if not isinstance(sizes, StudySizes):
        raise ParameterError("sizes", "a StudySizes", type(sizes).__name__)
    if not isinstance(assumptions, PowerAssumptions):
        raise ParameterError("assumptions", "a PowerAssumptions", type(assumptions).__name__)
    if not (isinstance(mde_target, float) and 0 < mde_target < 1):
        raise ParameterError("mde_target", "a number in (0, 1)", mde_target)
    mde_steps = check_int("mde_steps", mde_steps, minimum=0)
    calibration_iterations = check_int("calibration_iterations", calibration_iterations, minimum=0)
    if random_state is not None:
        random_state = check_int("random_state", random_state, minimum=0)
    wmodel = (
        widths
        if isinstance(widths, (WidthModel, StratumWidths))
        else WidthModel.from_frame(widths, sizes.eps, n_bins=assumptions.width_bins)
    )
    by_id = {h[0]: h for h in sizes.hypotheses}
    if hypotheses is None:
        conf = [h for h in sizes.hypotheses if tuple(h[2:]) == tuple(sizes.confirmatory)]
        hypotheses = [conf[0][0]] if conf else [sizes.hypotheses[0][0]]
    family = {tuple(p) for p in sizes.family}
    chosen, skipped = [], {}
    for hid in hypotheses:
        if hid not in by_id:
            raise ParameterError("hypotheses", "ids among " + ", ".join(by_id), hid)
        _, kind, base, rich = by_id[hid]
        if (base, rich) not in family:
            skipped[hid] = "outside the Holm family (a sensitivity pair)"
            continue
        try:
            signal_block(sizes, (base, rich))
        except ParameterError:
            skipped[hid] = "its rich model adds no simulated block"
            continue
        chosen.append(by_id[hid])

    t0 = time.perf_counter()
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], None)

    root = np.random.SeedSequence(random_state)
    per_hyp = root.spawn(len(sizes.hypotheses))
    index = {h[0]: i for i, h in enumerate(sizes.hypotheses)}
    results, runs = [], []
    with StudyRunner(workers, executor=executor) as runner:
        for hid, kind, base, rich in chosen:
            pair = (base, rich)
            seeds_a, seeds_b = per_hyp[index[hid]].spawn(2)

            def run(share: float, seeds: Sequence, _pair: tuple = pair) -> pd.DataFrame:
                tasks = [(sizes, wmodel, share, assumptions, _pair, s) for s in seeds]
                return pd.DataFrame(runner.run(tasks, step))

            curve = _Curve(run, seeds_a.spawn(simulations), sizes.alpha)
            simple = curve(0.0)
            power = curve(assumptions.effect)
            tol = 0.25 * simple.mean_effect_se if np.isfinite(simple.mean_effect_se) else 0.0
            s_b, m_b = _boundary_share(
                curve, assumptions.effect, tol=tol, max_iter=calibration_iterations
            )
            boundary = None
            if np.isfinite(s_b):
                b_rows = run(s_b, seeds_b.spawn(simulations))
                boundary = Rate.of(s_b, b_rows, sizes.alpha)
                runs.append(_tag(b_rows, hid, pair, "boundary_null", s_b, "B"))
            mde, mde_lo, mde_hi = _mde(curve, target=mde_target, steps=mde_steps)
            for share, rows in sorted(curve.rows.items()):
                scen = {0.0: "simple_null", assumptions.effect: "alternative"}.get(share, "curve")
                runs.append(_tag(rows, hid, pair, scen, share, "A"))
            size_ok = boundary is not None and boundary.rate <= sizes.alpha + boundary.half_width
            results.append(
                HypothesisPower(
                    hypothesis=hid,
                    kind=kind,
                    pair=pair,
                    signal=signal_block(sizes, pair),
                    size_simple=simple,
                    size_boundary=boundary,
                    power=power,
                    boundary_share=float(s_b),
                    boundary_mean_effect=float(m_b),
                    size_ok=bool(size_ok),
                    mde=mde,
                    mde_low=mde_lo,
                    mde_high=mde_hi,
                    mde_target=mde_target,
                    curve=curve.rates(),
                )
            )
    frame = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(columns=RUN_COLUMNS)
    if reference_m0_loss is not None and not (
        isinstance(reference_m0_loss, (int, float)) and np.isfinite(reference_m0_loss)
    ):
        reference_m0_loss = None
    result = ValidationResult(
        design=sizes.name,
        simulations=simulations,
        alpha=sizes.alpha,
        bootstrap=sizes.bootstrap,
        assumptions=assumptions,
        features={b: sizes.feature_count(b, assumptions) for b, _ in sizes.features},
        features_note=sizes.features_note,
        strata=sizes.strata,
        hypotheses=tuple(results),
        skipped=skipped,
        seed=random_state,
        seconds=time.perf_counter() - t0,
        runs=frame.loc[:, list(RUN_COLUMNS)],
        reference_m0_loss=None if reference_m0_loss is None else float(reference_m0_loss),
        fit=fit,
    )
    for text in result.warnings:
        warnings.warn(text, SimulatorMismatchWarning, stacklevel=2)
    return result


def _tag(
    rows: pd.DataFrame, hid: str, pair: tuple, scenario: str, share: float, seeds: str
) -> pd.DataFrame:
    out = rows.copy()
    out.insert(0, "simulation", np.arange(len(rows)))
    out.insert(0, "seeds", seeds)
    out.insert(0, "share", share)
    out.insert(0, "scenario", scenario)
    out.insert(0, "pair", f"{pair[0]}<{pair[1]}")
    out.insert(0, "hypothesis", hid)
    return out
