"""Error rates of the pre-specified decision: size at two nulls, power, minimum detectable effect.

:func:`validate_comparison` simulates a design's study (:mod:`analysis.power.simulate`) for
each tested hypothesis and reports, with Clopper-Pearson intervals, the size at the
**simple null** (no block carries information) and at the **boundary null** (the richer
block's signal exactly offsets its estimation cost: the least favourable point of
``effect <= 0``), the power at the assumed effect share and the **minimum detectable
effect** (the share at power 0.8); see docs/prereg.md, paragraph "The boundary null".
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

import numpy as np
import pandas as pd

from analysis.power.inputs import signal_block
from analysis.power.rates import Rate, SimulatorMismatchWarning
from analysis.power.result import RUN_COLUMNS, HypothesisPower, ValidationResult
from analysis.power.simulate import StudyRunner
from analysis.power.spec import PowerSpec
from analysis.power.widths import StratumWidths, WidthModel, _width_model
from analysis.validation import ParameterError, check_int

__all__ = ["share_at_effect", "validate_comparison"]

#: Shares are searched up to this value (the simulation needs share < 1).
MAX_SHARE = 0.95


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


def share_at_effect(
    curve: _Curve, target: float, *, sign: int = 1, start: float = 0.1, tol: float, max_iter: int
) -> tuple[float, float]:
    """The share whose mean effect on ``curve``'s seeds is ``target`` (regula falsi, Illinois).

    ``sign * mean_effect`` must increase with the share. The search starts from the
    bracket ``[0, start]`` (``start`` doubled, up to :data:`MAX_SHARE`, until it holds the
    target) and stops after ``max_iter`` steps or once ``|mean effect - target| <= tol``.
    Returns ``(share, mean effect there)``: ``(0, m0)`` when the target is already passed
    at share 0, ``(nan, nan)`` when no share up to :data:`MAX_SHARE` reaches it.

    Examples
    --------
    A made-up curve whose mean effect is ``share - 0.1``:

    >>> from types import SimpleNamespace
    >>> from analysis.power.error_rates import share_at_effect
    >>> curve = lambda s: SimpleNamespace(mean_effect=s - 0.1)
    >>> [round(x, 6) for x in share_at_effect(curve, 0.15, tol=1e-9, max_iter=20)]
    [0.25, 0.15]
    """

    def h(s: float) -> float:
        return sign * (curve(s).mean_effect - target)

    lo, h_lo = 0.0, h(0.0)
    if h_lo >= 0:
        return 0.0, curve(0.0).mean_effect
    hi = start
    h_hi = h(hi)
    while h_hi <= 0:
        if hi >= MAX_SHARE:
            return float("nan"), float("nan")
        lo, h_lo = hi, h_hi
        hi = min(MAX_SHARE, 2 * hi)
        h_hi = h(hi)
    best = (lo, h_lo) if abs(h_lo) <= abs(h_hi) else (hi, h_hi)
    side = 0
    for _ in range(max_iter):
        if abs(best[1]) <= tol:
            break
        s = (lo * h_hi - hi * h_lo) / (h_hi - h_lo)
        v = h(s)
        if abs(v) < abs(best[1]):
            best = (s, v)
        if v < 0:
            lo, h_lo = s, v
            if side == -1:
                h_hi /= 2
            side = -1
        else:
            hi, h_hi = s, v
            if side == 1:
                h_lo /= 2
            side = 1
    return float(best[0]), float(curve(best[0]).mean_effect)


def _boundary_share(
    curve: _Curve, effect: float, *, tol: float, max_iter: int
) -> tuple[float, float]:
    """The share with mean effect 0 on ``curve``'s seeds: :func:`share_at_effect` at
    target 0, its bracket started at the assumed ``effect`` share."""
    return share_at_effect(curve, 0.0, start=effect, tol=tol, max_iter=max_iter)


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
    spec: PowerSpec,
    *,
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
        From :func:`~analysis.power.widths.load_widths`.
    spec : PowerSpec
        ``simulations`` (>= 2) studies per scenario and per share of ``sizes`` under
        ``assumptions``; ``hypotheses`` (ids of ``sizes.hypotheses``; default the
        confirmatory one: those outside the Holm family, or whose rich model adds no
        simulated block, are listed in ``skipped``); ``mde_target``, ``mde_steps``,
        ``calibration_iterations``; ``random_state`` (an int or None).
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
    ``simulations`` seeds are spawned: A (calibration; common random numbers, so rates and
    mean effects on A are deterministic functions of the share:
    :func:`~analysis.power.simulate.simulate_study`) and B (boundary size). The simple null
    is share 0 on A; the boundary share ``s_b`` (mean effect ``m(s_b) = 0``) is found on A
    by regula falsi in at most ``calibration_iterations`` steps and its size measured on B,
    whose mean effect checks the calibration; the power is the rate at
    ``assumptions.effect`` on A; the MDE bracket is halved ``mde_steps`` times. Rates are
    shares of studies in which the pair is declared to add information (Holm within the
    design's family, ``ci_low > 0``), with Clopper-Pearson 95% intervals
    (:func:`~analysis.power.rates.clopper_pearson`); the size passes when the boundary rate
    is at most ``alpha`` plus its interval's half-width. The derivation, the search's start
    and stopping rule and the MDE's interpolation: docs/prereg.md, section "Checking the
    test itself", paragraphs "The boundary null" and "Power and the MDE".

    Examples
    --------
    A small study (made-up reference widths), two studies per share, no MDE bisection:

    >>> from analysis.power.inputs import PowerAssumptions
    >>> from analysis.datasets import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.error_rates import validate_comparison
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(  # 2 studies per share: far too few for real use
    ...     simulations=2, sizes=sizes, assumptions=PowerAssumptions(effect=0.9),
    ...     mde_steps=0, calibration_iterations=0, random_state=0,
    ... )
    >>> result = validate_comparison(widths, spec)
    >>> row = result.to_frame().iloc[0]
    >>> row["hypothesis"], float(row["effect"]), int(row["simulations"])
    ('M0<M1', 0.9, 2)
    >>> float(row["power"]), float(row["size_simple"])  # both studies reject at share 0.9
    (1.0, 0.0)
    >>> from analysis.power.rates import clopper_pearson
    >>> k = round(row["size_simple"] * 2)  # rejections at the simple null, out of 2
    >>> (row["size_simple_ci_low"], row["size_simple_ci_high"]) == clopper_pearson(k, 2)
    True
    """
    if not isinstance(spec, PowerSpec):
        raise ParameterError("spec", "a PowerSpec", type(spec).__name__)
    simulations = check_int("simulations", spec.simulations, minimum=2)
    sizes, assumptions, hypotheses = spec.sizes, spec.assumptions, spec.hypotheses
    mde_target, mde_steps = spec.mde_target, spec.mde_steps
    calibration_iterations, random_state = spec.calibration_iterations, spec.random_state
    if random_state is not None:
        random_state = check_int("random_state", random_state, minimum=0)
    wmodel = _width_model(sizes, widths, assumptions)
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
    """``rows`` with the :data:`RUN_COLUMNS` that say where they were simulated."""
    pair_name = f"{pair[0]}<{pair[1]}"
    ids = {"hypothesis": hid, "pair": pair_name, "scenario": scenario, "share": share}
    return rows.assign(**ids, seeds=seeds, simulation=np.arange(len(rows)))
